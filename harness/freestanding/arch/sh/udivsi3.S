/*
 * Freestanding harness, SuperH: __udivsi3_i4i, the unsigned 32-bit
 * division gcc calls for sh4 (SuperH has no divide instruction), so that
 * the harness links no libgcc (Debian's has no big-endian copy for
 * sh4eb).  r4 / r5 in r0, by 32 steps of div1 on the remainder in r1; it
 * changes r0, r1 and the T, M and Q bits only, fewer than the call's
 * clobbers gcc assumes (r1, T, pr, mach, macl).  A zero divisor gives
 * 0xffffffff.
 */
	.text
	.globl	__udivsi3_i4i
	.type	__udivsi3_i4i, @function
__udivsi3_i4i:
	mov	r4, r0			/* the dividend, shifted out as the quotient comes in */
	mov	#0, r1			/* the partial remainder */
	div0u
	.rept	32
	rotcl	r0
	div1	r5, r1
	.endr
	rts
	 rotcl	r0			/* the last quotient bit */
	.size	__udivsi3_i4i, . - __udivsi3_i4i

	.section .note.GNU-stack, "", @progbits
