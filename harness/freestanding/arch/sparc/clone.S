/*
 * Freestanding harness, 32-bit SPARC: long fs_clone(flags, stack, ptid,
 * ctid, tls, fn, arg) starts a thread on stack (its top, 16-byte aligned)
 * that runs fn(arg) and then exits; the parent gets the thread id or
 * -errno.  flags to fn come in %o0-%o5, arg on the caller's stack.  fn
 * and arg travel in this function's own window (%l0, %l1): a kernel copies
 * the window's save area to the child's stack and the child reloads it
 * from there, qemu-user copies the registers.  SPARC's clone takes
 * (flags, stack, ptid, tls, ctid), and answers in %o0 and %o1: 0 in %o1 to
 * the parent, 1 to the child.  The child's stack pointer is a frame below
 * the top, room for the save area of its window.
 */
	.text
	.globl	fs_clone
	.type	fs_clone, @function
fs_clone:
	save	%sp, -96, %sp
	mov	%i5, %l0		/* fn */
	ld	[%fp + 92], %l1		/* arg */
	mov	%i0, %o0
	sub	%i1, 96, %o1
	mov	%i2, %o2
	mov	%i4, %o3		/* tls */
	mov	%i3, %o4		/* ctid */
	mov	217, %g1		/* __NR_clone */
	ta	0x10
	bcs	2f
	 tst	%o1
	bne	3f
	 nop
	ret				/* the parent: the thread id */
	 restore %o0, 0, %o0
2:	sub	%g0, %o0, %o0
	ret				/* -errno */
	 restore %o0, 0, %o0
3:	mov	%g0, %fp		/* a backtrace ends here */
	call	%l0
	 mov	%l1, %o0
	mov	1, %g1			/* __NR_exit: this thread only */
	clr	%o0
	ta	0x10
	.size	fs_clone, . - fs_clone

	.section .note.GNU-stack, "", @progbits
