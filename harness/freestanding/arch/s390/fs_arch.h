/*
 * Freestanding harness, 31-bit s390 (ESA/390 mode, a compat task of an
 * s390x kernel): the svc convention and what else of the ABI the C half
 * of harness/freestanding/ needs.
 */
#ifndef FS_ARCH_H
#define FS_ARCH_H

#include <stdint.h>

/*
 * svc 0: number in r1, arguments in r2-r7, result (or -errno) in r2;
 * nothing else clobbered.
 */
static inline long fs_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r1 __asm__("r1") = nr;
	register long r2 __asm__("r2") = a;
	register long r3 __asm__("r3") = b;
	register long r4 __asm__("r4") = c;
	register long r5 __asm__("r5") = d;
	register long r6 __asm__("r6") = e;
	register long r7 __asm__("r7") = f;

	__asm__ __volatile__("svc	0"
			     : "+d"(r2)
			     : "d"(r1), "d"(r3), "d"(r4), "d"(r5), "d"(r6), "d"(r7)
			     : "memory");
	return r2;
}

/*
 * TLS variant II: the block ends at the thread pointer (access register
 * a0), the linker's local-exec offsets are negative from there; start.c
 * lays it out so.  Nothing here reads the TCB above it.
 */
#define FS_TLS_TCB_SIZE		0
#define FS_TLS_VARIANT_II	1

static inline void fs_set_tp(void *tp)
{
	__asm__ __volatile__("sar	%%a0, %0" : : "d"(tp) : "memory");
}

/* s390's clone takes the new stack first, then the flags (CLONE_BACKWARDS2). */
#define FS_CLONE_STACK_FIRST	1

/* mmap2 takes a pointer to its six arguments (compat_sys_s390_mmap2). */
#define FS_MMAP_ARGS_IN_MEMORY	1

/* setjmp.S saves r6-r15 (a word each) and f4, f6 (callee-saved, two words each). */
#define FS_JMP_REGS	14

/* The kernel's struct sigaction (compat_sigaction): handler, flags, restorer, then the 64-bit mask. */
struct fs_ksigaction {
	void		*handler;
	unsigned long	flags;
	void		*restorer;
	uint64_t	mask;
};

#endif
