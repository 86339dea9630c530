/*
 * vdsogen test harness: what its files share.
 *
 *   report.c	one line per check, crashes and hangs, groups, CPU pinning
 *   image.c	the image mapped as the kernel maps it; symbols, trampolines
 *   timekeeper.c	time arithmetic, the counter's calibration, the timekeeper
 *   expect.c	check bodies the groups share
 *   checks-clock.c	the core functions' checks: clocks, resolutions, ids (of a
 *		flavour), gettimeofday, time, getcpu; 2038
 *   checks-getrandom.c	getrandom, with the harness as the kernel's random driver
 *   checks-modes.c	clock modes, max_cycles, the time namespace
 *   seqcount.c	a writer rewriting the page while readers run
 *   unwind.c	unwinding through the signal trampolines, and sigreturn
 *   main.c	the order of the groups, the arch checks
 *   bench.c	--bench: timings for vdsogen bench, no checks
 *
 * plus elf.c (harness.h), harness_functions.c (the core functions' wiring:
 * flavours, check groups, benchmark rows, generated from
 * vdsogen/spec/functions.toml) and, for targets with functions an arch
 * fragment implements, their checks rendered from
 * arch/ARCH/harness-check-NAME.c.j2.
 *
 * The checks of a function are compiled where harness_target.h says the
 * target exports it (H_HAS_<NAME>), and run where its symbol resolved
 * (h_fn[IMPL_<NAME>]).  The syscalls they compare with are NR_<SYSCALL>
 * (harness_functions.h).
 */
#ifndef VDSOGEN_HARNESS_INTERNAL_H
#define VDSOGEN_HARNESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "harness_target.h"

#define NSEC_PER_SEC		1000000000LL
#define SENTINEL		0xa5

/* A call's result as the target's convention shows it, for messages. */
#define RET(r)		h_ret_str((r), (char[64]){ 0 }, 64)

/* ------------------------------------------------------------------ */
/* report.c                                                            */

struct chk {
	char	name[160];
	char	why[768];
	unsigned long failures;
};

void chk_start(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record a failure; the first one is the one reported. */
void chk_fail(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void chk_end(struct chk *k);
void report_ok(const char *name);
void report_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int finish(void);

void setup_signals(void);
/* Run one group; a crash in the image fails the check it was in and ends the group. */
void group(const char *name, void (*fn)(void));
/*
 * Run one step the groups rely on (fn: 0, or -1 after a FAIL line).  Its
 * failure, or a crash in it, is fatal: the steps and groups after it print
 * "not run" instead of running.
 */
void step(const char *name, int (*fn)(void));
/* A step failed: what follows only says "not run". */
int run_stopped(void);

extern int h_other_cpu;		/* another CPU, for writer threads (or the same one) */
extern int h_soak;			/* seconds each racing writer runs (VDSOGEN_HARNESS_SOAK), 0: 100 ms */
extern int h_watchdog;			/* seconds a group may take (VDSOGEN_HARNESS_WATCHDOG), 30 */
void pin_to(int cpu);
void pin_cpus(void);

/* ------------------------------------------------------------------ */
/* image.c                                                             */

extern unsigned char *h_data;		/* first data page */
extern unsigned char *h_text;		/* the image, right above the data pages */
extern size_t h_image_size;
extern int h_text_guarded;		/* the text is mapped with PROT_BTI ([harness] bti) */
extern int h_text_unbuilt;		/* the image is not built for BTI: mapped unguarded, as its kernel maps it */

#define H_PAGE(n)	(h_data + (size_t)(n) * VDSO_PAGE_SIZE)

static inline vdso_time_data_t *page_time(void)
{
	return (vdso_time_data_t *)H_PAGE(VDSO_PAGE_TIME);
}

#if VDSO_HAS_TIMENS
/* Where the real time data sits while page_time() is a namespace page. */
static inline vdso_time_data_t *page_real_in_ns(void)
{
	return (vdso_time_data_t *)((unsigned char *)page_time() + VDSO_TIMENS_REAL_OFFSET);
}
#endif

int map_image(const char *path);
int check_image(void);
/* One check per symbol; resolves h_fn[]. */
void check_symbols(void);
void check_trampolines(void);
/* 0, or -1 when a syscall number of the spec is not the C library's. */
int check_syscall_numbers(void);

/* ------------------------------------------------------------------ */
/* timekeeper.c                                                        */

/* A point in time, normalised: 0 <= nsec < 10^9. */
struct hts {
	int64_t	sec;
	int64_t	nsec;
};

enum { CLS_HRES, CLS_COARSE, CLS_RAW };

enum {
	C_REALTIME = 0, C_MONOTONIC = 1, C_PROCESS_CPUTIME_ID = 2, C_MONOTONIC_RAW = 4,
	C_REALTIME_COARSE = 5, C_MONOTONIC_COARSE = 6, C_BOOTTIME = 7, C_BOOTTIME_ALARM = 9,
	C_TAI = 11,
};

struct clk {
	int		id;
	const char	*name;
	int		cls;
};

/* The clocks the data page serves. */
static const struct clk h_clocks[] = {
	{ C_REALTIME, "REALTIME", CLS_HRES },
	{ C_MONOTONIC, "MONOTONIC", CLS_HRES },
	{ C_MONOTONIC_RAW, "MONOTONIC_RAW", CLS_RAW },
	{ C_BOOTTIME, "BOOTTIME", CLS_HRES },
	{ C_TAI, "TAI", CLS_HRES },
	{ C_REALTIME_COARSE, "REALTIME_COARSE", CLS_COARSE },
	{ C_MONOTONIC_COARSE, "MONOTONIC_COARSE", CLS_COARSE },
};
#define NCLOCKS	(sizeof(h_clocks) / sizeof(h_clocks[0]))

const struct clk *clock_by_id(int id);
struct hts hts_add(struct hts a, struct hts b);
int hts_cmp(struct hts a, struct hts b);
const char *hts_str(struct hts t, char *buf, size_t n);
#define TS(t)	hts_str((t), (char[48]){ 0 }, 48)
int64_t elapsed_ns(struct hts a, struct hts b);

struct tk_base {
	uint64_t	sec;
	uint64_t	nsec;	/* shifted for counter clocks, plain for coarse ones */
};

/* How counter cycles become nanoseconds, per record: [0] hres/coarse, [1] raw. */
struct rate {
	uint32_t	mult[2], shift[2];
};

#if VDSO_NR_AUX_CLOCKS
/*
 * The auxiliary clocks (CLOCK_AUX + i, Linux 6.17+), where the layout has
 * their records.  The timekeeper plays a kernel with aux clocks: it enables
 * those whose bit H_AUX_ENABLED sets, each steered apart from the system
 * clocks (a rate and a time of its own, in basetime[0]), and leaves the
 * others disabled (clock mode NONE, stale values behind it), as the kernel
 * leaves an aux clock nobody enabled.  AUX0 and AUX7, the first and last,
 * take both sides.
 */
#define C_AUX		16
#define H_AUX_ENABLED	0x23u		/* AUX0, AUX1, AUX5 */

struct tk_aux {
	int32_t		mode;		/* the system clocks' mode, or CLOCKMODE_NONE: disabled */
	uint32_t	mult, shift;
	uint64_t	max_cycles;
	struct tk_base	base;		/* basetime[0], the clock's time */
};
#endif

struct tk {
	int32_t		mode;
	uint64_t	cycle_last;
	uint64_t	mask;
	uint32_t	mult[2], shift[2];	/* [0] hres/coarse record, [1] raw record */
	uint64_t	max_cycles[2];		/* written only where the layout has the field */
	struct tk_base	base[2][H_NBASES];
	uint32_t	hrtimer_res;
	int32_t		tz_minuteswest, tz_dsttime;
#if VDSO_NR_AUX_CLOCKS
	struct tk_aux	aux[VDSO_NR_AUX_CLOCKS];	/* updated with the system clocks, from the same cycle_last */
#endif
};

extern uint64_t h_hz;			/* the counter's calibrated rate */

/* The raw clock_gettime or clock_getres syscall: 0 or -errno. */
int sys_clock(long nr, int clk, struct vdso_timespec *ts);
int sys_gettime(int clk, struct hts *t);
void sleep_ns(long ns);
void spin(unsigned int n);
/* A rate for @secs seconds of counting (the raw record's differs). */
void pick_rate(uint64_t hz, uint64_t secs, struct rate *r);
/* The "counter" check: measure the counter's rate; 0, or -1 when it is unusable. */
int calibrate(void);
/* What the timekeeper says clock clk (an aux one too) reads at counter value cycles. */
struct hts tk_expect(const struct tk *tk, int clk, uint64_t cycles);
/*
 * The same as Linux's generic formula computes it, in 64 bits: the product
 * of delta and mult, and its sum with the shifted nanoseconds, wrap (a
 * vDSO without overflow protection, read at a count far from cycle_last).
 */
struct hts tk_expect_wrapping(const struct tk *tk, int clk, uint64_t cycles);
/* Writer protocol, both records together: seq odd, barrier, write, barrier, seq even. */
void tk_begin(vdso_time_data_t *td);
void tk_store(vdso_time_data_t *td, const struct tk *tk);
void tk_end(vdso_time_data_t *td);
void tk_publish(vdso_time_data_t *td, const struct tk *tk);
/* Garbage in every base, as a half-done update would leave them. */
void tk_scribble(vdso_time_data_t *td, unsigned long n);
/* Fresh pages for a group: zeroes, then one complete update (at @rate, or the calibrated one). */
void tk_fresh_at(struct tk *tk, int32_t mode, const struct rate *rate);
void tk_fresh(struct tk *tk, int32_t mode);
/* Fresh pages for @mode with its counter's own page in @state, at its rate, which it returns. */
uint64_t tk_fresh_state(struct tk *tk, int32_t mode, int state);

/*
 * A counter that traps when the image reads it, for the checks of clock
 * mode NONE: a test build's injected counter, its page made inaccessible;
 * natively on x86, the TSC under prctl(PR_SET_TSC, PR_TSC_SIGSEGV).  Either
 * raises SIGSEGV.  counter_trap(1) arms it, counter_trap(0) disarms it (safe
 * in a signal handler): 0, or -errno.
 */
#if H_TEST_COUNTER || defined(__x86_64__) || defined(__i386__)
#define H_COUNTER_TRAPS		1
int counter_trap(int on);
#endif

#ifdef HARNESS_HAVE_CLOCK_MODES
/*
 * The writer of the pages some clock modes' counters read (x86's pvclock
 * and hvclock), arch/ARCH/harness-clockmodes.h.j2, defined in the file
 * that defines HARNESS_CLOCK_MODES_IMPL:
 *
 *   harness_mode_page(mode)	the counter of @mode reads a page of its own
 *   harness_mode_setup(mode, state, tsc_hz)
 *				writes it, in state 0 as its writer keeps it, else
 *				as harness_mode_state() names it; returns the
 *				counter's rate in Hz
 *   harness_mode_state(mode, state, &syscall)
 *				the name of @state >= 1 (NULL past the last), and
 *				whether the counter clocks then make the syscall
 *   harness_mode_update_begin(mode, n), harness_mode_update_end(mode)
 *				an update under the page's protocol: garbage in
 *				every field a torn read would use, then the page
 *				as it was
 *   harness_mode_update_waits(mode)
 *				readers wait an update out (else they make the
 *				syscall meanwhile)
 *   harness_mode_now(mode)	the counter now, from the writer's own copy
 */
int harness_mode_page(int32_t mode);
uint64_t harness_mode_setup(int32_t mode, int state, uint64_t tsc_hz);
const char *harness_mode_state(int32_t mode, int state, int *syscall);
void harness_mode_update_begin(int32_t mode, unsigned long n);
void harness_mode_update_end(int32_t mode);
int harness_mode_update_waits(int32_t mode);
uint64_t harness_mode_now(int32_t mode);
#endif

/* ------------------------------------------------------------------ */
/* expect.c                                                            */

/*
 * A flavour of clock_gettime or clock_getres: the native timespec (long
 * seconds, which Linux truncates to 32 bits on 32-bit ABIs past 2038), or
 * the time64 one.  The checks that serve both take one of these.
 */
struct ts_flavour {
	const char	*name;		/* the function, and the prefix of its checks */
	int		impl;		/* its IMPL_ index in h_fn[] */
	long		nr;		/* its syscall */
	size_t		size;		/* of its timespec */
	int		narrow;		/* its seconds are a native long */
	struct h_ret	(*call)(clockid_t clk, void *ts);
	struct hts	(*get)(const void *ts);
};

/* Room for either timespec. */
union ts_buf {
	struct vdso_timespec	ts;
	struct vdso_timespec64	ts64;
};

/* A group of checks of a core function: run where its symbol resolved (h_fn[impl]). */
struct h_group {
	const char	*name;
	int		impl;		/* its IMPL_ index in h_fn[] */
	void		(*run)(void);
};

/* How bench.c calls an export: SH_<SHAPE>, functions.toml's [NAME.harness.bench] shape. */
enum { SH_GETTIME, SH_GETRES, SH_GETTIMEOFDAY, SH_TIME, SH_GETCPU, SH_GETRANDOM, SH_COUNTER };

/* One line of the benchmark: an export called with one clock (or none). */
struct h_bench_row {
	int		impl;		/* its IMPL_ index; -1 ends the table */
	const char	*what;		/* the line's clock ("clock_gettime:MONOTONIC"), or NULL */
	int		shape;		/* SH_ */
	int		clk;		/* clock id, for SH_GETTIME and SH_GETRES; bytes, for SH_GETRANDOM */
	const struct ts_flavour	*fl;	/* how its timespec reads, or NULL */
	void		*syscall;	/* the raw syscall with the export's C type, or NULL */
};

/* The NR_<SYSCALL> macros, fl_<NAME> of the exported functions, and the tables of harness_functions.c. */
#include "harness_functions.h"

void expect_in(struct chk *k, struct hts got, struct hts lo, struct hts hi);
/* The call failed with errno e and left the SENTINEL-filled buffer ts alone. */
void expect_error(struct chk *k, struct h_ret r, int e, const struct vdso_timespec *ts);
void expect_failed(struct chk *k, const struct ts_flavour *fl, struct h_ret r, int e, const void *ts);
void expect_clock(struct chk *k, const struct tk *tk, int clk, const struct hts *off);
void expect_clock_in(struct chk *k, const struct ts_flavour *fl, const struct tk *tk, int clk,
		     const struct hts *off);
void expect_syscall_clock(struct chk *k, int clk);
/* The flavour answers for clk as its raw syscall does (same errno, or a value between two of its readings). */
void expect_as_syscall(struct chk *k, const struct ts_flavour *fl, int clk);
void expect_gettimeofday(struct chk *k, const struct tk *tk, const vdso_time_data_t *tzpage);
void expect_time(struct chk *k, long want);
void expect_time_syscall(struct chk *k);

/* ------------------------------------------------------------------ */
/* The checks and groups: checks-clock.c, checks-modes.c, seqcount.c    */

/*
 * The core functions' checks (checks-clock.c), each run as a group by
 * harness_functions.c as functions.toml's [NAME.harness] checks say: those
 * of a flavour, and those of one function's own (where it is exported).
 */
void check_clocks(const struct ts_flavour *fl);
#if VDSO_NR_AUX_CLOCKS
/* 1 when the image serves the enabled aux clocks from their records, 0 when every aux id makes the syscall. */
int aux_served(const struct ts_flavour *fl);
#endif
void check_resolutions(const struct ts_flavour *fl);
void check_ids(const struct ts_flavour *fl);
void check_gettimeofday(void);
void check_time(void);
void check_getcpu(void);
void check_getrandom(void);
void grp_y2038(void);
void grp_clock_modes(void);
void grp_max_cycles(void);
void grp_timens(void);
#if VDSO_HAS_TIMENS
/* Page 0 a time namespace's, tk's data on the real page beside it; clk's offset there. */
void timens_enter(const struct tk *tk);
struct hts timens_offset(int clk);
#endif
void grp_seqcount(void);
/* Stop a writer or finisher thread, if one runs (after a crash, say). */
void thread_stop(void);

/* ------------------------------------------------------------------ */
/* unwind.c                                                            */

/* Unwinding through the signal trampolines, and returning through them. */
void grp_unwind(void);

/* ------------------------------------------------------------------ */
/* bench.c                                                             */

/* harness --bench ...: the benchmark; its exit status. */
int bench_main(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* trap.c (H_TRAP_SYSCALLS)                                            */

int trap_install(uintptr_t lo, uintptr_t hi);
void grp_trap(void);

/* ------------------------------------------------------------------ */
/* checks-futex.c (x86)                                                */

/*
 * The checks NAME.unlock, .contended and .critical_section of a robust-futex
 * unlock at fn (nothing when NULL) whose pending-op pointer is pop_size
 * bytes; its labels are PREFIX{start,success,end}.
 */
void h_check_futex(const char *name, const char *prefix, void *fn, unsigned pop_size);

#endif /* VDSOGEN_HARNESS_INTERNAL_H */
