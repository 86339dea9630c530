/*
 * powerpc's glibc program for scripts/kernel-e2e.sh: every export of the
 * vDSO the kernel maps, used through glibc where glibc calls it and found
 * through glibc's dynamic linker (dlvsym on the vDSO's link map) where it
 * does not.  Built dynamically linked against the cross glibc: as a 64-bit
 * program (vdso64), and on ppc64 also as a 32-bit one (the compat vdso32);
 * VDSOGEN_EXPORTS (given when this is compiled) lists the exports of
 * vdsogen's image, and each must have its check here:
 *
 *   __kernel_clock_gettime, __kernel_gettimeofday, __kernel_time:
 *     glibc's answer (and the export's, called directly) between two
 *     syscalls' answers;
 *   __kernel_clock_gettime64 (32-bit): the export's answer, with 64-bit
 *     seconds, between two clock_gettime64 syscalls' answers;
 *   __kernel_clock_getres: glibc's answer is the syscall's;
 *   __kernel_getcpu: sched_getcpu() is the getcpu syscall's CPU;
 *   __kernel_get_tbfreq: __ppc_get_timebase_freq() is the export's and
 *     /proc/cpuinfo's timebase;
 *   __kernel_get_syscall_map: the map the export returns marks getpid and
 *     covers the syscall numbers up to the one it counts;
 *   __kernel_sync_dicache: two instructions written to a page run after
 *     the export made them visible;
 *   __kernel_sigtramp_rt64: a signal handler returns to it (the kernel
 *     starts handlers at its bctrl: vdso64_offset_sigtramp_rt64);
 *   __kernel_sigtramp32, __kernel_sigtramp_rt32 (32-bit): a handler
 *     installed without SA_SIGINFO returns to the first (the kernel's
 *     vdso32_offset_sigtramp32), one with SA_SIGINFO to the second
 *     (sigtramp_rt32), and each trampoline returns from the handler;
 *   __kernel_getrandom (called directly: the cross glibc, 2.36, predates
 *     glibc's use of it): the state query gives a state size and v6.12's
 *     mmap protection and flags; a state mapped as they say gives the
 *     bytes asked for, new ones each call, and other bytes from a second
 *     state.
 *
 * Prints "# ok NAME" or "# FAIL NAME (why)" per export; exit 0 when all
 * passed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/platform/ppc.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifdef __powerpc64__
#define VDSO_SONAME "linux-vdso64.so.1"
#else
#define VDSO_SONAME "linux-vdso32.so.1"
#endif
#define VDSO_VERSION "LINUX_2.6.15"

/*
 * The exports are code labels.  ELFv2 and 32-bit code call a code address;
 * ELFv1 calls through a function descriptor, which the caller makes (as
 * glibc does for the vDSO): the entry, and no TOC (the vDSO's code uses
 * none).
 */
#if !defined(__powerpc64__) || (defined(_CALL_ELF) && _CALL_ELF == 2)
static void *callable(void *code)
{
	return code;
}
#else
static void *callable(void *code)
{
	void **desc = calloc(3, sizeof(void *));

	if (desc)
		desc[0] = code;
	/* The call reads the descriptor through a function pointer, which the
	 * compiler does not see as a read of desc[0]: keep the store. */
	__asm__ __volatile__("" : : "r"(desc) : "memory");
	return desc;
}
#endif

static int ns_between(const struct timespec *a, const struct timespec *t, const struct timespec *b)
{
	long long x = a->tv_sec * 1000000000LL + a->tv_nsec;
	long long y = t->tv_sec * 1000000000LL + t->tv_nsec;
	long long z = b->tv_sec * 1000000000LL + b->tv_nsec;

	return x <= y && y <= z;
}

static const char *check_clock_gettime(void *code)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
					    CLOCK_BOOTTIME, CLOCK_TAI };
	int (*vdso)(clockid_t, struct timespec *) = callable(code);
	struct timespec a, t, v, b;
	unsigned i;

	for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		syscall(SYS_clock_gettime, clocks[i], &a);
		if (clock_gettime(clocks[i], &t) || vdso(clocks[i], &v))
			return "an error";
		syscall(SYS_clock_gettime, clocks[i], &b);
		if (!ns_between(&a, &t, &b) || !ns_between(&a, &v, &b))
			return "a time outside the syscalls' around it";
	}
	return NULL;
}

#ifndef __powerpc64__
/* struct __kernel_timespec: 64-bit seconds for a 32-bit task too. */
struct timespec64 {
	long long tv_sec, tv_nsec;
};

static const char *check_clock_gettime64(void *code)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
					    CLOCK_BOOTTIME, CLOCK_TAI };
	int (*vdso)(clockid_t, struct timespec64 *) = callable(code);
	struct timespec64 a, v, b;
	unsigned i;

	for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		syscall(SYS_clock_gettime64, clocks[i], &a);
		if (vdso(clocks[i], &v))
			return "an error";
		syscall(SYS_clock_gettime64, clocks[i], &b);
		if (a.tv_sec * 1000000000LL + a.tv_nsec > v.tv_sec * 1000000000LL + v.tv_nsec ||
		    v.tv_sec * 1000000000LL + v.tv_nsec > b.tv_sec * 1000000000LL + b.tv_nsec)
			return "a time outside the syscalls' around it";
	}
	return NULL;
}
#endif

static const char *check_gettimeofday(void *code)
{
	int (*vdso)(struct timeval *, void *) = callable(code);
	struct timeval a, t, v, b;

	syscall(SYS_gettimeofday, &a, NULL);
	if (gettimeofday(&t, NULL) || vdso(&v, NULL))
		return "an error";
	syscall(SYS_gettimeofday, &b, NULL);
	if (timercmp(&t, &a, <) || timercmp(&b, &t, <) || timercmp(&v, &a, <) || timercmp(&b, &v, <))
		return "a time outside the syscalls' around it";
	return NULL;
}

static const char *check_time(void *code)
{
	time_t (*vdso)(time_t *) = callable(code);
	time_t a, t, v, b;

	a = syscall(SYS_time, NULL);
	t = time(NULL);
	v = vdso(NULL);
	b = syscall(SYS_time, NULL);
	return a <= t && t <= v && v <= b ? NULL : "a time outside the syscalls' around it";
}

static const char *check_clock_getres(void *code)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_REALTIME_COARSE,
					    CLOCK_MONOTONIC_COARSE };
	struct timespec r, s;
	unsigned i;

	(void)code;
	for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (clock_getres(clocks[i], &r) || syscall(SYS_clock_getres, clocks[i], &s))
			return "an error";
		if (r.tv_sec != s.tv_sec || r.tv_nsec != s.tv_nsec)
			return "not the syscall's resolution";
	}
	return NULL;
}

static const char *check_getcpu(void *code)
{
	unsigned cpu = ~0u;

	(void)code;
	if (syscall(SYS_getcpu, &cpu, NULL, NULL))
		return "the syscall failed";
	return sched_getcpu() == (int)cpu ? NULL : "not the syscall's CPU";
}

static const char *check_get_tbfreq(void *code)
{
	uint64_t (*vdso)(void) = callable(code);
	unsigned long long proc = 0;
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "timebase : %llu", &proc);
	if (f)
		fclose(f);
	if (!proc)
		return "no timebase in /proc/cpuinfo";
	if (__ppc_get_timebase_freq() != proc || vdso() != proc)
		return "not /proc/cpuinfo's timebase";
	return NULL;
}

static const char *check_get_syscall_map(void *code)
{
	const uint32_t *(*vdso)(unsigned *) = callable(code);
	unsigned count = 0;
	const uint32_t *map = vdso(&count);

	if (!map || count <= SYS_getpid || count > 4096)
		return "no map, or a count out of range";
	/* Bit n of the map: word n / 32, from its most significant bit. */
	return map[SYS_getpid / 32] & (0x80000000u >> (SYS_getpid % 32)) ? NULL : "getpid not marked";
}

static const char *check_sync_dicache(void *code)
{
	int (*vdso)(void *, unsigned long) = callable(code);
	uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int (*fn)(void);

	if (page == MAP_FAILED)
		return "no writable, executable page";
	page[0] = 0x3860002a;	/* li r3,42 */
	page[1] = 0x4e800020;	/* blr */
	if (vdso(page, 2 * sizeof(uint32_t)))
		return "an error";
	fn = callable(page);
	return fn() == 42 ? NULL : "the written code did not run";
}

static void *volatile handler_return;

static void handler(int sig)
{
	(void)sig;
	handler_return = __builtin_return_address(0);
}

static const char *check_sigtramp_rt64(void *code)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	if (sigaction(SIGUSR1, &sa, NULL) || raise(SIGUSR1))
		return "no signal";
	return handler_return == code ? NULL : "the handler did not return to it";
}

#ifndef __powerpc64__
static volatile int handled;

static void plain_handler(int sig)
{
	(void)sig;
	handled = 1;
	handler_return = __builtin_return_address(0);
}

static void rt_handler(int sig, siginfo_t *info, void *uc)
{
	(void)sig, (void)info, (void)uc;
	handled = 1;
	handler_return = __builtin_return_address(0);
}

/* A handler without SA_SIGINFO (rt 0) or with it returns to `code`, which returns from it. */
static const char *check_sigtramp32(void *code, int rt)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	if (rt)
		sa.sa_sigaction = rt_handler;
	else
		sa.sa_handler = plain_handler;
	sa.sa_flags = rt ? SA_SIGINFO : 0;
	handled = 0;
	handler_return = NULL;
	if (sigaction(SIGUSR2, &sa, NULL) || raise(SIGUSR2))
		return "no signal";
	if (!handled)
		return "the handler did not run";
	return handler_return == code ? NULL : "the handler did not return to it";
}

static const char *check_sigtramp(void *code)
{
	return check_sigtramp32(code, 0);
}

static const char *check_sigtramp_rt(void *code)
{
	return check_sigtramp32(code, 1);
}
#endif

/* struct vgetrandom_opaque_params of v6.12's uapi linux/random.h (not in the cross headers). */
struct opaque_params {
	uint32_t size_of_opaque_state, mmap_prot, mmap_flags, reserved[13];
};

#define MAP_DROPPABLE_6_12 0x08	/* v6.12's uapi linux/mman.h */

static const char *check_getrandom(void *code)
{
	long (*vdso)(void *, size_t, unsigned, void *, size_t) = callable(code);
	static char bad[128];
	struct opaque_params params;
	unsigned char a[64], b[64], c[64], zero[64] = { 0 };
	void *state[2];
	int i;

	memset(&params, 0xff, sizeof(params));
	if (vdso(NULL, 0, 0, &params, ~0UL) != 0 || !params.size_of_opaque_state ||
	    params.size_of_opaque_state > 4096)
		return "the state query failed";
	/* MAP_DROPPABLE is a mapping type, as MAP_PRIVATE is: not both. */
	if (params.mmap_prot != (PROT_READ | PROT_WRITE) ||
	    params.mmap_flags != (MAP_ANONYMOUS | MAP_DROPPABLE_6_12)) {
		snprintf(bad, sizeof(bad), "mmap protection %#x and flags %#x, not v6.12's %#x and %#x",
			 params.mmap_prot, params.mmap_flags, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_DROPPABLE_6_12);
		return bad;
	}
	for (i = 0; i < 2; i++) {
		state[i] = mmap(NULL, params.size_of_opaque_state, params.mmap_prot, params.mmap_flags, -1, 0);
		if (state[i] == MAP_FAILED)
			return "the kernel maps no state as the query says";
	}
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	if (vdso(a, sizeof(a), 0, state[0], params.size_of_opaque_state) != sizeof(a) ||
	    vdso(b, sizeof(b), 0, state[0], params.size_of_opaque_state) != sizeof(b) ||
	    vdso(c, sizeof(c), 0, state[1], params.size_of_opaque_state) != sizeof(c))
		return "not the bytes asked for";
	if (!memcmp(a, zero, sizeof(a)) || !memcmp(a, b, sizeof(a)) || !memcmp(a, c, sizeof(a)) ||
	    !memcmp(b, c, sizeof(b)))
		return "zeros, or the same bytes twice";
	return NULL;
}

static const struct {
	const char *name;
	const char *(*check)(void *code);
} checks[] = {
	{ "__kernel_clock_gettime", check_clock_gettime },
	{ "__kernel_gettimeofday", check_gettimeofday },
	{ "__kernel_time", check_time },
	{ "__kernel_clock_getres", check_clock_getres },
	{ "__kernel_getcpu", check_getcpu },
	{ "__kernel_get_tbfreq", check_get_tbfreq },
	{ "__kernel_get_syscall_map", check_get_syscall_map },
	{ "__kernel_sync_dicache", check_sync_dicache },
	{ "__kernel_sigtramp_rt64", check_sigtramp_rt64 },
#ifndef __powerpc64__
	{ "__kernel_clock_gettime64", check_clock_gettime64 },
	{ "__kernel_sigtramp32", check_sigtramp },
	{ "__kernel_sigtramp_rt32", check_sigtramp_rt },
#endif
	{ "__kernel_getrandom", check_getrandom },
};

int main(void)
{
	static const char *const exports[] = { VDSOGEN_EXPORTS };
	void *vdso = dlopen(VDSO_SONAME, RTLD_NOW | RTLD_NOLOAD);
	unsigned i, j, failed = 0;

	if (!vdso) {
		printf("# FAIL %s (%s)\n", VDSO_SONAME, dlerror());
		return 1;
	}
	for (i = 0; i < sizeof(exports) / sizeof(exports[0]); i++) {
		void *code = dlvsym(vdso, exports[i], VDSO_VERSION);
		const char *why = "no check for it";

		for (j = 0; j < sizeof(checks) / sizeof(checks[0]); j++)
			if (!strcmp(checks[j].name, exports[i]))
				why = code ? checks[j].check(code) : "not found by dlvsym";
		if (why) {
			failed++;
			printf("# FAIL %s (%s)\n", exports[i], why);
		} else {
			printf("# ok %s\n", exports[i]);
		}
	}
	return failed != 0;
}
