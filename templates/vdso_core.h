/*
 * The generic vDSO time core, the same file for every vdsogen target.
 *
 * Everything that differs between targets comes from three generated
 * headers: vdso_config.h (which functions to build, the data-page layout's
 * names, the counter's clock modes and quirks), datapage.h (the data-page
 * structures) and vdso_arch.h (the hooks vdso_read_counter(), vdso_rmb(),
 * vdso_cpu_relax() and vdso_syscall(), and optionally vdso_read_cycles(),
 * vdso_cycles_mode(), vdso_read_cycles_split() and vdso_cycles_ok()).
 * Every function returns 0 or -errno (time() returns the time) in its
 * export's C type, and falls back to the real syscall whenever the data
 * page cannot answer.
 *
 * Each function is a short hot path for the common case, inlined into its
 * entry point: one pass under the seqcount, the clock record at a constant
 * address, the counter of the common clock mode read inline, nothing that
 * needs a callee-saved register.  Whatever is rare leaves it for a cold
 * function out of line, which starts over and does everything: an update
 * in progress (odd sequence) or one that raced the read, a time-namespace
 * page, the other clock modes, a counter delta past max_cycles or behind
 * cycle_last, clock mode NONE, and the syscall.
 *
 * 32-bit targets get the same code: the legacy entry points hand back the
 * native `long` seconds (truncated past 2038, as Linux's do) and the
 * *_time64 ones 64-bit seconds; nothing needs a libgcc helper.
 */
#ifndef VDSOGEN_CORE_H
#define VDSOGEN_CORE_H

#include <stdbool.h>
#include "vdso_config.h"
#include "vdso_types.h"
#include "datapage.h"
#include "vdso_arch.h"

#define NSEC_PER_SEC		1000000000ULL

/* Clock ids (uapi linux/time.h) and the classes the data page serves. */
#define CLOCK_REALTIME			0
#define CLOCK_MONOTONIC			1
#define CLOCK_MONOTONIC_RAW		4
#define CLOCK_REALTIME_COARSE		5
#define CLOCK_MONOTONIC_COARSE		6
#define CLOCK_BOOTTIME			7
#define CLOCK_TAI			11
#define VDSO_MAX_CLOCKS			16
#define CLOCK_AUX			16	/* CLOCK_AUX + i: auxiliary clock i (v6.17+) */

#define VDSO_HRES	((1U << CLOCK_REALTIME) | (1U << CLOCK_MONOTONIC) | \
			 (1U << CLOCK_BOOTTIME) | (1U << CLOCK_TAI))
#define VDSO_COARSE	((1U << CLOCK_REALTIME_COARSE) | (1U << CLOCK_MONOTONIC_COARSE))
#define VDSO_RAW	(1U << CLOCK_MONOTONIC_RAW)

/* Clock records: [CS_HRES_COARSE] serves hres and coarse clocks, [CS_RAW] the raw clock. */
#define CS_HRES_COARSE	0
#define CS_RAW		1

#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/*
 * Out of line and rarely run: the compilers keep it away from the hot code,
 * which reaches it by a tail call.  The cold functions take their export's
 * arguments first, in its order, and the time data last, as the asm
 * entries of some targets pass them: the tail call finds them where they
 * are.  For the same reason gcc gets noipa: a copy specialised for the
 * constant time data would take the arguments in other registers, and the
 * hot path would pay for the shuffle.
 */
/*
 * A spec that aligns hot code wide (x86_64's -falign-functions=64) asks less
 * of cold code with -DVDSO_COLD_ALIGN=N: clang pads every function to the
 * flag's width unless it carries an alignment of its own.
 */
#ifdef VDSO_COLD_ALIGN
#define __vdso_cold_align	__attribute__((__aligned__(VDSO_COLD_ALIGN)))
#else
#define __vdso_cold_align
#endif
#if defined(__has_attribute) && !defined(__vdso_cold)	/* vdso_arch.h may define it */
#if __has_attribute(__noipa__)
#define __vdso_cold	__attribute__((__noipa__, __cold__)) __vdso_cold_align
#endif
#endif
#ifndef __vdso_cold
#define __vdso_cold	__attribute__((__noinline__, __cold__)) __vdso_cold_align
#endif

/* How a read from the data page ended. */
enum vdso_read {
	VDSO_OK,
	VDSO_SYSCALL,		/* the page cannot answer: make the syscall */
	VDSO_COLD,		/* the hot path cannot answer: the cold path will */
#if VDSO_HAS_TIMENS
	VDSO_TIMENS,		/* this is a time-namespace page */
#endif
};

static __always_inline const vdso_clock_t *vdso_clocks(const vdso_time_data_t *vd)
{
	return VDSO_CLOCKS(vd);
}

/*
 * Whether @vd may be a time-namespace page, told by its sequence alone (no
 * constant to build): a namespace page's stays odd.  Otherwise an odd
 * sequence only means an update in progress; the cold paths, which look at
 * clock_mode, tell the two apart.
 */
static __always_inline bool vdso_maybe_timens(const vdso_time_data_t *vd)
{
	return VDSO_HAS_TIMENS && (READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].seq) & 1);
}

#if VDSO_HAS_TIMENS
/*
 * The time data to read tz, hrtimer_res and time() from: in a namespace
 * (clock_mode TIMENS), the real page.
 */
static __always_inline const vdso_time_data_t *vdso_real_data(const vdso_time_data_t *vd)
{
	if (READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].clock_mode) == VDSO_CLOCKMODE_TIMENS)
		return (const void *)((const char *)vd + VDSO_TIMENS_REAL_OFFSET);
	return vd;
}
#else
static __always_inline const vdso_time_data_t *vdso_real_data(const vdso_time_data_t *vd)
{
	return vd;
}
#endif

/* The clock modes in which the counter may be read. */
static __always_inline bool vdso_counter_mode_ok(int32_t mode)
{
	return VDSO_COUNTER_MODE_OK(mode);
}

#ifndef vdso_cycles_ok
/* A counter whose reads can fail (a paravirtual clock) overrides this in vdso_arch.h. */
static __always_inline bool vdso_cycles_ok(uint64_t cycles)
{
	(void)cycles;
	return true;
}
#endif

/*
 * The counter the hot path reads inline, vdso_read_cycles() (or, for a
 * counter read in two halves, vdso_read_cycles_split()), and the clock
 * modes in which it is the counter, vdso_cycles_mode().  A counter
 * fragment that defines only vdso_read_counter() gets the counter of the
 * spec's first clock mode, in that mode.
 */
#ifndef vdso_cycles_mode
static __always_inline bool vdso_cycles_mode(int32_t mode)
{
	return mode == VDSO_COUNTER_FIRST_MODE;
}
#endif

#if !defined(vdso_read_cycles) && !defined(vdso_read_cycles_split)
static __always_inline uint64_t vdso_read_cycles(void)
{
	return vdso_read_counter(VDSO_COUNTER_FIRST_MODE);
}
#endif

#ifndef vdso_shift_ns
/* ns >> shift; an arch overrides it where a variable 64-bit shift is a libgcc call (ppc32). */
static __always_inline uint64_t vdso_shift_ns(uint64_t ns, uint32_t shift)
{
	return ns >> shift;
}
#endif

/* (delta * mult + base) >> shift with a 96-bit intermediate, from 32x32 multiplies on 32-bit targets. */
static __always_inline uint64_t vdso_mul_add_shr(uint64_t delta, uint32_t mult, uint64_t base, uint32_t shift)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)delta * mult + base) >> shift);
#else
	uint64_t lo = (uint64_t)(uint32_t)delta * mult;
	uint64_t mid = (uint64_t)(uint32_t)(delta >> 32) * mult;
	uint64_t sum = lo + base;
	uint64_t hi = (mid >> 32) + (sum < lo);
	uint64_t low = sum + (mid << 32);

	hi += low < sum;
	if (!shift)
		return low;
	return (low >> shift) | (hi << (64 - shift));
#endif
}

/*
 * Carry whole seconds from @ns into @sec by subtraction: ns is almost
 * always below a second already, and the empty asm keeps the compiler from
 * turning the loop into a 64-bit division, which 32-bit targets would
 * leave to a libgcc helper.
 */
static __always_inline void vdso_normalize(uint64_t *sec, uint64_t *ns)
{
	uint64_t s = *sec, n = *ns;

	while (unlikely(n >= NSEC_PER_SEC)) {
		__asm__("" : "+r"(n));
		n -= NSEC_PER_SEC;
		s++;
	}
	*sec = s;
	*ns = n;
}

/*
 * Whether @clock is an auxiliary clock the layout has a record of
 * (VDSO_NR_AUX_CLOCKS: none before v6.17).  They are rare: the hot path
 * sends them to the cold one, which reads their records.
 */
static __always_inline bool vdso_is_aux(clockid_t clock)
{
#if VDSO_NR_AUX_CLOCKS
	return (uint32_t)clock - CLOCK_AUX < VDSO_NR_AUX_CLOCKS;
#else
	(void)clock;
	return false;
#endif
}

/* ------------------------------------------------------------------ */
/* The hot paths                                                       */

/*
 * One pass of the seqcount reader, checked once at its end: the record was
 * stable if the sequence, read again, equals its first value with the low
 * bit cleared.  An even first value must be unchanged; after an odd one
 * (an update in progress, or a time-namespace page, whose sequence stays
 * 1) the sequence can only have moved on, so the test fails and the cold
 * path, which waits, takes over.  What was computed from a torn record in
 * between is thrown away.
 */
static __always_inline bool vdso_read_stable(const vdso_clock_t *vc, uint32_t seq)
{
	vdso_rmb();
	return READ_ONCE(vc->seq) == (seq & ~1U);
}

#ifdef vdso_read_cycles_split
/*
 * The counter's advance past cycle_last, for a counter read in two 32-bit
 * halves (x86's edx:eax).  The delta comes from the low halves alone, so
 * the result does not wait for the halves to be joined, and it is a 32-bit
 * number: one 32x32 multiply on a 32-bit CPU.  That needs the high halves
 * to agree; a delta across a 2^32 boundary, like one behind cycle_last,
 * takes the cold path.
 */
static __always_inline bool vdso_hot_delta(const vdso_clock_t *vc, uint64_t *delta)
{
	uint32_t hi, lo = vdso_read_cycles_split(&hi);
	uint32_t last = (uint32_t)vc->cycle_last;

	if (unlikely(hi != (uint32_t)(vc->cycle_last >> 32) || lo < last))
		return false;
	*delta = lo - last;
#if VDSO_COUNTER_MASK
	*delta &= vc->mask;
#endif
	return true;
}
#else
/*
 * The counter's advance past cycle_last; false when the hot path cannot use
 * it.  A counter that trails cycle_last (skew between CPUs) goes to the
 * cold path, which clamps it, where the spec says it may; unmasked, its
 * delta fails the max_cycles test anyway.
 */
static __always_inline bool vdso_hot_delta(const vdso_clock_t *vc, uint64_t *delta)
{
	uint64_t cycles = vdso_read_cycles();

	*delta = cycles - vc->cycle_last;
#if VDSO_COUNTER_MASK
	*delta &= vc->mask;
#endif
#if VDSO_COUNTER_CLAMP_BACKWARDS && (VDSO_COUNTER_MASK || !VDSO_HAS_MAX_CYCLES)
	if (unlikely(cycles < vc->cycle_last))
		return false;
#endif
	return true;
}
#endif

/*
 * A counter clock, base @clk of record @vc, in one pass.  The sequence is
 * loaded first, then the clock mode, and only in a mode the hot path
 * serves is the counter read: as Linux's, the image never touches the
 * counter in a mode that says it may not be read (mode NONE: a TSC that
 * traps under PR_SET_TSC, a timer the kernel keeps from user mode).  The
 * counter's read is volatile asm, which no compiler moves above the branch
 * that guards it; its own ordering keeps it after the loads before it.
 * Past max_cycles, and so with a counter behind cycle_last, the product
 * needs more than 64 bits: the cold path.  So is a result past a whole
 * second, which happens only between a second boundary and the next update.
 */
static __always_inline enum vdso_read
vdso_hres_fast(const vdso_clock_t *vc, uint32_t clk, struct vdso_timespec64 *ts)
{
	uint64_t delta, sec, ns;
	uint32_t seq;

	seq = READ_ONCE(vc->seq);
	vdso_rmb();
	if (unlikely(!vdso_cycles_mode(vc->clock_mode)))
		return VDSO_COLD;
	if (unlikely(!vdso_hot_delta(vc, &delta)))
		return VDSO_COLD;
#if VDSO_HAS_MAX_CYCLES
	if (unlikely(delta > vc->max_cycles))
		return VDSO_COLD;
#endif
	sec = vc->basetime[clk].sec;
	ns = vdso_shift_ns(delta * vc->mult + vc->basetime[clk].nsec, vc->shift);
	if (unlikely(!vdso_read_stable(vc, seq)))
		return VDSO_COLD;
	/* A second boundary passed since the last update: rare, the cold path carries it. */
	if (unlikely(ns >= NSEC_PER_SEC))
		return VDSO_COLD;
	ts->tv_sec = sec;
	ts->tv_nsec = ns;
	return VDSO_OK;
}

/* A coarse clock: a consistent copy of base @clk, which the kernel keeps normalised. */
static __always_inline enum vdso_read
vdso_coarse_fast(const vdso_clock_t *vc, uint32_t clk, struct vdso_timespec64 *ts)
{
	uint64_t sec, ns;
	uint32_t seq;

	seq = READ_ONCE(vc->seq);
	vdso_rmb();
	sec = vc->basetime[clk].sec;
	ns = vc->basetime[clk].nsec;
	if (unlikely(!vdso_read_stable(vc, seq)))
		return VDSO_COLD;
#if VDSO_COARSE_IN_MODE_NONE_SYSCALL
	if (unlikely(vc->clock_mode == VDSO_CLOCKMODE_NONE))
		return VDSO_COLD;
#endif
	ts->tv_sec = sec;
	ts->tv_nsec = ns;
	return VDSO_OK;
}

/*
 * The time of @clock with 64-bit seconds, the hot read every clock_gettime
 * flavour shares: VDSO_OK; VDSO_SYSCALL for a clock the page never serves
 * (CPU-time clocks, invalid ids), which goes straight to the syscall as in
 * Linux; or VDSO_COLD when the cold path must answer.
 */
static __always_inline enum vdso_read
vdso_clock_read(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *ts)
{
	const vdso_clock_t *vc = vdso_clocks(vd);

	/* Negative ids (CPU clocks, clock fds) wrap to large values here. */
	if (unlikely((uint32_t)clock >= VDSO_MAX_CLOCKS))
		return vdso_is_aux(clock) ? VDSO_COLD : VDSO_SYSCALL;
	if (likely((VDSO_HRES >> clock) & 1))
		return vdso_hres_fast(&vc[CS_HRES_COARSE], clock, ts);
	if ((VDSO_COARSE >> clock) & 1)
		return vdso_coarse_fast(&vc[CS_HRES_COARSE], clock, ts);
	if (clock == CLOCK_MONOTONIC_RAW)
		return vdso_hres_fast(&vc[CS_RAW], CLOCK_MONOTONIC_RAW, ts);
	return VDSO_SYSCALL;
}

/* ------------------------------------------------------------------ */
/* The cold path: every case, as the data-page contract describes it   */

/* Nanoseconds at @cycles, from a base in shifted nanoseconds. */
static __always_inline uint64_t
vdso_counter_ns(const vdso_clock_t *vc, uint64_t cycles, uint64_t base)
{
	uint64_t last = vc->cycle_last;
	uint64_t delta;

#if VDSO_COUNTER_CLAMP_BACKWARDS
	/* A counter that trails cycle_last (skew between CPUs) adds no time. */
	if (cycles <= last)
		return vdso_shift_ns(base, vc->shift);
#endif
	delta = cycles - last;
#if VDSO_COUNTER_MASK
	delta &= vc->mask;
#endif
#if VDSO_HAS_MAX_CYCLES
	/* Past max_cycles, delta * mult no longer fits in 64 bits. */
	if (delta > vc->max_cycles)
		return vdso_mul_add_shr(delta, vc->mult, base, vc->shift);
#endif
	return vdso_shift_ns(delta * vc->mult + base, vc->shift);
}

/*
 * Seqcount reader: wait until no update is in progress.  A sequence that
 * stays odd with clock_mode TIMENS marks a time-namespace page.
 */
static __always_inline enum vdso_read vdso_read_begin(const vdso_clock_t *vc, uint32_t *seq)
{
	while ((*seq = READ_ONCE(vc->seq)) & 1) {
#if VDSO_HAS_TIMENS
		if (READ_ONCE(vc->clock_mode) == VDSO_CLOCKMODE_TIMENS)
			return VDSO_TIMENS;
#endif
		vdso_cpu_relax();
	}
	vdso_rmb();
	return VDSO_OK;
}

static __always_inline bool vdso_read_retry(const vdso_clock_t *vc, uint32_t seq)
{
	vdso_rmb();
	return READ_ONCE(vc->seq) != seq;
}

/* Read base @clk of @vc; with @counter, advance it by the counter. */
static __always_inline enum vdso_read
vdso_read_clock(const vdso_clock_t *vc, clockid_t clk, bool counter, uint64_t *sec, uint64_t *ns)
{
	enum vdso_read ret;
	uint64_t cycles;
	int32_t mode;
	uint32_t seq;

	do {
		ret = vdso_read_begin(vc, &seq);
		if (ret != VDSO_OK)
			return ret;
		*sec = vc->basetime[clk].sec;
		*ns = vc->basetime[clk].nsec;
		if (counter) {
			mode = vc->clock_mode;
			if (!vdso_counter_mode_ok(mode))
				return VDSO_SYSCALL;
			cycles = vdso_read_counter(mode);
			if (!vdso_cycles_ok(cycles))
				return VDSO_SYSCALL;
			*ns = vdso_counter_ns(vc, cycles, *ns);
#if VDSO_COARSE_IN_MODE_NONE_SYSCALL
		} else if (vc->clock_mode == VDSO_CLOCKMODE_NONE) {
			/* This page writer stops the coarse bases too in clock mode NONE. */
			return VDSO_SYSCALL;
#endif
		}
	} while (vdso_read_retry(vc, seq));
	return VDSO_OK;
}

#if VDSO_HAS_CLOCK_GETTIME || VDSO_HAS_CLOCK_GETTIME64 || VDSO_HAS_GETTIMEOFDAY
/* The time of @clock, whatever the page holds: VDSO_OK, or VDSO_SYSCALL. */
static __vdso_cold enum vdso_read
vdso_clock_read_cold(clockid_t clock, struct vdso_timespec64 *ts, const vdso_time_data_t *vd)
{
	const vdso_timestamp_t *offs = NULL;
#if VDSO_HAS_TIMENS
	const vdso_time_data_t *real = NULL;
#endif
	const vdso_clock_t *vc;
	uint64_t sec, ns;
	enum vdso_read ret;
	uint32_t msk, base = clock;
	size_t at;		/* the record's offset from the clock records, the same on every page */
	bool counter;

	msk = (uint32_t)clock >= VDSO_MAX_CLOCKS ? 0 : 1U << clock;
	if (msk & VDSO_HRES) {
		at = CS_HRES_COARSE * sizeof(*vc);
		counter = true;
	} else if (msk & VDSO_COARSE) {
		at = CS_HRES_COARSE * sizeof(*vc);
		counter = false;
	} else if (msk & VDSO_RAW) {
		at = CS_RAW * sizeof(*vc);
		counter = true;
#if VDSO_NR_AUX_CLOCKS
	} else if (vdso_is_aux(clock)) {
		/* Aux clock i: record aux[i], its time in basetime[0], read as an hres clock is. */
		at = (const char *)&VDSO_AUX_CLOCKS(vd)[clock - CLOCK_AUX] - (const char *)vdso_clocks(vd);
		base = 0;
		counter = true;
#endif
	} else {
		return VDSO_SYSCALL;
	}

	for (;;) {
		vc = (const vdso_clock_t *)((const char *)vdso_clocks(vd) + at);
		ret = vdso_read_clock(vc, base, counter, &sec, &ns);
#if VDSO_HAS_TIMENS
		if (ret == VDSO_TIMENS && !real) {
			/*
			 * A namespace page: its basetime[] are offsets (sec signed,
			 * ns plain) to the real clock.  An aux clock's slot 0 is
			 * REALTIME's, which no namespace offsets (the kernel leaves
			 * it 0): a namespace does not shift the aux clocks.
			 */
			offs = &vc->basetime[base];
			vd = real = vdso_real_data(vd);
			continue;
		}
#endif
		break;
	}
	if (ret != VDSO_OK)
		return VDSO_SYSCALL;
	if (offs) {
		sec += offs->sec;
		ns += offs->nsec;
	}

	vdso_normalize(&sec, &ns);
	ts->tv_sec = sec;
	ts->tv_nsec = ns;
	return VDSO_OK;
}
#endif /* a function that reads a clock: an image may have none (riscv32) */

/* ------------------------------------------------------------------ */
/* The functions                                                       */

#if VDSO_HAS_CLOCK_GETTIME
/* The native timespec: on 32-bit targets its seconds wrap in 2038, as Linux's own vDSO lets them. */
static __vdso_cold int
vdso_clock_gettime_cold(clockid_t clock, struct vdso_timespec *ts, const vdso_time_data_t *vd)
{
	struct vdso_timespec64 t;

	if (vdso_clock_read_cold(clock, &t, vd) != VDSO_OK)
		return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);
	ts->tv_sec = t.tv_sec;
	ts->tv_nsec = t.tv_nsec;
	return 0;
}

static __always_inline int
vdso_clock_gettime(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec *ts)
{
	struct vdso_timespec64 t;
	enum vdso_read r = vdso_clock_read(vd, clock, &t);

	if (unlikely(r == VDSO_SYSCALL))
		return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);
	if (r != VDSO_OK)
		return vdso_clock_gettime_cold(clock, ts, vd);
	ts->tv_sec = t.tv_sec;
	ts->tv_nsec = t.tv_nsec;
	return 0;
}
#endif

#if VDSO_HAS_CLOCK_GETTIME64
static __vdso_cold int
vdso_clock_gettime64_cold(clockid_t clock, struct vdso_timespec64 *ts, const vdso_time_data_t *vd)
{
	if (vdso_clock_read_cold(clock, ts, vd) == VDSO_OK)
		return 0;
	return vdso_syscall(VDSO_NR_clock_gettime64, clock, (long)ts, 0);
}

static __always_inline int
vdso_clock_gettime64(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *ts)
{
	enum vdso_read r = vdso_clock_read(vd, clock, ts);

	if (likely(r == VDSO_OK))
		return 0;
	if (r == VDSO_SYSCALL)
		return vdso_syscall(VDSO_NR_clock_gettime64, clock, (long)ts, 0);
	return vdso_clock_gettime64_cold(clock, ts, vd);
}
#endif

#if VDSO_HAS_GETTIMEOFDAY
/* settimeofday() writes the timezone without the seqcount; so do we read it. */
static __always_inline void vdso_timezone(const vdso_time_data_t *vd, struct vdso_timezone *tz)
{
	vd = vdso_real_data(vd);
	tz->tz_minuteswest = READ_ONCE(VDSO_TZ_MINUTESWEST(vd));
	tz->tz_dsttime = READ_ONCE(VDSO_TZ_DSTTIME(vd));
}

static __vdso_cold int
vdso_gettimeofday_cold(struct vdso_timeval *tv, struct vdso_timezone *tz, const vdso_time_data_t *vd)
{
	struct vdso_timespec64 ts;

	if (tv) {
		if (vdso_clock_read_cold(CLOCK_REALTIME, &ts, vd) != VDSO_OK)
			return vdso_syscall(VDSO_NR_gettimeofday, (long)tv, (long)tz, 0);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = (uint32_t)ts.tv_nsec / 1000;
	}
	if (tz)
		vdso_timezone(vd, tz);
	return 0;
}

/*
 * Once the hot read of REALTIME has answered, @vd is known to be the real
 * page, the one to read the timezone from.  A call for the timezone alone
 * is rare: the cold path answers it.
 */
static __always_inline int
vdso_gettimeofday(const vdso_time_data_t *vd, struct vdso_timeval *tv, struct vdso_timezone *tz)
{
	if (tv) {
		struct vdso_timespec64 ts;

		if (vdso_clock_read(vd, CLOCK_REALTIME, &ts) != VDSO_OK)
			return vdso_gettimeofday_cold(tv, tz, vd);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = (uint32_t)ts.tv_nsec / 1000;
	} else {
		return vdso_gettimeofday_cold(tv, tz, vd);
	}
	if (unlikely(tz)) {
		tz->tz_minuteswest = READ_ONCE(VDSO_TZ_MINUTESWEST(vd));
		tz->tz_dsttime = READ_ONCE(VDSO_TZ_DSTTIME(vd));
	}
	return 0;
}
#endif

#if VDSO_HAS_TIME
/*
 * One load, no seqcount: the kernel keeps REALTIME's seconds current even
 * in clock mode NONE.  In a time namespace they come from the real page.
 */
static __always_inline long vdso_time(const vdso_time_data_t *vd, long *t)
{
	long secs;

	if (unlikely(vdso_maybe_timens(vd)))
		vd = vdso_real_data(vd);
#if VDSO_COARSE_IN_MODE_NONE_SYSCALL
	/* This page writer stops REALTIME's seconds too in clock mode NONE: ask the kernel. */
	if (unlikely(READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].clock_mode) == VDSO_CLOCKMODE_NONE)) {
		struct vdso_timespec ts;
		long ret = vdso_syscall(VDSO_NR_clock_gettime, CLOCK_REALTIME_COARSE, (long)&ts, 0);

		if (ret)
			return ret;
		secs = ts.tv_sec;
	} else
#endif
	secs = READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].basetime[CLOCK_REALTIME].sec);
	if (t)
		*t = secs;
	return secs;
}
#endif

/*
 * The resolution of @clock in ns, or -1 when the page does not serve it.
 * hrtimer_res is one store of the kernel's, read without the seqcount, from
 * the real page in a namespace.  Every auxiliary clock's is 1 ns, enabled
 * or not, as Linux's vDSO answers.
 */
static __always_inline long vdso_clock_res(const vdso_time_data_t *vd, clockid_t clock)
{
	if (unlikely((uint32_t)clock >= VDSO_MAX_CLOCKS))
		return vdso_is_aux(clock) ? 1 : -1;
	if (unlikely(!(((VDSO_HRES | VDSO_RAW) >> clock) & 1)))
		return ((VDSO_COARSE >> clock) & 1) ? VDSO_LOW_RES_NSEC : -1;
	if (unlikely(vdso_maybe_timens(vd)))
		vd = vdso_real_data(vd);
	return READ_ONCE(VDSO_HRTIMER_RES(vd));
}

#if VDSO_HAS_CLOCK_GETRES
static __vdso_cold int vdso_clock_getres_cold(clockid_t clock, struct vdso_timespec *res)
{
	return vdso_syscall(VDSO_NR_clock_getres, clock, (long)res, 0);
}

static __always_inline int
vdso_clock_getres(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec *res)
{
	long ns = vdso_clock_res(vd, clock);

	if (unlikely(ns < 0))
		return vdso_clock_getres_cold(clock, res);
	if (res) {
		res->tv_sec = 0;
		res->tv_nsec = ns;
	}
	return 0;
}
#endif

#if VDSO_HAS_CLOCK_GETRES_TIME64
static __vdso_cold int vdso_clock_getres_time64_cold(clockid_t clock, struct vdso_timespec64 *res)
{
	return vdso_syscall(VDSO_NR_clock_getres_time64, clock, (long)res, 0);
}

static __always_inline int
vdso_clock_getres_time64(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *res)
{
	long ns = vdso_clock_res(vd, clock);

	if (unlikely(ns < 0))
		return vdso_clock_getres_time64_cold(clock, res);
	if (res) {
		res->tv_sec = 0;
		res->tv_nsec = ns;
	}
	return 0;
}
#endif

#if VDSO_HAS_GETCPU
/*
 * The CPU and node live in kernel-specific places, not in the data page:
 * an arch hook may know one (vdso_arch_getcpu() stores through the non-NULL
 * pointers and returns true), else the syscall answers.
 */
static __always_inline long vdso_getcpu(unsigned int *cpu, unsigned int *node, void *unused)
{
#if VDSO_HAS_ARCH_GETCPU
	if (vdso_arch_getcpu(cpu, node))
		return 0;
#endif
	return vdso_syscall(VDSO_NR_getcpu, (long)cpu, (long)node, (long)unused);
}
#endif

#endif /* VDSOGEN_CORE_H */
