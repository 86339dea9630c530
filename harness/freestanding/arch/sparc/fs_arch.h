/*
 * Freestanding harness, 32-bit SPARC (V8+, under a sparc64 kernel or
 * qemu-sparc32plus): the trap convention and what else of the ABI the C
 * half of harness/freestanding/ needs.  SPARC's signal numbers, sigaction
 * flags, errno values and open flags are its own: the headers of
 * include/ give them under __sparc__.
 */
#ifndef FS_ARCH_H
#define FS_ARCH_H

#include <stdint.h>

/*
 * ta 0x10: number in %g1, arguments in %o0-%o5; on failure the carry is
 * set and %o0 holds a positive errno, negated here.  %o1 may come back
 * changed (a second result), the condition codes too.
 */
static inline long fs_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long g1 __asm__("g1") = nr;
	register long o0 __asm__("o0") = a;
	register long o1 __asm__("o1") = b;
	register long o2 __asm__("o2") = c;
	register long o3 __asm__("o3") = d;
	register long o4 __asm__("o4") = e;
	register long o5 __asm__("o5") = f;

	__asm__ __volatile__("ta	0x10\n\t"
			     "bcs,a	1f\n\t"
			     " sub	%%g0, %%o0, %%o0\n"
			     "1:"
			     : "+r"(o0), "+r"(o1)
			     : "r"(g1), "r"(o2), "r"(o3), "r"(o4), "r"(o5)
			     : "cc", "memory");
	return o0;
}

/*
 * TLS variant II: the block ends at the thread pointer (%g7), the
 * linker's local-exec offsets are negative from there; start.c lays it
 * out so.  Nothing here reads the TCB above it.
 */
#define FS_TLS_TCB_SIZE		0
#define FS_TLS_VARIANT_II	1

static inline void fs_set_tp(void *tp)
{
	__asm__ __volatile__("mov	%0, %%g7" : : "r"(tp) : "memory");
}

/* setjmp.S saves %sp, %o7 and the caller's window, %l0-%l7 and %i0-%i7. */
#define FS_JMP_REGS	18

/*
 * The kernel's struct sigaction (compat_sigaction: handler, flags, a
 * restorer Linux does not use, then the 64-bit mask).  rt_sigaction takes
 * the restorer as an argument of its own, before the mask's size: the
 * handler returns 8 bytes past it, into sigreturn.S (rt_sigreturn for an
 * SA_SIGINFO handler's frame, sigreturn for the old frame of any other).
 */
struct fs_ksigaction {
	void		*handler;
	unsigned long	flags;
	void		*restorer;
	uint64_t	mask;
};
extern char fs_rt_sigreturn[], fs_sigreturn[];
#define FS_RT_SIGACTION_RESTORER(flags)	\
	((long)((flags) & SA_SIGINFO ? fs_rt_sigreturn : fs_sigreturn) - 8)

#endif
