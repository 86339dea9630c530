/*
 * Freestanding harness, SuperH (sh4, either byte order): the trapa
 * convention and what else of the ABI the C half of harness/freestanding/
 * needs.
 */
#ifndef FS_ARCH_H
#define FS_ARCH_H

#include <stdint.h>

/*
 * trapa #0x16 (0x10 + the number of arguments, as the SH ABI writes it;
 * Linux reads the number from r3 alone): number in r3, arguments in
 * r4-r7, r0, r1, result (or -errno) in r0; nothing else clobbered.
 */
static inline long fs_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r3 __asm__("r3") = nr;
	register long r4 __asm__("r4") = a;
	register long r5 __asm__("r5") = b;
	register long r6 __asm__("r6") = c;
	register long r7 __asm__("r7") = d;
	register long r0 __asm__("r0") = e;
	register long r1 __asm__("r1") = f;

	__asm__ __volatile__("trapa	#0x16"
			     : "+r"(r0)
			     : "r"(r3), "r"(r4), "r"(r5), "r"(r6), "r"(r7), "r"(r1)
			     : "memory");
	return r0;
}

/*
 * TLS variant I with a TCB: gbr points at its 8 bytes, and the block
 * follows at the block's alignment (max(8, p_align)), where GNU ld's
 * local-exec offsets put it; start.c moves the thread pointer down by that.
 */
#define FS_TLS_TCB_SIZE		8
#define FS_TLS_TCB_AT_TP	1

static inline void fs_set_tp(void *tp)
{
	__asm__ __volatile__("ldc	%0, gbr" : : "r"(tp) : "memory");
}

/* setjmp.S saves r8-r15, pr, fpscr and fr12-fr15 (callee-saved, a word each). */
#define FS_JMP_REGS	14

/* The kernel's struct sigaction with SA_RESTORER: handler, flags, restorer, then the 64-bit mask. */
struct fs_ksigaction {
	void		*handler;
	unsigned long	flags;
	void		*restorer;
	uint64_t	mask;
};

#endif
