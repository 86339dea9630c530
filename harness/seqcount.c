/*
 * vdsogen test harness: the seqcount.  A reader that meets an update in
 * progress waits for it to end; a writer thread rewriting the page while
 * readers run never lets a torn read through.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct writer {
	vdso_time_data_t	*td;
	const struct tk	*tk;
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
/* Finishes an update the main thread began, after a delay. */
static void *finisher_main(void *arg)
{
	struct writer *w = arg;

	pin_to(h_other_cpu);
	sleep_ns(w->delay_ns);
	tk_store(w->td, w->tk);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	tk_end(w->td);
	return NULL;
}

/*
 * Rewrites the page until told to stop, with garbage in the bases while seq
 * is odd.  The quiet spells between updates vary in length: the short ones
 * catch a reader that does not retry, the long ones let a correct reader
 * through.
 */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t x = 0x9e3779b9u;

	pin_to(h_other_cpu);
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		tk_begin(w->td);
		tk_scribble(w->td, w->updates);
		spin(32);
		tk_store(w->td, w->tk);
		tk_end(w->td);
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

/* A reader that meets an update in progress waits for it to end. */
static void seq_wait(int clk)
{
	struct tk tk;
	struct chk k;
	int e;

	tk_fresh(&tk, h_counter_modes[0]);
	chk_start(&k, "seqcount.wait.%s", clock_by_id(clk)->name);
	memset(&h_writer, 0, sizeof(h_writer));
	h_writer.td = page_time();
	h_writer.tk = &tk;
	h_writer.delay_ns = 20000000;
	tk_begin(page_time());
	tk_scribble(page_time(), 0);
	e = thread_start(finisher_main);
	if (e) {
		chk_fail(&k, "pthread_create: %s", strerror(e));
		tk_store(page_time(), &tk);
		tk_end(page_time());
	} else {
		expect_clock(&k, &tk, clk, NULL);
		if (!__atomic_load_n(&h_writer.done, __ATOMIC_ACQUIRE))
			chk_fail(&k, "returned while seq was odd (an update in progress)");
	}
	thread_stop();
	chk_end(&k);
}

static void seq_concurrent(void)
{
	struct hts t0, t1;
	unsigned long reads = 0;
	struct tk tk;
	struct chk k;
	size_t i;
	int e;

	tk_fresh(&tk, h_counter_modes[0]);
	chk_start(&k, "seqcount.concurrent");
	memset(&h_writer, 0, sizeof(h_writer));
	h_writer.td = page_time();
	h_writer.tk = &tk;
	e = thread_start(writer_main);
	if (e) {
		chk_fail(&k, "pthread_create: %s", strerror(e));
		chk_end(&k);
		return;
	}
	sys_gettime(C_MONOTONIC, &t0);
	do {
		for (i = 0; i < NCLOCKS; i++)
			expect_clock(&k, &tk, h_clocks[i].id, NULL);
#ifdef H_HAS_GETTIMEOFDAY
		if (h_fn[IMPL_GETTIMEOFDAY])
			expect_gettimeofday(&k, &tk, NULL);
#endif
		reads++;
		if (reads % 16 == 0)
			sys_gettime(C_MONOTONIC, &t1);
	} while (reads % 16 != 0 || elapsed_ns(t0, t1) < 100000000);
	thread_stop();
	printf("# seqcount: %lu rounds of reads against %lu updates, %lu bad reads\n",
	       reads, h_writer.updates, k.failures);
	if (h_writer.updates == 0)
		chk_fail(&k, "the writer made no update while the readers ran");
	chk_end(&k);
}

void grp_seqcount(void)
{
	seq_wait(C_MONOTONIC);
	seq_wait(C_MONOTONIC_RAW);
	seq_wait(C_REALTIME_COARSE);
	seq_concurrent();
}
#endif /* H_HAS_CLOCK_GETTIME */
