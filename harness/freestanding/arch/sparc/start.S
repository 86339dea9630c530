/*
 * Freestanding harness, 32-bit SPARC: the process entry.  The kernel leaves
 * %sp at a register window's save area (16 words), then argc, argv[],
 * NULL, envp[], NULL and the auxiliary vector; fs_start (start.c) takes
 * the address of argc.  A call wants 92 bytes of frame at %sp (the save
 * area, the struct-return word, six argument words): %sp moves down 32,
 * staying 8-byte aligned.  The frame pointer is zeroed so that a backtrace
 * ends here.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	add	%sp, 64, %o0
	sub	%sp, 32, %sp
	call	fs_start
	 mov	%g0, %fp		/* the delay slot */
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
