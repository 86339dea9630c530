/*
 * __vdso_riscv_hwprobe(pairs, pair_count, cpusetsize, cpus, flags), generated
 * by vdsogen.  The kernel keeps the answers for all CPUs in the arch page
 * (vdso_arch_data): when the caller asks about every CPU (cpus NULL and
 * cpusetsize 0, or any set while the CPUs are all alike) with no flag, and
 * the kernel has marked the page ready, each pair's key 0..13 gets its
 * value from there and any other key becomes -1 with value 0.  With the
 * flag RISCV_HWPROBE_WHICH_CPUS alone, a non-empty set and alike CPUs, it
 * says from there which CPUs of the set have every pair (Linux's
 * riscv_vdso_get_cpus): all of them, or none (the set cleared) when a
 * pair's value differs (for a bitmask key: has a bit the page's lacks) or
 * its key is unknown (which becomes -1 with value 0); no set at all is
 * -EINVAL.  Everything else is the riscv_hwprobe syscall's.  A leaf: a0-a5
 * and t0-t6 only.
 */
	.hidden	vdso_u_arch_data

	.text
	.p2align 2
	.globl	__vdso_riscv_hwprobe
	.type	__vdso_riscv_hwprobe, @function
__vdso_riscv_hwprobe:
	.cfi_startproc
	andi	t1, a4, 1
	bnez	t1, 7f			/* RISCV_HWPROBE_WHICH_CPUS */
	bnez	a4, 4f			/* another flag: the syscall */
	lla	t0, vdso_u_arch_data
	lbu	t1, 113(t0)		/* ready */
	beqz	t1, 4f
	or	t1, a2, a3
	beqz	t1, 1f			/* every CPU */
	lbu	t1, 112(t0)		/* homogeneous_cpus */
	beqz	t1, 4f
1:	li	t3, 13			/* the highest key the page answers */
	beqz	a1, 3f
2:	ld	t1, 0(a0)		/* key */
	bgtu	t1, t3, 5f		/* unsigned: negative keys too */
	slli	t2, t1, 3
	add	t2, t0, t2
	ld	t2, 0(t2)		/* all_cpu_hwprobe_values[key] */
	sd	t2, 8(a0)
6:	addi	a0, a0, 16
	addi	a1, a1, -1
	bnez	a1, 2b
3:	li	a0, 0
	ret
5:	li	t1, -1			/* a key this kernel does not know */
	sd	t1, 0(a0)
	sd	zero, 8(a0)
	j	6b
4:	li	a7, 258		/* __NR_riscv_hwprobe */
	ecall
	ret
7:	beqz	a2, 8f			/* WHICH_CPUS without a set: -EINVAL */
	beqz	a3, 8f
	li	t1, 1
	bne	a4, t1, 4b		/* with another flag: the syscall */
	lla	t0, vdso_u_arch_data
	lbu	t1, 112(t0)		/* homogeneous_cpus */
	beqz	t1, 4b			/* CPUs that differ: the syscall */
	mv	t2, a3
	add	t3, a3, a2
9:	lbu	t1, 0(t2)		/* an empty set: the syscall */
	bnez	t1, 10f
	addi	t2, t2, 1
	bltu	t2, t3, 9b
	j	4b
10:	li	t4, 0			/* a pair no CPU has */
	li	t3, 13			/* the highest key the page answers */
	li	t5, 0x2838		/* the bitmask keys */
	beqz	a1, 14f
11:	ld	t1, 0(a0)		/* key */
	bgtu	t1, t3, 13f		/* unsigned: negative keys too */
	slli	t2, t1, 3
	add	t2, t0, t2
	ld	t2, 0(t2)		/* all_cpu_hwprobe_values[key] */
	ld	t6, 8(a0)		/* the caller's value */
	srl	a5, t5, t1
	andi	a5, a5, 1
	beqz	a5, 15f
	and	t2, t2, t6		/* a bitmask: the caller's bits that the page has */
15:	beq	t2, t6, 12f
	li	t4, 1
12:	addi	a0, a0, 16
	addi	a1, a1, -1
	bnez	a1, 11b
14:	beqz	t4, 3b			/* every pair holds on every CPU: the set stays */
16:	sb	zero, 0(a3)		/* on none: the set cleared */
	addi	a3, a3, 1
	addi	a2, a2, -1
	bnez	a2, 16b
	j	3b
13:	li	t1, -1			/* a key this kernel does not know: no CPU has it */
	sd	t1, 0(a0)
	sd	zero, 8(a0)
	li	t4, 1
	j	12b
8:	li	a0, -22			/* -EINVAL */
	ret
	.cfi_endproc
	.size	__vdso_riscv_hwprobe, . - __vdso_riscv_hwprobe

	.section .note.GNU-stack, "", %progbits
