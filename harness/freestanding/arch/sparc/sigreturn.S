/*
 * Freestanding harness, 32-bit SPARC: where a signal handler returns to.
 * rt_sigaction takes one as its restorer argument, less 8 (the handler's
 * ret jumps to %i7 + 8), as a C library passes its own: a handler with
 * SA_SIGINFO gets an rt frame, undone by rt_sigreturn, any other the old
 * frame, by sigreturn.  qemu-user's return when given none does not come
 * back for a 32-bit task (a null pc after rt_sigreturn, qemu 7.2).
 */
	.text
	.globl	fs_rt_sigreturn
	.type	fs_rt_sigreturn, @function
fs_rt_sigreturn:
	mov	101, %g1		/* __NR_rt_sigreturn */
	ta	0x10
	.size	fs_rt_sigreturn, . - fs_rt_sigreturn

	.globl	fs_sigreturn
	.type	fs_sigreturn, @function
fs_sigreturn:
	mov	216, %g1		/* __NR_sigreturn */
	ta	0x10
	.size	fs_sigreturn, . - fs_sigreturn

	.section .note.GNU-stack, "", @progbits
