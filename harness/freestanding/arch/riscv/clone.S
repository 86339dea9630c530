/*
 * Freestanding harness, RISC-V: long fs_clone(flags, stack, ptid, ctid,
 * tls, fn, arg) starts a thread on stack (its top, 16-byte aligned) that
 * runs fn(arg) and then exits; the parent gets the thread id or -errno.
 * fn and arg travel on the new stack, since the child shares no registers
 * but sp with this code.
 */
#if __riscv_xlen == 32
#define REG_S	sw
#define REG_L	lw
#define SZREG	4
#else
#define REG_S	sd
#define REG_L	ld
#define SZREG	8
#endif
	.text
	.globl	fs_clone
	.type	fs_clone, @function
fs_clone:
	addi	a1, a1, -16
	REG_S	a5, 0(a1)		/* fn */
	REG_S	a6, SZREG(a1)		/* arg */
	li	a7, 220			/* __NR_clone: a0-a4 are its arguments already */
	ecall
	beqz	a0, 1f
	ret				/* the parent: tid or -errno */
1:	REG_L	t0, 0(sp)
	REG_L	a0, SZREG(sp)
	li	s0, 0
	li	ra, 0
	jalr	t0
	li	a7, 93			/* __NR_exit: this thread only */
	li	a0, 0
	ecall
	.size	fs_clone, . - fs_clone

	.section .note.GNU-stack, "", @progbits
