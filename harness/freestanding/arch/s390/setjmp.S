/*
 * Freestanding harness, 31-bit s390: sigsetjmp and the register half of
 * siglongjmp.  struct fs_jmp (setjmp.h) starts with FS_JMP_REGS words:
 * r6-r15 (r14 the return address, r15 the stack pointer), then f4 and f6,
 * the registers the 31-bit ABI has a call preserve.  sigsetjmp saves them
 * and jumps on to fs_sigsetjmp_mask (signal.c), r14 untouched, which
 * returns 0 to the caller for it; fs_longjmp restores them and returns
 * val (1 for 0) to where sigsetjmp would have.
 */
	.text
	.globl	sigsetjmp
	.type	sigsetjmp, @function
sigsetjmp:
	stm	%r6, %r15, 0(%r2)
	std	%f4, 40(%r2)
	std	%f6, 48(%r2)
	jg	fs_sigsetjmp_mask	/* fs_sigsetjmp_mask(env, savemask): r2, r3 as given */
	.size	sigsetjmp, . - sigsetjmp

	.globl	setjmp
	.type	setjmp, @function
setjmp:
	lhi	%r3, 0
	j	sigsetjmp
	.size	setjmp, . - setjmp

	.globl	fs_longjmp
	.type	fs_longjmp, @function
fs_longjmp:
	ld	%f4, 40(%r2)
	ld	%f6, 48(%r2)
	lm	%r6, %r15, 0(%r2)
	lr	%r2, %r3
	ltr	%r2, %r2		/* val 0 returns 1 */
	jnz	1f
	lhi	%r2, 1
1:	br	%r14
	.size	fs_longjmp, . - fs_longjmp

	.section .note.GNU-stack, "", @progbits
