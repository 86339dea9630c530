/*
 * vdsogen test harness: runs a vDSO image the way a process sees it.
 *
 *   harness IMAGE
 *
 * Maps IMAGE as the kernel does (the data pages, then the file right above
 * them), resolves every export through the image's own hash tables and
 * version definitions, then plays the kernel's timekeeper on the data pages
 * and checks what each entry point answers.  Each check prints one line,
 * "ok NAME" or "FAIL NAME: detail"; lines starting with "# " are
 * information; the last line is "N passed, N failed".  The exit status is 0
 * only when nothing failed.
 *
 * Everything target-specific comes from harness_target.h (generated from
 * the spec), datapage.h and vdso_arch.h (the vDSO's own headers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness_target.h"

#define NSEC_PER_SEC		1000000000LL
#define GROUP_TIMEOUT		30	/* seconds before the watchdog gives up on a group */
#define SENTINEL		0xa5
#define CLOCKMODE_NONE		0
#define CLOCKMODE_TIMENS	0x7fffffff

#ifdef VDSO_NR_clock_gettime
#define NR_CLOCK_GETTIME	VDSO_NR_clock_gettime
#else
#define NR_CLOCK_GETTIME	SYS_clock_gettime
#endif
#ifdef VDSO_NR_clock_getres
#define NR_CLOCK_GETRES		VDSO_NR_clock_getres
#else
#define NR_CLOCK_GETRES		SYS_clock_getres
#endif
#ifdef VDSO_NR_getcpu
#define NR_GETCPU		VDSO_NR_getcpu
#else
#define NR_GETCPU		SYS_getcpu
#endif

/* The shapes the vDSO's entry points take (vdso_core.h). */
struct h_timespec {
	long	tv_sec;
	long	tv_nsec;
};

struct h_timeval {
	long	tv_sec;
	long	tv_usec;
};

struct h_timezone {
	int	tz_minuteswest;
	int	tz_dsttime;
};

/* A point in time, normalised: 0 <= nsec < 10^9. */
struct hts {
	int64_t	sec;
	int64_t	nsec;
};

/* ------------------------------------------------------------------ */
/* Reporting                                                           */

static unsigned int n_pass, n_fail;
static char h_current[160];		/* the check in progress, for crash reports */

struct chk {
	char	name[160];
	char	why[768];
	unsigned long failures;
};

static void chk_start(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void chk_fail(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void chk_start(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->name, sizeof(k->name), fmt, ap);
	va_end(ap);
	k->why[0] = 0;
	k->failures = 0;
	memcpy(h_current, k->name, sizeof(h_current));
}

/* Record a failure; the first one is the one reported. */
static void chk_fail(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	if (k->failures++ == 0) {
		va_start(ap, fmt);
		vsnprintf(k->why, sizeof(k->why), fmt, ap);
		va_end(ap);
	}
}

static void chk_end(struct chk *k)
{
	if (k->failures) {
		printf("FAIL %s: %s\n", k->name, k->why);
		n_fail++;
	} else {
		printf("ok %s\n", k->name);
		n_pass++;
	}
	h_current[0] = 0;
}

static void report_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	n_fail++;
}

static int finish(void)
{
	printf("%u passed, %u failed\n", n_pass, n_fail);
	fflush(stdout);
	return n_fail ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Crashes and hangs in the image end one group, not the run           */

static __thread sigjmp_buf *h_jmp;
static volatile sig_atomic_t h_signo;
static void *volatile h_fault_addr;
static const char *volatile h_group;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[256];
	int n;

	(void)uc;
	if (h_jmp) {
		h_signo = sig;
		h_fault_addr = si->si_addr;
		siglongjmp(*h_jmp, 1);
	}
	/* Not in a group's thread (a helper thread, or the harness itself): the run ends. */
	n = snprintf(msg, sizeof(msg), "FAIL %s: killed by signal %d outside a check\n%u passed, %u failed\n",
		     h_current[0] ? h_current : "harness", sig, n_pass, n_fail + 1);
	if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
		_exit(3);
	_exit(1);
}

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "FAIL %s: no answer within %d s (a hang in the image?)\n"
		     "%u passed, %u failed\n", h_current[0] ? h_current : h_group ? h_group : "harness",
		     GROUP_TIMEOUT, n_pass, n_fail + 1);
	if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
		_exit(3);
	_exit(1);
}

static void setup_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	static unsigned char altstack[65536] __attribute__((aligned(16)));
	struct sigaction sa;
	stack_t ss;
	size_t i;

	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

/* ------------------------------------------------------------------ */
/* CPUs: keep the checks on one CPU so counter reads are comparable     */

static int h_cpu = -1, h_other_cpu = -1;

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void pin_cpus(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	h_cpu = sched_getcpu();
	if (h_cpu < 0 || !CPU_ISSET(h_cpu, &set))
		for (h_cpu = 0; h_cpu < CPU_SETSIZE && !CPU_ISSET(h_cpu, &set); h_cpu++)
			;
	if (h_cpu >= CPU_SETSIZE) {
		h_cpu = -1;
		return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (cpu != h_cpu && CPU_ISSET(cpu, &set)) {
			h_other_cpu = cpu;
			break;
		}
	if (h_other_cpu < 0)
		h_other_cpu = h_cpu;
	pin_to(h_cpu);
}

/* ------------------------------------------------------------------ */
/* The image, mapped as the kernel maps a vDSO                         */

static unsigned char *h_data;		/* first data page */
static unsigned char *h_text;		/* the image, right above the data pages */
static size_t h_image_size;
static struct h_image h_im;

static int map_image(const char *path)
{
	const size_t ps = VDSO_PAGE_SIZE;
	size_t data_len = (size_t)VDSO_DATA_PAGES * ps, text_len, total;
	unsigned char *res, *start, *end;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		report_fail("map", "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		report_fail("map", "%s: empty or unreadable", path);
		close(fd);
		return -1;
	}
	h_image_size = (size_t)st.st_size;
	text_len = (h_image_size + ps - 1) / ps * ps;
	total = data_len + text_len;

	/*
	 * Reserve the whole area, aligned to the target's page size, with an
	 * inaccessible guard page below the data pages: a read below them (a
	 * negative clock id used as an index, say) faults instead of finding
	 * whatever happens to be mapped there.
	 */
	res = mmap(NULL, total + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		report_fail("map", "reserving %zu bytes: %s", total + 2 * ps, strerror(errno));
		close(fd);
		return -1;
	}
	start = (unsigned char *)(((uintptr_t)res + ps - 1) & ~(uintptr_t)(ps - 1)) + ps;
	end = start + total;
	if (start - ps > res)
		munmap(res, (size_t)(start - ps - res));
	if (res + total + 2 * ps > end)
		munmap(end, (size_t)(res + total + 2 * ps - end));

	h_data = mmap(start, data_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (h_data == MAP_FAILED) {
		report_fail("map", "data pages at %p: %s", (void *)start, strerror(errno));
		close(fd);
		return -1;
	}
	h_text = mmap(start + data_len, text_len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
	close(fd);
	if (h_text == MAP_FAILED) {
		report_fail("map", "image at %p: %s", (void *)(start + data_len), strerror(errno));
		return -1;
	}
	printf("# %s: %zu bytes at %p, %d data pages of %zu bytes at %p\n", path, h_image_size,
	       (void *)h_text, VDSO_DATA_PAGES, ps, (void *)h_data);
	printf("ok map\n");
	n_pass++;
	return 0;
}

static h_time_data *page_time(void)
{
	return (h_time_data *)(h_data + (size_t)VDSO_PAGE_TIME * VDSO_PAGE_SIZE);
}

#if H_HAS_TIMENS
/* Where the real time data sits while page_time() is a namespace page. */
static h_time_data *page_real_in_ns(void)
{
	return (h_time_data *)((unsigned char *)page_time() + VDSO_TIMENS_REAL_OFFSET);
}
#endif

/* ------------------------------------------------------------------ */
/* Resolving the exports                                               */

enum {
	IMPL_CLOCK_GETTIME, IMPL_CLOCK_GETRES, IMPL_GETTIMEOFDAY, IMPL_TIME, IMPL_GETCPU,
	IMPL_GET_TBFREQ, IMPL_SYNC_DICACHE, NIMPL
};

static const char *const impl_names[NIMPL] = {
	"clock_gettime", "clock_getres", "gettimeofday", "time", "getcpu",
	"get_tbfreq", "sync_dicache",
};

static void *h_fn[NIMPL];
static uintptr_t h_addr[sizeof(h_symbols) / sizeof(h_symbols[0])];

static int check_image(void)
{
	char err[256];

	if (h_image_parse(&h_im, h_text, h_image_size, H_ELF_CLASS, H_ELF_DATA, H_ELF_MACHINE,
			  err, sizeof(err)) != 0) {
		report_fail("image", "%s", err);
		return -1;
	}
	if (!h_im.soname || strcmp(h_im.soname, H_SONAME) != 0) {
		report_fail("image", "DT_SONAME %s, the spec says %s",
			    h_im.soname ? h_im.soname : "missing", H_SONAME);
		return 0;
	}
	printf("ok image\n");
	n_pass++;
	return 0;
}

static const char *type_name(unsigned int t)
{
	switch (t) {
	case STT_NOTYPE: return "NOTYPE";
	case STT_OBJECT: return "OBJECT";
	case STT_FUNC: return "FUNC";
	case STT_SECTION: return "SECTION";
	case STT_GNU_IFUNC: return "IFUNC";
	default: return "?";
	}
}

static const char *bind_name(unsigned int b)
{
	switch (b) {
	case STB_LOCAL: return "LOCAL";
	case STB_GLOBAL: return "GLOBAL";
	case STB_WEAK: return "WEAK";
	default: return "?";
	}
}

static long symbol_index(const char *name)
{
	long i;

	for (i = 0; h_symbols[i].name; i++)
		if (strcmp(h_symbols[i].name, name) == 0)
			return i;
	return -1;
}

static void check_symbol(long i)
{
	const struct h_symbol *s = &h_symbols[i];
	const ElfW(Sym) *sym;
	const char *vname;
	uint32_t vhash;
	unsigned int vflags, type, bind;
	int hidden;
	long g, h, p;
	char err[256];
	struct chk k;

	chk_start(&k, "symbol.%s", s->name);
	g = h_lookup_gnu(&h_im, s->name, s->version);
	h = h_lookup_sysv(&h_im, s->name, s->version);
	if (g < 0)
		chk_fail(&k, "not found through DT_GNU_HASH");
	if (h < 0)
		chk_fail(&k, "not found through DT_HASH");
	if (g >= 0 && h >= 0 && g != h)
		chk_fail(&k, "DT_GNU_HASH finds symbol %ld, DT_HASH symbol %ld", g, h);
	if (g < 0 && h < 0) {
		chk_end(&k);
		return;
	}
	if (g < 0)
		g = h;
	sym = &h_im.symtab[g];
	type = ELF64_ST_TYPE(sym->st_info);
	bind = ELF64_ST_BIND(sym->st_info);
	if (s->kind == H_KIND_TRAMPOLINE ? type != STT_FUNC && type != STT_NOTYPE : type != STT_FUNC)
		chk_fail(&k, "type %s, want FUNC", type_name(type));
	if (bind != (s->weak ? STB_WEAK : STB_GLOBAL))
		chk_fail(&k, "binding %s, want %s", bind_name(bind), s->weak ? "WEAK" : "GLOBAL");
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS)
		chk_fail(&k, "st_shndx %u: not defined in a section", sym->st_shndx);
	if (sym->st_value < h_im.exec_lo || sym->st_value >= h_im.exec_hi ||
	    sym->st_size > h_im.exec_hi - sym->st_value)
		chk_fail(&k, "value %#llx size %llu outside the executable PT_LOAD [%#llx, %#llx)",
			 (unsigned long long)sym->st_value, (unsigned long long)sym->st_size,
			 (unsigned long long)h_im.exec_lo, (unsigned long long)h_im.exec_hi);
	if (h_symbol_version(&h_im, g, &vname, &vhash, &vflags, &hidden, err, sizeof(err)) != 0) {
		chk_fail(&k, "%s", err);
	} else {
		if (strcmp(vname, s->version) != 0)
			chk_fail(&k, "version %s, want %s", vname, s->version);
		if (vhash != h_elf_hash(vname))
			chk_fail(&k, "verdef %s has vd_hash %#x, the ELF hash of the name is %#x",
				 vname, vhash, h_elf_hash(vname));
		if (vflags & VER_FLG_BASE)
			chk_fail(&k, "version %s is the base definition", vname);
		if (hidden)
			chk_fail(&k, "hidden version (%s rather than %s@@%s)", s->name, s->name, vname);
	}
	if (s->kind == H_KIND_ALIAS) {
		p = symbol_index(s->primary);
		if (p >= 0 && h_addr[p] && h_addr[p] != (uintptr_t)h_text + sym->st_value)
			chk_fail(&k, "value %#llx differs from %s's %#llx", (unsigned long long)sym->st_value,
				 s->primary, (unsigned long long)(h_addr[p] - (uintptr_t)h_text));
	}
	h_addr[i] = (uintptr_t)h_text + sym->st_value;
	if (s->kind == H_KIND_EXPORT) {
		int n;

		for (n = 0; n < NIMPL; n++)
			if (strcmp(s->impl, impl_names[n]) == 0 && !h_fn[n])
				h_fn[n] = (void *)h_addr[i];
	}
	chk_end(&k);
}

static void check_symbols(void)
{
	long i;

	for (i = 0; h_symbols[i].name; i++)
		check_symbol(i);
}

static void check_trampolines(void)
{
	long i;

	for (i = 0; h_symbols[i].name; i++) {
		const struct h_symbol *s = &h_symbols[i];
		const struct h_trampoline *t;
		uint64_t off, lead_off;
		uint32_t w;
		size_t n;
		struct chk k;

		if (s->kind != H_KIND_TRAMPOLINE)
			continue;
		t = &h_trampolines[s->trampoline];
		chk_start(&k, "trampoline.%s", t->name);
		if (!h_addr[i]) {
			chk_fail(&k, "not resolved");
			chk_end(&k);
			continue;
		}
		off = h_addr[i] - (uintptr_t)h_text;
		lead_off = off - 4 * t->nlead;
		if (off < 4 * t->nlead || off + 4 * t->nwords > h_image_size) {
			chk_fail(&k, "the words around %#llx leave the image", (unsigned long long)off);
			chk_end(&k);
			continue;
		}
		for (n = 0; n < t->nwords; n++) {
			memcpy(&w, h_text + off + 4 * n, 4);
			if (w != t->words[n])
				chk_fail(&k, "word %zu at the symbol is %#010x, want %#010x", n, w, t->words[n]);
		}
		for (n = 0; n < t->nlead; n++) {
			memcpy(&w, h_text + lead_off + 4 * n, 4);
			if (w != t->lead[n])
				chk_fail(&k, "word %zu before the symbol is %#010x, want %#010x",
					 t->nlead - n, w, t->lead[n]);
		}
		chk_end(&k);
	}
}

static void check_syscall_numbers(void)
{
	const struct h_sysnr *s;
	struct chk k;

	chk_start(&k, "syscall_numbers");
	for (s = h_sysnrs; s->name; s++)
		if (s->libc >= 0 && s->libc != s->spec)
			chk_fail(&k, "%s is %ld in the spec, %ld in the C library's headers",
				 s->name, s->spec, s->libc);
	chk_end(&k);
}

/* ------------------------------------------------------------------ */
/* Calling the entry points                                            */

static int ret_ok(struct h_ret r)
{
	return H_CONV_CR0_SO ? !r.so && r.raw == 0 : r.raw == 0;
}

/* The call failed with errno e, in the target's convention? */
static int ret_errno(struct h_ret r, long e)
{
	return H_CONV_CR0_SO ? r.so && r.raw == e : r.raw == -e;
}

static const char *ret_str(struct h_ret r, char *buf, size_t n)
{
	if (H_CONV_CR0_SO)
		snprintf(buf, n, "r3=%ld with CR0.SO %s", r.raw, r.so ? "set" : "clear");
	else
		snprintf(buf, n, "%ld", r.raw);
	return buf;
}

#define RET(r)	ret_str((r), (char[64]){ 0 }, 64)

typedef int (*fn_clock_t)(int, struct h_timespec *);
typedef int (*fn_gettimeofday_t)(struct h_timeval *, struct h_timezone *);
typedef long (*fn_time_t)(long *);
typedef int (*fn_getcpu_t)(unsigned int *, unsigned int *, void *);
typedef uint64_t (*fn_tbfreq_t)(void);
typedef int (*fn_sync_dicache_t)(void *, void *);

#ifdef HARNESS_HAVE_CALL_STUB
/* The arch's stub makes every call and reports the convention's error flag. */
#define CALL0(fn, type)			harness_call((fn), 0, 0, 0)
#define CALL1(fn, type, a)		harness_call((fn), (long)(a), 0, 0)
#define CALL2(fn, type, a, b)		harness_call((fn), (long)(a), (long)(b), 0)
#define CALL3(fn, type, a, b, c)	harness_call((fn), (long)(a), (long)(b), (long)(c))
#else
/*
 * A plain C call through a pointer of the entry's own type: errno-returning
 * entries are read as int, which is what their C prototypes return.
 */
static struct h_ret plain_ret(long raw)
{
	struct h_ret r = { raw, 0 };

	return r;
}

#define CALL0(fn, type)			plain_ret((long)((type)(fn))())
#define CALL1(fn, type, a)		plain_ret((long)((type)(fn))(a))
#define CALL2(fn, type, a, b)		plain_ret((long)((type)(fn))(a, b))
#define CALL3(fn, type, a, b, c)	plain_ret((long)((type)(fn))(a, b, c))
#endif

static struct h_ret v_clock_gettime(int clk, struct h_timespec *ts)
{
	return CALL2(h_fn[IMPL_CLOCK_GETTIME], fn_clock_t, clk, ts);
}

static struct h_ret v_clock_getres(int clk, struct h_timespec *ts)
{
	return CALL2(h_fn[IMPL_CLOCK_GETRES], fn_clock_t, clk, ts);
}

static struct h_ret v_gettimeofday(struct h_timeval *tv, struct h_timezone *tz)
{
	return CALL2(h_fn[IMPL_GETTIMEOFDAY], fn_gettimeofday_t, tv, tz);
}

static struct h_ret v_time(long *t)
{
	return CALL1(h_fn[IMPL_TIME], fn_time_t, t);
}

static struct h_ret v_getcpu(unsigned int *cpu, unsigned int *node)
{
	return CALL3(h_fn[IMPL_GETCPU], fn_getcpu_t, cpu, node, NULL);
}

/* ------------------------------------------------------------------ */
/* Time arithmetic                                                     */

enum { CLS_HRES, CLS_COARSE, CLS_RAW };

enum {
	C_REALTIME = 0, C_MONOTONIC = 1, C_PROCESS_CPUTIME_ID = 2, C_MONOTONIC_RAW = 4,
	C_REALTIME_COARSE = 5, C_MONOTONIC_COARSE = 6, C_BOOTTIME = 7, C_BOOTTIME_ALARM = 9,
	C_TAI = 11,
};

struct clk {
	int		id;
	const char	*name;
	int		cls;
};

static const struct clk h_clocks[] = {
	{ C_REALTIME, "REALTIME", CLS_HRES },
	{ C_MONOTONIC, "MONOTONIC", CLS_HRES },
	{ C_MONOTONIC_RAW, "MONOTONIC_RAW", CLS_RAW },
	{ C_BOOTTIME, "BOOTTIME", CLS_HRES },
	{ C_TAI, "TAI", CLS_HRES },
	{ C_REALTIME_COARSE, "REALTIME_COARSE", CLS_COARSE },
	{ C_MONOTONIC_COARSE, "MONOTONIC_COARSE", CLS_COARSE },
};
#define NCLOCKS	(sizeof(h_clocks) / sizeof(h_clocks[0]))

static const struct clk *clock_by_id(int id)
{
	size_t i;

	for (i = 0; i < NCLOCKS; i++)
		if (h_clocks[i].id == id)
			return &h_clocks[i];
	return NULL;
}

static struct hts hts_make(int64_t sec, uint64_t ns)
{
	struct hts t = { sec + (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };

	return t;
}

static struct hts hts_add(struct hts a, struct hts b)
{
	struct hts t = { a.sec + b.sec, a.nsec + b.nsec };

	if (t.nsec >= NSEC_PER_SEC) {
		t.nsec -= NSEC_PER_SEC;
		t.sec++;
	}
	return t;
}

static int hts_cmp(struct hts a, struct hts b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	return a.nsec < b.nsec ? -1 : a.nsec > b.nsec;
}

static const char *hts_str(struct hts t, char *buf, size_t n)
{
	snprintf(buf, n, "%lld.%09lld", (long long)t.sec, (long long)t.nsec);
	return buf;
}

#define TS(t)	hts_str((t), (char[48]){ 0 }, 48)

/* (delta * mult + base) >> shift, as the core computes it. */
static uint64_t mul_shift(uint64_t delta, uint32_t mult, uint64_t base, uint32_t shift)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)delta * mult + base) >> shift);
#else
	return (delta * mult + base) >> shift;
#endif
}

/* ------------------------------------------------------------------ */
/* The timekeeper                                                      */

struct tk_base {
	uint64_t	sec;
	uint64_t	nsec;	/* shifted for counter clocks, plain for coarse ones */
};

/* How counter cycles become nanoseconds, per record: [0] hres/coarse, [1] raw. */
struct rate {
	uint32_t	mult[2], shift[2];
};

struct tk {
	int32_t		mode;
	uint64_t	cycle_last;
	uint64_t	mask;
	uint32_t	mult[2], shift[2];	/* [0] hres/coarse record, [1] raw record */
	uint64_t	max_cycles[2];		/* written only where the layout has the field */
	struct tk_base	base[2][H_NBASES];
	uint32_t	hrtimer_res;
	int32_t		tz_minuteswest, tz_dsttime;
};

/*
 * hrtimer_res as the timekeeper publishes it.  Linux says 1 ns with
 * high-resolution timers; an odd value that no shortcut (a constant 1, the
 * tick) produces by accident shows that the core really reads the page.
 */
#define TK_HRTIMER_RES		7

static uint64_t h_hz;
static struct rate h_rate;		/* the calibrated rate every group starts from */

/* The raw clock_gettime or clock_getres syscall: 0 or -errno. */
static int sys_clock(long nr, int clk, struct h_timespec *ts)
{
	return syscall(nr, (long)clk, ts) == 0 ? 0 : -errno;
}

static int sys_gettime(int clk, struct hts *t)
{
	struct h_timespec ts;
	int e;

	t->sec = t->nsec = 0;
	e = sys_clock(NR_CLOCK_GETTIME, clk, &ts);
	if (e)
		return e;
	t->sec = ts.tv_sec;
	t->nsec = ts.tv_nsec;
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int64_t elapsed_ns(struct hts a, struct hts b)
{
	return (b.sec - a.sec) * NSEC_PER_SEC + (b.nsec - a.nsec);
}

static void spin(unsigned int n)
{
	while (n--)
		vdso_cpu_relax();
}

/*
 * The largest shift whose mult still fits 32 bits and keeps delta * mult
 * below 2^64 for @secs seconds of counting.
 */
static void pick_mult_shift(uint64_t hz, uint64_t secs, uint32_t *mult, uint32_t *shift)
{
	const uint64_t range = secs * hz;
	uint64_t m, prod;
	uint32_t s;

	for (s = 32; s > 1; s--) {
		m = (((uint64_t)NSEC_PER_SEC << s) + hz / 2) / hz;
		if (m == 0 || m > UINT32_MAX || __builtin_mul_overflow(range, m, &prod))
			continue;
		break;
	}
	*mult = (uint32_t)m;
	*shift = s;
}

/*
 * A rate for @secs seconds of counting.  The raw clock gets a rate and a
 * shift of its own, so a reader that mixes up the records is caught.
 */
static void pick_rate(uint64_t hz, uint64_t secs, struct rate *r)
{
	pick_mult_shift(hz, secs, &r->mult[0], &r->shift[0]);
	r->shift[1] = r->shift[0] - 1;
	r->mult[1] = (r->mult[0] - r->mult[0] / 64) >> 1;
	if (r->mult[1] == 0)
		r->mult[1] = 1;
}

/* Measure the counter against CLOCK_MONOTONIC_RAW over ~15 ms. */
static int calibrate(void)
{
	struct hts t0, t1;
	uint64_t c0, c1;
	int64_t ns;
	int e;
	struct chk k;

	chk_start(&k, "counter");
	e = sys_gettime(C_MONOTONIC_RAW, &t0);
	c0 = vdso_read_counter();
	if (e != 0) {
		chk_fail(&k, "clock_gettime(MONOTONIC_RAW) syscall (nr %ld) failed: %s",
			 (long)NR_CLOCK_GETTIME, strerror(-e));
		chk_end(&k);
		return -1;
	}
	do {
		sleep_ns(2000000);
		c1 = vdso_read_counter();
		sys_gettime(C_MONOTONIC_RAW, &t1);
		ns = elapsed_ns(t0, t1);
	} while (ns < 15000000);
	if (c1 <= c0) {
		chk_fail(&k, "the counter does not advance (%#llx, then %#llx %lld ns later)",
			 (unsigned long long)c0, (unsigned long long)c1, (long long)ns);
		chk_end(&k);
		return -1;
	}
	h_hz = (uint64_t)((double)(c1 - c0) * 1e9 / (double)ns + 0.5);
	if (h_hz < 1000) {
		chk_fail(&k, "the counter runs at %llu Hz", (unsigned long long)h_hz);
		chk_end(&k);
		return -1;
	}
	pick_rate(h_hz, 600, &h_rate);
	printf("# counter: %llu Hz; mult %u shift %u, raw mult %u shift %u\n", (unsigned long long)h_hz,
	       h_rate.mult[0], h_rate.shift[0], h_rate.mult[1], h_rate.shift[1]);
	chk_end(&k);
	return 0;
}

static void tk_set(struct tk *tk, int rec, int clk, uint64_t sec, uint64_t ns, int shifted)
{
	uint32_t shift = tk->shift[rec];

	tk->base[rec][clk].sec = sec;
	/* Shifted nanoseconds carry a fraction, so a reader that drops it is caught. */
	tk->base[rec][clk].nsec = shifted ? (ns << shift) + ((1ULL << shift) - 1) / 3 : ns;
}

/* A timekeeper state at @rate: distinct bases per clock, far from real time. */
static void tk_init(struct tk *tk, int32_t mode, const struct rate *rate)
{
	int rec, i;

	memset(tk, 0, sizeof(*tk));
	tk->mode = mode;
	tk->mask = ~0ULL;
	for (rec = 0; rec < 2; rec++) {
		tk->mult[rec] = rate->mult[rec];
		tk->shift[rec] = rate->shift[rec];
		/* The largest delta whose product with mult fits 64 bits, as Linux sets it. */
		tk->max_cycles[rec] = UINT64_MAX / rate->mult[rec];
	}
	/* Slots no reader may use get values of their own. */
	for (rec = 0; rec < 2; rec++)
		for (i = 0; i < H_NBASES; i++) {
			tk->base[rec][i].sec = 7000000 + 100 * rec + i;
			tk->base[rec][i].nsec = 0;
		}
	tk_set(tk, 0, C_REALTIME, 1000000000, 123456789, 1);
	tk_set(tk, 0, C_MONOTONIC, 2000000, 999999000, 1);	/* carries into the seconds soon */
	tk_set(tk, 0, C_BOOTTIME, 3000000, 345678901, 1);
	tk_set(tk, 0, C_TAI, 1000000037, 123456789, 1);
	tk_set(tk, 0, C_REALTIME_COARSE, 1000000100, 567890123, 0);
	tk_set(tk, 0, C_MONOTONIC_COARSE, 2000100, 678901234, 0);
	tk_set(tk, 1, C_MONOTONIC_RAW, 5000000, 456789012, 1);
	tk->hrtimer_res = TK_HRTIMER_RES;
	tk->tz_minuteswest = -330;
	tk->tz_dsttime = 1;
	tk->cycle_last = vdso_read_counter();
}

static int clock_record(int clk)
{
	return clk == C_MONOTONIC_RAW;
}

/* What the timekeeper says clock clk reads at counter value cycles. */
static struct hts tk_expect(const struct tk *tk, int clk, uint64_t cycles)
{
	const struct clk *c = clock_by_id(clk);
	int rec = clock_record(clk);
	const struct tk_base *b = &tk->base[rec][clk];
	uint64_t delta;

	if (c->cls == CLS_COARSE)
		return hts_make((int64_t)b->sec, b->nsec);
	delta = cycles - tk->cycle_last;
	if (H_COUNTER_CLAMP && cycles <= tk->cycle_last)
		delta = 0;
	if (H_COUNTER_MASK)
		delta &= tk->mask;
	return hts_make((int64_t)b->sec, mul_shift(delta, tk->mult[rec], b->nsec, tk->shift[rec]));
}

/* Writer protocol, both records together: seq odd, barrier, write, barrier, seq even. */
static void seq_bump(h_time_data *td)
{
	h_clock *vc = H_CLOCKS(td);
	int rec;

	for (rec = 0; rec < 2; rec++)
		__atomic_store_n(&vc[rec].seq, __atomic_load_n(&vc[rec].seq, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

static void tk_begin(h_time_data *td)
{
	seq_bump(td);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void tk_end(h_time_data *td)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	seq_bump(td);
}

static void tk_store(h_time_data *td, const struct tk *tk)
{
	h_clock *vc = H_CLOCKS(td);
	int rec, i;

	for (rec = 0; rec < 2; rec++) {
		vc[rec].clock_mode = tk->mode;
		vc[rec].cycle_last = tk->cycle_last;
		vc[rec].mask = tk->mask;
		vc[rec].mult = tk->mult[rec];
		vc[rec].shift = tk->shift[rec];
#if H_HAS_MAX_CYCLES
		vc[rec].max_cycles = tk->max_cycles[rec];
#endif
		for (i = 0; i < H_NBASES; i++) {
			vc[rec].basetime[i].sec = tk->base[rec][i].sec;
			vc[rec].basetime[i].nsec = tk->base[rec][i].nsec;
		}
	}
	H_HRTIMER_RES(td) = tk->hrtimer_res;
	H_TZ_MINUTESWEST(td) = tk->tz_minuteswest;
	H_TZ_DSTTIME(td) = tk->tz_dsttime;
}

static void tk_publish(h_time_data *td, const struct tk *tk)
{
	tk_begin(td);
	tk_store(td, tk);
	tk_end(td);
}

/* Garbage in every base, as a half-done update would leave them. */
static void tk_scribble(h_time_data *td, unsigned long n)
{
	h_clock *vc = H_CLOCKS(td);
	int rec, i;

	for (rec = 0; rec < 2; rec++)
		for (i = 0; i < H_NBASES; i++) {
			vc[rec].basetime[i].sec = 0xbad0 + (n & 0xff);
			vc[rec].basetime[i].nsec = 0;
		}
}

/* Fresh pages for a group at @rate: zeroes, then one complete update. */
static void tk_fresh_at(struct tk *tk, int32_t mode, const struct rate *rate)
{
	memset(h_data, 0, (size_t)VDSO_DATA_PAGES * VDSO_PAGE_SIZE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	tk_init(tk, mode, rate);
	tk_publish(page_time(), tk);
#ifdef HARNESS_HAVE_ARCH_DATA
	harness_arch_fill(h_data + (size_t)VDSO_PAGE_ARCH * VDSO_PAGE_SIZE, h_hz);
#endif
}

static void tk_fresh(struct tk *tk, int32_t mode)
{
	tk_fresh_at(tk, mode, &h_rate);
}

/* ------------------------------------------------------------------ */
/* Shared check bodies                                                 */

static void expect_in(struct chk *k, struct hts got, struct hts lo, struct hts hi)
{
	if (got.nsec < 0 || got.nsec >= NSEC_PER_SEC)
		chk_fail(k, "tv_nsec %lld is not normalised", (long long)got.nsec);
	else if (hts_cmp(got, lo) < 0 || hts_cmp(got, hi) > 0)
		chk_fail(k, "got %s, want [%s, %s]", TS(got), TS(lo), TS(hi));
}

/* clock_gettime(clk) between two counter reads lies in the timekeeper's bounds, plus off. */
static void expect_clock(struct chk *k, const struct tk *tk, int clk, const struct hts *off)
{
	struct h_timespec ts;
	struct hts lo, hi, got;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	c0 = vdso_read_counter();
	r = v_clock_gettime(clk, &ts);
	c1 = vdso_read_counter();
	if (!ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	lo = tk_expect(tk, clk, c0);
	hi = tk_expect(tk, clk, c1);
	if (off) {
		lo = hts_add(lo, *off);
		hi = hts_add(hi, *off);
	}
	got.sec = ts.tv_sec;
	got.nsec = ts.tv_nsec;
	expect_in(k, got, lo, hi);
}

/* clock_gettime(clk) comes from the syscall: it lies between two real readings. */
static void expect_syscall_clock(struct chk *k, int clk)
{
	struct h_timespec ts;
	struct hts s0, s1, got;
	struct h_ret r;
	int e;

	memset(&ts, SENTINEL, sizeof(ts));
	e = sys_gettime(clk, &s0);
	r = v_clock_gettime(clk, &ts);
	if (!e)
		e = sys_gettime(clk, &s1);
	if (e) {
		chk_fail(k, "the clock_gettime(%d) syscall failed: %s", clk, strerror(-e));
		return;
	}
	if (!ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	got.sec = ts.tv_sec;
	got.nsec = ts.tv_nsec;
	expect_in(k, got, s0, s1);
}

/* The call failed with errno e and left the SENTINEL-filled buffer ts alone. */
static void expect_error(struct chk *k, struct h_ret r, int e, const struct h_timespec *ts)
{
	struct h_timespec sentinel;
	const char *name = strerrorname_np(e);

	if (!name)
		name = "?";
	if (!ret_errno(r, e)) {
		if (H_CONV_CR0_SO)
			chk_fail(k, "returned %s, want r3=%d (%s) with CR0.SO set", RET(r), e, name);
		else
			chk_fail(k, "returned %s, want -%d (-%s)", RET(r), e, name);
	}
	memset(&sentinel, SENTINEL, sizeof(sentinel));
	if (memcmp(ts, &sentinel, sizeof(*ts)) != 0)
		chk_fail(k, "wrote {%ld, %ld} into the buffer", ts->tv_sec, ts->tv_nsec);
}

static void expect_invalid(struct chk *k, struct h_ret (*call)(int, struct h_timespec *), int clk)
{
	struct h_timespec ts;
	struct h_ret r;

	memset(&ts, SENTINEL, sizeof(ts));
	r = call(clk, &ts);
	expect_error(k, r, EINVAL, &ts);
}

/*
 * clock_gettime(clk) answers as the raw syscall does: the same errno, or a
 * time between two syscall readings taken around it.
 */
static void expect_as_syscall_gettime(struct chk *k, int clk)
{
	struct h_timespec ts, s0, s1;
	struct hts got, lo, hi;
	struct h_ret r;
	int e0, e1;

	memset(&ts, SENTINEL, sizeof(ts));
	e0 = sys_clock(NR_CLOCK_GETTIME, clk, &s0);
	r = v_clock_gettime(clk, &ts);
	e1 = sys_clock(NR_CLOCK_GETTIME, clk, &s1);
	if (e0 != e1) {
		chk_fail(k, "the syscall answered %d, then %d: no reference", e0, e1);
		return;
	}
	if (e0) {
		expect_error(k, r, -e0, &ts);
		return;
	}
	if (!ret_ok(r)) {
		chk_fail(k, "returned %s, the syscall succeeded", RET(r));
		return;
	}
	got = (struct hts){ ts.tv_sec, ts.tv_nsec };
	lo = (struct hts){ s0.tv_sec, s0.tv_nsec };
	hi = (struct hts){ s1.tv_sec, s1.tv_nsec };
	expect_in(k, got, lo, hi);
}

/* clock_getres(clk) answers exactly as the raw syscall does. */
static void expect_as_syscall_getres(struct chk *k, int clk)
{
	struct h_timespec ts, want;
	struct h_ret r;
	int e;

	memset(&ts, SENTINEL, sizeof(ts));
	e = sys_clock(NR_CLOCK_GETRES, clk, &want);
	r = v_clock_getres(clk, &ts);
	if (e)
		expect_error(k, r, -e, &ts);
	else if (!ret_ok(r))
		chk_fail(k, "returned %s, the syscall succeeded", RET(r));
	else if (ts.tv_sec != want.tv_sec || ts.tv_nsec != want.tv_nsec)
		chk_fail(k, "{%ld, %ld}, the syscall says {%ld, %ld}", ts.tv_sec, ts.tv_nsec,
			 want.tv_sec, want.tv_nsec);
}

static void expect_gettimeofday(struct chk *k, const struct tk *tk, const h_time_data *tzpage)
{
	struct h_timeval tv;
	struct h_timezone tz;
	struct hts lo, hi, got;
	uint64_t c0, c1;
	struct h_ret r;

	memset(&tv, SENTINEL, sizeof(tv));
	memset(&tz, SENTINEL, sizeof(tz));
	c0 = vdso_read_counter();
	r = v_gettimeofday(&tv, tzpage ? &tz : NULL);
	c1 = vdso_read_counter();
	if (!ret_ok(r)) {
		chk_fail(k, "returned %s", RET(r));
		return;
	}
	lo = tk_expect(tk, C_REALTIME, c0);
	hi = tk_expect(tk, C_REALTIME, c1);
	lo.nsec = lo.nsec / 1000 * 1000;
	hi.nsec = hi.nsec / 1000 * 1000;
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
		chk_fail(k, "tv_usec %ld is not normalised", tv.tv_usec);
		return;
	}
	got.sec = tv.tv_sec;
	got.nsec = tv.tv_usec * 1000L;
	expect_in(k, got, lo, hi);
	if (tzpage && (tz.tz_minuteswest != H_TZ_MINUTESWEST(tzpage) ||
		       tz.tz_dsttime != H_TZ_DSTTIME(tzpage)))
		chk_fail(k, "tz {%d, %d}, the page says {%d, %d}", tz.tz_minuteswest, tz.tz_dsttime,
			 (int)H_TZ_MINUTESWEST(tzpage), (int)H_TZ_DSTTIME(tzpage));
}

static void expect_time(struct chk *k, long want)
{
	long t = (long)0xa5a5a5a5a5a5a5a5ULL;
	struct h_ret r = v_time(&t);

	if (H_CONV_CR0_SO && r.so)
		chk_fail(k, "CR0.SO set (r3=%ld)", r.raw);
	if (r.raw != want)
		chk_fail(k, "returned %ld, want %ld", r.raw, want);
	if (t != want)
		chk_fail(k, "stored %ld through its pointer, want %ld", t, want);
}

/* time() agrees with the real REALTIME seconds around the call. */
static void expect_time_syscall(struct chk *k)
{
	long t = (long)0xa5a5a5a5a5a5a5a5ULL;
	struct hts s0, s1;
	struct h_ret r;

	sys_gettime(C_REALTIME, &s0);
	r = v_time(&t);
	sys_gettime(C_REALTIME, &s1);
	if (H_CONV_CR0_SO && r.so)
		chk_fail(k, "CR0.SO set (r3=%ld)", r.raw);
	if (r.raw < (long)s0.sec || r.raw > (long)s1.sec)
		chk_fail(k, "returned %ld, want [%lld, %lld]", r.raw, (long long)s0.sec, (long long)s1.sec);
	if (t != r.raw)
		chk_fail(k, "stored %ld through its pointer, returned %ld", t, r.raw);
}

/* ------------------------------------------------------------------ */
/* Groups of checks                                                    */

/*
 * Clock ids the data page does not serve, each compared with the raw
 * syscall.  3 is THREAD_CPUTIME_ID, 8-10 the alarm clocks and SGI_CYCLE;
 * 13-15 are unused (EINVAL, like 12); 16 and 23 are the first and last of
 * v6.17's aux clocks, which this core leaves to the kernel.  Negative ids
 * are CPU-time clocks and clock fds, (~pid << 3) | which in the kernel's
 * encoding (linux/posix-timers.h):
 *
 *   -1	~0 << 3 | 7: which 3 is no CPU clock (EINVAL)
 *   -2	~0 << 3 | 6: the calling thread's CPU time (SCHED | PERTHREAD)
 *   -6	~0 << 3 | 2: the calling process's CPU time (SCHED)
 *   -57	~7 << 3 | 7: EINVAL again, but its low 5 and 6 bits say 7, and
 *		hardware masks shift counts to 5 or 6 bits: a core that
 *		range-checks the id as signed and shifts by it reads BOOTTIME
 *   INT_MIN	pid 2^28 - 1, above any pid (EINVAL); its low bits say REALTIME
 *
 * The last two come last: a core that indexes the page with them faults.
 */
static const int h_syscall_ids[] = { 3, 8, 9, 10, 13, 14, 15, 16, 23, -1, -2, -6, -57, INT_MIN };
#define NSYSCALL_IDS	(sizeof(h_syscall_ids) / sizeof(h_syscall_ids[0]))

static void grp_clock_gettime(void)
{
	struct h_timespec ts;
	struct hts s0, s1, got;
	struct h_ret r;
	struct tk tk;
	struct chk k;
	size_t i;
	int e;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "clock_gettime.%s", h_clocks[i].name);
		expect_clock(&k, &tk, h_clocks[i].id, NULL);
		chk_end(&k);
	}

	/* CPU-time clocks are the syscall's business. */
	chk_start(&k, "clock_gettime.PROCESS_CPUTIME_ID");
	memset(&ts, SENTINEL, sizeof(ts));
	e = sys_gettime(C_PROCESS_CPUTIME_ID, &s0);
	r = v_clock_gettime(C_PROCESS_CPUTIME_ID, &ts);
	if (!e)
		e = sys_gettime(C_PROCESS_CPUTIME_ID, &s1);
	if (e) {
		chk_fail(&k, "the syscall failed: %s", strerror(-e));
	} else if (!ret_ok(r)) {
		chk_fail(&k, "returned %s", RET(r));
	} else {
		got.sec = ts.tv_sec;
		got.nsec = ts.tv_nsec;
		expect_in(&k, got, s0, s1);
	}
	chk_end(&k);

	chk_start(&k, "clock_gettime.invalid_12");
	expect_invalid(&k, v_clock_gettime, 12);
	chk_end(&k);
	chk_start(&k, "clock_gettime.invalid_100");
	expect_invalid(&k, v_clock_gettime, 100);
	chk_end(&k);
}

/* One check per id the page does not serve: `fn` answers as the syscall does. */
static void check_syscall_ids(const char *fn, void (*expect)(struct chk *, int))
{
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NSYSCALL_IDS; i++) {
		chk_start(&k, "%s.id_%d", fn, h_syscall_ids[i]);
		expect(&k, h_syscall_ids[i]);
		chk_end(&k);
	}
}

static void grp_clock_gettime_ids(void)
{
	check_syscall_ids("clock_gettime", expect_as_syscall_gettime);
}

static void grp_clock_getres(void)
{
	struct h_timespec ts;
	struct h_ret r;
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < NCLOCKS; i++) {
		long want = h_clocks[i].cls == CLS_COARSE ? H_TICK_NSEC : (long)tk.hrtimer_res;

		chk_start(&k, "clock_getres.%s", h_clocks[i].name);
		memset(&ts, SENTINEL, sizeof(ts));
		r = v_clock_getres(h_clocks[i].id, &ts);
		if (!ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else if (ts.tv_sec != 0 || ts.tv_nsec != want)
			chk_fail(&k, "{%ld, %ld}, want {0, %ld}", ts.tv_sec, ts.tv_nsec, want);
		chk_end(&k);
	}
	chk_start(&k, "clock_getres.NULL");
	r = v_clock_getres(C_MONOTONIC, NULL);
	if (!ret_ok(r))
		chk_fail(&k, "clock_getres(MONOTONIC, NULL) returned %s", RET(r));
	r = v_clock_getres(C_MONOTONIC_COARSE, NULL);
	if (!ret_ok(r))
		chk_fail(&k, "clock_getres(MONOTONIC_COARSE, NULL) returned %s", RET(r));
	chk_end(&k);
	chk_start(&k, "clock_getres.invalid_12");
	expect_invalid(&k, v_clock_getres, 12);
	chk_end(&k);
	chk_start(&k, "clock_getres.invalid_100");
	expect_invalid(&k, v_clock_getres, 100);
	chk_end(&k);
}

static void grp_clock_getres_ids(void)
{
	check_syscall_ids("clock_getres", expect_as_syscall_getres);
}

static void grp_gettimeofday(void)
{
	struct h_ret r;
	struct tk tk;
	struct chk k;

	tk_fresh(&tk, h_counter_modes[0]);
	chk_start(&k, "gettimeofday");
	expect_gettimeofday(&k, &tk, NULL);
	chk_end(&k);
	chk_start(&k, "gettimeofday.tz");
	expect_gettimeofday(&k, &tk, page_time());
	chk_end(&k);
	chk_start(&k, "gettimeofday.NULL");
	r = v_gettimeofday(NULL, NULL);
	if (!ret_ok(r))
		chk_fail(&k, "gettimeofday(NULL, NULL) returned %s", RET(r));
	chk_end(&k);
}

static void grp_time(void)
{
	struct h_ret r;
	struct tk tk;
	struct chk k;
	long want;

	tk_fresh(&tk, h_counter_modes[0]);
	want = (long)tk.base[0][C_REALTIME].sec;
	chk_start(&k, "time");
	expect_time(&k, want);
	chk_end(&k);
	chk_start(&k, "time.NULL");
	r = v_time(NULL);
	if ((H_CONV_CR0_SO && r.so) || r.raw != want)
		chk_fail(&k, "time(NULL) returned %s, want %ld", RET(r), want);
	chk_end(&k);
}

static void grp_getcpu(void)
{
	unsigned int cpu, node, scpu, snode;
	struct h_ret r;
	struct chk k;
	long s;
	int tries;

	chk_start(&k, "getcpu");
	for (tries = 0; tries < 5; tries++) {
		cpu = node = scpu = snode = ~0u;
		s = syscall(NR_GETCPU, &scpu, &snode, NULL);
		r = v_getcpu(&cpu, &node);
		if (s != 0 || !ret_ok(r) || (cpu == scpu && node == snode))
			break;
	}
	if (s != 0)
		chk_fail(&k, "the getcpu syscall failed: %s", strerror(errno));
	else if (!ret_ok(r))
		chk_fail(&k, "returned %s", RET(r));
	else if (cpu != scpu || node != snode)
		chk_fail(&k, "cpu %u node %u, the syscall says cpu %u node %u", cpu, node, scpu, snode);
	r = CALL3(h_fn[IMPL_GETCPU], fn_getcpu_t, NULL, NULL, NULL);
	if (!ret_ok(r))
		chk_fail(&k, "getcpu(NULL, NULL, NULL) returned %s", RET(r));
	chk_end(&k);
}

static void grp_clock_modes(void)
{
	struct tk tk;
	struct chk k;
	int32_t mode, top = 0;
	size_t i;

	/* Every counter mode of the spec is read from the page. */
	for (i = 0; i < H_NCOUNTER_MODES; i++) {
		mode = h_counter_modes[i];
		if (mode > top)
			top = mode;
		tk_fresh(&tk, mode);
		chk_start(&k, "clock_mode.%d", (int)mode);
		expect_clock(&k, &tk, C_MONOTONIC, NULL);
		expect_clock(&k, &tk, C_MONOTONIC_RAW, NULL);
		chk_end(&k);
	}

	/* A mode this counter does not serve (a paravirtual clock, say) goes to the syscall. */
	mode = top + 1;
	tk_fresh(&tk, mode);
	chk_start(&k, "clock_mode.%d.syscall", (int)mode);
	expect_syscall_clock(&k, C_MONOTONIC);
	expect_syscall_clock(&k, C_MONOTONIC_RAW);
	chk_end(&k);

	/*
	 * Mode NONE: high-resolution and raw clocks come from the syscall.
	 * Coarse clocks answer from the page, which Linux keeps current in
	 * every mode, unless the spec says this page writer stops them too
	 * (coarse_in_mode_none = "syscall"); time() follows the coarse clocks.
	 */
	tk_fresh(&tk, CLOCKMODE_NONE);
	for (i = 0; i < NCLOCKS; i++) {
		chk_start(&k, "mode_none.%s", h_clocks[i].name);
		if (h_clocks[i].cls == CLS_COARSE && !H_COARSE_IN_MODE_NONE_SYSCALL)
			expect_clock(&k, &tk, h_clocks[i].id, NULL);
		else
			expect_syscall_clock(&k, h_clocks[i].id);
		chk_end(&k);
	}
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		struct h_timeval tv;
		struct hts s0, s1, got;
		struct h_ret r;

		chk_start(&k, "mode_none.gettimeofday");
		memset(&tv, SENTINEL, sizeof(tv));
		sys_gettime(C_REALTIME, &s0);
		r = v_gettimeofday(&tv, NULL);
		sys_gettime(C_REALTIME, &s1);
		s0.nsec = s0.nsec / 1000 * 1000;
		s1.nsec = s1.nsec / 1000 * 1000;
		got.sec = tv.tv_sec;
		got.nsec = tv.tv_usec * 1000L;
		if (!ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else
			expect_in(&k, got, s0, s1);
		chk_end(&k);
	}
	if (h_fn[IMPL_TIME]) {
		chk_start(&k, "mode_none.time");
		if (H_COARSE_IN_MODE_NONE_SYSCALL)
			expect_time_syscall(&k);
		else
			expect_time(&k, (long)tk.base[0][C_REALTIME].sec);
		chk_end(&k);
	}
}

#if H_HAS_MAX_CYCLES
/* Every clock the counter advances reads as the formula says at tk. */
static void expect_counter_clocks(struct chk *k, const struct tk *tk)
{
	size_t i;

	for (i = 0; i < NCLOCKS; i++)
		if (h_clocks[i].cls != CLS_COARSE)
			expect_clock(k, tk, h_clocks[i].id, NULL);
}

/* max_cycles 1: every read takes the core's wide-multiply branch. */
static void max_cycles_forced(void)
{
	struct tk tk;
	struct chk k;

	chk_start(&k, "max_cycles.forced");
	tk_fresh(&tk, h_counter_modes[0]);
	tk.max_cycles[0] = tk.max_cycles[1] = 1;
	tk_publish(page_time(), &tk);
	expect_counter_clocks(&k, &tk);
	chk_end(&k);
}

/*
 * A rate whose honest max_cycles is a few seconds of counting, and
 * cycle_last further back than that in both records: delta * mult no
 * longer fits 64 bits, and only a 128-bit product gives the formula's value.
 */
static void max_cycles_overflow(void)
{
	struct rate wide;
	uint64_t back, now;
	struct tk tk;
	struct chk k;

	chk_start(&k, "max_cycles.overflow");
	pick_rate(h_hz, 1, &wide);
	tk_fresh_at(&tk, h_counter_modes[0], &wide);
	back = tk.max_cycles[0] > tk.max_cycles[1] ? tk.max_cycles[0] : tk.max_cycles[1];
	back += back / 4;
	now = vdso_read_counter();
	if (now <= back) {
		chk_fail(&k, "the counter reads %llu: too little to start %llu cycles back",
			 (unsigned long long)now, (unsigned long long)back);
	} else {
		tk.cycle_last = now - back;
		tk_publish(page_time(), &tk);
		expect_counter_clocks(&k, &tk);
	}
	chk_end(&k);
}

static void grp_max_cycles(void)
{
	max_cycles_forced();
	max_cycles_overflow();
}
#endif

#if H_HAS_TIMENS
/* Namespace offsets: MONOTONIC* get the monotonic one, BOOTTIME* the boottime one. */
static struct hts timens_offset(int clk)
{
	static const struct hts mono = { 500000, 900000000 }, boot = { -100000, 400000000 }, none = { 0, 0 };

	switch (clk) {
	case C_MONOTONIC:
	case C_MONOTONIC_RAW:
	case C_MONOTONIC_COARSE:
		return mono;
	case C_BOOTTIME:
	case C_BOOTTIME_ALARM:
		return boot;
	default:
		return none;
	}
}

/* Page 0 becomes a namespace page; the real data moves to the timens page. */
static void timens_enter(const struct tk *tk)
{
	h_time_data *ns = page_time(), *real = page_real_in_ns();
	h_clock *vc = H_CLOCKS(ns);
	int rec, i;

	tk_publish(real, tk);
	memset(ns, 0, sizeof(*ns));
	for (rec = 0; rec < 2; rec++) {
		vc[rec].seq = 1;
		vc[rec].clock_mode = CLOCKMODE_TIMENS;
		for (i = 0; i < H_NBASES; i++) {
			struct hts off = timens_offset(i);

			vc[rec].basetime[i].sec = (uint64_t)off.sec;
			vc[rec].basetime[i].nsec = (uint64_t)off.nsec;
		}
	}
	/* Values only a reader of the wrong page would find. */
	H_TZ_MINUTESWEST(ns) = 333;
	H_TZ_DSTTIME(ns) = 444;
	H_HRTIMER_RES(ns) = 7777;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void grp_timens(void)
{
	struct h_timespec ts;
	struct h_ret r;
	struct tk tk;
	struct chk k;
	size_t i;

	tk_fresh(&tk, h_counter_modes[0]);
	timens_enter(&tk);
	for (i = 0; i < NCLOCKS; i++) {
		struct hts off = timens_offset(h_clocks[i].id);

		chk_start(&k, "timens.%s", h_clocks[i].name);
		expect_clock(&k, &tk, h_clocks[i].id, &off);
		chk_end(&k);
	}
	if (h_fn[IMPL_GETTIMEOFDAY]) {
		chk_start(&k, "timens.gettimeofday");
		expect_gettimeofday(&k, &tk, page_real_in_ns());
		chk_end(&k);
	}
	if (h_fn[IMPL_TIME]) {
		chk_start(&k, "timens.time");
		expect_time(&k, (long)tk.base[0][C_REALTIME].sec);
		chk_end(&k);
	}
	if (h_fn[IMPL_CLOCK_GETRES]) {
		chk_start(&k, "timens.clock_getres");
		memset(&ts, SENTINEL, sizeof(ts));
		r = v_clock_getres(C_MONOTONIC, &ts);
		if (!ret_ok(r))
			chk_fail(&k, "returned %s", RET(r));
		else if (ts.tv_sec != 0 || ts.tv_nsec != (long)tk.hrtimer_res)
			chk_fail(&k, "{%ld, %ld}, the real page says {0, %u}", ts.tv_sec, ts.tv_nsec,
				 tk.hrtimer_res);
		chk_end(&k);
	}
}
#endif

/* ------------------------------------------------------------------ */
/* Seqcount                                                            */

struct writer {
	h_time_data	*td;
	const struct tk	*tk;
	int		stop;
	int		done;
	long		delay_ns;	/* helper: finish the update after this long */
	unsigned long	updates;
};

static pthread_t h_thread;
static int h_thread_live;
static struct writer h_writer;

static void thread_stop(void)
{
	if (h_thread_live) {
		__atomic_store_n(&h_writer.stop, 1, __ATOMIC_RELEASE);
		pthread_join(h_thread, NULL);
		h_thread_live = 0;
	}
}

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
		if (h_fn[IMPL_GETTIMEOFDAY])
			expect_gettimeofday(&k, &tk, NULL);
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

static void grp_seqcount(void)
{
	seq_wait(C_MONOTONIC);
	seq_wait(C_MONOTONIC_RAW);
	seq_wait(C_REALTIME_COARSE);
	seq_concurrent();
}

/* ------------------------------------------------------------------ */
/* Arch entries                                                        */

static void grp_arch(void)
{
	struct tk tk;
	struct chk k;

	tk_fresh(&tk, h_counter_modes[0]);
	if (h_fn[IMPL_GET_TBFREQ]) {
		struct h_ret r;

		chk_start(&k, "get_tbfreq");
		r = CALL0(h_fn[IMPL_GET_TBFREQ], fn_tbfreq_t);
#ifdef HARNESS_HAVE_ARCH_DATA
		{
			uint64_t want = harness_arch_tbfreq(h_data + (size_t)VDSO_PAGE_ARCH * VDSO_PAGE_SIZE);

			if ((H_CONV_CR0_SO && r.so) || (uint64_t)r.raw != want)
				chk_fail(&k, "returned %s, the arch page says %llu", RET(r),
					 (unsigned long long)want);
		}
#else
		(void)r;
		chk_fail(&k, "exported, but no arch harness-archdata.h.j2 fragment sets its page");
#endif
		chk_end(&k);
	}
	if (h_fn[IMPL_SYNC_DICACHE]) {
		/*
		 * Linux's ABI: sync_dicache(start, end) over [start, end).  The
		 * range lies between inaccessible pages, so an entry that walks
		 * past it (taking end for a length, say) faults rather than passes.
		 */
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		unsigned char *area;
		struct h_ret r;

		chk_start(&k, "sync_dicache");
		area = mmap(NULL, 3 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area == MAP_FAILED || mprotect(area + ps, ps, PROT_READ | PROT_WRITE) != 0) {
			chk_fail(&k, "mapping a guarded buffer: %s", strerror(errno));
		} else {
			memset(area + ps, 0x60, ps);
			r = CALL2(h_fn[IMPL_SYNC_DICACHE], fn_sync_dicache_t, area + ps + 8, area + 2 * ps - 8);
			if (!ret_ok(r))
				chk_fail(&k, "returned %s for [%p, %p)", RET(r), (void *)(area + ps + 8),
					 (void *)(area + 2 * ps - 8));
			munmap(area, 3 * ps);
		}
		chk_end(&k);
	}
}

/* ------------------------------------------------------------------ */

/* Run one group; a crash in the image fails the check it was in and ends the group. */
static void group(const char *name, void (*fn)(void))
{
	sigjmp_buf jb;

	h_group = name;
	h_current[0] = 0;
	alarm(GROUP_TIMEOUT);
	if (sigsetjmp(jb, 1) == 0) {
		h_jmp = &jb;
		fn();
	} else {
		report_fail(h_current[0] ? h_current : name, "killed by signal %d (%s) at %p",
			    (int)h_signo, strsignal(h_signo), h_fault_addr);
		if (h_thread_live) {
			/* A finisher may still owe the page its second seq bump. */
			thread_stop();
		}
	}
	h_jmp = NULL;
	alarm(0);
	h_group = NULL;
}

/* ------------------------------------------------------------------ */
/* Benchmark (--bench): numbers for people, never a check.             */

#define BENCH_CALLS	200000

/* Mean nanoseconds per clock_gettime(clk), through the vDSO or the raw syscall. */
static double bench_ns(int clk, int via_vdso)
{
	struct h_timespec ts;
	struct hts t0, t1, raw;
	long i;

	sys_gettime(C_MONOTONIC, &t0);
	for (i = 0; i < BENCH_CALLS; i++) {
		if (via_vdso)
			v_clock_gettime(clk, &ts);
		else
			sys_gettime(clk, &raw);
	}
	sys_gettime(C_MONOTONIC, &t1);
	return ((double)(t1.sec - t0.sec) * 1e9 + (double)(t1.nsec - t0.nsec)) / BENCH_CALLS;
}

static int bench(void)
{
	static const int clocks[] = { C_MONOTONIC, C_REALTIME, C_MONOTONIC_RAW, C_MONOTONIC_COARSE };
	static const char *const names[] = { "MONOTONIC", "REALTIME", "MONOTONIC_RAW", "MONOTONIC_COARSE" };
	struct tk tk;
	size_t i;

	if (!h_fn[IMPL_CLOCK_GETTIME]) {
		printf("# %s exports no clock_gettime\n", H_TARGET);
		return 0;
	}
	tk_fresh(&tk, h_counter_modes[0]);
	for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		printf("bench clock_gettime(%s): vdso %.1f ns/call, syscall %.1f ns/call\n",
		       names[i], bench_ns(clocks[i], 1), bench_ns(clocks[i], 0));
	return 0;
}

int main(int argc, char **argv)
{
	int benchmark = argc == 3 && strcmp(argv[1], "--bench") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2 && !benchmark) {
		fprintf(stderr, "usage: %s [--bench] IMAGE\n", argv[0]);
		return 2;
	}
	printf("# vdsogen harness for %s (%s)\n", H_TARGET, H_SPEC);
	if (benchmark) {
		pin_cpus();
		if (map_image(argv[2]) != 0 || check_image() != 0)
			return 1;
		check_symbols();
		if (calibrate() != 0)
			return 1;
		return bench();
	}
	setup_signals();
	pin_cpus();
	if (map_image(argv[1]) != 0 || check_image() != 0)
		return finish();
	check_symbols();
	check_trampolines();
	check_syscall_numbers();
	if (calibrate() != 0)
		return finish();

	if (h_fn[IMPL_CLOCK_GETTIME]) {
		group("clock_gettime", grp_clock_gettime);
		group("clock_gettime ids", grp_clock_gettime_ids);
	}
	if (h_fn[IMPL_CLOCK_GETRES]) {
		group("clock_getres", grp_clock_getres);
		group("clock_getres ids", grp_clock_getres_ids);
	}
	if (h_fn[IMPL_GETTIMEOFDAY])
		group("gettimeofday", grp_gettimeofday);
	if (h_fn[IMPL_TIME])
		group("time", grp_time);
	if (h_fn[IMPL_GETCPU])
		group("getcpu", grp_getcpu);
	if (h_fn[IMPL_CLOCK_GETTIME]) {
		group("clock_mode", grp_clock_modes);
#if H_HAS_MAX_CYCLES
		group("max_cycles", grp_max_cycles);
#endif
#if H_HAS_TIMENS
		group("timens", grp_timens);
#endif
		group("seqcount", grp_seqcount);
	}
	group("arch", grp_arch);
	return finish();
}
