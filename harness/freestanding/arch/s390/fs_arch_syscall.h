/*
 * Freestanding harness: syscall numbers of 31-bit s390 (arch/s390/kernel/
 * syscalls/syscall.tbl, Linux 6.12, its "common" and "32" rows), as an
 * s390x kernel with COMPAT serves them.  struct timespec here is the
 * 64-bit one time.h declares: clock_gettime64, and SYS_clock_nanosleep and
 * SYS_futex name the time64 syscalls; there is no nanosleep (time.h's
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
#define SYS_restart_syscall	7
#define SYS_getpid		20
#define SYS_kill		37
#define SYS_munmap		91
#define SYS_ftruncate		93
#define SYS_setitimer		104
#define SYS_getitimer		105
#define SYS_wait4		114
#define SYS_sigreturn		119
#define SYS_clone		120
#define SYS_mprotect		125
#define SYS_sched_yield		158
#define SYS_prctl		172
#define SYS_rt_sigreturn	173
#define SYS_rt_sigaction	174
#define SYS_rt_sigprocmask	175
#define SYS_pread64		180
#define SYS_getcwd		183
#define SYS_sigaltstack		186
#define SYS_mmap2		192
#define SYS_getuid		199	/* getuid32 */
#define SYS_getgid		200	/* getgid32 */
#define SYS_geteuid		201	/* geteuid32 */
#define SYS_getegid		202	/* getegid32 */
#define SYS_madvise		219
#define SYS_gettid		236
#define SYS_sched_setaffinity	239
#define SYS_sched_getaffinity	240
#define SYS_tgkill		241
#define SYS_exit_group		248
#define SYS_set_tid_address	252
#define SYS_waitid		281
#define SYS_openat		288
#define SYS_getcpu		311
#define SYS_pipe2		325
#define SYS_seccomp		348
#define SYS_getrandom		349
#define SYS_statx		379
#define SYS_clock_gettime64	403
#define SYS_clock_getres_time64	406
#define SYS_clock_nanosleep	407	/* clock_nanosleep_time64 */
#define SYS_futex		422	/* futex_time64 */

#endif
