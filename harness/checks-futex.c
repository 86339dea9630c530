/*
 * vdsogen test harness: x86's robust-futex unlock (Linux 7.2,
 * __vdso_futex_robust_list{64,32}_try_unlock), called by the checks beside
 * its fragments (arch/x86/harness-check-futex_robust_list*_try_unlock.c.j2).
 *
 * try_unlock(lock, tid, pop): if *lock is tid, *lock = 0 and the pop_size
 * bytes at pop are cleared, else nothing is written; the result is what
 * *lock held.  Between its two stores the lock is free and the robust
 * list still names it as pending: a task killed there would leave the
 * kernel a pending op on a lock that is no longer its own.  Linux closes
 * that window itself: when it stops a task whose ip is in the critical
 * section [start, end) with ZF set, it clears the word at edx/rdx.  The
 * critical_section check steps through both outcomes one instruction at a
 * time (the trap flag) and holds every stop to that rule: each stop inside
 * the window must be inside [start, end) with ZF set and pop in edx/rdx,
 * and no stop of the failing call inside [start, end) may have ZF set.
 * [start, end) is the window the steps show, or, where the image's labels
 * are known (VDSOGEN_HARNESS_LABELS, "NAME=OFFSET ..." from vdso.so.dbg),
 * the labels, which must then be exactly that window, with the success
 * label at the store that clears pop.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

typedef uint32_t try_unlock_fn(uint32_t *lock, uint32_t tid, void *pop);

#define FUTEX_WAITERS	0x80000000u
#define EFLAGS_TF	0x100UL
#define EFLAGS_ZF	0x40UL
#ifdef __x86_64__
#define FX_IP	REG_RIP
#define FX_DX	REG_RDX
#else
#define FX_IP	REG_EIP
#define FX_DX	REG_EDX
#endif
#define MAX_STOPS	64

/* The lock word and the pending-op pointer, with guard words around pop. */
static struct {
	uint32_t lock;
	uint64_t pop[3];	/* pop[1] is the pointer; pop[0], pop[2] must stay */
} fx;

/* One stop of a stepped call: before the instruction at ip runs. */
struct stop {
	size_t ip;		/* offset in the image */
	uint32_t lock;
	uint64_t pop;
	int zf;
	uintptr_t dx;
};
static struct stop fx_stops[MAX_STOPS];
static volatile int fx_nstops, fx_entered;

static void on_step(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[FX_IP];

	(void)sig;
	(void)si;
	if (ip >= (uintptr_t)h_text && ip < (uintptr_t)h_text + h_image_size) {
		fx_entered = 1;
		if (fx_nstops < MAX_STOPS)
			fx_stops[fx_nstops++] = (struct stop){
				ip - (uintptr_t)h_text, fx.lock, fx.pop[1],
				!!(uc->uc_mcontext.gregs[REG_EFL] & EFLAGS_ZF), (uintptr_t)uc->uc_mcontext.gregs[FX_DX] };
	} else if (fx_entered) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~EFLAGS_TF;	/* returned: the rest at full speed */
	}
}

/* fn(lock = @lock, tid, &pop), pop and its guards set to a pattern; stepped when @stepped. */
static uint32_t call(try_unlock_fn *fn, uint32_t lock, uint32_t tid, int stepped)
{
	uint32_t r;

	memset(fx.pop, SENTINEL, sizeof(fx.pop));
	fx.lock = lock;
	fx_nstops = fx_entered = 0;
	if (stepped)
		__asm__ __volatile__("pushf\n\t"
#ifdef __x86_64__
				     "orq $0x100, (%%rsp)\n\t"
#else
				     "orl $0x100, (%%esp)\n\t"
#endif
				     "popf" : : : "memory", "cc");
	r = fn(&fx.lock, tid, &fx.pop[1]);
	/* Normally off already: the handler cleared it when the call returned. */
	if (stepped)
		__asm__ __volatile__("pushf\n\t"
#ifdef __x86_64__
				     "andq $~0x100, (%%rsp)\n\t"
#else
				     "andl $~0x100, (%%esp)\n\t"
#endif
				     "popf" : : : "memory", "cc");
	return r;
}

/* The pop_size bytes at pop cleared and nothing else of pop's words touched? */
static const char *pop_state(unsigned pop_size)
{
	unsigned char want[sizeof(fx.pop)];

	memset(want, SENTINEL, sizeof(want));
	if (memcmp(&fx.pop[1], (unsigned char[8]){ 0 }, pop_size) != 0)
		return memcmp(&fx.pop, want, sizeof(want)) == 0 ? "left as it was" : "changed, not cleared";
	memset((unsigned char *)&want[8], 0, pop_size);
	return memcmp(&fx.pop, want, sizeof(want)) == 0 ? "cleared" : "cleared, and bytes beyond it written";
}

/* Offset of label PREFIX##which from VDSOGEN_HARNESS_LABELS, or -1. */
static long label(const char *prefix, const char *which)
{
	const char *s = getenv("VDSOGEN_HARNESS_LABELS");
	char name[96];
	size_t n;

	snprintf(name, sizeof(name), "%s%s=", prefix, which);
	n = strlen(name);
	for (; s && *s; s += strcspn(s, " "), s += strspn(s, " "))
		if (strncmp(s, name, n) == 0)
			return strtol(s + n, NULL, 0);
	return -1;
}

/* Both outcomes, called at full speed. */
static void outcomes(const char *name, try_unlock_fn *fn, uint32_t tid, unsigned pop_size)
{
	static const uint32_t held[] = { FUTEX_WAITERS, 0, 1 };	/* ORed with tid; 0 and 1: another owner */
	struct chk k;
	uint32_t r, was;
	size_t i;

	chk_start(&k, "%s.unlock", name);
	r = call(fn, tid, tid, 0);
	if (r != tid || fx.lock != 0 || strcmp(pop_state(pop_size), "cleared") != 0)
		chk_fail(&k, "*lock == tid %#x: returned %#x, *lock %#x after, the %u-byte pending-op pointer %s; "
			 "want tid, 0, cleared", tid, r, fx.lock, pop_size, pop_state(pop_size));
	chk_end(&k);

	chk_start(&k, "%s.contended", name);
	for (i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
		was = held[i] == FUTEX_WAITERS ? tid | FUTEX_WAITERS : held[i] ? tid + 1 : 0;
		r = call(fn, was, tid, 0);
		if (r != was || fx.lock != was || strcmp(pop_state(pop_size), "left as it was") != 0)
			chk_fail(&k, "*lock %#x, tid %#x: returned %#x, *lock %#x after, the pending-op pointer %s; "
				 "want *lock returned and nothing written", was, tid, r, fx.lock, pop_state(pop_size));
	}
	chk_end(&k);
}

/*
 * The critical section: the success path stepped, then the failing one,
 * each stop held to the kernel's repair rule.
 */
static void critical_section(const char *name, const char *prefix, try_unlock_fn *fn, uint32_t tid,
			     unsigned pop_size)
{
	const uint64_t mask = pop_size == 8 ? ~(uint64_t)0 : 0xffffffffu;	/* pop's bytes, little-endian */
	struct sigaction sa, old;
	struct stop ok[MAX_STOPS], bad[MAX_STOPS];
	int nok, nbad, i, first = -1, last = -1;
	long start, success, end;
	struct chk k;

	chk_start(&k, "%s.critical_section", name);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sa.sa_sigaction = on_step;
	sigaction(SIGTRAP, &sa, &old);
	call(fn, tid, tid, 1);
	nok = fx_nstops;
	memcpy(ok, fx_stops, sizeof(ok));
	call(fn, tid | FUTEX_WAITERS, tid, 1);
	nbad = fx_nstops;
	memcpy(bad, fx_stops, sizeof(bad));
	sigaction(SIGTRAP, &old, NULL);
	if (nok >= MAX_STOPS || nbad >= MAX_STOPS) {
		chk_fail(&k, "more than %d instructions", MAX_STOPS);
		chk_end(&k);
		return;
	}

	/* The window: the stops where the lock is free and pop not yet cleared. */
	for (i = 0; i < nok; i++)
		if (ok[i].lock == 0 && (ok[i].pop & mask) != 0) {
			if (first < 0)
				first = i;
			else if (last != i - 1)
				chk_fail(&k, "the lock is free and pop pending at +%#zx, again after +%#zx",
					 ok[i].ip, ok[last].ip);
			last = i;
		}
	if (first < 0 || last + 1 >= nok) {
		chk_fail(&k, "no stop with the lock free and pop pending%s", first < 0 ? "" : " before the return");
		chk_end(&k);
		return;
	}
	start = (long)ok[first].ip;
	end = (long)ok[last + 1].ip;
	for (i = first; i <= last; i++)
		if (!ok[i].zf || ok[i].dx != (uintptr_t)&fx.pop[1])
			chk_fail(&k, "unlocked, stopped at +%#zx: ZF %d, edx/rdx %#lx (pop %p): the kernel would "
				 "not clear pop", ok[i].ip, ok[i].zf, (unsigned long)ok[i].dx, (void *)&fx.pop[1]);
	for (i = 0; i < nbad; i++)
		if ((long)bad[i].ip >= start && (long)bad[i].ip < end && bad[i].zf)
			chk_fail(&k, "contended, stopped at +%#zx with ZF set: the kernel would clear pop", bad[i].ip);
	success = label(prefix, "success");
	if (label(prefix, "start") >= 0 || label(prefix, "end") >= 0 || success >= 0) {
		if (label(prefix, "start") != start || label(prefix, "end") != end)
			chk_fail(&k, "labels [%#lx, %#lx), the window is [%#lx, %#lx)",
				 label(prefix, "start"), label(prefix, "end"), start, end);
		else if (success != (long)ok[last].ip)
			chk_fail(&k, "%ssuccess at %#lx, the store that clears pop at +%#zx", prefix, success,
				 ok[last].ip);
	}
	printf("# %s: critical section [+%#lx, +%#lx), %d instruction(s); %s\n", k.name, start, end,
	       last - first + 1, success >= 0 ? "its labels bracket it" : "no labels: the image's own window");
	chk_end(&k);
}

void h_check_futex(const char *name, const char *prefix, void *fn, unsigned pop_size)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);

	if (!fn)
		return;
	outcomes(name, (try_unlock_fn *)fn, tid, pop_size);
	critical_section(name, prefix, (try_unlock_fn *)fn, tid, pop_size);
}
#endif
