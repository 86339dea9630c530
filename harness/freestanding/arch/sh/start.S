/*
 * Freestanding harness, SuperH: the process entry.  The kernel leaves argc
 * at r15, then argv[], NULL, envp[], NULL and the auxiliary vector;
 * fs_start (start.c) takes that address.  The frame pointer (r14) is
 * zeroed so that a backtrace ends here.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	r15, r4
	mov	#0, r14
	mov.l	1f, r0
	jsr	@r0
	 nop				/* the delay slot */
	.p2align 2
1:	.long	fs_start
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
