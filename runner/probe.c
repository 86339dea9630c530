/*
 * vdsogen-probe: which vDSO does this process have, and does it answer the
 * clocks without entering the kernel?
 *
 * A static program, built per target.  It prints the GNU build-id of the
 * ELF image at AT_SYSINFO_EHDR, then reads every clock the vDSO answers from
 * its data pages through the C library (which finds them in that image) and
 * counts the calls that made a syscall: a seccomp filter makes the clock
 * syscalls fail with a marker errno, so a call that entered the kernel is
 * seen to.  One CPU-time clock call, which no vDSO answers, shows that the
 * count works.  Lines, each "probe.KEY VALUE...":
 *
 *   probe.vdso ADDRESS          AT_SYSINFO_EHDR (0: none)
 *   probe.build-id HEX          the image's GNU build-id (or "none")
 *   probe.reference SEC.NSEC    CLOCK_REALTIME by syscall, before the filter
 *   probe.clock ID SEC.NSEC     clock_gettime of each page clock
 *   probe.gettimeofday SEC.USEC
 *   probe.time SEC
 *   probe.clock_getres ID SEC.NSEC
 *   probe.syscalls N            clock_gettime, gettimeofday and time calls above that
 *                               entered the kernel
 *   probe.getres-syscalls N     clock_getres calls that did (i386 glibc makes the time64
 *                               syscall whatever the vDSO)
 *   probe.control N             the CPU-time clock's syscalls (1 when counting works)
 *
 * Without seccomp (qemu-user refuses guests filters) the last three say
 * "unknown" and every call goes through.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#ifdef LOADER_FREESTANDING
#include "probe-fs.h"		/* no C library: the probe finds the vDSO's functions itself */
#else
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#endif

#define MARKER EHWPOISON

static const int page_clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
				   CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, CLOCK_TAI };

static void print_build_id(const unsigned char *base)
{
	const ElfW(Ehdr) *eh = (const void *)base;
	const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
	ElfW(Addr) first = 0;
	int i, have_load = 0;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && !have_load) {
			first = ph[i].p_vaddr;
			have_load = 1;
		}
	for (i = 0; i < eh->e_phnum; i++) {
		const unsigned char *p, *end;

		if (ph[i].p_type != PT_NOTE)
			continue;
		p = base + (ph[i].p_vaddr - first);
		end = p + ph[i].p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const unsigned char *name = p + sizeof(*n);
			const unsigned char *desc = name + ((n->n_namesz + 3) & ~3U);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				printf("probe.build-id ");
				for (unsigned int k = 0; k < n->n_descsz; k++)
					printf("%02x", desc[k]);
				printf("\n");
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3U);
		}
	}
	printf("probe.build-id none\n");
}

#define FAIL_WITH_MARKER(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | MARKER)

/* The clock syscalls fail with MARKER from now on; 0, or -1 when seccomp is not there. */
#ifdef LOADER_FREESTANDING
static int mark_clock_syscalls(void)
{
	return -1;
}
#else
static int mark_clock_syscalls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef SYS_clock_gettime
		FAIL_WITH_MARKER(SYS_clock_gettime),
#endif
#ifdef SYS_clock_gettime64
		FAIL_WITH_MARKER(SYS_clock_gettime64),
#endif
#ifdef SYS_gettimeofday
		FAIL_WITH_MARKER(SYS_gettimeofday),
#endif
#ifdef SYS_time
		FAIL_WITH_MARKER(SYS_time),
#endif
#ifdef SYS_clock_getres
		FAIL_WITH_MARKER(SYS_clock_getres),
#endif
#ifdef SYS_clock_getres_time64
		FAIL_WITH_MARKER(SYS_clock_getres_time64),
#endif
#if defined(__x86_64__) && defined(__ILP32__)
		/* x32: the vDSO's fallbacks make the plain x86-64 syscalls (no __X32_SYSCALL_BIT) */
		FAIL_WITH_MARKER(SYS_clock_gettime & ~__X32_SYSCALL_BIT),
		FAIL_WITH_MARKER(SYS_gettimeofday & ~__X32_SYSCALL_BIT),
		FAIL_WITH_MARKER(SYS_time & ~__X32_SYSCALL_BIT),
		FAIL_WITH_MARKER(SYS_clock_getres & ~__X32_SYSCALL_BIT),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -1;
	return 0;
}
#endif

/* 1 when a call that returned @rc entered the kernel (and was refused there). */
static int entered(long rc)
{
	return rc == -1 && errno == MARKER;
}

int main(void)
{
	const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	unsigned int i, syscalls = 0, getres_syscalls = 0;
	struct timespec ts;
	struct timeval tv;
	int counting;
	time_t t;

#ifdef LOADER_FREESTANDING
	find_vdso();
#endif
	printf("probe.vdso 0x%lx\n", (unsigned long)base);
	if (base)
		print_build_id(base);
	else
		printf("probe.build-id none\n");

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("probe.reference %lld.%09ld\n", (long long)ts.tv_sec, (long)ts.tv_nsec);
	counting = mark_clock_syscalls() == 0;

	for (i = 0; i < sizeof(page_clocks) / sizeof(page_clocks[0]); i++) {
		errno = 0;
		if (entered(clock_gettime(page_clocks[i], &ts))) {
			syscalls++;
			printf("probe.clock %d entered the kernel\n", page_clocks[i]);
			continue;
		}
		printf("probe.clock %d %lld.%09ld\n", page_clocks[i], (long long)ts.tv_sec, (long)ts.tv_nsec);
	}
	errno = 0;
	if (entered(gettimeofday(&tv, NULL)))
		syscalls++;
	printf("probe.gettimeofday %lld.%06ld\n", (long long)tv.tv_sec, (long)tv.tv_usec);
	errno = 0;
	t = time(NULL);
	if (entered(t))
		syscalls++;
	printf("probe.time %lld\n", (long long)t);
	for (i = 0; i < 3; i++) {
		static const int res_clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_REALTIME_COARSE };

		errno = 0;
		if (entered(clock_getres(res_clocks[i], &ts))) {
			getres_syscalls++;
			continue;
		}
		printf("probe.clock_getres %d %lld.%09ld\n", res_clocks[i], (long long)ts.tv_sec, (long)ts.tv_nsec);
	}

	if (!counting) {
		printf("probe.syscalls unknown\nprobe.getres-syscalls unknown\nprobe.control unknown\n");
		return 0;
	}
	printf("probe.syscalls %u\nprobe.getres-syscalls %u\n", syscalls, getres_syscalls);
	errno = 0;
	printf("probe.control %d\n", entered(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)));
	return 0;
}
