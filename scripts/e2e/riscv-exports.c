/*
 * The glibc program of scripts/kernel-e2e.sh --arch=riscv64: every export of
 * v6.12's riscv64 vDSO used, through glibc where glibc 2.36 calls it and
 * through the image's own symbol table (the selftests' parse_vdso.c) for
 * __vdso_riscv_hwprobe, which it does not yet.  Run as /t/vdsogen_exports by
 * scripts/e2e/init.c; exit 0 when every line says ok.
 *
 * A seccomp filter, installed once the reference answers are taken by
 * syscall, proves where the answers come from: clock_gettime, gettimeofday,
 * clock_getres and riscv_hwprobe fail with ENOSYS whoever makes them (the
 * vDSO answers them from its data page); getcpu and riscv_flush_icache,
 * which riscv's vDSO makes as syscalls, succeed only from an instruction
 * inside the vDSO, so glibc must have called the vDSO's.  A signal handler
 * returns through __vdso_rt_sigreturn, where the kernel's signal code
 * (__vdso_rt_sigreturn_offset) points its ra.
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
#include <sys/cachectl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "parse_vdso.h"

#define NR_riscv_hwprobe	258	/* v6.4 on; newer than this glibc's headers */
#define NR_riscv_flush_icache	259
#define HWPROBE_KEYS		7	/* keys 0..6: vendor, arch, impl ids, base, ima, cpu perf, ... */

struct riscv_hwprobe {
	int64_t key;
	uint64_t value;
};

typedef long (*hwprobe_fn)(struct riscv_hwprobe *, size_t, size_t, unsigned long *, unsigned int);

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
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettimeofday, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_getres, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_riscv_hwprobe, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getcpu, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_riscv_flush_icache, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* getcpu, riscv_flush_icache: allowed from the vDSO only (little-endian halves). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ip + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo >> 32), 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ip),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
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
		"__vdso_rt_sigreturn", "__vdso_gettimeofday", "__vdso_clock_gettime", "__vdso_clock_getres",
		"__vdso_getcpu", "__vdso_flush_icache", "__vdso_riscv_hwprobe",
	};
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	struct riscv_hwprobe want[HWPROBE_KEYS], got[HWPROBE_KEYS];
	struct timespec before, real, t, res, want_res;
	struct timeval tv;
	unsigned int cpu = ~0u, i;
	static char code[64];
	hwprobe_fn hwprobe;
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
		if (!vdso_sym("LINUX_4.15", exports[n])) {
			printf("# %s@LINUX_4.15 missing\n", exports[n]);
			ok = 0;
		}
	check(ok, "exports: all seven of v6.12, version LINUX_4.15");
	hwprobe = (hwprobe_fn)vdso_sym("LINUX_4.15", "__vdso_riscv_hwprobe");
	sigreturn = vdso_sym("LINUX_4.15", "__vdso_rt_sigreturn");

	/* The reference answers, by syscall. */
	for (i = 0; i < HWPROBE_KEYS; i++)
		want[i].key = got[i].key = i;
	check(syscall(NR_riscv_hwprobe, want, HWPROBE_KEYS, 0, NULL, 0) == 0, "riscv_hwprobe syscall");
	syscall(SYS_clock_getres, CLOCK_MONOTONIC, &want_res);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &before);
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &real);	/* no RTC: near 0 */

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
	check(syscall(SYS_getcpu, &cpu, NULL, NULL) == -1 && errno == EPERM,
	      "seccomp: getcpu fails outside the vDSO");

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
	check(sched_getcpu() == 0, "sched_getcpu via __vdso_getcpu");
	check(__riscv_flush_icache(code, code + sizeof(code), 0) == 0,
	      "__riscv_flush_icache via __vdso_flush_icache");
	check(hwprobe && hwprobe(got, HWPROBE_KEYS, 0, NULL, 0) == 0 &&
	      !memcmp(got, want, sizeof(want)), "__vdso_riscv_hwprobe: the syscall's answers, without it");
	return failures != 0;
}
