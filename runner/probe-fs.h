/*
 * The probe (probe.c) built freestanding ([harness] libc = "freestanding":
 * no C library for the ABI, harness/freestanding/ instead).  A C library
 * would find the vDSO's functions itself; here the probe does, as the Go
 * runtime does: by name in the image's .dynsym at AT_SYSINFO_EHDR, and
 * calls them, else makes the syscall.  No seccomp (qemu-user refuses it).
 */
#ifndef PROBE_FS_H
#define PROBE_FS_H

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID	3
#endif
#ifndef EHWPOISON
#define EHWPOISON	133
#endif

/* A note's header: the same in both ELF classes. */
typedef struct {
	uint32_t	n_namesz, n_descsz, n_type;
} Elf64_Nhdr, Elf32_Nhdr;

struct timeval {
	time_t	tv_sec;
	long	tv_usec;
};

/* The image's definition of @name (its first), or NULL. */
static void *vdso_sym(const char *name)
{
	const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	const ElfW(Ehdr) *eh = (const void *)base;
	const ElfW(Phdr) *ph;
	const ElfW(Shdr) *sh;
	ElfW(Addr) first = 0;
	int i;

	if (!base || !eh->e_shoff)
		return NULL;
	ph = (const void *)(base + eh->e_phoff);
	for (i = eh->e_phnum - 1; i >= 0; i--)
		if (ph[i].p_type == PT_LOAD)
			first = ph[i].p_vaddr - ph[i].p_offset;
	sh = (const void *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		const ElfW(Sym) *sym = (const void *)(base + sh[i].sh_offset);
		const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
		size_t k, n;

		if (sh[i].sh_type != SHT_DYNSYM || !sh[i].sh_entsize)
			continue;
		n = sh[i].sh_size / sh[i].sh_entsize;
		for (k = 1; k < n; k++)
			if (sym[k].st_shndx != 0 && strcmp(str + sym[k].st_name, name) == 0)
				return (void *)(base + (sym[k].st_value - first));
	}
	return NULL;
}

static int (*vdso_clock_gettime)(clockid_t, struct timespec *);
static int (*vdso_clock_getres)(clockid_t, struct timespec *);
static int (*vdso_gettimeofday)(void *, void *);	/* the kernel's timeval: 32-bit fields on a 32-bit ABI */

/*
 * time.h's timespec is the kernel's 64-bit one: on a 32-bit ABI the
 * time64 entries take it (sparc32-compat's __vdso_clock_gettime takes the
 * 32-bit old_timespec32), and gettimeofday's timeval is the 32-bit one.
 */
#if __SIZEOF_LONG__ == 4
#define VDSO_GETTIME64	"__vdso_clock_gettime64"
#define VDSO_GETRES64	"__vdso_clock_getres_time64"
#else
#define VDSO_GETTIME64	"__vdso_clock_gettime"
#define VDSO_GETRES64	"__vdso_clock_getres"
#endif

static void find_vdso(void)
{
	vdso_clock_gettime = (int (*)(clockid_t, struct timespec *))vdso_sym(VDSO_GETTIME64);
	vdso_clock_getres = (int (*)(clockid_t, struct timespec *))vdso_sym(VDSO_GETRES64);
	vdso_gettimeofday = (int (*)(void *, void *))vdso_sym("__vdso_gettimeofday");
}

/* As a C library answers: the vDSO's result (0, or -errno), else the syscall's. */
static int probe_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

static int probe_clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (vdso_clock_gettime)
		return probe_ret(vdso_clock_gettime(clk, ts));
#ifdef SYS_clock_gettime64
	return (int)syscall(SYS_clock_gettime64, (long)clk, ts);	/* time64 only (rv32): time.h's timespec is its */
#else
	return (int)syscall(SYS_clock_gettime, (long)clk, ts);
#endif
}

static int probe_clock_getres(clockid_t clk, struct timespec *ts)
{
	if (vdso_clock_getres)
		return probe_ret(vdso_clock_getres(clk, ts));
#ifdef SYS_clock_getres_time64
	return (int)syscall(SYS_clock_getres_time64, (long)clk, ts);
#else
	return (int)syscall(SYS_clock_getres, (long)clk, ts);
#endif
}

static int gettimeofday(struct timeval *tv, void *tz)
{
	if (vdso_gettimeofday) {
#if __SIZEOF_LONG__ == 4
		struct { long sec, usec; } old = { 0, 0 };
		int r = probe_ret(vdso_gettimeofday(&old, tz));

		tv->tv_sec = old.sec;
		tv->tv_usec = old.usec;
		return r;
#else
		return probe_ret(vdso_gettimeofday(tv, tz));
#endif
	}
#ifdef SYS_gettimeofday
	return (int)syscall(SYS_gettimeofday, tv, tz);
#else
	{
		/* No gettimeofday syscall (rv32): CLOCK_REALTIME's, in microseconds. */
		struct timespec ts = { 0 };
		int r = probe_clock_gettime(CLOCK_REALTIME, &ts);

		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
		return r;
	}
#endif
}

static time_t time(time_t *t)
{
	struct timespec ts;

	if (probe_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

#define clock_gettime	probe_clock_gettime
#define clock_getres	probe_clock_getres

#endif /* PROBE_FS_H */
