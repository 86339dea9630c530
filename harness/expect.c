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

/*
 * The flavours of clock_gettime and clock_getres (fl_NAME: how a call reads
 * and its syscall) are generated into harness_functions.c from
 * functions.toml; the bodies here take any of them.
 */

/* What an entry with this flavour's seconds stores for t: past 2038, a long keeps its low bits. */
static struct hts as_stored(const struct ts_flavour *fl, struct hts t)
{
	if (fl->narrow)
		t.sec = (long)t.sec;
	return t;
}

/* The call failed with errno e and left the n SENTINEL-filled bytes at ts alone: 1, else 0. */
static int failed_untouched(struct chk *k, struct h_ret r, int e, const void *ts, size_t n)
{
	unsigned char sentinel[sizeof(union ts_buf)];
	const char *name = strerrorname_np(e);

	if (!name)
		name = "?";
	if (!h_ret_errno(r, e))
		chk_fail(k, "returned %s, want %s", RET(r), h_errno_str(e, name, (char[64]){ 0 }, 64));
	memset(sentinel, SENTINEL, n);
	return memcmp(ts, sentinel, n) == 0;
}

void expect_error(struct chk *k, struct h_ret r, int e, const struct vdso_timespec *ts)
{
	if (!failed_untouched(k, r, e, ts, sizeof(*ts)))
		chk_fail(k, "wrote {%ld, %ld} into the buffer", ts->tv_sec, ts->tv_nsec);
}

void expect_failed(struct chk *k, const struct ts_flavour *fl, struct h_ret r, int e, const void *ts)
{
	if (!failed_untouched(k, r, e, ts, fl->size))
		chk_fail(k, "wrote %s into the buffer", TS(fl->get(ts)));
}

/*
 * The flavour's clock_gettime(clk) between two counter reads lies in the
 * timekeeper's bounds, plus off, as its timespec stores them.
 */
void expect_clock_in(struct chk *k, const struct ts_flavour *fl, const struct tk *tk, int clk,
		     const struct hts *off)
{
	union ts_buf ts;
	struct hts lo, hi;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	c0 = vdso_read_counter(tk->mode);
	r = fl->call(clk, &ts);
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
	expect_in(k, fl->get(&ts), as_stored(fl, lo), as_stored(fl, hi));
}

/* The flavour answers as its raw syscall does: the same errno, or a value between two readings around it. */
void expect_as_syscall(struct chk *k, const struct ts_flavour *fl, int clk)
{
	union ts_buf ts, s0, s1;
	struct h_ret r;
	int e0, e1;

	memset(&ts, SENTINEL, sizeof(ts));
	e0 = sys_clock(fl->nr, clk, (void *)&s0);
	r = fl->call(clk, &ts);
	e1 = sys_clock(fl->nr, clk, (void *)&s1);
	if (e0 != e1) {
		chk_fail(k, "the syscall answered %d, then %d: no reference", e0, e1);
		return;
	}
	if (e0) {
		expect_failed(k, fl, r, -e0, &ts);
		return;
	}
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s, the syscall succeeded", RET(r));
		return;
	}
	expect_in(k, fl->get(&ts), fl->get(&s0), fl->get(&s1));
}

#ifdef H_HAS_CLOCK_GETTIME
void expect_clock(struct chk *k, const struct tk *tk, int clk, const struct hts *off)
{
	expect_clock_in(k, &fl_clock_gettime, tk, clk, off);
}

/* clock_gettime(clk) comes from the syscall: it lies between two real readings. */
void expect_syscall_clock(struct chk *k, int clk)
{
	expect_as_syscall(k, &fl_clock_gettime, clk);
}
#endif /* H_HAS_CLOCK_GETTIME */

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
	/* tv_sec is a long: past 2038 a 32-bit one keeps the low bits, as Linux's does. */
	lo.sec = (long)lo.sec;
	hi.sec = (long)hi.sec;
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
		chk_fail(k, "tv_usec %ld is not normalised", (long)tv.tv_usec);
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

/*
 * time() agrees with the real seconds around the call: REALTIME_COARSE's,
 * which the core asks the kernel for (and which the time syscall answers
 * too); at a second's turn REALTIME's may be a tick ahead of them.
 */
void expect_time_syscall(struct chk *k)
{
	long t = (long)0xa5a5a5a5a5a5a5a5ULL;
	struct hts s0, s1;
	struct h_ret r;

	sys_gettime(C_REALTIME_COARSE, &s0);
	r = v_time(&t);
	sys_gettime(C_REALTIME_COARSE, &s1);
	if (!h_ret_is_value(r))
		chk_fail(k, "returned %s: an error", RET(r));
	if (r.raw < (long)s0.sec || r.raw > (long)s1.sec)
		chk_fail(k, "returned %ld, want [%lld, %lld]", r.raw, (long long)s0.sec, (long long)s1.sec);
	if (t != r.raw)
		chk_fail(k, "stored %ld through its pointer, returned %ld", t, r.raw);
}
#endif /* H_HAS_TIME */
