/*
 * vdsogen test harness: the benchmark, numbers for people and never a
 * check.  vdsogen/bench/ runs it and turns its lines into the table of
 * `vdsogen bench`.
 *
 *   harness --bench [--live] [--dump-live FILE] [--rounds N] [--batch-us N] [--cpu N] IMAGE
 *
 * Each line is one call shape: an export with the arguments of one clock
 * class (clock_gettime of each clock the page serves and of a CPU-time
 * clock, clock_getres of a counter and a coarse clock, gettimeofday, time,
 * getcpu: the rows of functions.toml's [NAME.harness.bench], h_bench_rows[]
 * of harness_functions.c), timed in batches of calls through a function
 * pointer by up to five ways:
 *
 *   image    the image under test
 *   live     the running kernel's own vDSO (--live: the one mapped into
 *            this process, found through AT_SYSINFO_EHDR, resolved by the
 *            export's name)
 *   syscall  the raw syscall the export falls back to
 *   image.caller, live.caller
 *            the image and the kernel's vDSO again, called as an
 *            application calls them: the answer lands in the caller's
 *            stack frame and is read back after every call; the image's
 *            data is not refreshed right before its batch, only at the
 *            start of each round (and before the image way's batches)
 *
 * The first three ways are the "batch" method: the answer goes to a
 * buffer placed where no field of the time page aliases it (B_OUT_OFFSET)
 * and is never read, so a call is timed alone.  The "caller" ways weigh
 * what the batch method leaves out on purpose: the store-to-load
 * forwarding of the answer, a buffer wherever the stack puts it, and data
 * refreshed a while before.  A claim of speed must hold under both.
 *
 * The floors are lines of their own, way "counter", each a function
 * called through a pointer too: "call:empty", a function that only
 * returns (the cost of the loop and the call), and the ordered counter
 * reads the counter fragment offers (VDSO_COUNTER_READS, the one the image
 * uses first), the floor under every counter clock.  Every round
 * runs one batch of every (line, way), the ways of a line one after the
 * other in an order that rotates from round to round, all pinned to one
 * CPU.  The output has one line per (line, way) with the nanoseconds per
 * call of each round:
 *
 *   bench LINE WAY NS NS ...
 *
 * With --live, where the kernel's data pages sit below its vDSO as the
 * layout puts them below the image (the same number of pages), the image
 * reads a copy of the kernel's time page taken under its seqcount right
 * before each of its batches: both answer from the kernel's own timekeeper
 * ("bench.data live"), and a "bench.agree" line per clock says whether
 * their answers agree.  Otherwise the harness's timekeeper, as for the
 * checks, publishes an update right before each of the image's batches
 * ("bench.data synthetic"), as a kernel does every tick.  --dump-live writes the
 * kernel's vDSO to FILE, for vdsogen to count its instructions.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The exports' rows, the empty call and up to 8 ordered counter reads. */
#define B_MAX_LINES	(H_NBENCH_ROWS + 1 + 8)
#define B_MAX_ROUNDS	1001

enum { W_IMAGE, W_LIVE, W_SYSCALL, W_COUNTER, W_IMAGE_CALLER, W_LIVE_CALLER, B_NWAYS };
static const char *const b_way_names[B_NWAYS] = {
	"image", "live", "syscall", "counter", "image.caller", "live.caller",
};

typedef long (*gettime_fn)(clockid_t clk, void *ts);
typedef long (*gettimeofday_fn)(void *tv, void *tz);
typedef long (*time_fn)(void *t);
typedef long (*getcpu_fn)(unsigned int *cpu, unsigned int *node, void *unused);
typedef uint64_t (*counter_fn)(void);
typedef long (*getrandom_fn)(void *buf, size_t len, unsigned int flags, void *state, size_t state_len);

struct b_line {
	char		name[64];
	int		shape;
	int		impl;		/* IMPL_ index, or -1 for a counter read */
	int		clk;
	const struct ts_flavour	*fl;	/* how a timespec answer reads, or NULL */
	void		*fn[B_NWAYS];	/* NULL: the way does not exist for this line */
	void		*state[B_NWAYS];	/* getrandom: each way's own state, mapped as its query says */
	size_t		state_len[B_NWAYS];
	long		n[B_NWAYS];	/* calls per batch */
	double		ns[B_NWAYS][B_MAX_ROUNDS];
};

static struct b_line b_lines[B_MAX_LINES];
static int b_nlines;

/* ------------------------------------------------------------------ */
/* The running kernel's vDSO                                           */

static const unsigned char *live_base;
static size_t live_size;		/* of its [vdso] mapping */

/* The address of @name in the vDSO mapped at live_base (the native ELF class), or NULL. */
static void *live_symbol(const char *name)
{
	const ElfW(Ehdr) *eh = (const void *)live_base;
	const ElfW(Phdr) *ph;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL;
	uintptr_t bias = 0;
	int have_bias = 0;
	size_t i, nsyms;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return NULL;
	ph = (const void *)(live_base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_bias) {
			bias = (uintptr_t)live_base + ph[i].p_offset - ph[i].p_vaddr;
			have_bias = 1;
		}
	}
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(bias + ph[i].p_vaddr);
	if (!dyn || !have_bias)
		return NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			symtab = (const void *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const void *)(bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const void *)(bias + dyn->d_un.d_ptr);
	}
	/* The symbol table ends where the string table starts in every vDSO linked so far. */
	if (!symtab || !strtab)
		return NULL;
	nsyms = hash ? hash[1] : (size_t)((const ElfW(Sym) *)(const void *)strtab - symtab);
	for (i = 1; i < nsyms && i < 4096; i++) {
		const ElfW(Sym) *s = &symtab[i];

		if (s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
		    strcmp(strtab + s->st_name, name) == 0)
			return (void *)(bias + s->st_value);
	}
	return NULL;
}

/* The kernel's data pages: where the live vDSO reads them, when they are laid out as the image's are. */
static const unsigned char *live_data;

static void find_live(void)
{
	const size_t data_len = (size_t)VDSO_DATA_PAGES * VDSO_PAGE_SIZE;
	uintptr_t lo, hi, vvar = 0;
	char line[512], name[64];
	FILE *maps;

	live_base = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!live_base) {
		printf("bench.note this process has no vDSO of its own (no AT_SYSINFO_EHDR): no live way\n");
		return;
	}
	maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		name[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %63s", (unsigned long *)&lo, (unsigned long *)&hi,
			   name) < 2)
			continue;
		if (strcmp(name, "[vvar]") == 0 && !vvar)
			vvar = lo;
		if (lo == (uintptr_t)live_base)
			live_size = hi - lo;
	}
	fclose(maps);
	if (vvar && (uintptr_t)live_base - vvar == data_len) {
		live_data = (const void *)vvar;
	} else {
		printf("bench.note the kernel's data pages are not the %d pages of %d bytes right below its "
		       "vDSO that the image's layout has: the image reads synthetic data\n", VDSO_DATA_PAGES,
		       VDSO_PAGE_SIZE);
	}
}

static int dump_live(const char *path)
{
	FILE *f;

	if (!live_base || !live_size) {
		printf("bench.note no vDSO mapping of this process to dump\n");
		return 0;
	}
	f = fopen(path, "wb");
	if (!f || fwrite(live_base, 1, live_size, f) != live_size || fclose(f) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	printf("bench.live %s %zu bytes\n", path, live_size);
	return 0;
}

/*
 * Copy the kernel's time page (and, in a time namespace, the real one
 * beside it) into the image's, under the kernel's seqcount.
 */
static void copy_live_time(void)
{
	const vdso_time_data_t *src = (const void *)(live_data + (size_t)VDSO_PAGE_TIME * VDSO_PAGE_SIZE);
	const volatile uint32_t *seqp = &VDSO_CLOCKS(src)[0].seq;
	vdso_time_data_t *dst = page_time();
	uint32_t seq;

	do {
		while ((seq = *seqp) & 1)
			vdso_cpu_relax();
		vdso_rmb();
		memcpy(dst, src, VDSO_PAGE_SIZE);
#if VDSO_HAS_TIMENS
		if (VDSO_CLOCKS(dst)[0].clock_mode == CLOCKMODE_TIMENS)
			memcpy(page_real_in_ns(), (const char *)src + VDSO_TIMENS_REAL_OFFSET, VDSO_PAGE_SIZE);
#endif
		vdso_rmb();
	} while (*seqp != seq);
}

/* ------------------------------------------------------------------ */
/* The calls                                                           */

union b_buf {
	struct vdso_timespec	ts;
	struct vdso_timespec64	ts64;
	struct vdso_timeval	tv;
	long			t;
};

/* The export's first name in the spec: the one looked up in the kernel's vDSO. */
static const char *export_name(int impl)
{
	size_t i;

	for (i = 0; h_symbols[i].name; i++)
		if (h_symbols[i].kind == H_KIND_EXPORT && h_symbols[i].impl == impl)
			return h_symbols[i].name;
	return NULL;
}

/* A call that does nothing: the cost of the loop and the indirect call alone. */
static __attribute__((noinline)) uint64_t b_empty(void)
{
	__asm__ __volatile__("");
	return 0;
}

/* The counter fragment's ordered reads, each a function of its own. */
#ifdef VDSO_COUNTER_READS
#define B_READ_FN(name, read)	static __attribute__((noinline)) uint64_t b_read_##read(void) { return read(); }
VDSO_COUNTER_READS(B_READ_FN)
#undef B_READ_FN
#endif

/*
 * Where the calls store their results: at an offset into a page that no
 * field of the time page has.  A result buffer whose address agrees with a
 * field the call loads in its low 12 bits makes the load wait for the
 * previous call's store (4K aliasing), a cost of where the caller's stack
 * happens to be, not of the code under test.
 */
#define B_OUT_OFFSET	0xc00
static unsigned char b_out_page[4096] __attribute__((aligned(4096)));
/* getrandom's output: up to 64 KiB (functions.toml's sizes). */
static unsigned char b_random[65536] __attribute__((aligned(64)));

/* One batch of @n calls; noinline, so every way runs the same loop. */
static __attribute__((noinline)) void b_run(const struct b_line *l, int way, void *fn, long n)
{
	union b_buf *b = (void *)(b_out_page + B_OUT_OFFSET);
	unsigned int *cpu = (void *)(b_out_page + B_OUT_OFFSET);

	switch (l->shape) {
	case SH_GETTIME:
	case SH_GETRES:
		while (n-- > 0)
			((gettime_fn)fn)(l->clk, b);
		break;
	case SH_GETTIMEOFDAY:
		while (n-- > 0)
			((gettimeofday_fn)fn)(b, NULL);
		break;
	case SH_TIME:
		while (n-- > 0)
			((time_fn)fn)(NULL);
		break;
	case SH_GETCPU:
		while (n-- > 0)
			((getcpu_fn)fn)(cpu, NULL, NULL);
		break;
	case SH_GETRANDOM:
		while (n-- > 0)
			((getrandom_fn)fn)(b_random, (size_t)l->clk, 0, l->state[way], l->state_len[way]);
		break;
	case SH_COUNTER:
		while (n-- > 0)
			((counter_fn)fn)();
		break;
	}
}

/*
 * One batch of @n calls the way an application makes them: the answer in
 * this frame, read back after each call (summed, so the reads stay).
 */
static __attribute__((noinline)) long b_run_caller(const struct b_line *l, int way, void *fn, long n)
{
	union b_buf b;
	unsigned int cpu;
	long sum = 0;

	switch (l->shape) {
	case SH_GETTIME:
	case SH_GETRES:
		while (n-- > 0) {
			((gettime_fn)fn)(l->clk, &b);
			sum += b.ts.tv_nsec;
		}
		break;
	case SH_GETTIMEOFDAY:
		while (n-- > 0) {
			((gettimeofday_fn)fn)(&b, NULL);
			sum += b.tv.tv_usec;
		}
		break;
	case SH_TIME:
		while (n-- > 0)
			sum += ((time_fn)fn)(&b.t);
		break;
	case SH_GETCPU:
		while (n-- > 0) {
			((getcpu_fn)fn)(&cpu, NULL, NULL);
			sum += cpu;
		}
		break;
	case SH_GETRANDOM: {
		unsigned char buf[4096];
		size_t len = (size_t)l->clk < sizeof(buf) ? (size_t)l->clk : sizeof(buf);

		while (n-- > 0) {
			((getrandom_fn)fn)(buf, len, 0, l->state[way], l->state_len[way]);
			sum += buf[len - 1];
		}
		break;
	}
	}
	return sum;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Synthetic data: the harness's timekeeper, which publishes a fresh update before each batch of the image's. */
static struct tk b_tk;
static int b_synthetic;

static void b_update(void)
{
	tk_fresh(&b_tk, h_counter_modes[0]);
	/* The checks' MONOTONIC base carries into the next second within a microsecond; a kernel's is anywhere. */
	b_tk.base[0][C_MONOTONIC].nsec = (uint64_t)500000000 << b_tk.shift[0];
	tk_publish(page_time(), &b_tk);
}

/* A fresh copy of the image's time page: the kernel's, or the timekeeper's next update. */
static void b_refresh(void)
{
	if (live_data)
		copy_live_time();
	else if (b_synthetic)
		b_update();
}

static volatile long b_sink;	/* where the caller method's sums go */

static double b_time(const struct b_line *l, int way, long n)
{
	double t0, t1;

	if (way == W_IMAGE)
		b_refresh();
	t0 = now_ns();
	if (way == W_IMAGE_CALLER || way == W_LIVE_CALLER)
		b_sink = b_run_caller(l, way, l->fn[way], n);
	else
		b_run(l, way, l->fn[way], n);
	t1 = now_ns();
	return (t1 - t0) / (double)n;
}

static struct b_line *add_line(const char *name, int shape, int impl, int clk)
{
	struct b_line *l;

	if (b_nlines >= B_MAX_LINES)
		return NULL;
	l = &b_lines[b_nlines++];
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->shape = shape;
	l->impl = impl;
	l->clk = clk;
	return l;
}

#ifdef H_HAS_GETRANDOM
/*
 * A getrandom state for the vDSO entry @fn, mapped as its opaque-state
 * query says (MAP_PRIVATE where this kernel has no MAP_DROPPABLE); NULL
 * when the query fails or the mapping cannot be made.
 */
static void *b_getrandom_state(void *fn, size_t *len)
{
	struct { uint32_t size, prot, flags, reserved[13]; } p;
	void *m;

	if (((getrandom_fn)fn)(NULL, 0, 0, &p, ~(size_t)0) != 0 || !p.size || p.size > 4096)
		return NULL;
	m = mmap(NULL, 4096, (int)p.prot, (int)p.flags, -1, 0);
	if (m == MAP_FAILED)
		m = mmap(NULL, 4096, (int)p.prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*len = p.size;
	return m == MAP_FAILED ? NULL : m;
}
#endif

/* The line of row @r (when the image resolved its export): the image, the live vDSO's same name, the syscall. */
static void add_export(const struct h_bench_row *r)
{
	const char *sym = export_name(r->impl);
	struct b_line *l;
	char name[64];

	if (!h_fn[r->impl])
		return;
	snprintf(name, sizeof(name), "%s%s%s", h_impl_names[r->impl], r->what ? ":" : "", r->what ? r->what : "");
	l = add_line(name, r->shape, r->impl, r->clk);
	if (!l)
		return;
	l->fl = r->fl;
	l->fn[W_IMAGE] = h_fn[r->impl];
	l->fn[W_LIVE] = live_base && sym ? live_symbol(sym) : NULL;
	l->fn[W_SYSCALL] = r->syscall;
	/* The caller method compares the two vDSOs: only where both exist. */
	if (l->fn[W_LIVE]) {
		l->fn[W_IMAGE_CALLER] = l->fn[W_IMAGE];
		l->fn[W_LIVE_CALLER] = l->fn[W_LIVE];
	}
#ifdef H_HAS_GETRANDOM
	if (r->shape == SH_GETRANDOM) {
		vdso_rng_data_t *rng = (vdso_rng_data_t *)H_PAGE(VDSO_PAGE_RNG);
		int w;

		/* Each way its state; the image's generator ready at generation 1 (the harness plays the kernel). */
		rng->generation = 1;
		rng->is_ready = 1;
		for (w = 0; w < B_NWAYS; w++)
			if (l->fn[w] && w != W_SYSCALL && !(l->state[w] = b_getrandom_state(l->fn[w], &l->state_len[w])))
				l->fn[w] = NULL;
	}
#endif
}

static void setup_lines(void)
{
	const struct h_bench_row *r;
	struct b_line *l;

	for (r = h_bench_rows; r->impl >= 0; r++)
		add_export(r);
	l = add_line("call:empty", SH_COUNTER, -1, 0);
	if (l)
		l->fn[W_COUNTER] = (void *)b_empty;
#ifdef VDSO_COUNTER_READS
#define B_READ_LINE(name, read)					\
	l = add_line("counter:" name, SH_COUNTER, -1, 0);	\
	if (l)							\
		l->fn[W_COUNTER] = (void *)b_read_##read;
	VDSO_COUNTER_READS(B_READ_LINE)
#undef B_READ_LINE
#endif
}

/* ------------------------------------------------------------------ */
/* Do the image and the kernel agree?                                  */

static int64_t b_ns_of(const struct b_line *l, const union b_buf *b)
{
	struct hts t;

	if (l->shape == SH_GETTIMEOFDAY)
		return (int64_t)b->tv.tv_sec * NSEC_PER_SEC + (int64_t)b->tv.tv_usec * 1000;
	t = l->fl->get(b);	/* the timespec of the line's flavour */
	return t.sec * NSEC_PER_SEC + t.nsec;
}

/*
 * For the clocks the page serves, gettimeofday and time: the image's
 * answer lies between two of the kernel's (a tick either side for what a
 * tick advances).
 */
static void agree(void)
{
	int i;

	for (i = 0; i < b_nlines; i++) {
		const struct b_line *l = &b_lines[i];
		const struct clk *c = l->shape == SH_GETTIME ? clock_by_id(l->clk) : NULL;
		union b_buf b0, b1, b2;
		int64_t lo, hi, got, slack = 0;

		if (!l->fn[W_LIVE] || !(c || l->shape == SH_GETTIMEOFDAY || l->shape == SH_TIME))
			continue;
		copy_live_time();
		if (l->shape == SH_TIME) {
			lo = ((time_fn)l->fn[W_LIVE])(NULL) * NSEC_PER_SEC;
			got = ((time_fn)l->fn[W_IMAGE])(NULL) * NSEC_PER_SEC;
			hi = ((time_fn)l->fn[W_LIVE])(NULL) * NSEC_PER_SEC;
			slack = NSEC_PER_SEC;
		} else if (l->shape == SH_GETTIMEOFDAY) {
			((gettimeofday_fn)l->fn[W_LIVE])(&b0, NULL);
			((gettimeofday_fn)l->fn[W_IMAGE])(&b1, NULL);
			((gettimeofday_fn)l->fn[W_LIVE])(&b2, NULL);
			lo = b_ns_of(l, &b0);
			got = b_ns_of(l, &b1);
			hi = b_ns_of(l, &b2);
			slack = 1000;
		} else {
			((gettime_fn)l->fn[W_LIVE])(l->clk, &b0);
			((gettime_fn)l->fn[W_IMAGE])(l->clk, &b1);
			((gettime_fn)l->fn[W_LIVE])(l->clk, &b2);
			lo = b_ns_of(l, &b0);
			got = b_ns_of(l, &b1);
			hi = b_ns_of(l, &b2);
			if (c->cls == CLS_COARSE)
				slack = VDSO_LOW_RES_NSEC;
		}
		if (got >= lo - slack && got <= hi + slack)
			printf("bench.agree %s ok\n", l->name);
		else
			printf("bench.agree %s off: the image says %lld ns, the kernel %lld and %lld ns\n",
			       l->name, (long long)got, (long long)lo, (long long)hi);
	}
}

/* ------------------------------------------------------------------ */

static long b_batch_size(const struct b_line *l, int way, double batch_ns)
{
	double per_call, n;

	b_time(l, way, 64);
	per_call = b_time(l, way, 64);
	n = per_call > 0 ? batch_ns / per_call : 4e6;
	if (n < 8)
		n = 8;
	if (n > 4e6)
		n = 4e6;
	return (long)n;
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s --bench [--live] [--dump-live FILE] [--rounds N] [--batch-us N] [--cpu N] IMAGE\n",
		argv0);
	return 2;
}

int bench_main(int argc, char **argv)
{
	long rounds = 31, batch_us = 500, cpu = -1;
	const char *image = NULL, *dump = NULL;
	int live = 0, i, w, k;
	long r;

	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--live") == 0)
			live = 1;
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--batch-us") == 0 && i + 1 < argc)
			batch_us = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc)
			cpu = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--dump-live") == 0 && i + 1 < argc)
			dump = argv[++i];
		else if (argv[i][0] == '-' || image)
			return usage(argv[0]);
		else
			image = argv[i];
	}
	if (!image || rounds < 1 || rounds > B_MAX_ROUNDS || batch_us < 1)
		return usage(argv[0]);

	if (cpu < 0)
		cpu = sched_getcpu();
	pin_to((int)cpu);
	printf("bench.cpu %ld\n", cpu);
	if (map_image(image) != 0 || check_image() != 0)
		return 1;
	check_symbols();
	if (live || dump)
		find_live();
	if (dump && dump_live(dump) != 0)
		return 1;
	if (!live) {
		live_base = NULL;
		live_data = NULL;
	}
	if (live_data) {
		copy_live_time();
		printf("bench.data live\n");
	} else {
		if (calibrate() != 0)
			return 1;
		b_synthetic = 1;
		b_update();
		printf("bench.data synthetic\n");
	}
	setup_lines();
	if (live_data)
		agree();

	/* Warm up every way, and size its batches. */
	for (i = 0; i < b_nlines; i++)
		for (w = 0; w < B_NWAYS; w++)
			if (b_lines[i].fn[w])
				b_lines[i].n[w] = b_batch_size(&b_lines[i], w, (double)batch_us * 1000);

	for (r = 0; r < rounds; r++) {
		b_refresh();	/* the caller ways' data, for the whole round */
		for (i = 0; i < b_nlines; i++) {
			struct b_line *l = &b_lines[i];

			for (k = 0; k < B_NWAYS; k++) {
				w = (int)((k + r + i) % B_NWAYS);
				if (l->fn[w])
					l->ns[w][r] = b_time(l, w, l->n[w]);
			}
		}
	}

	for (i = 0; i < b_nlines; i++) {
		const struct b_line *l = &b_lines[i];

		for (w = 0; w < B_NWAYS; w++) {
			if (!l->fn[w])
				continue;
			printf("bench %s %s", l->name, b_way_names[w]);
			for (r = 0; r < rounds; r++)
				printf(" %.3f", l->ns[w][r]);
			putchar('\n');
		}
	}
	return 0;
}
