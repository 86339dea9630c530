/*
 * Freestanding harness, RISC-V: the process entry.  The kernel leaves argc
 * at sp, then argv[], NULL, envp[], NULL and the auxiliary vector;
 * fs_start (start.c) takes that address.  gp is set as the psABI asks
 * (relaxation may use it); ra and fp (s0) are zeroed so that a backtrace
 * ends here.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	.option	push
	.option	norelax
	lla	gp, __global_pointer$
	.option	pop
	li	ra, 0
	li	s0, 0
	mv	a0, sp
	andi	sp, sp, -16		/* 16-byte aligned, as calls expect */
	call	fs_start
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
