/*
 * Freestanding harness, 31-bit s390: the process entry.  The kernel leaves
 * r15 at argc, then argv[], NULL, envp[], NULL and the auxiliary vector;
 * fs_start (start.c) takes that address in r2.  A call wants 96 bytes of
 * frame at r15, 8-byte aligned (the callee's register save area), its back chain 0 so
 * that a backtrace ends here.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	lr	%r2, %r15
	lhi	%r0, -8			/* the stack 8-byte aligned, as the ABI wants it */
	nr	%r15, %r0
	ahi	%r15, -96
	xc	0(4, %r15), 0(%r15)
	brasl	%r14, fs_start
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
