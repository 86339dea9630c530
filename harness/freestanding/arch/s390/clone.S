/*
 * Freestanding harness, 31-bit s390: long fs_clone(flags, stack, ptid,
 * ctid, tls, fn, arg) starts a thread on stack (its top, 16-byte aligned)
 * that runs fn(arg) and then exits; the parent gets the thread id or
 * -errno.  flags to tls come in r2-r6, fn and arg on the caller's stack
 * (96 and 100 above r15).  They travel on the new stack, above the
 * child's first frame, since the child shares no registers but r15 with
 * this code.  s390's clone takes (stack, flags, ptid, ctid, tls): r2 and
 * r3 swap.  r6 (tls) is the caller's and is left as it came.
 */
	.text
	.globl	fs_clone
	.type	fs_clone, @function
fs_clone:
	l	%r0, 96(%r15)		/* fn */
	l	%r1, 100(%r15)		/* arg */
	ahi	%r3, -104		/* the child's frame: 96 bytes, then fn and arg */
	st	%r0, 96(%r3)
	st	%r1, 100(%r3)
	xc	0(4, %r3), 0(%r3)	/* its back chain: a backtrace ends here */
	lr	%r1, %r2
	lr	%r2, %r3
	lr	%r3, %r1
	svc	120			/* __NR_clone */
	ltr	%r2, %r2
	jz	1f
	br	%r14			/* the parent: tid or -errno */
1:	l	%r1, 96(%r15)
	l	%r2, 100(%r15)
	basr	%r14, %r1
	lhi	%r2, 0
	svc	1			/* __NR_exit: this thread only */
	.size	fs_clone, . - fs_clone

	.section .note.GNU-stack, "", @progbits
