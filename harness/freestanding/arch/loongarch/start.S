/*
 * Freestanding harness, LoongArch: the process entry.  The kernel leaves
 * argc at sp, then argv[], NULL, envp[], NULL and the auxiliary vector;
 * fs_start (start.c) takes that address.  fp and ra are zeroed so that a
 * backtrace ends here.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	move	$fp, $zero
	move	$ra, $zero
	move	$a0, $sp
	bstrins.d $sp, $zero, 3, 0	/* 16-byte aligned, as calls expect */
	bl	fs_start
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
