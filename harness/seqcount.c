/*
 * vdsogen test harness: the seqcount.  A reader that meets an update in
 * progress waits for it to end; a writer thread rewriting the page while
 * readers run never lets a torn read through.  The same for the page of a
 * clock mode whose counter reads one, under that page's own protocol.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct writer {
	vdso_time_data_t	*td;
	const struct tk	*tk;
	int32_t		page_mode;	/* non-zero: rewrite this mode's counter page, not the time page */
	int		stop;
	int		done;
	long		delay_ns;	/* helper: finish the update after this long */
	unsigned long	updates;
};

static pthread_t h_thread;
static int h_thread_live;
static struct writer h_writer;

void thread_stop(void)
{
	if (h_thread_live) {
		__atomic_store_n(&h_writer.stop, 1, __ATOMIC_RELEASE);
		pthread_join(h_thread, NULL);
		h_thread_live = 0;
	}
}

#ifdef H_HAS_CLOCK_GETTIME
/* An update of the writer's page begins: garbage wherever a torn read would look. */
static void update_begin(struct writer *w)
{
#ifdef HARNESS_HAVE_CLOCK_MODES
	if (w->page_mode) {
		harness_mode_update_begin(w->page_mode, w->updates);
		return;
	}
#endif
	tk_begin(w->td);
	tk_scribble(w->td, w->updates);
}

/* ... and ends, the page as it was. */
static void update_end(struct writer *w)
{
#ifdef HARNESS_HAVE_CLOCK_MODES
	if (w->page_mode) {
		harness_mode_update_end(w->page_mode);
		return;
	}
#endif
	tk_store(w->td, w->tk);
	tk_end(w->td);
}

/* Finishes an update the main thread began, after a delay. */
static void *finisher_main(void *arg)
{
	struct writer *w = arg;

	pin_to(h_other_cpu);
	sleep_ns(w->delay_ns);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	update_end(w);
	return NULL;
}

/*
 * Rewrites the page until told to stop, with garbage in it while an update
 * is in progress (seq odd, say).  The quiet spells between updates vary in length: the short ones
 * catch a reader that does not retry, the long ones let a correct reader
 * through.
 */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t x = 0x9e3779b9u;

	pin_to(h_other_cpu);
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		update_begin(w);
		spin(32);
		update_end(w);
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		spin(x % 4 == 0 ? 256 : x % 16);
		w->updates++;
	}
	return NULL;
}

static int thread_start(void *(*fn)(void *))
{
	int e = pthread_create(&h_thread, NULL, fn, &h_writer);

	h_thread_live = !e;
	return e;
}

#ifdef HARNESS_HAVE_CLOCK_MODES
/*
 * clock_gettime(clk) while the counter's own page may be mid-update: the
 * formula at the counter values the page's writer computes around the call
 * (the harness's own reader would wait too, or fail), or, @or_syscall, the
 * syscall's time, as readers make the syscall during some pages' updates.
 */
static void expect_page_clock(struct chk *k, const struct tk *tk, int clk, int or_syscall)
{
	struct hts s0 = { 0, 0 }, s1 = { 0, 0 }, got;
	struct vdso_timespec ts;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	if (or_syscall)
		sys_gettime(clk, &s0);
	c0 = harness_mode_now(tk->mode);
	r = v_clock_gettime(clk, &ts);
	c1 = harness_mode_now(tk->mode);
	if (or_syscall)
		sys_gettime(clk, &s1);
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	got = (struct hts){ ts.tv_sec, ts.tv_nsec };
	if (or_syscall && hts_cmp(got, s0) >= 0 && hts_cmp(got, s1) <= 0)
		return;
	expect_in(k, got, tk_expect(tk, clk, c0), tk_expect(tk, clk, c1));
}
#endif

/* clock_gettime(clk) against what the writer in h_writer publishes. */
static void expect_written(struct chk *k, const struct tk *tk, int clk)
{
#ifdef HARNESS_HAVE_CLOCK_MODES
	if (h_writer.page_mode) {
		expect_page_clock(k, tk, clk, !harness_mode_update_waits(h_writer.page_mode));
		return;
	}
#endif
	expect_clock(k, tk, clk, NULL);
}

/* A writer for fresh pages, of the time page or of @page_mode's counter page. */
static void writer_for(struct tk *tk, int32_t page_mode)
{
	tk_fresh(tk, page_mode ? page_mode : h_counter_modes[0]);
	memset(&h_writer, 0, sizeof(h_writer));
	h_writer.td = page_time();
	h_writer.tk = tk;
	h_writer.page_mode = page_mode;
}

/* A reader that meets an update in progress waits for it to end. */
static void seq_wait(struct chk *k, int32_t page_mode, int clk)
{
	struct tk tk;
	int e;

	writer_for(&tk, page_mode);
	h_writer.delay_ns = 20000000;
	update_begin(&h_writer);
	e = thread_start(finisher_main);
	if (e) {
		chk_fail(k, "pthread_create: %s", strerror(e));
		update_end(&h_writer);
	} else {
		expect_written(k, &tk, clk);
		if (!__atomic_load_n(&h_writer.done, __ATOMIC_ACQUIRE))
			chk_fail(k, "returned while an update was in progress");
	}
	thread_stop();
	chk_end(k);
}

/*
 * Readers of every clock the writer's page serves, for 100 ms of its
 * updates (or the soak's seconds: `vdsogen test --soak`), and longer (up to
 * 5 s) until it has made 64 of them: on a busy machine the writer may not
 * run at once.
 */
static void seq_concurrent(struct chk *k, int32_t page_mode)
{
	const int64_t window = h_soak ? (int64_t)h_soak * NSEC_PER_SEC : 100000000;
	struct hts t0, t1;
	unsigned long reads = 0;
	struct tk tk;
	size_t i;
	int e;

	writer_for(&tk, page_mode);
	e = thread_start(writer_main);
	if (e) {
		chk_fail(k, "pthread_create: %s", strerror(e));
		chk_end(k);
		return;
	}
	sys_gettime(C_MONOTONIC, &t0);
	do {
		for (i = 0; i < NCLOCKS; i++)
			if (!page_mode || h_clocks[i].cls != CLS_COARSE)
				expect_written(k, &tk, h_clocks[i].id);
#ifdef H_HAS_GETTIMEOFDAY
		if (h_fn[IMPL_GETTIMEOFDAY] && !page_mode)
			expect_gettimeofday(k, &tk, NULL);
#endif
		reads++;
		if (reads % 16 == 0)
			sys_gettime(C_MONOTONIC, &t1);
	} while (reads % 16 != 0 || elapsed_ns(t0, t1) < window ||
		 (__atomic_load_n(&h_writer.updates, __ATOMIC_RELAXED) < 64 && elapsed_ns(t0, t1) < 5 * NSEC_PER_SEC));
	thread_stop();
	printf("# %s: %lu rounds of reads against %lu updates, %lu bad reads\n",
	       k->name, reads, h_writer.updates, k->failures);
	if (h_writer.updates == 0)
		chk_fail(k, "the writer made no update while the readers ran");
	chk_end(k);
}

#if H_COUNTER_TRAPS
/* ------------------------------------------------------------------ */
/* A writer inside the reader                                          */

/*
 * The racing writer above finds a reader that does not retry only when an
 * update happens to land inside its read.  These checks make it land there:
 * an update published at one chosen moment of the call, B = A with every
 * base a second on and cycle_last a quarter second back, so that a value
 * computed from a mix of A and B is a quarter second or more off either.
 * A reader that retries answers by A (it read before the update) or by B.
 *
 * The moment: natively on x86, before each instruction of the image in
 * turn (found by the trap flag, struck at by a breakpoint), so every path
 * the call takes is struck at every point; in a test build, at its first
 * counter read (the injected counter's page made to trap), which is inside
 * the read of every counter clock.
 */
static vdso_time_data_t *in_page;	/* the page the update goes to */
static const struct tk *in_next;	/* B */
static volatile long in_step, in_at;	/* instructions of the image so far; strike before number in_at */
static volatile sig_atomic_t in_struck;

static void strike(void)
{
	if (!in_struck) {
		in_struck = 1;
		tk_publish(in_page, in_next);
	}
}

#if defined(__x86_64__) || defined(__i386__)
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef __x86_64__
#define IN_IP	REG_RIP
#else
#define IN_IP	REG_EIP
#endif
#define IN_FLAGS	REG_EFL
#define EFLAGS_TF	0x100UL
#define INT3		0xcc

/*
 * Stepping to instruction N of a call takes N traps, so striking before
 * each of its instructions in turn would take a number of traps that grows
 * with the square of its length.  Instead the undisturbed call is stepped
 * once and the address of each instruction it ran recorded; a strike
 * before instruction N is then a breakpoint (int3) at the recorded address,
 * let pass as many times as that address ran before N.  A call that does
 * not reach it (its path differs from the recorded one) is struck again by
 * stepping.
 */
#define IN_PATH_MAX	4096
static uintptr_t in_path[IN_PATH_MAX];	/* the undisturbed call's instructions, in the order run */
static long in_path_len;
static volatile sig_atomic_t in_entered, in_stepping;
static unsigned char *volatile in_bp;	/* the breakpoint's address, NULL when none */
static unsigned char in_bp_byte;	/* the instruction byte the int3 replaced */
static volatile long in_bp_left;	/* hits before the one the strike goes before */
static volatile sig_atomic_t in_bp_armed, in_bp_stepping;
static long in_page_size;

/* One byte of the image's text, written through a writable moment of its page. */
static void text_poke(unsigned char *at, unsigned char byte)
{
	void *page = (void *)((uintptr_t)at & ~(uintptr_t)(in_page_size - 1));

	mprotect(page, (size_t)in_page_size, PROT_READ | PROT_WRITE | PROT_EXEC);
	*at = byte;
	mprotect(page, (size_t)in_page_size, PROT_READ | PROT_EXEC);
}

static void bp_disarm(void)
{
	if (in_bp_armed)
		text_poke(in_bp, in_bp_byte);
	in_bp_armed = 0;
}

/*
 * SIGTRAP.  Stepping: after each instruction, count (and record) the
 * image's, strike before the chosen one, then stop stepping; stop too once
 * the call has returned.  A breakpoint hit: put the instruction back and
 * strike on its last pass, else step over it and set it again.
 */
static void on_step(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[IN_IP];

	(void)sig;
	(void)si;
	if (in_bp_armed && ip == (uintptr_t)in_bp + 1) {
		bp_disarm();
		uc->uc_mcontext.gregs[IN_IP] = (uintptr_t)in_bp;
		if (--in_bp_left == 0) {
			strike();
			in_bp = NULL;
		} else {
			in_bp_stepping = 1;
			uc->uc_mcontext.gregs[IN_FLAGS] |= EFLAGS_TF;
		}
		return;
	}
	if (in_bp_stepping) {
		in_bp_stepping = 0;
		uc->uc_mcontext.gregs[IN_FLAGS] &= ~EFLAGS_TF;
		text_poke(in_bp, INT3);
		in_bp_armed = 1;
		return;
	}
	if (!in_stepping)
		return;
	if (ip >= (uintptr_t)h_text && ip < (uintptr_t)h_text + h_image_size) {
		in_entered = 1;
		if (in_at < 0 && in_step < IN_PATH_MAX)
			in_path[in_step] = ip;
		if (++in_step == in_at) {
			strike();
			uc->uc_mcontext.gregs[IN_FLAGS] &= ~EFLAGS_TF;	/* the rest at full speed */
			in_stepping = 0;
		}
	} else if (in_entered) {
		uc->uc_mcontext.gregs[IN_FLAGS] &= ~EFLAGS_TF;
		in_stepping = 0;
	}
}

/* clock_gettime(clk, ts), one instruction at a time. */
static struct h_ret stepped_gettime(int clk, struct vdso_timespec *ts)
{
	struct h_ret r;

	in_entered = 0;
	in_step = 0;
	in_stepping = 1;
	__asm__ __volatile__("pushf\n\t"
#ifdef __x86_64__
			     "orq $0x100, (%%rsp)\n\t"
#else
			     "orl $0x100, (%%esp)\n\t"
#endif
			     "popf" : : : "memory", "cc");
	r = v_clock_gettime(clk, ts);
	/* Normally off already: the handler cleared it when the call returned. */
	__asm__ __volatile__("pushf\n\t"
#ifdef __x86_64__
			     "andq $~0x100, (%%rsp)\n\t"
#else
			     "andl $~0x100, (%%esp)\n\t"
#endif
			     "popf" : : : "memory", "cc");
	in_stepping = 0;
	if (in_at < 0)
		in_path_len = in_step <= IN_PATH_MAX ? in_step : 0;
	return r;
}

/*
 * clock_gettime(clk, ts) struck before instruction in_at of the recorded
 * path, by a breakpoint; in_struck stays 0 if the call never got there.
 */
static struct h_ret breakpoint_gettime(int clk, struct vdso_timespec *ts)
{
	uintptr_t at = in_path[in_at - 1];
	struct h_ret r;
	long i, hits = 0;

	for (i = 0; i < in_at; i++)
		hits += in_path[i] == at;
	in_bp = (unsigned char *)at;
	in_bp_byte = *in_bp;
	in_bp_left = hits;
	in_bp_stepping = 0;
	text_poke(in_bp, INT3);
	in_bp_armed = 1;
	r = v_clock_gettime(clk, ts);
	bp_disarm();
	in_bp = NULL;
	return r;
}

/* clock_gettime(clk, ts) with the update before instruction in_at (none if negative). */
static struct h_ret struck_gettime(int clk, struct vdso_timespec *ts, int *retry)
{
	if (in_at > 0 && in_at <= in_path_len && !*retry) {
		struct h_ret r = breakpoint_gettime(clk, ts);

		*retry = !in_struck;
		return r;
	}
	*retry = 0;
	return stepped_gettime(clk, ts);
}
#define IN_STEPPED	1
#else
/* The injected counter traps: strike, let the read go on. */
static void on_counter(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	counter_trap(0);
	strike();
}
#define IN_STEPPED	0
#endif

/* B: every base a second on, cycle_last a quarter second back (the same clocks, read later). */
static void tk_later(struct tk *b, const struct tk *a)
{
	int rec, i;

	*b = *a;
	b->cycle_last = a->cycle_last - h_hz / 4;
	for (rec = 0; rec < 2; rec++)
		for (i = 0; i < H_NBASES; i++)
			b->base[rec][i].sec += 1;
}

/*
 * One call of clock_gettime(clk) with the update at moment @at; @off the
 * namespace offset the answer carries.  Returns how many instructions the
 * image ran (stepped), else 0.
 */
static long inside_once(struct chk *k, const struct tk *a, const struct tk *b, int clk, long at,
			const struct hts *off)
{
	struct vdso_timespec ts;
	struct hts got, lo[2], hi[2];
	uint64_t c0, c1;
	struct h_ret r;
	int j;
#if IN_STEPPED
	int retry = 0;
#endif

	in_at = at;
#if IN_STEPPED
	do {
		in_struck = 0;
		memset(&ts, SENTINEL, sizeof(ts));
		tk_publish(in_page, a);
		c0 = vdso_read_counter(a->mode);
		r = struck_gettime(clk, &ts, &retry);
	} while (retry);
#else
	in_struck = 0;
	memset(&ts, SENTINEL, sizeof(ts));
	tk_publish(in_page, a);
	c0 = vdso_read_counter(a->mode);
	if (counter_trap(1) != 0) {
		chk_fail(k, "cannot make the counter trap");
		return 0;
	}
	r = v_clock_gettime(clk, &ts);
	counter_trap(0);
#endif
	c1 = vdso_read_counter(a->mode);
	if (!h_ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return 0;
	}
	got = (struct hts){ ts.tv_sec, ts.tv_nsec };
	for (j = 0; j < 2; j++) {
		const struct tk *t = j ? b : a;

		lo[j] = tk_expect(t, clk, c0);
		hi[j] = tk_expect(t, clk, c1);
		if (off) {
			lo[j] = hts_add(lo[j], *off);
			hi[j] = hts_add(hi[j], *off);
		}
		if (hts_cmp(got, lo[j]) >= 0 && hts_cmp(got, hi[j]) <= 0)
			return IN_STEPPED ? in_step : 0;
	}
	if (at < 0)
		chk_fail(k, "with no update: got %s, want [%s, %s]", TS(got), TS(lo[0]), TS(hi[0]));
	else if (IN_STEPPED)
		chk_fail(k, "updated before instruction %ld: got %s, want [%s, %s] (before) or [%s, %s] (after)",
			 at, TS(got), TS(lo[0]), TS(hi[0]), TS(lo[1]), TS(hi[1]));
	else
		chk_fail(k, "updated at the counter read: got %s, want [%s, %s] (before) or [%s, %s] (after)",
			 TS(got), TS(lo[0]), TS(hi[0]), TS(lo[1]), TS(hi[1]));
	return -1;
}

/*
 * Every clock of the page, the update at every moment (stepped) or at the
 * counter read.  @setup gives each clock fresh pages (the counter moves on
 * while a clock is stepped through: a state kept from the start would take
 * ever longer to carry into the present) and returns the page to update;
 * @off gives each clock's namespace offset, or is NULL.
 */
static void seq_inside(const char *what, vdso_time_data_t *(*setup)(struct tk *), struct hts (*off)(int))
{
	struct sigaction sa, old;
	struct tk a, b;
	struct chk k;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
#if IN_STEPPED
	in_page_size = sysconf(_SC_PAGESIZE);
	sa.sa_sigaction = on_step;
	sigaction(SIGTRAP, &sa, &old);
#else
	sa.sa_sigaction = on_counter;
	sigaction(SIGSEGV, &sa, &old);
#endif
	for (i = 0; i < NCLOCKS; i++) {
		struct hts o = off ? off(h_clocks[i].id) : (struct hts){ 0, 0 };
		const struct hts *po = off ? &o : NULL;
		long at, ran;

		if (!IN_STEPPED && h_clocks[i].cls == CLS_COARSE)
			continue;	/* no counter read to strike at */
		/*
		 * Stepped, each of its strikes runs the whole call: one clock of
		 * each class (the core has one path per class; the clocks of a
		 * class differ only in the base they read).
		 */
		if (IN_STEPPED && h_clocks[i].id != C_REALTIME && h_clocks[i].id != C_MONOTONIC_RAW &&
		    h_clocks[i].id != C_MONOTONIC_COARSE)
			continue;
		chk_start(&k, "seqcount.inside.%s%s", what, h_clocks[i].name);
		in_page = setup(&a);
		tk_later(&b, &a);
		in_next = &b;
		if (!IN_STEPPED) {
			inside_once(&k, &a, &b, h_clocks[i].id, 1, po);
			if (!in_struck && k.failures == 0)
				chk_fail(&k, "never read the counter");
			chk_end(&k);
			continue;
		}
		/* The call's own length, undisturbed; then struck before each of its instructions. */
		ran = inside_once(&k, &a, &b, h_clocks[i].id, -1, po);
		for (at = 1; at <= ran && k.failures == 0; at++)
			inside_once(&k, &a, &b, h_clocks[i].id, at, po);
		printf("# %s: struck before each of its %ld instructions\n", k.name, ran);
		chk_end(&k);
	}
#if IN_STEPPED
	sigaction(SIGTRAP, &old, NULL);
#else
	sigaction(SIGSEGV, &old, NULL);
#endif
}

static vdso_time_data_t *setup_plain(struct tk *tk)
{
	tk_fresh(tk, h_counter_modes[0]);
	return page_time();
}

#if VDSO_HAS_MAX_CYCLES
/* max_cycles 1: the hot path hands every counter read to the cold path. */
static vdso_time_data_t *setup_max_cycles(struct tk *tk)
{
	tk_fresh(tk, h_counter_modes[0]);
	tk->max_cycles[0] = tk->max_cycles[1] = 1;
	tk_publish(page_time(), tk);
	return page_time();
}
#endif

#if VDSO_HAS_TIMENS
/* A time namespace: the reader reads the real page beside the namespace's. */
static vdso_time_data_t *setup_timens(struct tk *tk)
{
	tk_fresh(tk, h_counter_modes[0]);
	timens_enter(tk);
	return page_real_in_ns();
}
#endif

/* The update inside the read, on the hot path and on the cold paths the layout has. */
static void grp_inside(void)
{
	seq_inside("", setup_plain, NULL);
#if VDSO_HAS_MAX_CYCLES
	seq_inside("max_cycles.", setup_max_cycles, NULL);
#endif
#if VDSO_HAS_TIMENS
	seq_inside("timens.", setup_timens, timens_offset);
#endif
}
#endif /* H_COUNTER_TRAPS */

void grp_seqcount(void)
{
	static const int waiting[] = { C_MONOTONIC, C_MONOTONIC_RAW, C_REALTIME_COARSE };
	struct chk k;
	size_t i;

	for (i = 0; i < sizeof(waiting) / sizeof(waiting[0]); i++) {
		chk_start(&k, "seqcount.wait.%s", clock_by_id(waiting[i])->name);
		seq_wait(&k, 0, waiting[i]);
	}
	chk_start(&k, "seqcount.concurrent");
	seq_concurrent(&k, 0);
#if H_COUNTER_TRAPS
	grp_inside();
#endif
#ifdef HARNESS_HAVE_CLOCK_MODES
	/* The pages of the paravirtual clocks, under their own protocols. */
	for (i = 0; i < H_NCOUNTER_MODES; i++) {
		int32_t mode = h_counter_modes[i];

		if (!harness_mode_page(mode))
			continue;
		if (harness_mode_update_waits(mode)) {
			chk_start(&k, "clock_mode.%d.wait", (int)mode);
			seq_wait(&k, mode, C_MONOTONIC);
		}
		chk_start(&k, "clock_mode.%d.concurrent", (int)mode);
		seq_concurrent(&k, mode);
	}
#endif
}
#endif /* H_HAS_CLOCK_GETTIME */
