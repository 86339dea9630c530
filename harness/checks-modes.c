/*
 * vdsogen test harness: clock_gettime in every clock mode (the counter's,
 * one it does not serve, NONE), with a small max_cycles (the core's
 * wide-multiply path) and behind a time-namespace page.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#ifdef H_HAS_CLOCK_GETTIME
void grp_clock_modes(void)
{
	struct tk tk;
	struct chk k;
	int32_t mode, top = 0;
	size_t i;

	/* Every counter mode of the spec is read from the page. */
	for (i = 0; i < H_NCOUNTER_MODES; i++) {
		mode = h_counter_modes[i];
		if (mode > top)
			top = mode;
		tk_fresh(&tk, mode);
		chk_start(&k, "clock_mode.%d", (int)mode);
		expect_clock(&k, &tk, C_MONOTONIC, NULL);
		expect_clock(&k, &tk, C_MONOTONIC_RAW, NULL);
		chk_end(&k);
	}

	/* A mode this counter does not serve (a paravirtual clock, say) goes to the syscall. */
	mode = top + 1;
	tk_fresh(&tk, mode);
	chk_start(&k, "clock_mode.%d.syscall", (int)mode);
	expect_syscall_clock(&k, C_MONOTONIC);
	expect_syscall_clock(&k, C_MONOTONIC_RAW);
	chk_end(&k);

	/*
	 * Mode NONE: high-resolution and raw clocks come from the syscall.
	 * Coarse clocks answer from the page, which Linux keeps current in
	 * every mode, unless the spec says this page writer stops them too
	 * (coarse_in_mode_none = "syscall"); time() follows the coarse clocks.
	 */
	tk_fresh(&tk, CLOCKMODE_NONE);
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "mode_none.%s", h_clocks[i].name);
		if (h_clocks[i].cls == CLS_COARSE && !VDSO_COARSE_IN_MODE_NONE_SYSCALL)
			expect_clock(&k, &tk, h_clocks[i].id, NULL);
		else
			expect_syscall_clock(&k, h_clocks[i].id);
		chk_end(&k);
	}
#ifdef H_HAS_GETTIMEOFDAY
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		struct vdso_timeval tv;
		struct hts s0, s1, got;
		struct h_ret r;

		chk_start(&k, "mode_none.gettimeofday");
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
/* Every clock the counter advances reads as the formula says at tk. */
static void expect_counter_clocks(struct chk *k, const struct tk *tk)
{
	size_t i;

	for (i = 0; i < NCLOCKS; i++)
		if (h_clocks[i].cls != CLS_COARSE)
			expect_clock(k, tk, h_clocks[i].id, NULL);
}

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
static struct hts timens_offset(int clk)
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
static void timens_enter(const struct tk *tk)
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
