/*
 * vdsogen test harness: the image's syscalls answered from a SIGSYS
 * handler (targets whose spec asks for it: [harness] trap_syscalls).
 *
 * A seccomp filter traps every syscall made from inside the image's text;
 * the handler logs the number and arguments, makes the call itself and
 * puts the result where the image expects it (arch/ARCH/harness-trap.h.j2
 * knows the registers).  Every other check runs through it unchanged; the
 * "trap" group then checks the number and arguments of each fallback.
 * This is how an image runs whose own syscalls the kernel here would not
 * take as they are (an x32 image in a 64-bit process).
 */
#include "internal.h"

#if H_TRAP_SYSCALLS

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define TRAP_LOG	64

struct trap_entry {
	long		nr;
	long		args[6];
	long		ret;
};

static struct trap_entry trap_log[TRAP_LOG];
static unsigned long trap_count;

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	struct trap_entry *t = &trap_log[__atomic_fetch_add(&trap_count, 1, __ATOMIC_RELAXED) % TRAP_LOG];
	int saved = errno;
	long ret;
	int i;

	(void)sig;
	t->nr = si->si_syscall;
	for (i = 0; i < 6; i++)
		t->args[i] = h_trap_arg(uc, i);
	ret = syscall(t->nr, t->args[0], t->args[1], t->args[2], t->args[3], t->args[4], t->args[5]);
	t->ret = ret == -1 ? -errno : ret;
	h_trap_set_ret(uc, t->ret);
	errno = saved;
}

/* Little-endian: the low word of a u64 field comes first. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define IP_LO	offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI	(IP_LO + 4)
#else
#define IP_HI	offsetof(struct seccomp_data, instruction_pointer)
#define IP_LO	(IP_HI + 4)
#endif

/* The filter's instructions, by position: its jumps are counted from these. */
enum { F_LD_HI, F_HI, F_LD_LO, F_GE_LO, F_GE_HI, F_TRAP, F_ALLOW, F_LEN };
/* A jump from instruction `from` to `to`: BPF counts from the next one. */
#define TO(from, to)	((to) - (from) - 1)

int trap_install(uintptr_t lo, uintptr_t hi)
{
	uint64_t lo64 = lo, hi64 = hi;
	struct sock_filter prog[F_LEN] = {
		/* Outside [lo, hi): allowed.  The image never straddles a 4 GiB line. */
		[F_LD_HI] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, IP_HI),
		[F_HI] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo64 >> 32), TO(F_HI, F_LD_LO),
				  TO(F_HI, F_ALLOW)),
		[F_LD_LO] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, IP_LO),
		[F_GE_LO] = BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo64, TO(F_GE_LO, F_GE_HI),
				     TO(F_GE_LO, F_ALLOW)),
		[F_GE_HI] = BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi64, TO(F_GE_HI, F_ALLOW),
				     TO(F_GE_HI, F_TRAP)),
		[F_TRAP] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		[F_ALLOW] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { sizeof(prog) / sizeof(prog[0]), prog };
	struct sigaction sa;

	if ((lo64 >> 32) != ((hi64 - 1) >> 32)) {
		report_fail("trap", "the image straddles a 4 GiB line");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
		report_fail("trap", "installing the seccomp filter: %s", strerror(errno));
		return -1;
	}
	report_ok("trap");
	return 0;
}

/* Buffers an x32 task could hand the image: below 4 GiB where the harness is 64-bit. */
static void *low_page(void)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *p;

#ifdef MAP_32BIT
	flags |= MAP_32BIT;
#endif
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * The one syscall the image made since @mark was @nr with these first
 * @nargs arguments (clock ids compared as the int they are), and it
 * answered @ret.
 */
static void expect_trapped(struct chk *k, unsigned long mark, long nr, int nargs, const long *args, long ret)
{
	const struct trap_entry *t = &trap_log[mark % TRAP_LOG];
	int i;

	if (trap_count != mark + 1) {
		chk_fail(k, "the image made %lu syscalls, expected 1", trap_count - mark);
		return;
	}
	if (t->nr != nr) {
		chk_fail(k, "syscall %ld, expected %ld", t->nr, nr);
		return;
	}
	for (i = 0; i < nargs; i++)
		if (t->args[i] != args[i] && (i || (int)t->args[i] != (int)args[i]))
			chk_fail(k, "argument %d is %#lx, expected %#lx", i, t->args[i], args[i]);
	if (t->ret != ret)
		chk_fail(k, "the kernel answered %ld, expected %ld", t->ret, ret);
}

#ifdef H_HAS_CLOCK_GETTIME
static void trap_clock_gettime(const char *name, int clk, long want)
{
	struct vdso_timespec *ts = low_page();
	unsigned long mark = trap_count;
	struct chk k;

	chk_start(&k, "trap.%s", name);
	if (!ts) {
		chk_fail(&k, "no page below 4 GiB");
	} else {
		v_clock_gettime(clk, ts);
		expect_trapped(&k, mark, VDSO_NR_clock_gettime, 2, (long[]){ clk, (long)ts }, want);
		munmap(ts, 4096);
	}
	chk_end(&k);
}
#endif

void grp_trap(void)
{
	unsigned long mark;
	struct tk tk;
	struct chk k;

	chk_start(&k, "trap.answered");
	if (!trap_count)
		chk_fail(&k, "the checks so far made no syscall through the image");
	chk_end(&k);
	tk_fresh(&tk, h_counter_modes[0]);
#ifdef H_HAS_CLOCK_GETTIME
	if (h_fn[IMPL_CLOCK_GETTIME]) {
		struct vdso_timespec ts;

		chk_start(&k, "trap.none");
		mark = trap_count;
		v_clock_gettime(C_MONOTONIC, &ts);
		if (trap_count != mark)
			chk_fail(&k, "clock_gettime(MONOTONIC) made %lu syscalls", trap_count - mark);
		chk_end(&k);
		trap_clock_gettime("clock_gettime", C_PROCESS_CPUTIME_ID, 0);
		trap_clock_gettime("clock_gettime.invalid", -1, -EINVAL);
	}
#endif
#ifdef H_HAS_CLOCK_GETRES
	if (h_fn[IMPL_CLOCK_GETRES]) {
		struct vdso_timespec *res = low_page();

		chk_start(&k, "trap.clock_getres");
		mark = trap_count;
		v_clock_getres(C_PROCESS_CPUTIME_ID, res);
		expect_trapped(&k, mark, VDSO_NR_clock_getres, 2, (long[]){ C_PROCESS_CPUTIME_ID, (long)res }, 0);
		munmap(res, 4096);
		chk_end(&k);
	}
#endif
#ifdef H_HAS_GETTIMEOFDAY
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		struct vdso_timeval *tv = low_page();
		struct tk none;

		chk_start(&k, "trap.gettimeofday");
		tk_fresh(&none, CLOCKMODE_NONE);
		mark = trap_count;
		v_gettimeofday(tv, (struct vdso_timezone *)(tv + 1));
		expect_trapped(&k, mark, VDSO_NR_gettimeofday, 2, (long[]){ (long)tv, (long)(tv + 1) }, 0);
		munmap(tv, 4096);
		tk_fresh(&tk, h_counter_modes[0]);
		chk_end(&k);
	}
#endif
#if defined(H_HAS_GETCPU) && !defined(H_GETCPU_IN_USER_SPACE)
	if (h_fn[IMPL_GETCPU]) {
		unsigned int *cpu = low_page();

		chk_start(&k, "trap.getcpu");
		mark = trap_count;
		v_getcpu(cpu, cpu + 1, NULL);
		expect_trapped(&k, mark, VDSO_NR_getcpu, 3, (long[]){ (long)cpu, (long)(cpu + 1), 0 }, 0);
		munmap(cpu, 4096);
		chk_end(&k);
	}
#endif
}

#endif /* H_TRAP_SYSCALLS */
