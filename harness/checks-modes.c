/*
 * vdsogen test harness: clock_gettime in every clock mode (the counter's,
 * with the states of a paravirtual clock's own page, one it does not
 * serve, NONE), with a small max_cycles (the core's wide-multiply path)
 * and behind a time-namespace page.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pages of clock modes whose counter reads one (harness-clockmodes.h.j2) are written here. */
#define HARNESS_CLOCK_MODES_IMPL	1
#include "internal.h"

#ifdef H_HAS_CLOCK_GETTIME
/*
 * What a Linux image's vDSO does in a clock mode, where vdsogen's images
 * promise more (the driver tells it for an image vdsogen did not build, from
 * vdsogen/harness/linux.toml): VDSOGEN_HARNESS_LINUX_UNSERVED for a mode its
 * counter does not serve, VDSOGEN_HARNESS_LINUX_NONE for mode NONE; each
 * "syscall" (vdsogen's images, always), "counter" (it reads its one counter
 * whatever the mode says) or "zero" (it computes with a count of 0, in the
 * generic formula's 64-bit arithmetic).
 */
enum linux_reads { READS_SYSCALL, READS_COUNTER, READS_ZERO };

static enum linux_reads linux_reads(const char *var)
{
	const char *how = getenv(var);

	if (how && strcmp(how, "counter") == 0)
		return READS_COUNTER;
	if (how && strcmp(how, "zero") == 0)
		return READS_ZERO;
	return READS_SYSCALL;
}

/* The check's name for what the image does in mode @mode. */
static const char *reads_name(enum linux_reads how)
{
	return how == READS_COUNTER ? "counter" : how == READS_ZERO ? "zero" : "syscall";
}

/*
 * clock_gettime(clk) computed with a count of 0: exactly the value of
 * Linux's generic formula at 0, whose 64-bit product wraps (delta is
 * -cycle_last: the "zero" ABIs, MIPS's, have no overflow protection).
 */
static void expect_clock_at_zero(struct chk *k, const struct tk *tk, int clk)
{
	struct vdso_timespec ts;
	struct hts want;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	r = v_clock_gettime(clk, &ts);
	want = tk_expect_wrapping(tk, clk, 0);
	if (!h_ret_ok(r))
		chk_fail(k, "returned %s", RET(r));
	else
		expect_in(k, (struct hts){ ts.tv_sec, ts.tv_nsec }, want, want);
}

/* clk in a mode the image reads as @how says: the syscall's answer, or the formula at tk with its counter or 0. */
static void expect_as_linux(struct chk *k, const struct tk *tk, int clk, enum linux_reads how)
{
	struct tk own = *tk;

	if (how == READS_SYSCALL) {
		expect_syscall_clock(k, clk);
	} else if (how == READS_ZERO) {
		expect_clock_at_zero(k, tk, clk);
	} else {
		own.mode = h_counter_modes[0];	/* the counter it reads, whatever the page's mode */
		expect_clock(k, &own, clk, NULL);
	}
}

/* Every clock the counter advances reads as the formula says at tk, or, without tk, as the syscall says. */
static void expect_counter_clocks(struct chk *k, const struct tk *tk)
{
	size_t i;

	for (i = 0; i < NCLOCKS; i++) {
		if (h_clocks[i].cls == CLS_COARSE)
			continue;
		if (tk)
			expect_clock(k, tk, h_clocks[i].id, NULL);
		else
			expect_syscall_clock(k, h_clocks[i].id);
	}
}

#ifdef HARNESS_HAVE_CLOCK_MODES
/*
 * The harness's own read of @mode's counter, which every check of the mode
 * trusts (vdso_arch.h's, the image's too), against the page's writer: its
 * value, from an arithmetic of the writer's own, and its rate, @hz, against
 * MONOTONIC_RAW over 20 ms.
 */
static void check_mode_counter(int32_t mode, uint64_t hz)
{
	struct hts a0, a1, b0, b1;
	uint64_t lo, hi, v, v0, v1;
	double ns, min, max;
	struct chk k;

	chk_start(&k, "clock_mode.%d.counter", (int)mode);
	lo = harness_mode_now(mode);
	v = vdso_read_counter(mode);
	hi = harness_mode_now(mode);
	if (v < lo || v > hi)
		chk_fail(&k, "vdso_read_counter(%d) read %llu, its page's writer says [%llu, %llu]", (int)mode,
			 (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
	/*
	 * A counter the harness moves from a thread (MIPS's GIC) is as old as
	 * that thread's last turn, milliseconds on a loaded machine: the
	 * writer's read brings it to now inside each bracket, as hardware is.
	 */
	sys_gettime(C_MONOTONIC_RAW, &a0);
	harness_mode_now(mode);
	v0 = vdso_read_counter(mode);
	sys_gettime(C_MONOTONIC_RAW, &a1);
	sleep_ns(20000000);
	sys_gettime(C_MONOTONIC_RAW, &b0);
	harness_mode_now(mode);
	v1 = vdso_read_counter(mode);
	sys_gettime(C_MONOTONIC_RAW, &b1);
	ns = (double)(v1 - v0) * 1e9 / (double)hz;
	min = (double)elapsed_ns(a1, b0) * 0.98 - 1000;
	max = (double)elapsed_ns(a0, b1) * 1.02 + 1000;
	if (ns < min || ns > max)
		chk_fail(&k, "vdso_read_counter(%d) advanced %.0f ns at %llu Hz while MONOTONIC_RAW advanced %.0f-%.0f ns",
			 (int)mode, ns, (unsigned long long)hz, min, max);
	chk_end(&k);
}

/* Each state of @mode's page after the plain one: the counter clocks answer from the page, or make the syscall. */
static void check_mode_states(int32_t mode)
{
	const char *name;
	int state, syscall;
	struct tk tk;
	struct chk k;

	for (state = 1; (name = harness_mode_state(mode, state, &syscall)) != NULL; state++) {
		tk_fresh_state(&tk, mode, state);
		chk_start(&k, "clock_mode.%d.%s", (int)mode, name);
		expect_counter_clocks(&k, syscall ? NULL : &tk);
		chk_end(&k);
	}
}
#endif

#if H_COUNTER_TRAPS
static volatile sig_atomic_t trap_signo;
static void *volatile trap_addr;
static struct sigaction trap_old;

/*
 * The image read the counter: note where, disarm the trap and return, so
 * that the read runs again and the call goes on.  A second fault is no
 * counter read: the group's own handler takes it, as any crash.
 */
static void on_counter_trap(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (trap_signo) {
		sigaction(SIGSEGV, &trap_old, NULL);
		return;
	}
	trap_signo = sig;
	trap_addr = si->si_addr;
	counter_trap(0);
}

/*
 * Mode NONE with a counter that traps when read: Linux's vDSO tests the
 * clock mode before it reads the counter, and in mode NONE never reads it
 * (a TSC the process disabled with PR_SET_TSC, a timer the kernel keeps
 * from user mode).  The counter clocks must answer as the syscall does,
 * with no read of the counter.
 */
static void mode_none_counter_traps(void)
{
	struct sigaction sa;
	struct chk k;
	size_t i;
	int e;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_counter_trap;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NCLOCKS; i++) {
		if (h_clocks[i].cls == CLS_COARSE)
			continue;
		chk_start(&k, "mode_none.trap.%s", h_clocks[i].name);
		trap_signo = 0;
		sigaction(SIGSEGV, &sa, &trap_old);
		e = counter_trap(1);
		if (e != 0) {
			chk_fail(&k, "cannot make the counter trap: %s", strerror(-e));
		} else {
			expect_syscall_clock(&k, h_clocks[i].id);
			counter_trap(0);
			if (trap_signo)
				chk_fail(&k, "read the counter in clock mode NONE (signal %d, address %p)",
					 (int)trap_signo, trap_addr);
		}
		sigaction(SIGSEGV, &trap_old, NULL);
		chk_end(&k);
	}
}
#endif

void grp_clock_modes(void)
{
	struct tk tk;
	enum linux_reads unserved, none;
	const char *env;
	struct chk k;
	int32_t mode, top = 0;
	uint64_t hz;
	size_t i;

	/*
	 * Every counter mode of the spec is read from the page; a mode whose
	 * counter reads a page of its own (a paravirtual clock) also in that
	 * page's other states.
	 */
	for (i = 0; i < H_NCOUNTER_MODES; i++) {
		mode = h_counter_modes[i];
		if (mode > top)
			top = mode;
		hz = tk_fresh_state(&tk, mode, 0);
#ifdef HARNESS_HAVE_CLOCK_MODES
		if (harness_mode_page(mode))
			check_mode_counter(mode, hz);
#endif
		chk_start(&k, "clock_mode.%d", (int)mode);
		expect_counter_clocks(&k, &tk);
		chk_end(&k);
#ifdef HARNESS_HAVE_CLOCK_MODES
		if (harness_mode_page(mode))
			check_mode_states(mode);
#endif
	}
	(void)hz;

	/*
	 * A mode this counter does not serve goes to the syscall (in a Linux
	 * image, as its vDSO treats it: linux_reads(), in a mode its kernel's
	 * counter read does not serve either, which the driver says: MIPS's
	 * serves the GIC, mode 2, where vdsogen's spec may not).
	 */
	mode = top + 1;
	if ((env = getenv("VDSOGEN_HARNESS_LINUX_UNSERVED_MODE")) && strtol(env, NULL, 10) > mode)
		mode = (int32_t)strtol(env, NULL, 10);
	tk_fresh(&tk, mode);
	unserved = linux_reads("VDSOGEN_HARNESS_LINUX_UNSERVED");
	chk_start(&k, "clock_mode.%d.%s", (int)mode, reads_name(unserved));
	for (i = 0; i < NCLOCKS; i++)
		if (h_clocks[i].cls != CLS_COARSE)
			expect_as_linux(&k, &tk, h_clocks[i].id, unserved);
	chk_end(&k);

	/*
	 * Mode NONE: high-resolution and raw clocks come from the syscall.
	 * Coarse clocks answer from the page, which Linux keeps current in
	 * every mode, unless the spec says this page writer stops them too
	 * (coarse_in_mode_none = "syscall"); time() follows the coarse clocks.
	 */
	tk_fresh(&tk, CLOCKMODE_NONE);
	none = linux_reads("VDSOGEN_HARNESS_LINUX_NONE");
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "mode_none.%s", h_clocks[i].name);
		if (h_clocks[i].cls == CLS_COARSE && !VDSO_COARSE_IN_MODE_NONE_SYSCALL)
			expect_clock(&k, &tk, h_clocks[i].id, NULL);
		else if (h_clocks[i].cls == CLS_COARSE)
			expect_syscall_clock(&k, h_clocks[i].id);
		else
			expect_as_linux(&k, &tk, h_clocks[i].id, none);
		chk_end(&k);
	}
#if H_COUNTER_TRAPS
	mode_none_counter_traps();
#endif
#ifdef H_HAS_GETTIMEOFDAY
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		struct vdso_timeval tv;
		struct hts s0, s1, got;
		struct h_ret r;

		chk_start(&k, "mode_none.gettimeofday");
		if (none == READS_COUNTER) {
			struct tk own = tk;

			own.mode = h_counter_modes[0];	/* the counter it reads in mode NONE too */
			expect_gettimeofday(&k, &own, page_time());
			chk_end(&k);
		} else {
			memset(&tv, SENTINEL, sizeof(tv));
			sys_gettime(C_REALTIME, &s0);
			r = v_gettimeofday(&tv, NULL);
			sys_gettime(C_REALTIME, &s1);
			s0.nsec = s0.nsec / 1000 * 1000;
			s1.nsec = s1.nsec / 1000 * 1000;
			got.sec = tv.tv_sec;
			got.nsec = tv.tv_usec * 1000L;
			if (!h_ret_ok(r))
				chk_fail(&k, "returned %s", RET(r));
			else
				expect_in(&k, got, s0, s1);
			chk_end(&k);
		}
	}
#endif
#ifdef H_HAS_TIME
	if (h_fn[IMPL_TIME]) {
		chk_start(&k, "mode_none.time");
		if (VDSO_COARSE_IN_MODE_NONE_SYSCALL)
			expect_time_syscall(&k);
		else
			expect_time(&k, (long)tk.base[0][C_REALTIME].sec);
		chk_end(&k);
	}
#endif
}

#if VDSO_HAS_MAX_CYCLES
/* max_cycles 1: every read takes the core's wide-multiply branch. */
static void max_cycles_forced(void)
{
	struct tk tk;
	struct chk k;

	chk_start(&k, "max_cycles.forced");
	tk_fresh(&tk, h_counter_modes[0]);
	tk.max_cycles[0] = tk.max_cycles[1] = 1;
	tk_publish(page_time(), &tk);
	expect_counter_clocks(&k, &tk);
	chk_end(&k);
}

/*
 * A rate whose honest max_cycles is a few seconds of counting, and
 * cycle_last further back than that in both records: delta * mult no
 * longer fits 64 bits, and only a 128-bit product gives the formula's value.
 */
static void max_cycles_overflow(void)
{
	struct rate wide;
	uint64_t back, now;
	struct tk tk;
	struct chk k;

	chk_start(&k, "max_cycles.overflow");
	pick_rate(h_hz, 1, &wide);
	tk_fresh_at(&tk, h_counter_modes[0], &wide);
	back = tk.max_cycles[0] > tk.max_cycles[1] ? tk.max_cycles[0] : tk.max_cycles[1];
	back += back / 4;
	now = vdso_read_counter(tk.mode);
	if (now <= back) {
		chk_fail(&k, "the counter reads %llu: too little to start %llu cycles back",
			 (unsigned long long)now, (unsigned long long)back);
	} else {
		tk.cycle_last = now - back;
		tk_publish(page_time(), &tk);
		expect_counter_clocks(&k, &tk);
	}
	chk_end(&k);
}

void grp_max_cycles(void)
{
	max_cycles_forced();
	max_cycles_overflow();
}
#endif

#if VDSO_HAS_TIMENS
/* Namespace offsets: MONOTONIC* get the monotonic one, BOOTTIME* the boottime one. */
struct hts timens_offset(int clk)
{
	static const struct hts mono = { 500000, 900000000 }, boot = { -100000, 400000000 }, none = { 0, 0 };

	switch (clk) {
	case C_MONOTONIC:
	case C_MONOTONIC_RAW:
	case C_MONOTONIC_COARSE:
		return mono;
	case C_BOOTTIME:
	case C_BOOTTIME_ALARM:
		return boot;
	default:
		return none;
	}
}

/* Page 0 becomes a namespace page; the real data moves to the timens page. */
void timens_enter(const struct tk *tk)
{
	vdso_time_data_t *ns = page_time(), *real = page_real_in_ns();
	vdso_clock_t *vc = VDSO_CLOCKS(ns);
	int rec, i;

	tk_publish(real, tk);
	memset(ns, 0, sizeof(*ns));
	for (rec = 0; rec < 2; rec++) {
		vc[rec].seq = 1;
		vc[rec].clock_mode = CLOCKMODE_TIMENS;
		for (i = 0; i < H_NBASES; i++) {
			struct hts off = timens_offset(i);

			vc[rec].basetime[i].sec = (uint64_t)off.sec;
			vc[rec].basetime[i].nsec = (uint64_t)off.nsec;
		}
	}
#if VDSO_NR_AUX_CLOCKS
	/* The aux records too, without offsets: a namespace does not shift aux clocks. */
	for (i = 0; i < VDSO_NR_AUX_CLOCKS; i++) {
		VDSO_AUX_CLOCKS(ns)[i].seq = 1;
		VDSO_AUX_CLOCKS(ns)[i].clock_mode = CLOCKMODE_TIMENS;
	}
#endif
	/* Values only a reader of the wrong page would find. */
	VDSO_TZ_MINUTESWEST(ns) = 333;
	VDSO_TZ_DSTTIME(ns) = 444;
	VDSO_HRTIMER_RES(ns) = 7777;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void grp_timens(void)
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	timens_enter(&tk);
	for (i = 0; i < NCLOCKS; i++) {
		struct hts off = timens_offset(h_clocks[i].id);

		chk_start(&k, "timens.%s", h_clocks[i].name);
		expect_clock(&k, &tk, h_clocks[i].id, &off);
		chk_end(&k);
	}
#if VDSO_NR_AUX_CLOCKS
	/* AUX0, enabled: the real page's record, no offset (or the syscall, where the image serves none). */
	chk_start(&k, "timens.AUX0");
	if (aux_served(&fl_clock_gettime))
		expect_clock(&k, &tk, C_AUX, NULL);
	else
		expect_syscall_clock(&k, C_AUX);
	chk_end(&k);
#endif
#ifdef H_HAS_GETTIMEOFDAY
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		chk_start(&k, "timens.gettimeofday");
		expect_gettimeofday(&k, &tk, page_real_in_ns());
		chk_end(&k);
	}
#endif
#ifdef H_HAS_TIME
	if (h_fn[IMPL_TIME]) {
		chk_start(&k, "timens.time");
		expect_time(&k, (long)tk.base[0][C_REALTIME].sec);
		chk_end(&k);
	}
#endif
#ifdef H_HAS_CLOCK_GETRES
	if (h_fn[IMPL_CLOCK_GETRES]) {
		struct vdso_timespec ts;
		struct h_ret r;

		chk_start(&k, "timens.clock_getres");
		memset(&ts, SENTINEL, sizeof(ts));
		r = v_clock_getres(C_MONOTONIC, &ts);
		if (!h_ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else if (ts.tv_sec != 0 || ts.tv_nsec != (long)tk.hrtimer_res)
			chk_fail(&k, "{%ld, %ld}, the real page says {0, %u}", ts.tv_sec, ts.tv_nsec,
				 tk.hrtimer_res);
		chk_end(&k);
	}
#endif
}
#endif
#endif /* H_HAS_CLOCK_GETTIME */
