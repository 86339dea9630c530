/*
 * Freestanding harness, RISC-V (rv32, ilp32d; rv64 alike): the ecall
 * convention and what else of the ABI the C half of harness/freestanding/
 * needs.
 */
#ifndef FS_ARCH_H
#define FS_ARCH_H

#include <stdint.h>

/* ecall: number in a7, arguments in a0-a5, result (or -errno) in a0; nothing else clobbered. */
static inline long fs_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long a7 __asm__("a7") = nr;
	register long a0 __asm__("a0") = a;
	register long a1 __asm__("a1") = b;
	register long a2 __asm__("a2") = c;
	register long a3 __asm__("a3") = d;
	register long a4 __asm__("a4") = e;
	register long a5 __asm__("a5") = f;

	__asm__ __volatile__("ecall"
			     : "+r"(a0)
			     : "r"(a7), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5)
			     : "memory");
	return a0;
}

/* TLS variant I without a TCB: tp points at the block, the linker's offsets start there. */
#define FS_TLS_TCB_SIZE	0

static inline void fs_set_tp(void *tp)
{
	__asm__ __volatile__("mv tp, %0" : : "r"(tp) : "memory");
}

/* setjmp.S saves ra, sp, s0-s11 (a word each), then fs0-fs11 (8 bytes each, two words on rv32). */
#define FS_JMP_REGS	(14 + 12 * 8 / __SIZEOF_LONG__)

/*
 * The kernel's struct sigaction, asm-generic's without sa_restorer (riscv
 * has no SA_RESTORER): handler, flags, then the 64-bit mask.
 */
struct fs_ksigaction {
	void		*handler;
	unsigned long	flags;
	uint64_t	mask;
};

#endif
