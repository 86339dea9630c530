/*
 * Freestanding harness: syscall numbers of 32-bit SPARC (arch/sparc/
 * kernel/syscalls/syscall.tbl, Linux 6.12, its "common" and "32" rows), as
 * a sparc64 kernel serves them to a V8+ program.  struct timespec here is
 * the 64-bit one time.h declares: clock_gettime64, and SYS_clock_nanosleep
 * and SYS_futex name the time64 syscalls; there is no nanosleep (time.h's
 * nanosleep is clock_nanosleep), and mmap is mmap2, its offset in 4 KiB
 * units.  The uid calls are the 32-bit ones, and ftruncate and pread64 are
 * here for runner/loader-fs.h, whose defaults are the generic table's.
 */
#ifndef FS_ARCH_SYSCALL_H
#define FS_ARCH_SYSCALL_H

#define SYS_exit		1
#define SYS_read		3
#define SYS_write		4
#define SYS_close		6
#define SYS_wait4		7
#define SYS_getpid		20
#define SYS_sigaltstack		28
#define SYS_kill		37
#define SYS_getuid		44	/* getuid32 */
#define SYS_getgid		53	/* getgid32 */
#define SYS_mmap2		56
#define SYS_pread64		67
#define SYS_geteuid		69	/* geteuid32 */
#define SYS_getegid		70	/* getegid32 */
#define SYS_munmap		73
#define SYS_mprotect		74
#define SYS_madvise		75
#define SYS_setitimer		83
#define SYS_getitimer		86
#define SYS_rt_sigreturn	101
#define SYS_rt_sigaction	102
#define SYS_rt_sigprocmask	103
#define SYS_getcwd		119
#define SYS_ftruncate		130
#define SYS_gettid		143
#define SYS_prctl		147
#define SYS_set_tid_address	166
#define SYS_exit_group		188
#define SYS_tgkill		211
#define SYS_sigreturn		216
#define SYS_clone		217
#define SYS_sched_yield		245
#define SYS_sched_getaffinity	260
#define SYS_sched_setaffinity	261
#define SYS_waitid		279
#define SYS_openat		284
#define SYS_getcpu		308
#define SYS_pipe2		321
#define SYS_seccomp		346
#define SYS_getrandom		347
#define SYS_statx		360
#define SYS_clock_gettime64	403
#define SYS_clock_getres_time64	406
#define SYS_clock_nanosleep	407	/* clock_nanosleep_time64 */
#define SYS_futex		422	/* futex_time64 */

#endif
