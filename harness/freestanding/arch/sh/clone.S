/*
 * Freestanding harness, SuperH: long fs_clone(flags, stack, ptid, ctid,
 * tls, fn, arg) starts a thread on stack (its top, 16-byte aligned) that
 * runs fn(arg) and then exits; the parent gets the thread id or -errno.
 * flags to ctid come in r4-r7, tls, fn and arg on the caller's stack; fn
 * and arg travel on the new stack, since the child shares no registers
 * but r15 with this code.  SuperH's clone takes (flags, stack, ptid,
 * ctid, tls): r4-r7, and the fifth in r0.
 */
	.text
	.globl	fs_clone
	.type	fs_clone, @function
fs_clone:
	mov.l	@(4, r15), r1		/* fn */
	mov.l	@(8, r15), r2		/* arg */
	add	#-8, r5
	mov.l	r1, @r5
	mov.l	r2, @(4, r5)
	mov.l	@r15, r0		/* tls */
	mov	#120, r3		/* __NR_clone */
	trapa	#0x15
	tst	r0, r0
	bt	1f
	rts				/* the parent: tid or -errno */
	 nop
1:	mov.l	@r15, r1
	mov.l	@(4, r15), r4
	mov	#0, r14			/* the frame pointer: a backtrace ends here */
	jsr	@r1
	 nop
	mov	#1, r3			/* __NR_exit: this thread only */
	mov	#0, r4
	trapa	#0x11
	.size	fs_clone, . - fs_clone

	.section .note.GNU-stack, "", @progbits
