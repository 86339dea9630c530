/*
 * The generic vDSO time core, the same file for every vdsogen target.
 *
 * Everything that differs between targets comes from three generated
 * headers: vdso_config.h (which functions to build, the data-page layout's
 * names, the counter's clock modes and quirks), datapage.h (the data-page
 * structures) and vdso_arch.h (the hooks vdso_read_counter(), vdso_rmb(),
 * vdso_cpu_relax() and vdso_syscall(), and optionally vdso_cycles_ok()).
 * Every function returns 0 or -errno (time() returns the time) and falls
 * back to the real syscall whenever the data page cannot answer.
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

#define VDSO_HRES	((1U << CLOCK_REALTIME) | (1U << CLOCK_MONOTONIC) | \
			 (1U << CLOCK_BOOTTIME) | (1U << CLOCK_TAI))
#define VDSO_COARSE	((1U << CLOCK_REALTIME_COARSE) | (1U << CLOCK_MONOTONIC_COARSE))
#define VDSO_RAW	(1U << CLOCK_MONOTONIC_RAW)

/* Clock records: [CS_HRES_COARSE] serves hres and coarse clocks, [CS_RAW] the raw clock. */
#define CS_HRES_COARSE	0
#define CS_RAW		1

#define VDSO_CLOCKMODE_NONE	0
#define VDSO_CLOCKMODE_TIMENS	0x7fffffff

#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))

/* How a read from the data page ended. */
enum vdso_read {
	VDSO_OK,
	VDSO_SYSCALL,		/* the page cannot answer: make the syscall */
#if VDSO_HAS_TIMENS
	VDSO_TIMENS,		/* this is a time-namespace page */
#endif
};

static __always_inline const vdso_clock_t *vdso_clocks(const vdso_time_data_t *vd)
{
	return VDSO_CLOCKS(vd);
}

#if VDSO_HAS_TIMENS
/* The time data to read tz, hrtimer_res and time() from: in a namespace, the real page. */
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

/* Nanoseconds at @cycles, from a base in shifted nanoseconds. */
static __always_inline uint64_t
vdso_counter_ns(const vdso_clock_t *vc, uint64_t cycles, uint64_t base)
{
	uint64_t last = vc->cycle_last;
	uint64_t delta;

#if VDSO_COUNTER_CLAMP_BACKWARDS
	/* A counter that trails cycle_last (skew between CPUs) adds no time. */
	if (cycles <= last)
		return base >> vc->shift;
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
	return (delta * vc->mult + base) >> vc->shift;
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

/*
 * ns / NSEC_PER_SEC by subtraction: the quotient is almost always 0 or 1,
 * and the empty asm keeps the compiler from turning the loop into a 64-bit
 * division, which 32-bit targets would leave to a libgcc helper.
 */
static __always_inline uint64_t vdso_div_ns(uint64_t ns, uint64_t *rem)
{
	uint64_t sec = 0;

	while (ns >= NSEC_PER_SEC) {
		__asm__("" : "+r"(ns));
		ns -= NSEC_PER_SEC;
		sec++;
	}
	*rem = ns;
	return sec;
}

/* The time of @clock with 64-bit seconds, the one read every clock_gettime flavour shares. */
static __always_inline enum vdso_read
vdso_clock_read(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *ts)
{
	const vdso_clock_t *vc = vdso_clocks(vd);
	uint64_t sec, ns, rem;
	enum vdso_read ret;
	bool counter;
	uint32_t msk;
	int cs;

	/* Negative ids (CPU clocks, clock fds) wrap to large values here. */
	if ((uint32_t)clock >= VDSO_MAX_CLOCKS)
		return VDSO_SYSCALL;
	msk = 1U << clock;
	if (msk & VDSO_HRES) {
		cs = CS_HRES_COARSE;
		counter = true;
	} else if (msk & VDSO_COARSE) {
		cs = CS_HRES_COARSE;
		counter = false;
	} else if (msk & VDSO_RAW) {
		cs = CS_RAW;
		counter = true;
	} else {
		return VDSO_SYSCALL;
	}

	ret = vdso_read_clock(&vc[cs], clock, counter, &sec, &ns);
#if VDSO_HAS_TIMENS
	if (ret == VDSO_TIMENS) {
		/* Namespace page: its basetime[] are offsets (sec signed, ns plain) to add to the real clock. */
		const vdso_timestamp_t *offs = &vc[cs].basetime[clock];

		vd = vdso_real_data(vd);
		ret = vdso_read_clock(&vdso_clocks(vd)[cs], clock, counter, &sec, &ns);
		if (ret != VDSO_OK)
			return VDSO_SYSCALL;
		sec += offs->sec;
		ns += offs->nsec;
	}
#endif
	if (ret != VDSO_OK)
		return VDSO_SYSCALL;

	ts->tv_sec = sec + vdso_div_ns(ns, &rem);
	ts->tv_nsec = rem;
	return VDSO_OK;
}

#if VDSO_HAS_CLOCK_GETTIME
/* The native timespec: on 32-bit targets its seconds wrap in 2038, as Linux's own vDSO lets them. */
static __always_inline long
vdso_clock_gettime(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec *ts)
{
	struct vdso_timespec64 t;

	if (vdso_clock_read(vd, clock, &t) != VDSO_OK)
		return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);
	ts->tv_sec = t.tv_sec;
	ts->tv_nsec = t.tv_nsec;
	return 0;
}
#endif

#if VDSO_HAS_CLOCK_GETTIME64
static __always_inline long
vdso_clock_gettime64(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *ts)
{
	if (vdso_clock_read(vd, clock, ts) == VDSO_OK)
		return 0;
	return vdso_syscall(VDSO_NR_clock_gettime64, clock, (long)ts, 0);
}
#endif

#if VDSO_HAS_GETTIMEOFDAY
static __always_inline long
vdso_gettimeofday(const vdso_time_data_t *vd, struct vdso_timeval *tv, struct vdso_timezone *tz)
{
	if (tv) {
		struct vdso_timespec64 ts;

		if (vdso_clock_read(vd, CLOCK_REALTIME, &ts) != VDSO_OK)
			return vdso_syscall(VDSO_NR_gettimeofday, (long)tv, (long)tz, 0);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = (uint32_t)ts.tv_nsec / 1000;
	}
	if (tz) {
		/* settimeofday() writes these without the seqcount; so do we read them. */
		vd = vdso_real_data(vd);
		tz->tz_minuteswest = READ_ONCE(VDSO_TZ_MINUTESWEST(vd));
		tz->tz_dsttime = READ_ONCE(VDSO_TZ_DSTTIME(vd));
	}
	return 0;
}
#endif

#if VDSO_HAS_TIME
/* One load, no seqcount: the kernel keeps REALTIME's seconds current even in clock mode NONE. */
static __always_inline long vdso_time(const vdso_time_data_t *vd, long *t)
{
	long secs;

	vd = vdso_real_data(vd);
	secs = READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].basetime[CLOCK_REALTIME].sec);
#if VDSO_COARSE_IN_MODE_NONE_SYSCALL
	/* This page writer stops REALTIME's seconds too in clock mode NONE: ask the kernel. */
	if (READ_ONCE(vdso_clocks(vd)[CS_HRES_COARSE].clock_mode) == VDSO_CLOCKMODE_NONE) {
		struct vdso_timespec ts;
		long ret = vdso_syscall(VDSO_NR_clock_gettime, CLOCK_REALTIME_COARSE, (long)&ts, 0);

		if (ret)
			return ret;
		secs = ts.tv_sec;
	}
#endif
	if (t)
		*t = secs;
	return secs;
}
#endif

/* The resolution of @clock in ns, or -1 when the page does not serve it. */
static __always_inline long vdso_clock_res(const vdso_time_data_t *vd, clockid_t clock)
{
	uint32_t msk;

	if ((uint32_t)clock >= VDSO_MAX_CLOCKS)
		return -1;
	msk = 1U << clock;
	if (msk & (VDSO_HRES | VDSO_RAW))
		return READ_ONCE(VDSO_HRTIMER_RES(vdso_real_data(vd)));
	if (msk & VDSO_COARSE)
		return VDSO_LOW_RES_NSEC;
	return -1;
}

#if VDSO_HAS_CLOCK_GETRES
static __always_inline long
vdso_clock_getres(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec *res)
{
	long ns = vdso_clock_res(vd, clock);

	if (ns < 0)
		return vdso_syscall(VDSO_NR_clock_getres, clock, (long)res, 0);
	if (res) {
		res->tv_sec = 0;
		res->tv_nsec = ns;
	}
	return 0;
}
#endif

#if VDSO_HAS_CLOCK_GETRES_TIME64
static __always_inline long
vdso_clock_getres_time64(const vdso_time_data_t *vd, clockid_t clock, struct vdso_timespec64 *res)
{
	long ns = vdso_clock_res(vd, clock);

	if (ns < 0)
		return vdso_syscall(VDSO_NR_clock_getres_time64, clock, (long)res, 0);
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
