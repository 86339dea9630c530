/*
 * vdsogen test harness: the seqcount.  A reader that meets an update in
 * progress waits for it to end; a writer thread rewriting the page while
 * readers run never lets a torn read through.  The same for the page of a
 * clock mode whose counter reads one, under that page's own protocol.
 */
#include <pthread.h>
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
 * updates, and longer (up to 5 s) until it has made 64 of them: on a busy
 * machine the writer may not run at once.
 */
static void seq_concurrent(struct chk *k, int32_t page_mode)
{
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
	} while (reads % 16 != 0 || elapsed_ns(t0, t1) < 100000000 ||
		 (__atomic_load_n(&h_writer.updates, __ATOMIC_RELAXED) < 64 && elapsed_ns(t0, t1) < 5 * NSEC_PER_SEC));
	thread_stop();
	printf("# %s: %lu rounds of reads against %lu updates, %lu bad reads\n",
	       k->name, reads, h_writer.updates, k->failures);
	if (h_writer.updates == 0)
		chk_fail(k, "the writer made no update while the readers ran");
	chk_end(k);
}

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
