/*
 * loader: run a program under qemu-user with a vDSO image, as a kernel of
 * the target would.  qemu-user gives its guests no vDSO; this guest program
 * maps the image above its data pages, which a process of its own keeps
 * current from the host's clocks (the same loader, started first with
 * --timekeeper on the file PAGES they share), loads PROGRAM (static, or dynamic
 * through its PT_INTERP), builds the initial stack with AT_SYSINFO_EHDR
 * pointing at the image, and jumps to the program's entry.
 *
 *   loader --timekeeper PAGES [--host-clock REQ REC]   (a process of its own, see keep_time(), host_update())
 *   loader [--getcpu-syscall OFFSET]... PAGES IMAGE PROGRAM [ARG...]   (see syscall_getcpu())
 *
 * Built per target with its GNU cross compiler, beside the harness's
 * timekeeper (harness/timekeeper.c: the writer protocol and the struct tk it
 * stores) and the rendered headers (the counter read, the data-page
 * structures).  The loader sits high (-Ttext-segment) so that the program's
 * usual addresses are free.  Where qemu-user's counter is the host's TSC
 * and the host kernel keeps time with it, the timekeeper publishes the host
 * kernel's own cycle_last, mult, shift and bases every tick (host_tick()),
 * so every clock reads what the host's reads, to the nanosecond.  Elsewhere
 * it is the kernel's in small (see tick()): every tick the bases move on at
 * the mult in force and the mult is disciplined against the host's clocks,
 * so every clock stays within microseconds of the host's and none that must
 * goes back.
 * A test build's counter (where qemu-user cannot read the target's) is
 * moved on by a second thread of the timekeeper's.  The data pages are a
 * shared file, so children the program forks keep a current view while the
 * timekeeper runs (`vdsogen run` ends it when the program ends); programs
 * they exec run under qemu alone.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#ifdef LOADER_FREESTANDING
#include "loader-fs.h"		/* what harness/freestanding/ does not have */
#else
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define STACK_SIZE	(8UL << 20)

static const char *prog = "vdsogen run";
static unsigned long pagesz;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, why);
	exit(125);
}

/* ---- the image, above its data pages ---------------------------------- */

/*
 * The data pages are the file PAGES, which the timekeeper process (loader
 * --timekeeper PAGES) keeps current: its first page is a test build's
 * injected counter (templates/counter-injected.h.j2), the page below the
 * data pages, as harness/image.c maps it; the data pages follow.  Both
 * processes put the harness's h_data (which its arch fragments' data
 * accessors use) on them; the program's side maps them read-only, as a
 * kernel does.
 */
#define PAGES_SIZE	((size_t)(VDSO_DATA_PAGES + 1) * VDSO_PAGE_SIZE)

static void map_pages(const char *pages, size_t text_len, int writer)
{
	const size_t ps = VDSO_PAGE_SIZE;
	int prot = PROT_READ | (writer ? PROT_WRITE : 0);
	unsigned char *res;
	int fd = open(pages, writer ? O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDONLY | O_CLOEXEC, 0600);

	if (fd < 0 || (writer && ftruncate(fd, (off_t)PAGES_SIZE) != 0))
		die(pages, strerror(errno));
	/* Reserved one page larger, to align to the target's page size. */
	res = mmap(NULL, PAGES_SIZE + text_len + ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		die(pages, strerror(errno));
	h_data = (unsigned char *)(((uintptr_t)res + ps - 1) & ~(uintptr_t)(ps - 1)) + ps;
	/* Only a test build reads the page below the data pages; for others it stays inaccessible. */
	if (mmap(h_data - (H_TEST_COUNTER ? ps : 0), PAGES_SIZE - (H_TEST_COUNTER ? 0 : ps), prot,
		 MAP_SHARED | MAP_FIXED, fd, H_TEST_COUNTER ? 0 : (off_t)ps) == MAP_FAILED)
		die(pages, strerror(errno));
	close(fd);
}

static size_t map_vdso(const char *pages, const char *path)
{
	const size_t ps = VDSO_PAGE_SIZE, data_len = (size_t)VDSO_DATA_PAGES * ps;
	struct stat st;
	size_t text_len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0)
		die(path, strerror(errno));
	text_len = ((size_t)st.st_size + ps - 1) / ps * ps;
	map_pages(pages, text_len, 0);
	h_text = mmap(h_data + data_len, text_len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
	if (h_text == MAP_FAILED)
		die(path, strerror(errno));
	close(fd);
	return text_len;
}

/*
 * getcpu by the syscall (loader --getcpu-syscall OFFSET): qemu-user keeps no
 * CPU number where an image's getcpu reads one in user space (powerpc's
 * USPRG3, s390's TOD programmable field, loongarch's timer ID), so it would
 * answer CPU 0 wherever the program runs.  In this process's private copy of
 * the image the function at OFFSET becomes the getcpu syscall, with the
 * vDSO function's convention (the syscall's own on these), whose answer is
 * the host CPU the program runs on.
 */
#define STR(x)	#x
#define XSTR(x)	STR(x)
#if defined(__powerpc64__)
#define GETCPU_BY_SYSCALL	"li 0, " XSTR(SYS_getcpu) "\n\tsc\n\tblr"
#elif defined(__s390x__)
#define GETCPU_BY_SYSCALL	"lghi %r1, " XSTR(SYS_getcpu) "\n\tsvc 0\n\tbr %r14"
#elif defined(__loongarch__)
#define GETCPU_BY_SYSCALL	"li.w $a7, " XSTR(SYS_getcpu) "\n\tsyscall 0\n\tjr $ra"
#endif

#ifdef GETCPU_BY_SYSCALL
/* The instructions, as data to copy. */
__asm__(".pushsection .rodata\n\t.p2align 2\n\t"
	".globl getcpu_by_syscall, getcpu_by_syscall_end\n\t"
	".hidden getcpu_by_syscall, getcpu_by_syscall_end\n"
	"getcpu_by_syscall:\n\t" GETCPU_BY_SYSCALL "\n"
	"getcpu_by_syscall_end:\n\t.popsection");
extern const unsigned char getcpu_by_syscall[] __attribute__((visibility("hidden")));
extern const unsigned char getcpu_by_syscall_end[] __attribute__((visibility("hidden")));

static void syscall_getcpu(size_t offset, size_t text_len)
{
	const size_t len = (size_t)(getcpu_by_syscall_end - getcpu_by_syscall);
	unsigned char *at = (unsigned char *)h_text + offset;
	unsigned char *page = (unsigned char *)((uintptr_t)at & ~(uintptr_t)(pagesz - 1));
	size_t span = (size_t)(at + len - page + pagesz - 1) & ~(pagesz - 1);

	if (offset + len > text_len || mprotect(page, span, PROT_READ | PROT_WRITE) != 0)
		die("--getcpu-syscall", offset + len > text_len ? "past the image's end" : strerror(errno));
	memcpy(at, getcpu_by_syscall, len);
#ifdef __loongarch__
	__asm__ volatile("ibar 0" : : : "memory");	/* clang would call libgcc's __clear_cache, which is not linked */
#else
	__builtin___clear_cache((char *)at, (char *)at + len);
#endif
	if (mprotect(page, span, PROT_READ | PROT_EXEC) != 0)
		die("--getcpu-syscall", strerror(errno));
}
#else
static void syscall_getcpu(size_t offset, size_t text_len)
{
	(void)offset;
	(void)text_len;
	die("--getcpu-syscall", "no getcpu syscall stub for this architecture");
}
#endif

/* ---- the timekeeper ------------------------------------------------------ */

static struct tk tk;
static int ready;		/* the pages are current */
static const char *hz_source;	/* where the counter's rate comes from (arch_hz()) */
static double first_hz;		/* the rate the first update used */

static void spawn(void *(*fn)(void *))
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, fn, NULL) != 0)
		die("timekeeper", "cannot start its threads");
}

/*
 * The timekeeper keeps time as a kernel does.  Every tick (just after the
 * host's: wait_host_tick()) the bases move on to the counter's value then, at the mult in
 * force (no clock jumps; and none goes back: a reader that still used the
 * old parameters read the counter before the update began), and each
 * record's mult is set anew so that its clock meets the host's over the next
 * DISCIPLINE_NSEC: the counter's rate (arch_hz(), else measured over the
 * last minute or so against the host's CLOCK_MONOTONIC_RAW), corrected by the clock's offset from the host's at the tick.  A clock
 * behind by more than STEP_NSEC steps forward; one ahead is slowed (at most
 * MAX_SLEW), never stepped back.  REALTIME, TAI and BOOTTIME are
 * MONOTONIC's bases plus the host's offsets (REALTIME and TAI follow a host
 * clock set at once, their drift by slewing the offset; BOOTTIME only moves
 * forward), and the coarse clocks are the host's at its tick, as the
 * syscalls a program compares them with answer.  So every clock stays within the error of
 * one measurement (the bracketing counter reads' spread, MAX_SPREAD_NSEC at
 * most) plus what the rate's error makes of a tick of the host's clocks.
 */
#define DISCIPLINE_NSEC		200000000LL	/* an offset is made up over this */
#define STEP_NSEC		10000000LL	/* a clock this far behind steps */
#define MAX_SLEW		0.05		/* the most a mult is bent from the rate */
#define OFFSET_STEP_NSEC	20000LL		/* REALTIME's or TAI's offset moved this far: the host's clock was set */
#define BOOT_STEP_NSEC		1000000LL	/* BOOTTIME's offset grew this much: the host slept */
#define MAX_SPREAD_NSEC		20000LL		/* a measurement whose counter reads are further apart is taken again */
#define RATE_SAMPLES		64		/* one a second: the rate is measured over the last minute */

/* The host's clocks, by the syscall itself (a C library may convert from its own buffer). */
#ifdef SYS_clock_gettime64
#define NR_HOST_CLOCK	SYS_clock_gettime64
#else
#define NR_HOST_CLOCK	SYS_clock_gettime
#endif
static struct { int64_t sec, nsec; } loader_host_ts;

static int64_t host_ns(clockid_t clk)
{
	syscall(NR_HOST_CLOCK, clk, &loader_host_ts);
	return loader_host_ts.sec * NSEC_PER_SEC + loader_host_ts.nsec;
}

/*
 * The host's tick.  A program compares the image's coarse clocks with the
 * host's (qemu's syscalls), as the kernel's vDSO selftests do (syscall, vDSO,
 * syscall, in order), so the coarse clocks are the host's, moved on just
 * after the host's tick moves them: the timekeeper sleeps until just before
 * the next one (MONOTONIC_COARSE plus the tick, clock_getres's), then polls
 * until MONOTONIC_COARSE moves, at most two ticks (a tickless idle host may
 * not tick: the update goes ahead then).
 */
#ifdef SYS_clock_getres_time64
#define NR_HOST_CLOCK_RES	SYS_clock_getres_time64
#else
#define NR_HOST_CLOCK_RES	SYS_clock_getres
#endif
#ifndef TIMER_ABSTIME
#define TIMER_ABSTIME		1
#endif
#define HOST_TICK_EARLY_NSEC	100000LL	/* wake this long before the host's tick is due */
#define HOST_TICK_POLL_NSEC	10000		/* then look at its coarse clock this often */

static int64_t host_tick_ns;

static void wait_host_tick(void)
{
	const int64_t last = host_ns(CLOCK_MONOTONIC_COARSE), due = last + host_tick_ns - HOST_TICK_EARLY_NSEC;
	const struct timespec until = { due / NSEC_PER_SEC, due % NSEC_PER_SEC }, poll = { 0, HOST_TICK_POLL_NSEC };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
	while (host_ns(CLOCK_MONOTONIC_COARSE) == last && host_ns(CLOCK_MONOTONIC) < last + 2 * host_tick_ns)
		nanosleep(&poll, NULL);
}

/* The host's coarse clock @clk, as a coarse base (nanoseconds unshifted). */
static struct tk_base host_coarse(clockid_t clk)
{
	int64_t ns = host_ns(clk);

	return (struct tk_base){ (uint64_t)(ns / NSEC_PER_SEC), (uint64_t)(ns % NSEC_PER_SEC) };
}

/* One measurement: the host's clock @clk, and the counter then (the middle of two reads around it). */
struct sample {
	uint64_t cycles;
	int64_t ns;
};

static double hz;		/* the counter's rate against the host's CLOCK_MONOTONIC_RAW */
static int hz_fixed;		/* the architecture's rate: the discipline bends the mults alone */

static struct sample measure(clockid_t clk)
{
	struct sample s;
	uint64_t c0, c1;
	int tries = 0;

	do {
		c0 = vdso_read_counter(tk.mode);
		s.ns = host_ns(clk);
		c1 = vdso_read_counter(tk.mode);
	} while ((double)(c1 - c0) > hz * MAX_SPREAD_NSEC / 1e9 && ++tries < 8);
	s.cycles = c0 + (c1 - c0) / 2;
	return s;
}

/* What record @rec says its base @clk reads at counter value @cycles, in nanoseconds. */
static int64_t reads(int rec, int clk, uint64_t cycles)
{
	const struct tk_base *b = &tk.base[rec][clk];

	return (int64_t)b->sec * NSEC_PER_SEC + (int64_t)((b->nsec + (cycles - tk.cycle_last) * tk.mult[rec]) >>
							  tk.shift[rec]);
}

/* The base @b of record @rec moved on by @cycles at its mult, plus @ns (shifted nanoseconds are kept). */
static struct tk_base advance(struct tk_base b, int rec, uint64_t cycles, int64_t ns)
{
	const uint64_t one = (uint64_t)NSEC_PER_SEC << tk.shift[rec];
	int64_t sec = ns / NSEC_PER_SEC, rest = ns % NSEC_PER_SEC;

	b.nsec += cycles * tk.mult[rec];
	if (rest < 0) {
		rest += NSEC_PER_SEC;
		sec--;
	}
	b.nsec += (uint64_t)rest << tk.shift[rec];
	b.sec += (uint64_t)sec + b.nsec / one;
	b.nsec %= one;
	return b;
}

static uint32_t mult_for(int rec, double rate, double bend)
{
	double mult = 1e9 / rate * (double)(1ULL << tk.shift[rec]) * (1.0 + bend) + 0.5;

	if (!(mult >= 1 && mult <= UINT32_MAX))
		die("the counter", "runs at a rate no mult and shift can give");
	return (uint32_t)mult;
}

/*
 * The rate: over the span from the oldest of the last RATE_SAMPLES
 * measurements (one a second) to @now, of the counter against the host's
 * CLOCK_MONOTONIC_RAW.
 */
static void measure_rate(struct sample now)
{
	static struct sample ring[RATE_SAMPLES];
	static unsigned int n;
	const struct sample *old = &ring[n < RATE_SAMPLES ? 0 : n % RATE_SAMPLES];

	if (!hz_fixed && n && now.ns > old->ns && now.cycles > old->cycles)
		hz = (double)(now.cycles - old->cycles) * 1e9 / (double)(now.ns - old->ns);
	if (!n || now.ns - ring[(n - 1) % RATE_SAMPLES].ns >= NSEC_PER_SEC)
		ring[n++ % RATE_SAMPLES] = now;
}

/* How far record @rec's clock @clk is behind the host's at measurement @s. */
static int64_t error_at(int rec, int clk, struct sample s)
{
	return s.ns - reads(rec, clk, s.cycles);
}

/* The correction of @clk's offset from MONOTONIC, whose error is @mono: at once past @step, else an eighth. */
static int64_t offset_step(int clk, int64_t mono, int64_t step)
{
	int64_t e = error_at(0, clk, measure(clk)) - mono;

	return e > step || e < -step ? e : e / 8;
}

static void tick(vdso_time_data_t *td)
{
	struct sample raw = measure(CLOCK_MONOTONIC_RAW), mono = measure(CLOCK_MONOTONIC);
	int64_t err[2] = { error_at(0, C_MONOTONIC, mono), error_at(1, C_MONOTONIC_RAW, raw) }, step[2];
	struct tk_base coarse_real = host_coarse(CLOCK_REALTIME_COARSE), coarse_mono = host_coarse(CLOCK_MONOTONIC_COARSE);
	int64_t real, tai, boot;
	uint32_t mult[2];
	uint64_t now, cycles;
	int rec;

	measure_rate(raw);
	real = offset_step(C_REALTIME, err[0], OFFSET_STEP_NSEC);
	tai = offset_step(C_TAI, err[0], OFFSET_STEP_NSEC);
	boot = offset_step(C_BOOTTIME, err[0], BOOT_STEP_NSEC);
	boot = boot > BOOT_STEP_NSEC ? boot : 0;	/* forward only, and only a sleep's worth */
	for (rec = 0; rec < 2; rec++) {
		double bend = (double)err[rec] / DISCIPLINE_NSEC;

		bend = bend > MAX_SLEW ? MAX_SLEW : bend < -MAX_SLEW ? -MAX_SLEW : bend;
		mult[rec] = mult_for(rec, hz, bend);
		step[rec] = err[rec] > STEP_NSEC ? err[rec] : 0;	/* else the bent mult makes it up */
	}

	tk_begin(td);
	now = vdso_read_counter(tk.mode);
	cycles = now - tk.cycle_last;
	tk.base[0][C_MONOTONIC] = advance(tk.base[0][C_MONOTONIC], 0, cycles, step[0]);
	tk.base[0][C_REALTIME] = advance(tk.base[0][C_REALTIME], 0, cycles, step[0] + real);
	tk.base[0][C_TAI] = advance(tk.base[0][C_TAI], 0, cycles, step[0] + tai);
	tk.base[0][C_BOOTTIME] = advance(tk.base[0][C_BOOTTIME], 0, cycles, step[0] + boot);
	tk.base[1][C_MONOTONIC_RAW] = advance(tk.base[1][C_MONOTONIC_RAW], 1, cycles, step[1]);
	tk.base[0][C_REALTIME_COARSE] = coarse_real;
	tk.base[0][C_MONOTONIC_COARSE] = coarse_mono;
	tk.cycle_last = now;
	tk.mult[0] = mult[0];
	tk.mult[1] = mult[1];
	tk_store(td, &tk);
	tk_end(td);
}

/* The first update: every base from the host's clock at one counter value. */
static void first_tick(vdso_time_data_t *td)
{
	static const int hres[] = { C_REALTIME, C_MONOTONIC, C_BOOTTIME, C_TAI };
	unsigned int i;

	tk.cycle_last = vdso_read_counter(tk.mode);
	for (i = 0; i < sizeof(hres) / sizeof(hres[0]); i++) {
		struct sample s = measure(hres[i]);

		tk.base[0][hres[i]] = advance((struct tk_base){ 0, 0 }, 0, 0,
					      s.ns - (int64_t)((double)(s.cycles - tk.cycle_last) * 1e9 / hz));
	}
	{
		struct sample s = measure(CLOCK_MONOTONIC_RAW);

		tk.base[1][C_MONOTONIC_RAW] = advance((struct tk_base){ 0, 0 }, 1, 0,
						      s.ns - (int64_t)((double)(s.cycles - tk.cycle_last) * 1e9 / hz));
		measure_rate(s);
	}
	tk.base[0][C_REALTIME_COARSE] = host_coarse(CLOCK_REALTIME_COARSE);
	tk.base[0][C_MONOTONIC_COARSE] = host_coarse(CLOCK_MONOTONIC_COARSE);
	tk_begin(td);
	tk_store(td, &tk);
	tk_end(td);
}

/*
 * The host kernel's own timekeeping (loader --timekeeper PAGES --host-clock
 * REQ REC, vdsogen/run/hostclock.py).  Where qemu-user's counter is the
 * host's TSC (COUNTER_IS_HOST_TSC) and the host kernel keeps time with that
 * TSC, its data pages hold what it computes every clock from: cycle_last,
 * mult, shift and each clock's base.  `vdsogen run` reads them (natively,
 * under their seqcount) whenever this process writes a byte to REQ, and
 * answers on REC with one update: HOST_WORDS 64-bit words in this target's
 * byte order, word 0 nonzero while the host keeps time with the TSC.  Every
 * tick the timekeeper publishes the host's update as it stands: the image
 * then computes what the host's vDSO and clock syscalls compute, to the
 * nanosecond (between two host updates the stale one differs only where the
 * host's NTP changed its mult, by far less than one nanosecond a tick).
 */
#if !H_TEST_COUNTER && (defined(__powerpc__) || defined(__riscv) || defined(__loongarch__) || defined(__sparc__))
#define COUNTER_IS_HOST_TSC	1	/* mftb, rdtime, rdtime.d, rd %tick: the host's rdtsc under qemu-user */
#else
#define COUNTER_IS_HOST_TSC	0
#endif
/* Its bases, in the order of the record after its 9 first words (hostclock.py's BASES). */
static const struct { int rec, clk; } host_bases[] = {
	{ 0, C_REALTIME }, { 0, C_MONOTONIC }, { 0, C_BOOTTIME }, { 0, C_TAI },
	{ 0, C_REALTIME_COARSE }, { 0, C_MONOTONIC_COARSE }, { 1, C_MONOTONIC_RAW },
};
#define HOST_WORDS	(9 + 2 * (int)(sizeof(host_bases) / sizeof(host_bases[0])))

static int host_req = -1, host_rec = -1;	/* the pipes to `vdsogen run`; -1: discipline */

/* The host's latest update into tk (not yet published): 0, or -1 when there is none. */
static int host_update(void)
{
	uint64_t w[HOST_WORDS];
	size_t got = 0;
	char c = 0;
	unsigned int i;
	int rec;

	if (write(host_req, &c, 1) != 1)
		return -1;
	while (got < sizeof(w)) {
		ssize_t n = read(host_rec, (char *)w + got, sizeof(w) - got);

		if (n <= 0 && !(n < 0 && errno == EINTR))
			return -1;
		got += n > 0 ? (size_t)n : 0;
	}
	if (!w[0])
		return -1;
	tk.cycle_last = w[1];
	tk.mask = w[2];
	for (rec = 0; rec < 2; rec++) {
		tk.mult[rec] = (uint32_t)w[3 + rec];
		tk.shift[rec] = (uint32_t)w[5 + rec];
		tk.max_cycles[rec] = w[7 + rec];
	}
	for (i = 0; i < sizeof(host_bases) / sizeof(host_bases[0]); i++)
		tk.base[host_bases[i].rec][host_bases[i].clk] = (struct tk_base){ w[9 + 2 * i], w[10 + 2 * i] };
	return 0;
}

/* The counter's rate, as the host's mult and shift give it. */
static double host_hz(void)
{
	return 1e9 * (double)(1ULL << tk.shift[0]) / tk.mult[0];
}

/*
 * One tick from the host's update; when there is none (the host's
 * clocksource changed, `vdsogen run` is gone) the discipline takes over from
 * the last one, at its rate, said on stderr.
 */
static int host_tick(vdso_time_data_t *td)
{
	int rec;

	if (host_req < 0)
		return -1;
	if (host_update() == 0) {
		tk_begin(td);
		tk_store(td, &tk);
		tk_end(td);
		return 0;
	}
	close(host_req);
	host_req = -1;
	hz = host_hz();
	for (rec = 0; rec < 2; rec++)
		tk.max_cycles[rec] = UINT64_MAX / (uint64_t)(tk.mult[rec] * (1 + 2 * MAX_SLEW));
	fprintf(stderr, "%s: the host kernel's clock records are no longer the TSC's: the clocks are disciplined "
		"against the host's from here on\n", prog);
	return -1;
}

/*
 * The counter's first rate against CLOCK_MONOTONIC_RAW, over 100 ms; over
 * longer spells (up to 3.2 s in all) while it has not moved: on a busy
 * machine a test build's counter thread may not have run yet.  The
 * timekeeper refines it every tick.
 */
static double counter_hz(void)
{
	int64_t t0, t1;
	uint64_t c0, c1;
	long pause_ns;

	for (pause_ns = 100000000; pause_ns <= 1600000000; pause_ns *= 2) {
		struct timespec pause = { pause_ns / NSEC_PER_SEC, pause_ns % NSEC_PER_SEC };

		t0 = host_ns(CLOCK_MONOTONIC_RAW);
		c0 = vdso_read_counter(tk.mode);
		nanosleep(&pause, NULL);
		c1 = vdso_read_counter(tk.mode);
		t1 = host_ns(CLOCK_MONOTONIC_RAW);
		if (c1 > c0 && t1 > t0)
			return (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
	}
	die("the counter", "does not advance under this emulator");
	return 0;
}

/*
 * The counter's rate where the architecture gives it under qemu-user, and
 * where it comes from; 0 where it does not (the timekeeper then measures it
 * against the host's CLOCK_MONOTONIC_RAW and refines it every second).
 * qemu-user runs arm64's generic timer at CNTFRQ_EL0 (62.5 MHz) and s390's
 * TOD clock at 4096 units a microsecond, from the host's clocks; a test
 * build's counter runs at 24 MHz of the host's CLOCK_MONOTONIC_RAW
 * (h_test_counter_now()).  powerpc's timebase, riscv's time CSR,
 * loongarch's stable counter and sparc's %tick are the host's TSC, whose
 * rate qemu-user gives the guest no way to read (its /proc/cpuinfo is the
 * host's, without powerpc's "timebase"): the host kernel's mult and shift
 * give it where it keeps time with the TSC (host_hz()).
 */
static double arch_hz(const char **source)
{
#if H_TEST_COUNTER
	*source = "the-injected-counter(24MHz)";
	return 24e6;
#elif defined(__aarch64__)
	uint64_t frq;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
	*source = "CNTFRQ_EL0";
	return (double)frq;
#elif defined(__s390x__)
	*source = "the-TOD-clock(4096/us)";
	return 4096e6;
#else
	*source = "measured-against-CLOCK_MONOTONIC_RAW";
	return 0;
#endif
}

#if H_TEST_COUNTER
/*
 * A test build's counter (templates/counter-injected.h.j2): qemu-user cannot
 * read the target's own, so the image reads a 64-bit count from the page
 * below the data pages, which h_test_counter_now() (harness/timekeeper.c)
 * moves on to the host's CLOCK_MONOTONIC_RAW at 24 MHz.  A counter runs by
 * itself: this thread moves it on every few tens of microseconds, so that
 * the clocks advance between the timekeeper's ticks.
 */
#define COUNTER_STEP_NSEC	20000

static void *counter(void *arg)
{
	struct timespec step = { 0, COUNTER_STEP_NSEC };
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);	/* the host's nanosleep, not 50 us late */
	for (;;) {
		h_test_counter_now();
		nanosleep(&step, NULL);
	}
	return NULL;
}
#endif

static void *timekeeper(void *arg)
{
	vdso_time_data_t *td = (vdso_time_data_t *)H_PAGE(VDSO_PAGE_TIME);
	struct rate rate;
	sigset_t all;
	int rec;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* signals are the program's */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);	/* wait_host_tick()'s sleeps as asked */
	syscall(NR_HOST_CLOCK_RES, CLOCK_MONOTONIC_COARSE, &loader_host_ts);
	host_tick_ns = loader_host_ts.sec * NSEC_PER_SEC + loader_host_ts.nsec;
	tk.mode = h_counter_modes[0];
	tk.mask = ~0ULL;
#ifdef HARNESS_HAVE_ARCH_DATA
	/* First: a counter read may depend on it (s390's tod_delta; its TOD steering before v6.17). */
	harness_arch_fill(H_PAGE(VDSO_PAGE_ARCH), 0);
#endif
	hz = arch_hz(&hz_source);
	hz_fixed = hz > 0;
	if (!COUNTER_IS_HOST_TSC || host_req < 0 || host_update() != 0) {
		host_req = -1;
	} else {
		hz = host_hz();
		hz_source = "the-host-kernel's-TSC-timekeeping";
	}
	if (!hz_fixed && host_req < 0)
		hz = counter_hz();
#ifdef HARNESS_HAVE_ARCH_DATA
	/* Again, with the counter's rate (powerpc's tb_ticks_per_sec). */
	harness_arch_fill(H_PAGE(VDSO_PAGE_ARCH), (uint64_t)(hz + 0.5));
#endif
	tk.hrtimer_res = 1;
	if (host_req >= 0) {
		tk_publish(td, &tk);	/* the host's update host_update() read */
	} else {
		pick_rate((uint64_t)(hz + 0.5), 600, &rate);
		for (rec = 0; rec < 2; rec++) {
			/* One counter, one rate: the raw clock's record starts as the other's. */
			tk.shift[rec] = rate.shift[0];
			tk.mult[rec] = mult_for(rec, hz, 0);
			tk.max_cycles[rec] = UINT64_MAX / (uint64_t)(tk.mult[rec] * (1 + 2 * MAX_SLEW));
		}
		first_tick(td);
	}
	first_hz = hz;
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		wait_host_tick();
		if (host_tick(td) != 0)
			tick(td);
	}
	return NULL;
}

/* ---- the program ---------------------------------------------------------- */

struct loaded {
	uintptr_t bias, entry, phdr;
	unsigned int phnum;
	char interp[256];
};

static void load(const char *path, struct loaded *l)
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) *ph;
	uintptr_t lo = UINTPTR_MAX, hi = 0, pmask = pagesz - 1;
	unsigned int i;
	void *at;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(path, strerror(errno));
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		die(path, "not an ELF executable");
	if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_machine != H_ELF_MACHINE)
		die(path, "not a program of the image's ABI");
	ph = calloc(eh.e_phnum, sizeof(*ph));
	if (!ph || pread(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof(*ph)))
		die(path, "cannot read its program headers");
	l->interp[0] = 0;
	l->phdr = 0;
	for (i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_INTERP && ph[i].p_filesz < sizeof(l->interp)) {
			if (pread(fd, l->interp, ph[i].p_filesz, ph[i].p_offset) != (ssize_t)ph[i].p_filesz)
				die(path, "cannot read its PT_INTERP");
			l->interp[ph[i].p_filesz] = 0;
		}
		if (ph[i].p_type == PT_PHDR)
			l->phdr = ph[i].p_vaddr;
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr & ~pmask;
		if (ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = ph[i].p_vaddr + ph[i].p_memsz;
		if (!l->phdr && ph[i].p_offset == 0)
			l->phdr = ph[i].p_vaddr + eh.e_phoff;
	}
	if (hi <= lo)
		die(path, "nothing to load");
	hi = (hi + pmask) & ~pmask;
	/* The whole span at once: where the program says (ET_EXEC), or where there is room. */
	at = mmap(eh.e_type == ET_EXEC ? (void *)lo : NULL, hi - lo, PROT_NONE,
		  MAP_PRIVATE | MAP_ANONYMOUS | (eh.e_type == ET_EXEC ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (at == MAP_FAILED)
		die(path, "its addresses are taken");
	l->bias = (uintptr_t)at - lo;
	for (i = 0; i < eh.e_phnum; i++) {
		uintptr_t start, file_end, mem_end;
		int prot = 0;

		if (ph[i].p_type != PT_LOAD)
			continue;
		prot |= ph[i].p_flags & PF_R ? PROT_READ : 0;
		prot |= ph[i].p_flags & PF_W ? PROT_WRITE : 0;
		prot |= ph[i].p_flags & PF_X ? PROT_EXEC : 0;
		start = l->bias + (ph[i].p_vaddr & ~pmask);
		file_end = l->bias + ph[i].p_vaddr + ph[i].p_filesz;
		mem_end = (l->bias + ph[i].p_vaddr + ph[i].p_memsz + pmask) & ~pmask;
		if (ph[i].p_filesz && mmap((void *)start, file_end - start, prot, MAP_PRIVATE | MAP_FIXED, fd,
					   ph[i].p_offset & ~pmask) == MAP_FAILED)
			die(path, strerror(errno));
		if (ph[i].p_memsz > ph[i].p_filesz) {
			/* .bss: the rest of the file's last page zeroed, anonymous pages after it. */
			uintptr_t page_end = (file_end + pmask) & ~pmask;

			if (ph[i].p_filesz && (file_end & pmask))
				memset((void *)file_end, 0, page_end - file_end);
			if (mem_end > page_end &&
			    mmap((void *)page_end, mem_end - page_end, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				 -1, 0) == MAP_FAILED)
				die(path, strerror(errno));
		}
	}
	close(fd);
	l->entry = l->bias + eh.e_entry;
	l->phdr += l->bias;
	l->phnum = eh.e_phnum;
	free(ph);
}

#ifdef __hppa__
/*
 * hppa's stack grows up: the kernel puts the strings and the vectors at its
 * bottom and the stack pointer above them (start_thread()).  Here they take
 * the mapping's first STACK_INFO bytes, built as below; the program's stack
 * grows from stack_up.
 */
#define STACK_INFO	(256UL << 10)
static uintptr_t stack_up;
#else
#define STACK_INFO	STACK_SIZE
#endif

/* The stack a kernel builds: argc, argv[], envp[], the auxiliary vector, then the strings. */
static uintptr_t build_stack(int argc, char **argv, char **envp, const struct loaded *p, uintptr_t interp_base)
{
	unsigned char *stk = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
				  -1, 0);
	char *s, **strs;
	uintptr_t *sp, random_at;
	int envc = 0, i, n;

	if (stk == MAP_FAILED)
		die("stack", strerror(errno));
	while (envp[envc])
		envc++;
	strs = calloc(argc + envc, sizeof(*strs));
	s = (char *)stk + STACK_INFO;
#ifdef __hppa__
	stack_up = (uintptr_t)s + 4096;		/* a page above them: a frame marker lies below the stack pointer */
#endif
	for (i = 0; i < argc + envc; i++) {
		const char *from = i < argc ? argv[i] : envp[i - argc];

		if ((size_t)(s - (char *)stk) < strlen(from) + 1 + 4096)
			die("stack", "the arguments and the environment do not fit");
		s -= strlen(from) + 1;
		strcpy(s, from);
		strs[i] = s;
	}
	s = (char *)((uintptr_t)s & ~15UL) - 16;
	for (i = 0; i < 16; i++)
		s[i] = (char)rand();
	random_at = (uintptr_t)s;

	{
		const uintptr_t aux[][2] = {
			{ AT_SYSINFO_EHDR, (uintptr_t)h_text },
			{ AT_HWCAP, getauxval(AT_HWCAP) },
			{ AT_HWCAP2, getauxval(AT_HWCAP2) },
			{ AT_PAGESZ, pagesz },
			{ AT_CLKTCK, getauxval(AT_CLKTCK) },
			{ AT_PHDR, p->phdr },
			{ AT_PHENT, sizeof(ElfW(Phdr)) },
			{ AT_PHNUM, p->phnum },
			{ AT_BASE, interp_base },
			{ AT_FLAGS, 0 },
			{ AT_ENTRY, p->entry },
			{ AT_UID, getuid() },
			{ AT_EUID, geteuid() },
			{ AT_GID, getgid() },
			{ AT_EGID, getegid() },
			{ AT_SECURE, 0 },
			{ AT_RANDOM, random_at },
			{ AT_EXECFN, (uintptr_t)strs[0] },
			{ AT_NULL, 0 },
		};

		n = 1 + argc + 1 + envc + 1 + 2 * (int)(sizeof(aux) / sizeof(aux[0]));
		sp = (uintptr_t *)(((uintptr_t)s - n * sizeof(uintptr_t)) & ~15UL);
		i = 0;
		sp[i++] = argc;
		for (int k = 0; k < argc; k++)
			sp[i++] = (uintptr_t)strs[k];
		sp[i++] = 0;
		for (int k = 0; k < envc; k++)
			sp[i++] = (uintptr_t)strs[argc + k];
		sp[i++] = 0;
		memcpy(&sp[i], aux, sizeof(aux));
	}
	free(strs);
	return (uintptr_t)sp;
}

/*
 * Enter the program as the kernel does: the stack pointer at argc, no
 * rtld_fini.  @bias is the load bias of what @entry enters (the interpreter,
 * else the program).
 */
static void __attribute__((noreturn)) start(uintptr_t sp, uintptr_t entry, uintptr_t bias)
{
	(void)bias;
#if defined(__aarch64__)
	/* The entry in a register of its own: x0 is set to 0 before the branch. */
	register uintptr_t to __asm__("x16") = entry;

	__asm__ volatile("mov sp, %0\n\tmov x0, xzr\n\tbr %1" : : "r"(sp), "r"(to) : "memory");
#elif defined(__powerpc64__) && _CALL_ELF == 2
	/* ELFv2: r12 holds the entry address, from which it finds its TOC. */
	__asm__ volatile("mr 1, %0\n\tmr 12, %1\n\tmtctr 12\n\tli 3, 0\n\tli 4, 0\n\tli 5, 0\n\t"
			 "li 6, 0\n\tli 7, 0\n\tli 8, 0\n\tbctr" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__powerpc64__)
	/*
	 * ELFv1: the entry is a function descriptor, the code address then the
	 * TOC pointer, as linked: nothing has relocated a position-independent
	 * interpreter's or program's yet, so they move by the load bias, as a
	 * kernel moves them.
	 */
	register uintptr_t code __asm__("r12") = ((const uintptr_t *)entry)[0] + bias;
	register uintptr_t toc __asm__("r2") = ((const uintptr_t *)entry)[1] + bias;

	__asm__ volatile("mr 1, %0\n\tmtctr 12\n\tli 3, 0\n\tli 4, 0\n\tli 5, 0\n\tli 6, 0\n\tli 7, 0\n\t"
			 "li 8, 0\n\tbctr" : : "r"(sp), "r"(code), "r"(toc) : "memory");
#elif defined(__powerpc__)
	__asm__ volatile("mr 1, %0\n\tmtctr %1\n\tli 3, 0\n\tli 4, 0\n\tli 5, 0\n\tli 6, 0\n\tli 7, 0\n\t"
			 "li 8, 0\n\tbctr" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__arm__)
	/*
	 * r0 would hold the dynamic linker's finaliser.  r1-r12 zero too, as the
	 * kernel leaves them: glibc 2.36's dynamic loader (_dl_start_user) loads
	 * a word at its GOT plus r4 before it ever sets r4.
	 */
	__asm__ volatile("mov sp, %0\n\tmov lr, %1\n\tmov r0, #0\n\tmov r1, #0\n\tmov r2, #0\n\tmov r3, #0\n\t"
			 "mov r4, #0\n\tmov r5, #0\n\tmov r6, #0\n\tmov r7, #0\n\tmov r8, #0\n\tmov r9, #0\n\t"
			 "mov r10, #0\n\tmov r11, #0\n\tmov r12, #0\n\tbx lr" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__mips__)
	/* $2 (v0) would hold the dynamic linker's finaliser; $25 (t9) is the callee's address. */
	__asm__ volatile(".set push\n\t.set noreorder\n\tmove $sp, %0\n\tmove $25, %1\n\tmove $2, $0\n\t"
			 "move $31, $0\n\tjr $25\n\tnop\n\t.set pop" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__riscv)
	register uintptr_t to __asm__("t1") = entry;

	__asm__ volatile("mv sp, %0\n\tli a0, 0\n\tjr %1" : : "r"(sp), "r"(to) : "memory");
#elif defined(__loongarch__)
	register uintptr_t to __asm__("$t1") = entry;

	__asm__ volatile("move $sp, %0\n\tmove $a0, $zero\n\tjr %1" : : "r"(sp), "r"(to) : "memory");
#elif defined(__s390x__)
	/* r14 would hold the dynamic linker's finaliser. */
	register uintptr_t to __asm__("r1") = entry;

	__asm__ volatile("lgr %%r15, %0\n\tlghi %%r14, 0\n\tbr %1" : : "r"(sp), "a"(to) : "memory");
#elif defined(__hppa__)
	/*
	 * start_thread(): argc in r25, argv in r24, r23 (the dynamic linker's
	 * finaliser) 0; the stack pointer above the vectors, as the stack grows up.
	 */
	register uintptr_t to __asm__("r22") = entry;
	register uintptr_t up __asm__("r21") = stack_up;
	register uintptr_t r25 __asm__("r25") = *(const uintptr_t *)sp;
	register uintptr_t r24 __asm__("r24") = sp + sizeof(uintptr_t);

	__asm__ volatile("copy %%r21, %%r30\n\tcopy %%r0, %%r23\n\tcopy %%r0, %%r2\n\tbv %%r0(%%r22)\n\tnop"
			 : : "r"(to), "r"(up), "r"(r25), "r"(r24) : "memory");
#elif defined(__sparc__) && defined(__arch64__)
	/*
	 * argc sits one register window (16 doublewords) above the biased %sp;
	 * %g1 would hold the dynamic linker's finaliser.  The entry in a
	 * register of its own: %g1 is set to 0 before the jump.
	 */
	register uintptr_t to __asm__("g5") = entry;

	__asm__ volatile("sub %0, 128 + 2047, %%sp\n\tmov %%g0, %%fp\n\tmov %%g0, %%g1\n\tjmpl %1, %%g0\n\t nop"
			 : : "r"(sp), "r"(to) : "memory");
#elif defined(__sparc__)
	/*
	 * 32-bit SPARC: argc sits one register window (16 words) above %sp;
	 * %g1 would hold the dynamic linker's finaliser.
	 */
	register uintptr_t to __asm__("o5") = entry;

	__asm__ volatile("sub %0, 64, %%sp\n\tmov %%g0, %%fp\n\tmov %%g0, %%g1\n\tjmpl %1, %%g0\n\t nop"
			 : : "r"(sp), "r"(to) : "memory");
#elif defined(__sh__)
	/* r4 would hold the dynamic linker's finaliser; pr and the frame pointer (r14) end a backtrace. */
	register uintptr_t from __asm__("r1") = sp;
	register uintptr_t to __asm__("r2") = entry;

	__asm__ volatile("mov %0, r15\n\tmov #0, r4\n\tmov #0, r14\n\tjmp @%1\n\t lds r14, pr"
			 : : "r"(from), "r"(to) : "memory");
#else
#error "loader.c: no program entry for this architecture"
#endif
	__builtin_unreachable();
}

/*
 * loader --timekeeper PAGES: keep the data pages (and a test build's
 * counter) in the file PAGES current until standard input ends; one line
 * "ready HZ SOURCE" on standard output once they are: the counter's first
 * rate and where it comes from (arch_hz()).  A process of its own, which
 * `vdsogen run` starts under a qemu of its own: its clock syscalls are not
 * in the log of the program's (--syscall-counts).
 */
static int keep_time(const char *pages)
{
	char c;
	struct timespec wait = { 0, 1000000 };

	map_pages(pages, 0, 1);
#if H_TEST_COUNTER
	if (H_TIME_DATA)
		spawn(counter);
#endif
	if (H_TIME_DATA)
		spawn(timekeeper);
	else	/* an image without time data (sh4), above nominal pages it never reads: nothing to keep */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		nanosleep(&wait, NULL);
	printf("ready %llu %s\n", (unsigned long long)(first_hz + 0.5), hz_source);
	if (fflush(stdout) != 0)
		return 1;
	close(1);
	for (;;) {
		ssize_t n = read(0, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			return 0;
	}
}

int main(int argc, char **argv)
{
	struct loaded program, interp;
	uintptr_t interp_base = 0, entry;
	char **getcpu = argv + 1;
	int n_getcpu = 0;
	size_t text_len;

	if (argc == 6 && strcmp(argv[1], "--timekeeper") == 0 && strcmp(argv[3], "--host-clock") == 0) {
		host_req = (int)strtoul(argv[4], NULL, 10);
		host_rec = (int)strtoul(argv[5], NULL, 10);
		argc = 3;
	}
	if (argc == 3 && strcmp(argv[1], "--timekeeper") == 0)
		return keep_time(argv[2]);
	while (argc > 2 && strcmp(argv[1], "--getcpu-syscall") == 0) {
		n_getcpu++;
		argv += 2;
		argc -= 2;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: loader --timekeeper PAGES [--host-clock REQ REC] | loader [--getcpu-syscall "
			"OFFSET]... PAGES IMAGE PROGRAM [ARG...]\n");
		return 125;
	}
	pagesz = getauxval(AT_PAGESZ);
	text_len = map_vdso(argv[1], argv[2]);
	while (n_getcpu--)
		syscall_getcpu((size_t)strtoul(getcpu[2 * n_getcpu + 1], NULL, 0), text_len);
	load(argv[3], &program);
	entry = program.entry;
	if (program.interp[0]) {
		load(program.interp, &interp);
		interp_base = interp.bias;
		entry = interp.entry;
	}
	/* The environment as the kernel passed it, right after argv. */
	start(build_stack(argc - 3, argv + 3, argv + argc + 1, &program, interp_base), entry,
	      program.interp[0] ? interp_base : program.bias);
}
