/*
 * Freestanding harness: syscall numbers of RISC-V (the asm-generic table).
 * rv32 has only the 64-bit time syscalls (no __ARCH_WANT_TIME32_SYSCALLS):
 * clock_gettime64, and SYS_clock_nanosleep and SYS_futex name the time64
 * ones, whose struct timespec is the 64-bit one time.h declares; there is
 * no nanosleep (time.h's nanosleep is clock_nanosleep), and mmap is mmap2,
 * its offset in pages; there is no wait4 (waitid it is).
 */
#ifndef FS_ARCH_SYSCALL_H
#define FS_ARCH_SYSCALL_H

#define SYS_getcwd		17
#define SYS_pipe2		59
#define SYS_openat		56
#define SYS_close		57
#define SYS_read		63
#define SYS_write		64
#define SYS_exit		93
#define SYS_exit_group		94
#define SYS_waitid		95
#define SYS_set_tid_address	96
#define SYS_getitimer		102
#define SYS_setitimer		103
#define SYS_sched_setaffinity	122
#define SYS_sched_getaffinity	123
#define SYS_sched_yield		124
#define SYS_kill		129
#define SYS_tgkill		131
#define SYS_sigaltstack		132
#define SYS_rt_sigaction	134
#define SYS_rt_sigprocmask	135
#define SYS_rt_sigreturn	139
#define SYS_prctl		167
#define SYS_getcpu		168
#define SYS_getpid		172
#define SYS_gettid		178
#define SYS_munmap		215
#define SYS_clone		220
#define SYS_mprotect		226
#define SYS_madvise		233
#define SYS_riscv_hwprobe	258
#define SYS_riscv_flush_icache	259
#define SYS_seccomp		277
#define SYS_getrandom		278
#define SYS_statx		291
#if __riscv_xlen == 32
#define SYS_mmap2		222
#define SYS_clock_gettime64	403
#define SYS_clock_getres_time64	406
#define SYS_clock_nanosleep	407	/* clock_nanosleep_time64 */
#define SYS_futex		422	/* futex_time64 */
#else
#define SYS_futex		98
#define SYS_nanosleep		101
#define SYS_clock_gettime	113
#define SYS_clock_getres	114
#define SYS_clock_nanosleep	115
#define SYS_gettimeofday	169
#define SYS_mmap		222
#define SYS_wait4		260
#endif

#endif
