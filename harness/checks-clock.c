/*
 * vdsogen test harness: the groups of checks of each core function on
 * fresh pages: every clock, clock ids the page does not serve, invalid
 * ids, NULL arguments.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Clock ids the data page does not serve, each compared with the raw
 * syscall.  3 is THREAD_CPUTIME_ID, 8-10 the alarm clocks and SGI_CYCLE;
 * 13-15 are unused (EINVAL, like 12); 16 and 23 are the first and last of
 * v6.17's aux clocks, which this core leaves to the kernel.  Negative ids
 * are CPU-time clocks and clock fds, (~pid << 3) | which in the kernel's
 * encoding (linux/posix-timers.h):
 *
 *   -1	~0 << 3 | 7: which 3 is no CPU clock (EINVAL)
 *   -2	~0 << 3 | 6: the calling thread's CPU time (SCHED | PERTHREAD)
 *   -6	~0 << 3 | 2: the calling process's CPU time (SCHED)
 *   -57	~7 << 3 | 7: EINVAL again, but its low 5 and 6 bits say 7, and
 *		hardware masks shift counts to 5 or 6 bits: a core that
 *		range-checks the id as signed and shifts by it reads BOOTTIME
 *   INT_MIN	pid 2^28 - 1, above any pid (EINVAL); its low bits say REALTIME
 *
 * The last two come last: a core that indexes the page with them faults.
 */
static const int h_syscall_ids[] = { 3, 8, 9, 10, 13, 14, 15, 16, 23, -1, -2, -6, -57, INT_MIN };
#define NSYSCALL_IDS	(sizeof(h_syscall_ids) / sizeof(h_syscall_ids[0]))

/* One check per id the page does not serve: `fn` answers as the syscall does. */
static __attribute__((unused)) void check_syscall_ids(const char *fn, void (*expect)(struct chk *, int))
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NSYSCALL_IDS; i++) {
		chk_start(&k, "%s.id_%d", fn, h_syscall_ids[i]);
		expect(&k, h_syscall_ids[i]);
		chk_end(&k);
	}
}

/* Invalid ids, 12 and 100: `call` fails with EINVAL and leaves its buffer alone. */
static __attribute__((unused)) void check_invalid_ids(const char *fn,
						       struct h_ret (*call)(clockid_t, struct vdso_timespec *))
{
	static const int ids[] = { 12, 100 };
	struct vdso_timespec ts;
	struct chk k;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		chk_start(&k, "%s.invalid_%d", fn, ids[i]);
		memset(&ts, SENTINEL, sizeof(ts));
		expect_error(&k, call(ids[i], &ts), EINVAL, &ts);
		chk_end(&k);
	}
}

#ifdef H_HAS_CLOCK_GETTIME
void grp_clock_gettime(void)
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "clock_gettime.%s", h_clocks[i].name);
		expect_clock(&k, &tk, h_clocks[i].id, NULL);
		chk_end(&k);
	}

	/* CPU-time clocks are the syscall's business. */
	chk_start(&k, "clock_gettime.PROCESS_CPUTIME_ID");
	expect_syscall_clock(&k, C_PROCESS_CPUTIME_ID);
	chk_end(&k);

	check_invalid_ids("clock_gettime", v_clock_gettime);
}

void grp_clock_gettime_ids(void)
{
	check_syscall_ids("clock_gettime", expect_as_syscall_gettime);
}
#endif /* H_HAS_CLOCK_GETTIME */

#ifdef H_HAS_CLOCK_GETRES
void grp_clock_getres(void)
{
	struct vdso_timespec ts;
	struct h_ret r;
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		long want = h_clocks[i].cls == CLS_COARSE ? VDSO_LOW_RES_NSEC : (long)tk.hrtimer_res;

		chk_start(&k, "clock_getres.%s", h_clocks[i].name);
		memset(&ts, SENTINEL, sizeof(ts));
		r = v_clock_getres(h_clocks[i].id, &ts);
		if (!h_ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else if (ts.tv_sec != 0 || ts.tv_nsec != want)
			chk_fail(&k, "{%ld, %ld}, want {0, %ld}", ts.tv_sec, ts.tv_nsec, want);
		chk_end(&k);
	}
	chk_start(&k, "clock_getres.NULL");
	r = v_clock_getres(C_MONOTONIC, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "clock_getres(MONOTONIC, NULL) returned %s", RET(r));
	r = v_clock_getres(C_MONOTONIC_COARSE, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "clock_getres(MONOTONIC_COARSE, NULL) returned %s", RET(r));
	chk_end(&k);
	check_invalid_ids("clock_getres", v_clock_getres);
}

void grp_clock_getres_ids(void)
{
	check_syscall_ids("clock_getres", expect_as_syscall_getres);
}
#endif /* H_HAS_CLOCK_GETRES */

#ifdef H_HAS_GETTIMEOFDAY
void grp_gettimeofday(void)
{
	struct h_ret r;
	struct tk tk;
	struct chk k;

	tk_fresh(&tk, h_counter_modes[0]);
	chk_start(&k, "gettimeofday");
	expect_gettimeofday(&k, &tk, NULL);
	chk_end(&k);
	chk_start(&k, "gettimeofday.tz");
	expect_gettimeofday(&k, &tk, page_time());
	chk_end(&k);
	chk_start(&k, "gettimeofday.NULL");
	r = v_gettimeofday(NULL, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "gettimeofday(NULL, NULL) returned %s", RET(r));
	chk_end(&k);
}

#endif /* H_HAS_GETTIMEOFDAY */

#ifdef H_HAS_TIME
void grp_time(void)
{
	struct h_ret r;
	struct tk tk;
	struct chk k;
	long want;

	tk_fresh(&tk, h_counter_modes[0]);
	want = (long)tk.base[0][C_REALTIME].sec;
	chk_start(&k, "time");
	expect_time(&k, want);
	chk_end(&k);
	chk_start(&k, "time.NULL");
	r = v_time(NULL);
	if (!h_ret_is_value(r) || r.raw != want)
		chk_fail(&k, "time(NULL) returned %s, want %ld", RET(r), want);
	chk_end(&k);
}

#endif /* H_HAS_TIME */

#ifdef H_HAS_GETCPU
void grp_getcpu(void)
{
	unsigned int cpu, node, scpu, snode;
	struct h_ret r;
	struct chk k;
	long s;
	int tries;

	chk_start(&k, "getcpu");
	for (tries = 0; tries < 5; tries++) {
		cpu = node = scpu = snode = ~0u;
		s = syscall(NR_GETCPU, &scpu, &snode, NULL);
		r = v_getcpu(&cpu, &node, NULL);
		if (s != 0 || !h_ret_ok(r) || (cpu == scpu && node == snode))
			break;
	}
	if (s != 0)
		chk_fail(&k, "the getcpu syscall failed: %s", strerror(errno));
	else if (!h_ret_ok(r))
		chk_fail(&k, "returned %s", RET(r));
	else if (cpu != scpu || node != snode)
		chk_fail(&k, "cpu %u node %u, the syscall says cpu %u node %u", cpu, node, scpu, snode);
	r = v_getcpu(NULL, NULL, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "getcpu(NULL, NULL, NULL) returned %s", RET(r));
	chk_end(&k);
}
#endif /* H_HAS_GETCPU */
