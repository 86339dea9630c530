/*
 * Freestanding harness, 32-bit SPARC: sigsetjmp and the register half of
 * siglongjmp.  struct fs_jmp (setjmp.h) starts with FS_JMP_REGS words: the
 * caller's %sp and return address %o7, then its window, %l0-%l7 and
 * %i0-%i7 (%fp among them).  sigsetjmp is a leaf, so the window is the
 * caller's own; it saves them and jumps on to fs_sigsetjmp_mask
 * (signal.c) with %o7 untouched, which returns 0 to the caller for it.
 * The window is saved here, not left to its save area at %sp: a signal
 * delivered by qemu-user moves the window's %sp to the signal frame, and
 * the window is spilled there.  fs_longjmp writes every other window to
 * its stack (flushw), so that the frames above come back from memory,
 * takes the caller's registers back and returns val (1 for 0) to where
 * sigsetjmp would have.
 */
	.text
	.globl	sigsetjmp
	.type	sigsetjmp, @function
sigsetjmp:
	st	%sp, [%o0]
	st	%o7, [%o0 + 4]
	st	%l0, [%o0 + 8]
	st	%l1, [%o0 + 12]
	st	%l2, [%o0 + 16]
	st	%l3, [%o0 + 20]
	st	%l4, [%o0 + 24]
	st	%l5, [%o0 + 28]
	st	%l6, [%o0 + 32]
	st	%l7, [%o0 + 36]
	st	%i0, [%o0 + 40]
	st	%i1, [%o0 + 44]
	st	%i2, [%o0 + 48]
	st	%i3, [%o0 + 52]
	st	%i4, [%o0 + 56]
	st	%i5, [%o0 + 60]
	st	%i6, [%o0 + 64]
	st	%i7, [%o0 + 68]
	sethi	%hi(fs_sigsetjmp_mask), %g1
	jmp	%g1 + %lo(fs_sigsetjmp_mask)	/* fs_sigsetjmp_mask(env, savemask) */
	 nop
	.size	sigsetjmp, . - sigsetjmp

	.globl	setjmp
	.type	setjmp, @function
setjmp:
	ba	sigsetjmp
	 mov	0, %o1
	.size	setjmp, . - setjmp

	.globl	fs_longjmp
	.type	fs_longjmp, @function
fs_longjmp:
	flushw
	ld	[%o0], %sp
	ld	[%o0 + 4], %o7
	ld	[%o0 + 8], %l0
	ld	[%o0 + 12], %l1
	ld	[%o0 + 16], %l2
	ld	[%o0 + 20], %l3
	ld	[%o0 + 24], %l4
	ld	[%o0 + 28], %l5
	ld	[%o0 + 32], %l6
	ld	[%o0 + 36], %l7
	ld	[%o0 + 40], %i0
	ld	[%o0 + 44], %i1
	ld	[%o0 + 48], %i2
	ld	[%o0 + 52], %i3
	ld	[%o0 + 56], %i4
	ld	[%o0 + 60], %i5
	ld	[%o0 + 64], %i6
	ld	[%o0 + 68], %i7
	orcc	%o1, %g0, %o0		/* val 0 returns 1 */
	be,a	1f
	 mov	1, %o0
1:	retl
	 nop
	.size	fs_longjmp, . - fs_longjmp

	.section .note.GNU-stack, "", @progbits
