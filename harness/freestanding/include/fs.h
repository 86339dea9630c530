/*
 * vdsogen's freestanding harness support: the small libc the test harness
 * (harness/*.c) needs, for ABIs Debian has no C library for
 * ([harness] libc = "freestanding" in a spec).  The headers beside this one
 * stand in for the C library's; harness/freestanding/*.c implement them
 * on raw Linux syscalls, and harness/freestanding/arch/ARCH/ holds what is
 * machine code: the syscall instruction (fs_arch.h), the start-up, the
 * thread entry and setjmp/longjmp (*.S).
 *
 * Nothing here aims beyond the harness: one thread creation primitive,
 * printf without floating-point exponents, stdio without seeking.
 */
#ifndef FS_H
#define FS_H

#include <stddef.h>
#include <stdint.h>

#include "fs_arch.h"

/* A raw syscall: the result, or -errno. */
#define fs_sys0(nr)			fs_syscall6((nr), 0, 0, 0, 0, 0, 0)
#define fs_sys1(nr, a)			fs_syscall6((nr), (long)(a), 0, 0, 0, 0, 0)
#define fs_sys2(nr, a, b)		fs_syscall6((nr), (long)(a), (long)(b), 0, 0, 0, 0)
#define fs_sys3(nr, a, b, c)		fs_syscall6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define fs_sys4(nr, a, b, c, d)		fs_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define fs_sys5(nr, a, b, c, d, e)	fs_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* The C convention on top: -1 with errno set, or the result. */
long fs_ret(long r);

/* start.c: the process's auxiliary vector; a TLS block for a new thread. */
extern const unsigned long *fs_auxv;
void *fs_tls_new(void **block, size_t *size);

#endif /* FS_H */
