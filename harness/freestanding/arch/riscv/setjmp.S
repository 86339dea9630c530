/*
 * Freestanding harness, RISC-V: sigsetjmp and the register half of
 * siglongjmp.  struct fs_jmp (setjmp.h) starts with FS_JMP_REGS words: ra,
 * sp, s0-s11, then fs0-fs11 (callee-saved under the D ABIs, 8 bytes each).
 * sigsetjmp saves them and leaves the signal mask to fs_sigsetjmp_mask
 * (signal.c), which returns 0 for it; fs_longjmp restores them and returns
 * val (1 for 0) from that sigsetjmp again.
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
#define FREG(n)	(14 * SZREG + 8 * (n))

	.text
	.globl	sigsetjmp
	.type	sigsetjmp, @function
sigsetjmp:
	REG_S	ra, 0(a0)
	REG_S	sp, 1 * SZREG(a0)
	REG_S	s0, 2 * SZREG(a0)
	REG_S	s1, 3 * SZREG(a0)
	REG_S	s2, 4 * SZREG(a0)
	REG_S	s3, 5 * SZREG(a0)
	REG_S	s4, 6 * SZREG(a0)
	REG_S	s5, 7 * SZREG(a0)
	REG_S	s6, 8 * SZREG(a0)
	REG_S	s7, 9 * SZREG(a0)
	REG_S	s8, 10 * SZREG(a0)
	REG_S	s9, 11 * SZREG(a0)
	REG_S	s10, 12 * SZREG(a0)
	REG_S	s11, 13 * SZREG(a0)
	fsd	fs0, FREG(0)(a0)
	fsd	fs1, FREG(1)(a0)
	fsd	fs2, FREG(2)(a0)
	fsd	fs3, FREG(3)(a0)
	fsd	fs4, FREG(4)(a0)
	fsd	fs5, FREG(5)(a0)
	fsd	fs6, FREG(6)(a0)
	fsd	fs7, FREG(7)(a0)
	fsd	fs8, FREG(8)(a0)
	fsd	fs9, FREG(9)(a0)
	fsd	fs10, FREG(10)(a0)
	fsd	fs11, FREG(11)(a0)
	tail	fs_sigsetjmp_mask
	.size	sigsetjmp, . - sigsetjmp

	.globl	setjmp
	.type	setjmp, @function
setjmp:
	li	a1, 0
	j	sigsetjmp
	.size	setjmp, . - setjmp

	.globl	fs_longjmp
	.type	fs_longjmp, @function
fs_longjmp:
	REG_L	ra, 0(a0)
	REG_L	sp, 1 * SZREG(a0)
	REG_L	s0, 2 * SZREG(a0)
	REG_L	s1, 3 * SZREG(a0)
	REG_L	s2, 4 * SZREG(a0)
	REG_L	s3, 5 * SZREG(a0)
	REG_L	s4, 6 * SZREG(a0)
	REG_L	s5, 7 * SZREG(a0)
	REG_L	s6, 8 * SZREG(a0)
	REG_L	s7, 9 * SZREG(a0)
	REG_L	s8, 10 * SZREG(a0)
	REG_L	s9, 11 * SZREG(a0)
	REG_L	s10, 12 * SZREG(a0)
	REG_L	s11, 13 * SZREG(a0)
	fld	fs0, FREG(0)(a0)
	fld	fs1, FREG(1)(a0)
	fld	fs2, FREG(2)(a0)
	fld	fs3, FREG(3)(a0)
	fld	fs4, FREG(4)(a0)
	fld	fs5, FREG(5)(a0)
	fld	fs6, FREG(6)(a0)
	fld	fs7, FREG(7)(a0)
	fld	fs8, FREG(8)(a0)
	fld	fs9, FREG(9)(a0)
	fld	fs10, FREG(10)(a0)
	fld	fs11, FREG(11)(a0)
	seqz	t0, a1			/* val 0 returns 1 */
	add	a0, a1, t0
	ret
	.size	fs_longjmp, . - fs_longjmp

	.section .note.GNU-stack, "", @progbits
