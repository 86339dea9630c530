/*
 * What the loader (loader.c) and the probe (probe.c) use beyond what
 * harness/freestanding/ provides the harness, for targets built
 * freestanding ([harness] libc = "freestanding": no C library for the ABI).
 * Syscall numbers are the generic table's, which those ABIs use.
 */
#ifndef LOADER_FS_H
#define LOADER_FS_H

#include <fs.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_ftruncate
#define SYS_ftruncate	46
#endif
#ifndef SYS_pread64
#define SYS_pread64	67
#endif
#ifndef SYS_getuid
#define SYS_getuid	174
#define SYS_geteuid	175
#define SYS_getgid	176
#define SYS_getegid	177
#endif

#ifndef AT_BASE
#define AT_BASE		7
#define AT_FLAGS	8
#define AT_ENTRY	9
#define AT_UID		11
#define AT_EUID		12
#define AT_GID		13
#define AT_EGID		14
#define AT_CLKTCK	17
#define AT_SECURE	23
#define AT_RANDOM	25
#define AT_HWCAP2	26
#define AT_EXECFN	31
#endif

#ifndef MAP_STACK
#define MAP_STACK	0x20000
#endif
#define PR_SET_TIMERSLACK	29
#define PR_SET_NO_NEW_PRIVS	38
#define PR_SET_SECCOMP		22
#define SECCOMP_MODE_FILTER	2

static inline int prctl(int op, unsigned long a, unsigned long b, unsigned long c, unsigned long d)
{
	return (int)syscall(SYS_prctl, (long)op, a, b, c, d);
}

static inline int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return sigprocmask(how, set, old);
}

#ifdef __sh__
/* SuperH's pread64: a padding word (r7), then the 64-bit offset in r0 and r1, in memory order. */
static inline ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	long lo = (long)off, hi = off < 0 ? -1 : 0;

#ifdef __BIG_ENDIAN__
	return syscall(SYS_pread64, (long)fd, buf, n, 0L, hi, lo);
#else
	return syscall(SYS_pread64, (long)fd, buf, n, 0L, lo, hi);
#endif
}
#elif defined(__sparc__) && !defined(__arch64__)
/* 32-bit SPARC's pread64: the 64-bit offset as two words, the high one first, with no padding. */
static inline ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return syscall(SYS_pread64, (long)fd, buf, n, off < 0 ? -1L : 0L, (long)off);
}
#else
static inline ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return syscall(SYS_pread64, (long)fd, buf, n, (long)off);
}
#endif

static inline int ftruncate(int fd, off_t len)
{
	return (int)syscall(SYS_ftruncate, (long)fd, (long)len);
}

static inline uid_t getuid(void) { return (uid_t)syscall(SYS_getuid); }
static inline uid_t geteuid(void) { return (uid_t)syscall(SYS_geteuid); }
static inline uid_t getgid(void) { return (uid_t)syscall(SYS_getgid); }
static inline uid_t getegid(void) { return (uid_t)syscall(SYS_getegid); }

static inline int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	return syscall(SYS_clock_nanosleep, (long)clk, (long)flags, req, rem) == 0 ? 0 : errno;
}

/* Memory the loader never gives back: a bump allocator on anonymous pages. */
static inline void *calloc(size_t n, size_t size)
{
	static unsigned char *next, *end;
	size_t len = (n * size + 15) & ~(size_t)15;

	if (len > (size_t)(end - next)) {
		size_t chunk = len > (1UL << 20) ? len : 1UL << 20;

		next = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (next == MAP_FAILED)
			return NULL;
		end = next + chunk;
	}
	next += len;
	return next - len;
}

static inline void free(void *p)
{
	(void)p;
}

static inline int rand(void)
{
	static uint32_t x = 2463534242U;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return (int)(x >> 1);
}

static inline char *strcpy(char *to, const char *from)
{
	return memcpy(to, from, strlen(from) + 1);
}

#endif /* LOADER_FS_H */
