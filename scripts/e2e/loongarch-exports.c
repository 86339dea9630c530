/*
 * The glibc program of scripts/kernel-e2e.sh --arch=loongarch64: every
 * export of v6.12's LoongArch vDSO used, through glibc 2.41 (which calls
 * each of them) and looked up in the image's own symbol table (the
 * selftests' parse_vdso.c).  Run as /t/vdsogen_exports by
 * scripts/e2e/init.c; exit 0 when every line says ok.
 *
 * A seccomp filter, installed once the reference answers are taken by
 * syscall and glibc has set up its getrandom state, proves where the
 * answers come from: clock_gettime, gettimeofday, clock_getres and getcpu
 * fail with ENOSYS whoever makes them (the vDSO answers them from its data
 * pages); getrandom succeeds only from an instruction inside the vDSO (its
 * fallback), so glibc's answers must be the vDSO's.  A signal handler
 * returns through __vdso_rt_sigreturn, where the kernel's signal code
 * (vdso_offset_sigreturn) points its ra.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "parse_vdso.h"

#define VERSION "LINUX_5.10"

static int failures;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	failures += !ok;
}

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* The end of the vDSO's loaded image: its highest PT_LOAD. */
static uintptr_t vdso_end(uintptr_t base)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	uintptr_t end = base;
	int i;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && base + ph[i].p_vaddr + ph[i].p_memsz > end)
			end = base + ph[i].p_vaddr + ph[i].p_memsz;
	return end;
}

static volatile uintptr_t handler_ra;

static void handler(int sig)
{
	(void)sig;
	handler_ra = (uintptr_t)__builtin_return_address(0);
}

/* The filter described above; the vDSO's text is [lo, hi) inside one 4 GiB window. */
static int filter(uintptr_t lo, uintptr_t hi)
{
	const unsigned int nr = offsetof(struct seccomp_data, nr);
	const unsigned int ip = offsetof(struct seccomp_data, instruction_pointer);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettimeofday, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_getres, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getcpu, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* getrandom: allowed from the vDSO only (little-endian halves). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ip + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo >> 32), 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ip),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (lo >> 32 != (hi - 1) >> 32)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(void)
{
	static const char *const exports[] = {
		"__vdso_getcpu", "__vdso_clock_getres", "__vdso_clock_gettime", "__vdso_gettimeofday",
		"__vdso_getrandom", "__vdso_rt_sigreturn",
	};
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	struct timespec before, real, t, res, want_res;
	unsigned char a[32], b[32];
	struct timeval tv;
	unsigned int cpu = ~0u, node = ~0u, want_node = ~0u;
	void *sigreturn;
	size_t n;
	int ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!base) {
		puts("FAIL no vDSO (AT_SYSINFO_EHDR)");
		return 1;
	}
	vdso_init_from_sysinfo_ehdr(base);
	ok = 1;
	for (n = 0; n < sizeof(exports) / sizeof(exports[0]); n++)
		if (!vdso_sym(VERSION, exports[n])) {
			printf("# %s@" VERSION " missing\n", exports[n]);
			ok = 0;
		}
	check(ok, "exports: all six of v6.12, version " VERSION);
	sigreturn = vdso_sym(VERSION, "__vdso_rt_sigreturn");

	/* The reference answers, by syscall; glibc's getrandom state, set up by syscall. */
	syscall(SYS_clock_getres, CLOCK_MONOTONIC, &want_res);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &before);
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &real);	/* no RTC: near 0 */
	syscall(SYS_getcpu, &cpu, &want_node, NULL);
	check(getrandom(a, sizeof(a), 0) == sizeof(a), "getrandom before the filter");

	/* The signal frame's return: through the vDSO's trampoline. */
	signal(SIGUSR1, handler);
	raise(SIGUSR1);
	check(sigreturn && handler_ra == (uintptr_t)sigreturn, "signal handler returns to __vdso_rt_sigreturn");

	if (filter(base, vdso_end(base))) {
		perror("FAIL seccomp");
		return 1;
	}
	check(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) == -1 && errno == ENOSYS,
	      "seccomp: the clock syscalls fail");
	check(syscall(SYS_getrandom, b, sizeof(b), 0) == -1 && errno == ENOSYS,
	      "seccomp: getrandom fails outside the vDSO");

	check(clock_gettime(CLOCK_MONOTONIC, &t) == 0 && ns(&t) >= ns(&before),
	      "clock_gettime(CLOCK_MONOTONIC) via __vdso_clock_gettime");
	check(clock_gettime(CLOCK_REALTIME, &t) == 0 && ns(&t) >= ns(&real),
	      "clock_gettime(CLOCK_REALTIME)");
	check(clock_gettime(CLOCK_BOOTTIME, &t) == 0 && ns(&t) >= ns(&before), "clock_gettime(CLOCK_BOOTTIME)");
	check(clock_gettime(CLOCK_MONOTONIC_COARSE, &t) == 0 && t.tv_sec >= before.tv_sec - 1,
	      "clock_gettime(CLOCK_MONOTONIC_COARSE)");
	check(gettimeofday(&tv, NULL) == 0 && tv.tv_sec * 1000000LL + tv.tv_usec >= ns(&real) / 1000,
	      "gettimeofday via __vdso_gettimeofday");
	check(clock_getres(CLOCK_MONOTONIC, &res) == 0 && res.tv_sec == want_res.tv_sec &&
	      res.tv_nsec == want_res.tv_nsec, "clock_getres via __vdso_clock_getres");
	check(sched_getcpu() == (int)cpu, "sched_getcpu via __vdso_getcpu");
	check(getcpu(&cpu, &node) == 0 && node == want_node, "getcpu's node via __vdso_getcpu");
	memcpy(b, a, sizeof(b));
	check(getrandom(a, sizeof(a), 0) == sizeof(a) && memcmp(a, b, sizeof(a)),
	      "getrandom via __vdso_getrandom: fresh bytes");
	return failures != 0;
}
