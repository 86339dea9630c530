/*
 * __vdso_riscv_hwprobe(pairs, pair_count, cpusetsize, cpus, flags), generated
 * by vdsogen.  The kernel keeps the answers for all CPUs in the arch page
 * (vdso_arch_data): when the caller asks about every CPU (cpus NULL and
 * cpusetsize 0, or any set while the CPUs are all alike) with no flag, and
 * the kernel has marked the page ready, each pair's key 0..14 gets its
 * value from there and any other key becomes -1 with value 0.  Everything
 * else is the riscv_hwprobe syscall's.  A leaf: a0-a4 and t0-t3 only.
 */
	.hidden	vdso_u_arch_data

	.text
	.p2align 2
	.globl	__vdso_riscv_hwprobe
	.type	__vdso_riscv_hwprobe, @function
__vdso_riscv_hwprobe:
	.cfi_startproc
	bnez	a4, 4f			/* a flag: the syscall */
	lla	t0, vdso_u_arch_data
	lbu	t1, 121(t0)		/* ready */
	beqz	t1, 4f
	or	t1, a2, a3
	beqz	t1, 1f			/* every CPU */
	lbu	t1, 120(t0)		/* homogeneous_cpus */
	beqz	t1, 4f
1:	li	t3, 14			/* the highest key the page answers */
	beqz	a1, 3f
2:	lw	t2, 4(a0)		/* key, high word: none in a key the page answers */
	bnez	t2, 5f			/* negative keys too */
	lw	t1, 0(a0)		/* key, low word */
	bgtu	t1, t3, 5f
	slli	t2, t1, 3
	add	t2, t0, t2
	lw	t1, 0(t2)		/* all_cpu_hwprobe_values[key], low word */
	lw	t2, 4(t2)		/* and high */
	sw	t1, 8(a0)
	sw	t2, 12(a0)
6:	addi	a0, a0, 16
	addi	a1, a1, -1
	bnez	a1, 2b
3:	li	a0, 0
	ret
5:	li	t1, -1			/* a key this kernel does not know */
	sw	t1, 0(a0)
	sw	t1, 4(a0)
	sw	zero, 8(a0)
	sw	zero, 12(a0)
	j	6b
4:	li	a7, 258		/* __NR_riscv_hwprobe */
	ecall
	ret
	.cfi_endproc
	.size	__vdso_riscv_hwprobe, . - __vdso_riscv_hwprobe

	.section .note.GNU-stack, "", %progbits
