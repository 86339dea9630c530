/*
 * vdsogen test harness: the checks of the core functions on fresh pages:
 * every clock, clock ids the page does not serve, invalid ids, NULL
 * arguments.  Those of a flavour (check_clocks, check_resolutions,
 * check_ids) take any clock_gettime- or clock_getres-like function; the
 * others are one function's own.  harness_functions.c runs each as a group,
 * as vdsogen/spec/functions.toml's [NAME.harness] checks list them.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Clock ids the data page does not serve, each compared with the raw
 * syscall.  3 is THREAD_CPUTIME_ID, 8-10 the alarm clocks and SGI_CYCLE;
 * 13-15 are unused (EINVAL, like 12); 16 and 23 are the first and last of
 * v6.17's aux clocks, which a layout without their records leaves to the
 * kernel (with them, they are the AUX checks below).  Negative ids
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

/* One check per id the page does not serve: the flavour answers as its syscall does. */
void check_ids(const struct ts_flavour *fl)
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NSYSCALL_IDS; i++) {
#if VDSO_NR_AUX_CLOCKS
		if (h_syscall_ids[i] >= C_AUX && h_syscall_ids[i] < C_AUX + VDSO_NR_AUX_CLOCKS)
			continue;
#endif
		chk_start(&k, "%s.id_%d", fl->name, h_syscall_ids[i]);
		expect_as_syscall(&k, fl, h_syscall_ids[i]);
		chk_end(&k);
	}
}

/* Invalid ids, 12 and 100: the flavour fails with EINVAL and leaves its buffer alone. */
static void check_invalid_ids(const struct ts_flavour *fl)
{
	static const int ids[] = { 12, 100 };
	union ts_buf ts;
	struct chk k;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		chk_start(&k, "%s.invalid_%d", fl->name, ids[i]);
		memset(&ts, SENTINEL, sizeof(ts));
		expect_failed(&k, fl, fl->call(ids[i], &ts), EINVAL, &ts);
		chk_end(&k);
	}
}

#if VDSO_NR_AUX_CLOCKS
/*
 * Whether the image serves the enabled aux clocks from their records, as
 * its kernel's configuration decides: with CONFIG_POSIX_AUX_CLOCKS (and in
 * vdsogen's images) it does; built without it, Linux's vDSO never reads
 * them and every aux id makes the syscall, which is all such a kernel can
 * do, as it never enables an aux clock.  VDSOGEN_HARNESS_AUX ("served" or
 * "none": vdsogen test --aux-clocks) says which; otherwise the image's
 * answer for AUX0, enabled, tells, and the harness says what it found.
 * Either way every aux check then holds the image to that one answer.
 */
int aux_served(const struct ts_flavour *fl)
{
	static int served = -1;
	const char *how = getenv("VDSOGEN_HARNESS_AUX");
	union ts_buf ts, s0;
	struct h_ret r;
	int e;

	if (served >= 0)
		return served;
	if (how) {
		served = strcmp(how, "none") != 0;
		printf("# aux clocks: %s (VDSOGEN_HARNESS_AUX=%s)\n",
		       served ? "served from their records" : "never read: every aux id makes the syscall", how);
		return served;
	}
	memset(&ts, SENTINEL, sizeof(ts));
	r = fl->call(C_AUX, &ts);
	e = sys_clock(fl->nr, C_AUX, (void *)&s0);
	/* Only the syscall's own failure says "none"; any other answer is held to the records. */
	served = !(e && h_ret_errno(r, -e));
	printf("# aux clocks: %s\n", served ? "served from their records (AUX0, enabled, read its record)" :
	       "AUX0, enabled, answered as the syscall does: an image of a kernel without "
	       "CONFIG_POSIX_AUX_CLOCKS, which never enables one; every aux id must make the syscall");
	return served;
}

/* Each aux clock: an enabled one from its record where the image serves them, else as the syscall answers. */
static void check_aux_clocks(const struct ts_flavour *fl, const struct tk *tk)
{
	int served = aux_served(fl), i;
	struct chk k;

	for (i = 0; i < VDSO_NR_AUX_CLOCKS; i++) {
		chk_start(&k, "%s.AUX%d", fl->name, i);
		if (served && tk->aux[i].mode != CLOCKMODE_NONE)
			expect_clock_in(&k, fl, tk, C_AUX + i, NULL);
		else
			expect_as_syscall(&k, fl, C_AUX + i);
		chk_end(&k);
	}
}

/* Each aux clock's resolution: 1 ns, enabled or not, served or not, as Linux's vDSO answers it. */
static void check_aux_resolutions(const struct ts_flavour *fl)
{
	union ts_buf ts;
	struct h_ret r;
	struct hts got;
	struct chk k;
	int i;

	for (i = 0; i < VDSO_NR_AUX_CLOCKS; i++) {
		chk_start(&k, "%s.AUX%d", fl->name, i);
		memset(&ts, SENTINEL, sizeof(ts));
		r = fl->call(C_AUX + i, &ts);
		got = fl->get(&ts);
		if (!h_ret_ok(r))
			chk_fail(&k, "returned %s, want 0.000000001", RET(r));
		else if (got.sec != 0 || got.nsec != 1)
			chk_fail(&k, "%s, want 0.000000001", TS(got));
		chk_end(&k);
	}
}
#endif

/* Every clock of the page, CPU-time clocks (the syscall's business), invalid ids. */
void check_clocks(const struct ts_flavour *fl)
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "%s.%s", fl->name, h_clocks[i].name);
		expect_clock_in(&k, fl, &tk, h_clocks[i].id, NULL);
		chk_end(&k);
	}
#if VDSO_NR_AUX_CLOCKS
	check_aux_clocks(fl, &tk);
#endif
	chk_start(&k, "%s.PROCESS_CPUTIME_ID", fl->name);
	expect_as_syscall(&k, fl, C_PROCESS_CPUTIME_ID);
	chk_end(&k);
	check_invalid_ids(fl);
}

/* hrtimer_res for the counter clocks, the tick for the coarse ones; NULL; invalid ids. */
void check_resolutions(const struct ts_flavour *fl)
{
	union ts_buf ts;
	struct h_ret r;
	struct hts got;
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		long want = h_clocks[i].cls == CLS_COARSE ? VDSO_LOW_RES_NSEC : (long)tk.hrtimer_res;

		chk_start(&k, "%s.%s", fl->name, h_clocks[i].name);
		memset(&ts, SENTINEL, sizeof(ts));
		r = fl->call(h_clocks[i].id, &ts);
		got = fl->get(&ts);
		if (!h_ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else if (got.sec != 0 || got.nsec != want)
			chk_fail(&k, "%s, want 0.%09ld", TS(got), want);
		chk_end(&k);
	}
#if VDSO_NR_AUX_CLOCKS
	check_aux_resolutions(fl);
#endif
	chk_start(&k, "%s.NULL", fl->name);
	r = fl->call(C_MONOTONIC, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "%s(MONOTONIC, NULL) returned %s", fl->name, RET(r));
	r = fl->call(C_MONOTONIC_COARSE, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "%s(MONOTONIC_COARSE, NULL) returned %s", fl->name, RET(r));
	chk_end(&k);
	check_invalid_ids(fl);
}

/*
 * Past 2038, and past 2^32 seconds: REALTIME at 2^31 + 1234567 s,
 * REALTIME_COARSE at 2^33 + 7654321 s.  The time64 entries answer the
 * whole seconds; the native ones what Linux's answer, the seconds as a
 * long: whole on 64-bit targets, their low 32 bits on 32-bit ones
 * (negative just past 2038).
 */
#define Y2038_REALTIME		((1ULL << 31) + 1234567)
#define Y2038_REALTIME_COARSE	((1ULL << 33) + 7654321)

void grp_y2038(void)
{
	static const int clocks[] = { C_REALTIME, C_REALTIME_COARSE };
	const struct ts_flavour *const *flavours = h_y2038_flavours;	/* functions.toml: y2038 = true */
	struct tk tk;
	struct chk k;
	size_t i, f;

	tk_fresh(&tk, h_counter_modes[0]);
	tk.base[0][C_REALTIME].sec = Y2038_REALTIME;
	tk.base[0][C_REALTIME_COARSE].sec = Y2038_REALTIME_COARSE;
	tk_publish(page_time(), &tk);
	for (f = 0; flavours[f]; f++)
		for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
			if (!h_fn[flavours[f]->impl])
				continue;
			chk_start(&k, "y2038.%s.%s", flavours[f]->name, clock_by_id(clocks[i])->name);
			expect_clock_in(&k, flavours[f], &tk, clocks[i], NULL);
			chk_end(&k);
		}
#ifdef H_HAS_GETTIMEOFDAY
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		chk_start(&k, "y2038.gettimeofday");
		expect_gettimeofday(&k, &tk, NULL);
		chk_end(&k);
	}
#endif
#ifdef H_HAS_TIME
	if (h_fn[IMPL_TIME]) {
		chk_start(&k, "y2038.time");
		expect_time(&k, (long)tk.base[0][C_REALTIME].sec);
		chk_end(&k);
	}
#endif
}

#ifdef H_HAS_GETTIMEOFDAY
void check_gettimeofday(void)
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
void check_time(void)
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
/* getcpu on the CPU this thread runs on: cpu and node as the raw syscall says, through each pointer alone too. */
static void getcpu_here(struct chk *k)
{
	unsigned int cpu, node, scpu, snode;
	struct h_ret r;
	long s;
	int tries;

	for (tries = 0; tries < 5; tries++) {
		cpu = node = scpu = snode = ~0u;
		s = syscall(NR_GETCPU, &scpu, &snode, NULL);
#ifdef HARNESS_GETCPU_EXPECT
		/* The CPU number lives in a register the kernel sets up (and an emulator may not). */
		harness_getcpu_expect(&scpu, &snode);
#endif
		r = v_getcpu(&cpu, &node, NULL);
		if (s != 0 || !h_ret_ok(r) || (cpu == scpu && node == snode))
			break;
	}
	if (s != 0)
		chk_fail(k, "the getcpu syscall failed: %s", strerror(errno));
	else if (!h_ret_ok(r))
		chk_fail(k, "returned %s", RET(r));
	else if (cpu != scpu || node != snode)
		chk_fail(k, "cpu %u node %u, the syscall says cpu %u node %u", cpu, node, scpu, snode);
	cpu = node = ~0u;
	r = v_getcpu(&cpu, NULL, NULL);
	if (!h_ret_ok(r) || cpu != scpu)
		chk_fail(k, "getcpu(&cpu, NULL, NULL) returned %s, cpu %u, the syscall says %u", RET(r), cpu, scpu);
	r = v_getcpu(NULL, &node, NULL);
	if (!h_ret_ok(r) || node != snode)
		chk_fail(k, "getcpu(NULL, &node, NULL) returned %s, node %u, the syscall says %u", RET(r), node, snode);
}

/* On the harness's CPU and on another one (a getcpu that always answers 0 is caught there). */
void check_getcpu(void)
{
	int home = sched_getcpu();
	struct h_ret r;
	struct chk k;

	chk_start(&k, "getcpu");
	getcpu_here(&k);
	if (home >= 0 && h_other_cpu >= 0 && h_other_cpu != home) {
		pin_to(h_other_cpu);
		getcpu_here(&k);
		pin_to(home);
	}
	r = v_getcpu(NULL, NULL, NULL);
	if (!h_ret_ok(r))
		chk_fail(&k, "getcpu(NULL, NULL, NULL) returned %s", RET(r));
	chk_end(&k);
}
#endif /* H_HAS_GETCPU */
