/*
 * vdsogen test harness: the kernel's timekeeper, played on the data pages.
 *
 * The counter is calibrated against CLOCK_MONOTONIC_RAW; each group then
 * starts from fresh pages with distinct bases far from real time, and the
 * checks compare what an entry answers with what the formula gives at the
 * counter values read just before and after the call.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#if H_TEST_COUNTER
#include <sys/mman.h>
#elif H_COUNTER_TRAPS
#include <sys/prctl.h>
#endif

/* ------------------------------------------------------------------ */
/* Time arithmetic                                                     */

const struct clk *clock_by_id(int id)
{
	size_t i;

	for (i = 0; i < NCLOCKS; i++)
		if (h_clocks[i].id == id)
			return &h_clocks[i];
	return NULL;
}

static struct hts hts_make(int64_t sec, uint64_t ns)
{
	struct hts t = { sec + (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };

	return t;
}

struct hts hts_add(struct hts a, struct hts b)
{
	struct hts t = { a.sec + b.sec, a.nsec + b.nsec };

	if (t.nsec >= NSEC_PER_SEC) {
		t.nsec -= NSEC_PER_SEC;
		t.sec++;
	}
	return t;
}

int hts_cmp(struct hts a, struct hts b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	return a.nsec < b.nsec ? -1 : a.nsec > b.nsec;
}

const char *hts_str(struct hts t, char *buf, size_t n)
{
	snprintf(buf, n, "%lld.%09lld", (long long)t.sec, (long long)t.nsec);
	return buf;
}

#define TS(t)	hts_str((t), (char[48]){ 0 }, 48)

/*
 * (delta * mult + base) >> shift, exact past 64 bits as the core's wide
 * branch is: where the compiler has no 128-bit type (32-bit harnesses), the
 * value as its bits from 32 up (top) and its low 32 bits.
 */
static uint64_t mul_shift(uint64_t delta, uint32_t mult, uint64_t base, uint32_t shift)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)delta * mult + base) >> shift);
#else
	uint64_t low = (uint64_t)(uint32_t)delta * mult + (uint32_t)base;
	uint64_t top = (delta >> 32) * mult + (base >> 32) + (low >> 32);

	if (shift >= 32)
		return top >> (shift - 32);
	return (top << (32 - shift)) | ((uint32_t)low >> shift);
#endif
}

/* ------------------------------------------------------------------ */
/* The timekeeper                                                      */

/*
 * hrtimer_res as the timekeeper publishes it.  Linux says 1 ns with
 * high-resolution timers; an odd value that no shortcut (a constant 1, the
 * tick) produces by accident shows that the core really reads the page.
 */
#define TK_HRTIMER_RES		7

uint64_t h_hz;
static struct rate h_rate;		/* the calibrated rate every group starts from */

int sys_clock(long nr, int clk, struct vdso_timespec *ts)
{
	return syscall(nr, (long)clk, ts) == 0 ? 0 : -errno;
}

#ifndef NR_CLOCK_GETTIME
/* An ABI with the 64-bit time syscalls only (rv32): the timekeeper's reference is clock_gettime64. */
#define NR_CLOCK_GETTIME	SYS_clock_gettime64
#define H_REF_TIMESPEC		vdso_timespec64
#else
#define H_REF_TIMESPEC		vdso_timespec
#endif

int sys_gettime(int clk, struct hts *t)
{
	struct H_REF_TIMESPEC ts;
	int e;

	t->sec = t->nsec = 0;
	e = syscall(NR_CLOCK_GETTIME, (long)clk, &ts) == 0 ? 0 : -errno;
	if (e)
		return e;
	t->sec = ts.tv_sec;
	t->nsec = ts.tv_nsec;
	return 0;
}

void sleep_ns(long ns)
{
	struct timespec ts = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int64_t elapsed_ns(struct hts a, struct hts b)
{
	return (b.sec - a.sec) * NSEC_PER_SEC + (b.nsec - a.nsec);
}

void spin(unsigned int n)
{
	while (n--)
		vdso_cpu_relax();
}

/*
 * The largest shift whose mult still fits 32 bits and keeps delta * mult
 * below 2^64 for @secs seconds of counting.
 */
static void pick_mult_shift(uint64_t hz, uint64_t secs, uint32_t *mult, uint32_t *shift)
{
	const uint64_t range = secs * hz;
	uint64_t m, prod;
	uint32_t s;

	for (s = 32; s > 1; s--) {
		m = (((uint64_t)NSEC_PER_SEC << s) + hz / 2) / hz;
		if (m == 0 || m > UINT32_MAX || __builtin_mul_overflow(range, m, &prod))
			continue;
		break;
	}
	*mult = (uint32_t)m;
	*shift = s;
}

/*
 * A rate for @secs seconds of counting.  The raw clock gets a rate and a
 * shift of its own, so a reader that mixes up the records is caught.
 */
void pick_rate(uint64_t hz, uint64_t secs, struct rate *r)
{
	pick_mult_shift(hz, secs, &r->mult[0], &r->shift[0]);
	r->shift[1] = r->shift[0] - 1;
	r->mult[1] = (r->mult[0] - r->mult[0] / 64) >> 1;
	if (r->mult[1] == 0)
		r->mult[1] = 1;
}

#if H_TEST_COUNTER
/*
 * A test build's counter (templates/counter-injected.h.j2), kept in the
 * page below the data pages: every read of the harness's moves it on to
 * CLOCK_MONOTONIC_RAW at 24 MHz (a common generic-timer rate), from just
 * below a 2^33 boundary, so the readers' 64-bit arithmetic soon carries.
 * Readers and the writer thread read it; a lock keeps it monotonic, and
 * the image's readers see it through its sequence count.
 */
#define TEST_COUNTER_START	0x1fff00000ULL

uint64_t h_test_counter_now(void)
{
	static int lock, started;
	static struct timespec t0;
	struct vdso_test_counter *tc = (struct vdso_test_counter *)(h_data - VDSO_PAGE_SIZE);
	struct timespec t;
	uint64_t now;
	int64_t ns;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		vdso_cpu_relax();
	if (!started) {
		t0 = t;
		started = 1;
	}
	/*
	 * The clock is read before the lock: a caller that read it before the
	 * first one to take the lock (the count's origin) is at the start, not
	 * 2^64 ns before it.
	 */
	ns = (t.tv_sec - t0.tv_sec) * NSEC_PER_SEC + (t.tv_nsec - t0.tv_nsec);
	now = TEST_COUNTER_START + (ns > 0 ? (uint64_t)ns / 125 * 3 : 0);
	if (now > tc->count) {
		__atomic_store_n(&tc->seq, tc->seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		tc->count = now;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&tc->seq, tc->seq + 1, __ATOMIC_RELAXED);
	} else {
		now = tc->count;
	}
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return now;
}
#endif

#if H_COUNTER_TRAPS
int counter_trap(int on)
{
#if H_TEST_COUNTER
	/* The injected counter's page, below the data pages (image.c maps it). */
	if (mprotect(h_data - VDSO_PAGE_SIZE, VDSO_PAGE_SIZE, on ? PROT_NONE : PROT_READ | PROT_WRITE) != 0)
		return -errno;
#else
	if (prctl(PR_SET_TSC, on ? PR_TSC_SIGSEGV : PR_TSC_ENABLE, 0, 0, 0) != 0)
		return -errno;
#endif
	return 0;
}
#endif

/* Measure the counter against CLOCK_MONOTONIC_RAW over ~15 ms. */
int calibrate(void)
{
	struct hts t0, t1;
	uint64_t c0, c1;
	int64_t ns;
	int e, sleeps = 0;
	struct chk k;

	chk_start(&k, "counter");
#ifdef HARNESS_HAVE_CLOCK_MODES
	/* A counter in a page of its own (MIPS's GIC) runs once its page is set up. */
	if (harness_mode_page(h_counter_modes[0]))
		harness_mode_setup(h_counter_modes[0], 0, 0);
#endif
	e = sys_gettime(C_MONOTONIC_RAW, &t0);
	c0 = vdso_read_counter(h_counter_modes[0]);
	if (e != 0) {
		chk_fail(&k, "clock_gettime(MONOTONIC_RAW) syscall (nr %ld) failed: %s",
			 (long)NR_CLOCK_GETTIME, strerror(-e));
		chk_end(&k);
		return -1;
	}
	/*
	 * 15 ms of MONOTONIC_RAW: 8 sleeps of 2 ms.  A syscall that answers
	 * without time advancing (another syscall's number: clock_getres's
	 * answers the resolution every time) never gets there.
	 */
	do {
		sleep_ns(2000000);
		sleeps++;
		c1 = vdso_read_counter(h_counter_modes[0]);
		e = sys_gettime(C_MONOTONIC_RAW, &t1);
		ns = elapsed_ns(t0, t1);
	} while (e == 0 && ns < 15000000 && sleeps < 100);
	if (e != 0)
		chk_fail(&k, "clock_gettime(MONOTONIC_RAW) syscall (nr %ld) failed after %d sleeps: %s",
			 (long)NR_CLOCK_GETTIME, sleeps, strerror(-e));
	else if (ns < 15000000)
		chk_fail(&k, "clock_gettime(MONOTONIC_RAW) syscall (nr %ld) advanced %lld ns in %d sleeps of 2 ms: "
			 "is %ld the ABI's clock_gettime?", (long)NR_CLOCK_GETTIME, (long long)ns, sleeps,
			 (long)NR_CLOCK_GETTIME);
	if (k.failures) {
		chk_end(&k);
		return -1;
	}
	if (c1 <= c0) {
		chk_fail(&k, "the counter does not advance (%#llx, then %#llx %lld ns later)",
			 (unsigned long long)c0, (unsigned long long)c1, (long long)ns);
		chk_end(&k);
		return -1;
	}
	h_hz = (uint64_t)((double)(c1 - c0) * 1e9 / (double)ns + 0.5);
	if (h_hz < 1000) {
		chk_fail(&k, "the counter runs at %llu Hz", (unsigned long long)h_hz);
		chk_end(&k);
		return -1;
	}
	pick_rate(h_hz, 600, &h_rate);
	printf("# counter: %llu Hz; mult %u shift %u, raw mult %u shift %u\n", (unsigned long long)h_hz,
	       h_rate.mult[0], h_rate.shift[0], h_rate.mult[1], h_rate.shift[1]);
	chk_end(&k);
	return 0;
}

static void tk_set(struct tk *tk, int rec, int clk, uint64_t sec, uint64_t ns, int shifted)
{
	uint32_t shift = tk->shift[rec];

	tk->base[rec][clk].sec = sec;
	/* Shifted nanoseconds carry a fraction, so a reader that drops it is caught. */
	tk->base[rec][clk].nsec = shifted ? (ns << shift) + ((1ULL << shift) - 1) / 3 : ns;
}

/* A timekeeper state at @rate: distinct bases per clock, far from real time. */
static void tk_init(struct tk *tk, int32_t mode, const struct rate *rate)
{
	int rec, i;

	memset(tk, 0, sizeof(*tk));
	tk->mode = mode;
	tk->mask = ~0ULL;
	for (rec = 0; rec < 2; rec++) {
		tk->mult[rec] = rate->mult[rec];
		tk->shift[rec] = rate->shift[rec];
		/* The largest delta whose product with mult fits 64 bits, as Linux sets it. */
		tk->max_cycles[rec] = UINT64_MAX / rate->mult[rec];
	}
	/* Slots no reader may use get values of their own. */
	for (rec = 0; rec < 2; rec++)
		for (i = 0; i < H_NBASES; i++) {
			tk->base[rec][i].sec = 7000000 + 100 * rec + i;
			tk->base[rec][i].nsec = 0;
		}
	tk_set(tk, 0, C_REALTIME, 1000000000, 123456789, 1);
	tk_set(tk, 0, C_MONOTONIC, 2000000, 999999000, 1);	/* carries into the seconds soon */
	tk_set(tk, 0, C_BOOTTIME, 3000000, 345678901, 1);
	tk_set(tk, 0, C_TAI, 1000000037, 123456789, 1);
	tk_set(tk, 0, C_REALTIME_COARSE, 1000000100, 567890123, 0);
	tk_set(tk, 0, C_MONOTONIC_COARSE, 2000100, 678901234, 0);
	tk_set(tk, 1, C_MONOTONIC_RAW, 5000000, 456789012, 1);
	tk->hrtimer_res = TK_HRTIMER_RES;
	tk->tz_minuteswest = -330;
	tk->tz_dsttime = 1;
#if VDSO_NR_AUX_CLOCKS
	for (i = 0; i < VDSO_NR_AUX_CLOCKS; i++) {
		struct tk_aux *a = &tk->aux[i];

		a->mode = (H_AUX_ENABLED >> i) & 1 ? mode : CLOCKMODE_NONE;
		/* Steered: a rate up to 6% slow, a time of its own, so no system clock passes for it. */
		a->mult = rate->mult[0] - (rate->mult[0] >> 7) * (uint32_t)(i + 1);
		a->shift = rate->shift[0];
		a->max_cycles = UINT64_MAX / a->mult;
		a->base.sec = 4000000 + 1000 * (uint64_t)i;
		a->base.nsec = ((uint64_t)(100000007 * (i + 1)) << a->shift) + ((1ULL << a->shift) - 1) / 3;
	}
#endif
	tk->cycle_last = vdso_read_counter(mode);
}

static int clock_record(int clk)
{
	return clk == C_MONOTONIC_RAW;
}

/* tk_expect, or with @wrap the formula in 64 bits, as tk_expect_wrapping says. */
static struct hts expect_at(const struct tk *tk, int clk, uint64_t cycles, int wrap)
{
	const struct tk_base *b;
	uint32_t mult, shift;
	uint64_t delta;

#if VDSO_NR_AUX_CLOCKS
	if (clk >= C_AUX) {
		const struct tk_aux *a = &tk->aux[clk - C_AUX];

		b = &a->base;
		mult = a->mult;
		shift = a->shift;
	} else
#endif
	{
		int rec = clock_record(clk);

		b = &tk->base[rec][clk];
		if (clock_by_id(clk)->cls == CLS_COARSE)
			return hts_make((int64_t)b->sec, b->nsec);
		mult = tk->mult[rec];
		shift = tk->shift[rec];
	}
	delta = cycles - tk->cycle_last;
	if (VDSO_COUNTER_CLAMP_BACKWARDS && cycles <= tk->cycle_last)
		delta = 0;
	if (VDSO_COUNTER_MASK)
		delta &= tk->mask;
	if (wrap)
		return hts_make((int64_t)b->sec, (delta * mult + b->nsec) >> shift);
	return hts_make((int64_t)b->sec, mul_shift(delta, mult, b->nsec, shift));
}

struct hts tk_expect(const struct tk *tk, int clk, uint64_t cycles)
{
	return expect_at(tk, clk, cycles, 0);
}

struct hts tk_expect_wrapping(const struct tk *tk, int clk, uint64_t cycles)
{
	return expect_at(tk, clk, cycles, 1);
}

static void seq_bump_one(vdso_clock_t *vc)
{
	__atomic_store_n(&vc->seq, __atomic_load_n(&vc->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Writer protocol, every record together (the aux ones too): seq odd, barrier, write, barrier, seq even. */
static void seq_bump(vdso_time_data_t *td)
{
	int rec;

	for (rec = 0; rec < 2; rec++)
		seq_bump_one(&VDSO_CLOCKS(td)[rec]);
#if VDSO_NR_AUX_CLOCKS
	for (rec = 0; rec < VDSO_NR_AUX_CLOCKS; rec++)
		seq_bump_one(&VDSO_AUX_CLOCKS(td)[rec]);
#endif
}

void tk_begin(vdso_time_data_t *td)
{
	seq_bump(td);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void tk_end(vdso_time_data_t *td)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	seq_bump(td);
}

void tk_store(vdso_time_data_t *td, const struct tk *tk)
{
	vdso_clock_t *vc = VDSO_CLOCKS(td);
	int rec, i;

	for (rec = 0; rec < 2; rec++) {
		vc[rec].clock_mode = tk->mode;
		vc[rec].cycle_last = tk->cycle_last;
		vc[rec].mask = tk->mask;
		vc[rec].mult = tk->mult[rec];
		vc[rec].shift = tk->shift[rec];
#if VDSO_HAS_MAX_CYCLES
		vc[rec].max_cycles = tk->max_cycles[rec];
#endif
		for (i = 0; i < H_NBASES; i++) {
			vc[rec].basetime[i].sec = tk->base[rec][i].sec;
			vc[rec].basetime[i].nsec = tk->base[rec][i].nsec;
		}
	}
#if VDSO_NR_AUX_CLOCKS
	for (rec = 0; rec < VDSO_NR_AUX_CLOCKS; rec++) {
		vdso_clock_t *a = &VDSO_AUX_CLOCKS(td)[rec];

		a->clock_mode = tk->aux[rec].mode;
		a->cycle_last = tk->cycle_last;
		a->mask = tk->mask;
		a->mult = tk->aux[rec].mult;
		a->shift = tk->aux[rec].shift;
#if VDSO_HAS_MAX_CYCLES
		a->max_cycles = tk->aux[rec].max_cycles;
#endif
		/* basetime[0] is the clock's; the others, unused, say which slot a wrong reader took. */
		for (i = 0; i < H_NBASES; i++) {
			a->basetime[i].sec = i ? 8000000 + 100 * (uint64_t)rec + (uint64_t)i : tk->aux[rec].base.sec;
			a->basetime[i].nsec = i ? 0 : tk->aux[rec].base.nsec;
		}
	}
#endif
	VDSO_HRTIMER_RES(td) = tk->hrtimer_res;
	VDSO_TZ_MINUTESWEST(td) = tk->tz_minuteswest;
	VDSO_TZ_DSTTIME(td) = tk->tz_dsttime;
}

void tk_publish(vdso_time_data_t *td, const struct tk *tk)
{
	tk_begin(td);
	tk_store(td, tk);
	tk_end(td);
}

void tk_scribble(vdso_time_data_t *td, unsigned long n)
{
	vdso_clock_t *vc = VDSO_CLOCKS(td);
	int rec, i;

	for (rec = 0; rec < 2; rec++)
		for (i = 0; i < H_NBASES; i++) {
			vc[rec].basetime[i].sec = 0xbad0 + (n & 0xff);
			vc[rec].basetime[i].nsec = 0;
		}
}

/*
 * Zeroed pages, the page of @mode's counter (if it reads one) in @state,
 * then one complete update at @rate, or else at the counter's own rate:
 * the calibrated one, or the page's (kvm-clock counts nanoseconds, say).
 */
static uint64_t tk_fresh_pages(struct tk *tk, int32_t mode, int state, const struct rate *rate)
{
	struct rate own;
	uint64_t hz = h_hz;

	memset(h_data, 0, (size_t)VDSO_DATA_PAGES * VDSO_PAGE_SIZE);
#ifdef HARNESS_HAVE_ARCH_DATA
	/* First: a counter read may depend on it (s390's tod_delta; its TOD steering before v6.17). */
#ifdef VDSO_PAGE_ARCH
	harness_arch_fill(H_PAGE(VDSO_PAGE_ARCH), h_hz);
#else
	/* A layout without an arch page (s390's before v6.15): the arch data is in the time data. */
	harness_arch_fill(NULL, h_hz);
#endif
#endif
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#ifdef HARNESS_HAVE_CLOCK_MODES
	if (harness_mode_page(mode))
		hz = harness_mode_setup(mode, state, h_hz);
#else
	(void)state;
#endif
	if (!rate && hz == h_hz) {
		rate = &h_rate;
	} else if (!rate) {
		pick_rate(hz, 600, &own);
		rate = &own;
	}
	tk_init(tk, mode, rate);
	tk_publish(page_time(), tk);
	return hz;
}

void tk_fresh_at(struct tk *tk, int32_t mode, const struct rate *rate)
{
	tk_fresh_pages(tk, mode, 0, rate);
}

uint64_t tk_fresh_state(struct tk *tk, int32_t mode, int state)
{
	return tk_fresh_pages(tk, mode, state, NULL);
}

void tk_fresh(struct tk *tk, int32_t mode)
{
	tk_fresh_pages(tk, mode, 0, NULL);
}
