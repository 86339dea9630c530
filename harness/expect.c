/*
 * vdsogen test harness: check bodies the groups share.  Each records into
 * a check (struct chk) what an entry answered against what the timekeeper
 * or the raw syscall says; those that call an entry are compiled where the
 * target exports it.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void expect_in(struct chk *k, struct hts got, struct hts lo, struct hts hi)
{
	if (got.nsec < 0 || got.nsec >= NSEC_PER_SEC)
		chk_fail(k, "tv_nsec %lld is not normalised", (long long)got.nsec);
	else if (hts_cmp(got, lo) < 0 || hts_cmp(got, hi) > 0)
		chk_fail(k, "got %s, want [%s, %s]", TS(got), TS(lo), TS(hi));
}

/* The call failed with errno e and left the SENTINEL-filled buffer ts alone. */
void expect_error(struct chk *k, struct h_ret r, int e, const struct vdso_timespec *ts)
{
	struct vdso_timespec sentinel;
	const char *name = strerrorname_np(e);

	if (!name)
		name = "?";
	if (!h_ret_errno(r, e))
		chk_fail(k, "returned %s, want %s", RET(r), h_errno_str(e, name, (char[64]){ 0 }, 64));
	memset(&sentinel, SENTINEL, sizeof(sentinel));
	if (memcmp(ts, &sentinel, sizeof(*ts)) != 0)
		chk_fail(k, "wrote {%ld, %ld} into the buffer", ts->tv_sec, ts->tv_nsec);
}

#ifdef H_HAS_CLOCK_GETTIME
/* clock_gettime(clk) between two counter reads lies in the timekeeper's bounds, plus off. */
void expect_clock(struct chk *k, const struct tk *tk, int clk, const struct hts *off)
{
	struct vdso_timespec ts;
	struct hts lo, hi, got;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	c0 = vdso_read_counter(tk->mode);
	r = v_clock_gettime(clk, &ts);
	c1 = vdso_read_counter(tk->mode);
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	lo = tk_expect(tk, clk, c0);
	hi = tk_expect(tk, clk, c1);
	if (off) {
		lo = hts_add(lo, *off);
		hi = hts_add(hi, *off);
	}
	got.sec = ts.tv_sec;
	got.nsec = ts.tv_nsec;
	expect_in(k, got, lo, hi);
}

/* clock_gettime(clk) comes from the syscall: it lies between two real readings. */
void expect_syscall_clock(struct chk *k, int clk)
{
	struct vdso_timespec ts;
	struct hts s0, s1, got;
	struct h_ret r;
	int e;

	memset(&ts, SENTINEL, sizeof(ts));
	e = sys_gettime(clk, &s0);
	r = v_clock_gettime(clk, &ts);
	if (!e)
		e = sys_gettime(clk, &s1);
	if (e) {
		chk_fail(k, "the clock_gettime(%d) syscall failed: %s", clk, strerror(-e));
		return;
	}
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	got.sec = ts.tv_sec;
	got.nsec = ts.tv_nsec;
	expect_in(k, got, s0, s1);
}

/*
 * clock_gettime(clk) answers as the raw syscall does: the same errno, or a
 * time between two syscall readings taken around it.
 */
void expect_as_syscall_gettime(struct chk *k, int clk)
{
	struct vdso_timespec ts, s0, s1;
	struct hts got, lo, hi;
	struct h_ret r;
	int e0, e1;

	memset(&ts, SENTINEL, sizeof(ts));
	e0 = sys_clock(NR_CLOCK_GETTIME, clk, &s0);
	r = v_clock_gettime(clk, &ts);
	e1 = sys_clock(NR_CLOCK_GETTIME, clk, &s1);
	if (e0 != e1) {
		chk_fail(k, "the syscall answered %d, then %d: no reference", e0, e1);
		return;
	}
	if (e0) {
		expect_error(k, r, -e0, &ts);
		return;
	}
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s, the syscall succeeded", RET(r));
		return;
	}
	got = (struct hts){ ts.tv_sec, ts.tv_nsec };
	lo = (struct hts){ s0.tv_sec, s0.tv_nsec };
	hi = (struct hts){ s1.tv_sec, s1.tv_nsec };
	expect_in(k, got, lo, hi);
}
#endif /* H_HAS_CLOCK_GETTIME */

#ifdef H_HAS_CLOCK_GETRES
/* clock_getres(clk) answers exactly as the raw syscall does. */
void expect_as_syscall_getres(struct chk *k, int clk)
{
	struct vdso_timespec ts, want;
	struct h_ret r;
	int e;

	memset(&ts, SENTINEL, sizeof(ts));
	e = sys_clock(NR_CLOCK_GETRES, clk, &want);
	r = v_clock_getres(clk, &ts);
	if (e)
		expect_error(k, r, -e, &ts);
	else if (!h_ret_ok(r))
		chk_fail(k, "returned %s, the syscall succeeded", RET(r));
	else if (ts.tv_sec != want.tv_sec || ts.tv_nsec != want.tv_nsec)
		chk_fail(k, "{%ld, %ld}, the syscall says {%ld, %ld}", ts.tv_sec, ts.tv_nsec,
			 want.tv_sec, want.tv_nsec);
}
#endif /* H_HAS_CLOCK_GETRES */

#ifdef H_HAS_GETTIMEOFDAY
void expect_gettimeofday(struct chk *k, const struct tk *tk, const vdso_time_data_t *tzpage)
{
	struct vdso_timeval tv;
	struct vdso_timezone tz;
	struct hts lo, hi, got;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&tv, SENTINEL, sizeof(tv));
	memset(&tz, SENTINEL, sizeof(tz));
	c0 = vdso_read_counter(tk->mode);
	r = v_gettimeofday(&tv, tzpage ? &tz : NULL);
	c1 = vdso_read_counter(tk->mode);
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	lo = tk_expect(tk, C_REALTIME, c0);
	hi = tk_expect(tk, C_REALTIME, c1);
	lo.nsec = lo.nsec / 1000 * 1000;
	hi.nsec = hi.nsec / 1000 * 1000;
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
		chk_fail(k, "tv_usec %ld is not normalised", tv.tv_usec);
		return;
	}
	got.sec = tv.tv_sec;
	got.nsec = tv.tv_usec * 1000L;
	expect_in(k, got, lo, hi);
	if (tzpage && (tz.tz_minuteswest != VDSO_TZ_MINUTESWEST(tzpage) ||
		       tz.tz_dsttime != VDSO_TZ_DSTTIME(tzpage)))
		chk_fail(k, "tz {%d, %d}, the page says {%d, %d}", tz.tz_minuteswest, tz.tz_dsttime,
			 (int)VDSO_TZ_MINUTESWEST(tzpage), (int)VDSO_TZ_DSTTIME(tzpage));
}
#endif /* H_HAS_GETTIMEOFDAY */

#ifdef H_HAS_TIME
void expect_time(struct chk *k, long want)
{
	long t = (long)0xa5a5a5a5a5a5a5a5ULL;
	struct h_ret r = v_time(&t);

	if (!h_ret_is_value(r))
		chk_fail(k, "returned %s: an error", RET(r));
	if (r.raw != want)
		chk_fail(k, "returned %ld, want %ld", r.raw, want);
	if (t != want)
		chk_fail(k, "stored %ld through its pointer, want %ld", t, want);
}

/* time() agrees with the real REALTIME seconds around the call. */
void expect_time_syscall(struct chk *k)
{
	long t = (long)0xa5a5a5a5a5a5a5a5ULL;
	struct hts s0, s1;
	struct h_ret r;

	sys_gettime(C_REALTIME, &s0);
	r = v_time(&t);
	sys_gettime(C_REALTIME, &s1);
	if (!h_ret_is_value(r))
		chk_fail(k, "returned %s: an error", RET(r));
	if (r.raw < (long)s0.sec || r.raw > (long)s1.sec)
		chk_fail(k, "returned %ld, want [%lld, %lld]", r.raw, (long long)s0.sec, (long long)s1.sec);
	if (t != r.raw)
		chk_fail(k, "stored %ld through its pointer, returned %ld", t, r.raw);
}
#endif /* H_HAS_TIME */
