/*
 * The 32-bit ARM program of scripts/kernel-e2e.sh --arch=arm64: every export
 * of vdsogen's compat vDSO (arch/arm64/kernel/vdso32, CONFIG_COMPAT_VDSO)
 * called in an AArch32 task.  VDSOGEN_EXPORTS, given when this is compiled,
 * lists the image's exports; each is found through the image's own symbol
 * table (the selftests' parse_vdso.c, version LINUX_2.6), since glibc 2.36
 * calls only __vdso_clock_gettime64 (clock_gettime, gettimeofday) on arm,
 * and called, its answer compared with the system call's.  An export this
 * program does not know how to call fails.  Run as /t/arm-vdsogen_exports
 * by scripts/e2e/init.c; exit 0 when every line says ok.
 *
 * A seccomp filter, installed once the reference answers are taken, makes
 * every clock system call fail with ENOSYS: the answers must come from the
 * vDSO's data pages, with no fallback to the kernel.
 */
#define _GNU_SOURCE
#include <asm/unistd.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "parse_vdso.h"

/* The kernel's timespecs and timeval of the two ABIs the exports take. */
struct ts32 { int32_t sec, nsec; };
struct ts64 { int64_t sec, nsec; };
struct tv32 { int32_t sec, usec; };

typedef int (*gettime32_fn)(clockid_t, struct ts32 *);
typedef int (*gettime64_fn)(clockid_t, struct ts64 *);
typedef int (*gettimeofday_fn)(struct tv32 *, void *);

static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC_COARSE };
#define NCLOCKS (sizeof(clocks) / sizeof(clocks[0]))

static struct ts64 before[NCLOCKS], res[NCLOCKS];
static int failures;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	failures += !ok;
}

static long long ns(int64_t sec, int64_t nsec)
{
	return sec * 1000000000LL + nsec;
}

/* clock_gettime-like: every clock at or after its reference, and no more than 100 s on. */
static void check_gettime(const char *name, void *fn, int time64)
{
	char what[128];
	unsigned int i;
	int ok = 1;

	for (i = 0; i < NCLOCKS; i++) {
		struct ts32 t32 = { 0, 0 };
		struct ts64 t64 = { 0, 0 };
		long long t, b = ns(before[i].sec, before[i].nsec);
		int ret = time64 ? ((gettime64_fn)fn)(clocks[i], &t64) : ((gettime32_fn)fn)(clocks[i], &t32);

		t = time64 ? ns(t64.sec, t64.nsec) : ns(t32.sec, t32.nsec);
		if (ret || t < b || t > b + 100000000000LL) {
			printf("# %s(%d): %d, %lld ns, the syscall said %lld before\n", name, clocks[i], ret, t, b);
			ok = 0;
		}
	}
	snprintf(what, sizeof(what), "%s: four clocks, no syscall", name);
	check(ok, what);
}

/* clock_getres-like: the system call's resolution. */
static void check_getres(const char *name, void *fn, int time64)
{
	char what[128];
	unsigned int i;
	int ok = 1;

	for (i = 0; i < NCLOCKS; i++) {
		struct ts32 t32 = { -1, -1 };
		struct ts64 t64 = { -1, -1 };
		int ret = time64 ? ((gettime64_fn)fn)(clocks[i], &t64) : ((gettime32_fn)fn)(clocks[i], &t32);

		if (!time64)
			t64.sec = t32.sec, t64.nsec = t32.nsec;
		if (ret || t64.sec != res[i].sec || t64.nsec != res[i].nsec) {
			printf("# %s(%d): %d, %lld ns, the syscall said %lld\n", name, clocks[i], ret,
			       ns(t64.sec, t64.nsec), ns(res[i].sec, res[i].nsec));
			ok = 0;
		}
	}
	snprintf(what, sizeof(what), "%s: four clocks' resolution, no syscall", name);
	check(ok, what);
}

static int deny_clock_syscalls(void)
{
	const unsigned int nr = offsetof(struct seccomp_data, nr);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime64, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_gettimeofday, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_getres, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_getres_time64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(void)
{
	static const char *const exports[] = { VDSOGEN_EXPORTS };
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct ts64 real, t;
	struct timespec mono;
	struct tv32 tv;
	unsigned int i;
	void *fn;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!base) {
		puts("FAIL no vDSO (AT_SYSINFO_EHDR)");
		return 1;
	}
	vdso_init_from_sysinfo_ehdr(base);

	/* The reference answers, by syscall. */
	for (i = 0; i < NCLOCKS; i++)
		if (syscall(__NR_clock_gettime64, clocks[i], &before[i]) ||
		    syscall(__NR_clock_getres_time64, clocks[i], &res[i])) {
			perror("FAIL clock_gettime64/clock_getres_time64 syscall");
			return 1;
		}
	real = before[0];
	if (deny_clock_syscalls()) {
		perror("FAIL seccomp");
		return 1;
	}
	check(syscall(__NR_clock_gettime64, CLOCK_MONOTONIC, &t) == -1 && errno == ENOSYS,
	      "seccomp: the clock syscalls fail");

	for (i = 0; i < sizeof(exports) / sizeof(exports[0]); i++) {
		const char *name = exports[i];

		fn = vdso_sym("LINUX_2.6", name);
		if (!fn) {
			printf("FAIL %s@LINUX_2.6 not found\n", name);
			failures++;
		} else if (!strcmp(name, "__vdso_clock_gettime")) {
			check_gettime(name, fn, 0);
		} else if (!strcmp(name, "__vdso_clock_gettime64")) {
			check_gettime(name, fn, 1);
		} else if (!strcmp(name, "__vdso_clock_getres")) {
			check_getres(name, fn, 0);
		} else if (!strcmp(name, "__vdso_clock_getres_time64")) {
			check_getres(name, fn, 1);
		} else if (!strcmp(name, "__vdso_gettimeofday")) {
			int ret = ((gettimeofday_fn)fn)(&tv, NULL);

			check(ret == 0 && tv.sec * 1000000LL + tv.usec >= ns(real.sec, real.nsec) / 1000,
			      "__vdso_gettimeofday: at or after the syscall's CLOCK_REALTIME, no syscall");
		} else {
			printf("FAIL %s: an export this program does not know\n", name);
			failures++;
		}
	}
	/* glibc's clock_gettime, as every program calls it (through __vdso_clock_gettime64). */
	check(clock_gettime(CLOCK_MONOTONIC, &mono) == 0 &&
	      ns(mono.tv_sec, mono.tv_nsec) >= ns(before[1].sec, before[1].nsec),
	      "clock_gettime(CLOCK_MONOTONIC) through glibc, no syscall");
	return failures != 0;
}
