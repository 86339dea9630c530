/*
 * Freestanding harness, SuperH: sigsetjmp and the register half of
 * siglongjmp.  struct fs_jmp (setjmp.h) starts with FS_JMP_REGS words:
 * r8-r15, pr, fpscr, then fr12-fr15 (callee-saved under the SH-4 ABI).
 * sigsetjmp saves them and leaves the signal mask to fs_sigsetjmp_mask
 * (signal.c), which returns 0 for it; fs_longjmp restores them and returns
 * val (1 for 0) from that sigsetjmp again.  Both run at a call, where
 * fpscr.SZ is 0: fmov.s moves one single register.
 */
	.text
	.globl	sigsetjmp
	.type	sigsetjmp, @function
sigsetjmp:
	mov.l	r8, @(0, r4)
	mov.l	r9, @(4, r4)
	mov.l	r10, @(8, r4)
	mov.l	r11, @(12, r4)
	mov.l	r12, @(16, r4)
	mov.l	r13, @(20, r4)
	mov.l	r14, @(24, r4)
	mov.l	r15, @(28, r4)
	sts	pr, r0
	mov.l	r0, @(32, r4)
	sts	fpscr, r0
	mov.l	r0, @(36, r4)
	mov	r4, r0
	add	#56, r0			/* the end of fr12-fr15 */
	fmov.s	fr15, @-r0
	fmov.s	fr14, @-r0
	fmov.s	fr13, @-r0
	fmov.s	fr12, @-r0
	mov.l	1f, r0
	jmp	@r0			/* fs_sigsetjmp_mask(env, savemask): r4, r5 as given */
	 nop
	.p2align 2
1:	.long	fs_sigsetjmp_mask
	.size	sigsetjmp, . - sigsetjmp

	.globl	setjmp
	.type	setjmp, @function
setjmp:
	bra	sigsetjmp
	 mov	#0, r5
	.size	setjmp, . - setjmp

	.globl	fs_longjmp
	.type	fs_longjmp, @function
fs_longjmp:
	mov.l	@(0, r4), r8
	mov.l	@(4, r4), r9
	mov.l	@(8, r4), r10
	mov.l	@(12, r4), r11
	mov.l	@(16, r4), r12
	mov.l	@(20, r4), r13
	mov.l	@(24, r4), r14
	mov.l	@(28, r4), r15
	mov.l	@(32, r4), r0
	lds	r0, pr
	mov	r4, r0
	add	#40, r0
	fmov.s	@r0+, fr12
	fmov.s	@r0+, fr13
	fmov.s	@r0+, fr14
	fmov.s	@r0+, fr15
	mov.l	@(36, r4), r0
	lds	r0, fpscr
	mov	r5, r0
	tst	r0, r0			/* val 0 returns 1 */
	bf	1f
	mov	#1, r0
1:	rts
	 nop
	.size	fs_longjmp, . - fs_longjmp

	.section .note.GNU-stack, "", @progbits
