/*
 * Freestanding harness, LoongArch: long fs_clone(flags, stack, ptid, ctid,
 * tls, fn, arg) starts a thread on stack (its top, 16-byte aligned) that
 * runs fn(arg) and then exits; the parent gets the thread id or -errno.
 * fn and arg travel on the new stack, since the child shares no registers
 * but sp with this code.
 */
	.text
	.globl	fs_clone
	.type	fs_clone, @function
fs_clone:
	addi.d	$a1, $a1, -16
	st.d	$a5, $a1, 0		/* fn */
	st.d	$a6, $a1, 8		/* arg */
	li.w	$a7, 220		/* __NR_clone: a0-a4 are its arguments already */
	syscall	0
	beqz	$a0, 1f
	jr	$ra			/* the parent: tid or -errno */
1:	ld.d	$t0, $sp, 0
	ld.d	$a0, $sp, 8
	move	$fp, $zero
	move	$ra, $zero
	jirl	$ra, $t0, 0
	li.w	$a7, 93			/* __NR_exit: this thread only */
	move	$a0, $zero
	syscall	0
	.size	fs_clone, . - fs_clone

	.section .note.GNU-stack, "", @progbits
