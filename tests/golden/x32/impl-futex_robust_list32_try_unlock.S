/*
 * __vdso_futex_robust_list32_try_unlock(uint32_t *lock, uint32_t tid, uint32_t *pop), generated
 * by vdsogen: if *lock is tid, make it 0 (unlocked) and clear the robust
 * list's pending-op pointer *pop; return what *lock held, tid on success.
 * A waiter's bit in *lock fails the compare: the caller then unlocks
 * through the futex syscall.
 *
 * A task stopped between the unlock and the clearing of *pop would leave
 * a pending op on a lock it no longer holds.  The kernel repairs that: when
 * it stops the task with the ip in [__futex_list32_try_unlock_cs_start, __futex_list32_try_unlock_cs_end) and
 * ZF set (the cmpxchg succeeded), it clears the 32-bit word at
 * %rdx itself.  So pop stays in %rdx and
 * nothing between the labels changes ZF.  The labels are local symbols of
 * vdso.so.dbg, which a kernel reads as it reads Linux's (vdso2c);
 * __futex_list32_try_unlock_cs_success marks the store, as Linux's does.
 */
	.section .text.first, "ax", @progbits	/* in page 0 with the C entry points (vdso.lds) */
	.globl	__vdso_futex_robust_list32_try_unlock
	.type	__vdso_futex_robust_list32_try_unlock, @function
	.p2align 4
__vdso_futex_robust_list32_try_unlock:
	.cfi_startproc
	movl	%esi, %eax		/* tid: what cmpxchg compares *lock with */
	xorl	%ecx, %ecx		/* what *lock and *pop become */
	lock cmpxchgl %ecx, (%rdi)	/* *lock == tid: *lock = 0, ZF; else eax = *lock */
__futex_list32_try_unlock_cs_start:
	jnz	__futex_list32_try_unlock_cs_end
__futex_list32_try_unlock_cs_success:
	movl	%ecx, (%rdx)		/* *pop = 0 */
__futex_list32_try_unlock_cs_end:
	ret
	.cfi_endproc
	.size	__vdso_futex_robust_list32_try_unlock, . - __vdso_futex_robust_list32_try_unlock

	.section .note.GNU-stack, "", %progbits

