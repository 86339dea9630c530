/*
 * Freestanding harness, LoongArch (LP64): the syscall instruction and what
 * else of the ABI the C half of harness/freestanding/ needs.
 */
#ifndef FS_ARCH_H
#define FS_ARCH_H

#include <stdint.h>

/* syscall 0: number in a7, arguments in a0-a5, result (or -errno) in a0; t0-t8 clobbered. */
static inline long fs_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long a7 __asm__("$a7") = nr;
	register long a0 __asm__("$a0") = a;
	register long a1 __asm__("$a1") = b;
	register long a2 __asm__("$a2") = c;
	register long a3 __asm__("$a3") = d;
	register long a4 __asm__("$a4") = e;
	register long a5 __asm__("$a5") = f;

	__asm__ __volatile__("syscall 0"
			     : "+r"(a0)
			     : "r"(a7), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5)
			     : "$t0", "$t1", "$t2", "$t3", "$t4", "$t5", "$t6", "$t7", "$t8", "memory");
	return a0;
}

/* TLS variant I without a TCB: $tp points at the block, the linker's offsets start there. */
#define FS_TLS_TCB_SIZE	0

static inline void fs_set_tp(void *tp)
{
	__asm__ __volatile__("move $tp, %0" : : "r"(tp) : "memory");
}

/* setjmp.S saves ra, sp, fp, s0-s8 and fs0-fs7. */
#define FS_JMP_REGS	20

/*
 * The kernel's struct sigaction, asm-generic's with its sa_restorer slot
 * (which stays 0: handlers return through the vDSO's trampoline); qemu-user
 * reads and writes all four words.
 */
struct fs_ksigaction {
	void		*handler;
	unsigned long	flags;
	void		*restorer;
	uint64_t	mask;
};

#endif
