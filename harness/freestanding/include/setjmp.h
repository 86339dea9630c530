/*
 * Freestanding harness: sigsetjmp/siglongjmp (see fs.h).  The registers a
 * call preserves are saved by arch/ARCH/setjmp.S (FS_JMP_REGS of them,
 * fs_arch.h), the signal mask by C.
 */
#ifndef FS_SETJMP_H
#define FS_SETJMP_H

#include <signal.h>

#include "fs_arch.h"

struct fs_jmp {
	unsigned long	regs[FS_JMP_REGS];
	int		mask_saved;
	sigset_t	mask;
};

typedef struct fs_jmp jmp_buf[1];
typedef struct fs_jmp sigjmp_buf[1];

int sigsetjmp(sigjmp_buf env, int savemask) __attribute__((returns_twice));
_Noreturn void siglongjmp(sigjmp_buf env, int val);
int setjmp(jmp_buf env) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf env, int val);

#endif
