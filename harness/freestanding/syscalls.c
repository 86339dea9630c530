/*
 * Freestanding harness: the POSIX calls the harness makes, each one Linux
 * syscall (see fs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

__thread int errno;

long fs_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

long syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return fs_ret(fs_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

ssize_t read(int fd, void *buf, size_t n)
{
	return fs_ret(fs_sys3(SYS_read, fd, buf, n));
}

ssize_t write(int fd, const void *buf, size_t n)
{
	return fs_ret(fs_sys3(SYS_write, fd, buf, n));
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int mode;

	va_start(ap, flags);
	mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
	va_end(ap);
	return (int)fs_ret(fs_sys4(SYS_openat, AT_FDCWD, path, flags, mode));
}

int close(int fd)
{
	return (int)fs_ret(fs_sys1(SYS_close, fd));
}

/* statx: every ABI has it, while fstat's number (or existence) differs. */
int fstat(int fd, struct stat *st)
{
	enum { AT_EMPTY_PATH = 0x1000, STATX_BASIC_STATS = 0x7ff };
	/* struct statx: stx_mode at 28, stx_size at 40, 256 bytes in all. */
	unsigned char stx[256] __attribute__((aligned(8)));
	uint16_t mode;
	uint64_t size;

	if (fs_ret(fs_sys5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, stx)) < 0)
		return -1;
	__builtin_memcpy(&mode, stx + 28, sizeof(mode));
	__builtin_memcpy(&size, stx + 40, sizeof(size));
	st->st_mode = mode;
	st->st_size = (off_t)size;
	return 0;
}

_Noreturn void _exit(int status)
{
	for (;;)
		fs_sys1(SYS_exit_group, status);
}

/* alarm as setitimer(ITIMER_REAL), which every ABI has. */
unsigned int alarm(unsigned int secs)
{
	long it[4] = { 0, 0, (long)secs, 0 }, old[4] = { 0 };

	fs_sys3(SYS_setitimer, 0, it, old);
	return (unsigned int)(old[2] + (old[3] > 0));
}

pid_t getpid(void)
{
	return (pid_t)fs_sys0(SYS_getpid);
}

pid_t gettid(void)
{
	return (pid_t)fs_sys0(SYS_gettid);
}

int getpagesize(void)
{
	return (int)getauxval(AT_PAGESZ);
}

long sysconf(int name)
{
	cpu_set_t set;
	long n = 0;
	int c;

	switch (name) {
	case _SC_PAGESIZE:
		return getpagesize();
	case _SC_NPROCESSORS_ONLN:
		if (sched_getaffinity(0, sizeof(set), &set) != 0)
			return 1;
		for (c = 0; c < CPU_SETSIZE; c++)
			n += CPU_ISSET(c, &set);
		return n;
	default:
		errno = EINVAL;
		return -1;
	}
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
#if defined(SYS_mmap2) && defined(FS_MMAP_ARGS_IN_MEMORY)
	/* s390's 31-bit mmap2 takes one pointer, to its six arguments. */
	long a[6] = { (long)addr, (long)len, prot, flags, fd, off / 4096 };
	long r = fs_sys1(SYS_mmap2, a);
#elif defined(SYS_mmap2)
	long r = fs_syscall6(SYS_mmap2, (long)addr, (long)len, prot, flags, fd, off / 4096);	/* in 4 KiB units */
#else
	long r = fs_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
#endif

	return (void *)fs_ret(r);
}

int munmap(void *addr, size_t len)
{
	return (int)fs_ret(fs_sys2(SYS_munmap, addr, len));
}

int mprotect(void *addr, size_t len, int prot)
{
	return (int)fs_ret(fs_sys3(SYS_mprotect, addr, len, prot));
}

int madvise(void *addr, size_t len, int advice)
{
	return (int)fs_ret(fs_sys3(SYS_madvise, addr, len, advice));
}

/* fork is clone with only the exit signal: the child returns here with a copy of this stack. */
pid_t fork(void)
{
#ifdef FS_CLONE_STACK_FIRST
	return (pid_t)fs_ret(fs_syscall6(SYS_clone, 0, 17 /* SIGCHLD */, 0, 0, 0, 0));
#else
	return (pid_t)fs_ret(fs_syscall6(SYS_clone, 17 /* SIGCHLD */, 0, 0, 0, 0, 0));
#endif
}

int pipe(int fds[2])
{
	return (int)fs_ret(fs_sys2(SYS_pipe2, fds, 0));
}

#ifdef SYS_wait4
pid_t waitpid(pid_t pid, int *status, int options)
{
	return (pid_t)fs_ret(fs_syscall6(SYS_wait4, pid, (long)status, options, 0, 0, 0));
}
#else
/*
 * No wait4 (rv32): waitid(P_PID or P_ALL, WEXITED), and the wait status
 * rebuilt from the child's siginfo: si_code CLD_EXITED (1) gives the exit
 * code in bits 8-15, CLD_KILLED (2) and CLD_DUMPED (3) the signal, 0x80 for
 * a core.
 */
pid_t waitpid(pid_t pid, int *status, int options)
{
	struct { int signo, errno_, code, pid, uid, status; char pad[104]; } si = { 0 };
	long r = fs_ret(fs_syscall6(SYS_waitid, pid == -1 ? 0 : 1, pid == -1 ? 0 : pid, (long)&si,
				    options | 4 /* WEXITED */, 0, 0));

	if (r < 0)
		return -1;
	if (status)
		*status = si.code == 1 ? (si.status & 0xff) << 8 : si.status | (si.code == 3 ? 0x80 : 0);
	return si.pid;
}
#endif

int clock_gettime(clockid_t clk, struct timespec *ts)
{
#ifdef SYS_clock_gettime64
	return (int)fs_ret(fs_sys2(SYS_clock_gettime64, clk, ts));	/* time.h's timespec is its */
#else
	return (int)fs_ret(fs_sys2(SYS_clock_gettime, clk, ts));
#endif
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
#ifdef SYS_nanosleep
	return (int)fs_ret(fs_sys2(SYS_nanosleep, req, rem));
#else
	/* As nanosleep measures it: CLOCK_MONOTONIC, a relative time. */
	return (int)fs_ret(fs_sys4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, req, rem));
#endif
}

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	long r = fs_sys3(SYS_sched_getaffinity, pid, size, set);

	/* The kernel fills only its own mask's bytes. */
	if (r > 0 && (size_t)r < size)
		__builtin_memset((char *)set + r, 0, size - (size_t)r);
	return r < 0 ? (int)fs_ret(r) : 0;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	return (int)fs_ret(fs_sys3(SYS_sched_setaffinity, pid, size, set));
}

int sched_getcpu(void)
{
	unsigned int cpu;

	return fs_ret(fs_sys3(SYS_getcpu, &cpu, NULL, NULL)) < 0 ? -1 : (int)cpu;
}

int sched_yield(void)
{
	return (int)fs_ret(fs_sys0(SYS_sched_yield));
}
