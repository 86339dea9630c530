/*
 * loader: run a program under qemu-user with a vDSO image, as a kernel of
 * the target would.  qemu-user gives its guests no vDSO; this guest program
 * maps the image above its data pages, which a process of its own keeps
 * current from the host's clocks (the same loader, started first with
 * --timekeeper on the file PAGES they share), loads PROGRAM (static, or dynamic
 * through its PT_INTERP), builds the initial stack with AT_SYSINFO_EHDR
 * pointing at the image, and jumps to the program's entry.
 *
 *   loader --timekeeper PAGES          (a process of its own, see keep_time())
 *   loader PAGES IMAGE PROGRAM [ARG...]
 *
 * Built per target with its GNU cross compiler, beside the harness's
 * timekeeper (harness/timekeeper.c: the writer protocol and the struct tk it
 * stores) and the rendered headers (the counter read, the data-page
 * structures).  The loader sits high (-Ttext-segment) so that the program's
 * usual addresses are free.  The timekeeper is the kernel's in small: the
 * counter's rate is measured against CLOCK_MONOTONIC_RAW and given as a
 * mult/shift pair; every tick the bases are set from the host's clocks at
 * the counter's value then, never behind what readers could already compute.
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

static void map_vdso(const char *pages, const char *path)
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
}

/* ---- the timekeeper ------------------------------------------------------ */

static struct tk tk;
static int ready;		/* the pages are current */

static void spawn(void *(*fn)(void *))
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, fn, NULL) != 0)
		die("timekeeper", "cannot start its threads");
}

/* The host's clocks, by the syscall itself (a C library may convert from its own buffer). */
#ifdef SYS_clock_gettime64
#define NR_HOST_CLOCK	SYS_clock_gettime64
#else
#define NR_HOST_CLOCK	SYS_clock_gettime
#endif
static struct { int64_t sec, nsec; } loader_host_ts;

static struct tk_base host(clockid_t clk, uint32_t shift)
{
	syscall(NR_HOST_CLOCK, clk, &loader_host_ts);
	return (struct tk_base){ .sec = (uint64_t)loader_host_ts.sec, .nsec = (uint64_t)loader_host_ts.nsec << shift };
}

/*
 * The host's clock @clk as it was at counter value @now, in record @rec's
 * shifted nanoseconds: read, then taken back by the cycles since @now (a
 * syscall under qemu takes microseconds; the bases must agree with each other).
 */
static struct tk_base host_at(clockid_t clk, int rec, uint64_t now)
{
	const uint64_t one = (uint64_t)NSEC_PER_SEC << tk.shift[rec];
	struct tk_base b = host(clk, tk.shift[rec]);
	uint64_t back = (vdso_read_counter(tk.mode) - now) * tk.mult[rec];

	if (b.nsec < back) {
		uint64_t borrow = (back - b.nsec + one - 1) / one;

		b.sec -= borrow;
		b.nsec += borrow * one;
	}
	b.nsec -= back;
	return b;
}

/* What a reader computes for the base @b at counter @now: later than @fresh, or @fresh. */
static struct tk_base not_behind(struct tk_base b, uint64_t now, int rec, struct tk_base fresh)
{
	const uint64_t one = (uint64_t)NSEC_PER_SEC << tk.shift[rec];
	uint64_t ns = b.nsec + (now - tk.cycle_last) * tk.mult[rec];

	b.sec += ns / one;
	b.nsec = ns % one;
	/* A step back of a second or more is the host's clock being set: follow it. */
	if (b.sec < fresh.sec || (b.sec == fresh.sec && b.nsec <= fresh.nsec) || b.sec > fresh.sec + 1)
		return fresh;
	return b;
}

static void tick(vdso_time_data_t *td, int first)
{
	static const int hres[] = { C_REALTIME, C_MONOTONIC, C_BOOTTIME, C_TAI };
	uint64_t now = vdso_read_counter(tk.mode);
	struct tk_base b;
	unsigned int i;

	for (i = 0; i < sizeof(hres) / sizeof(hres[0]); i++) {
		b = host_at(hres[i], 0, now);
		tk.base[0][hres[i]] = first ? b : not_behind(tk.base[0][hres[i]], now, 0, b);
	}
	b = host_at(CLOCK_MONOTONIC_RAW, 1, now);
	tk.base[1][C_MONOTONIC_RAW] = first ? b : not_behind(tk.base[1][C_MONOTONIC_RAW], now, 1, b);
	tk.base[0][C_REALTIME_COARSE] = host(CLOCK_REALTIME_COARSE, 0);
	tk.base[0][C_MONOTONIC_COARSE] = host(CLOCK_MONOTONIC_COARSE, 0);
	tk.cycle_last = now;
	tk_begin(td);
	tk_store(td, &tk);
	tk_end(td);
}

/*
 * The counter's rate against CLOCK_MONOTONIC_RAW, over 20 ms; over longer
 * spells (up to 2.5 s in all) while it has not moved: on a busy machine a
 * test build's counter thread may not have run yet.
 */
static uint64_t counter_hz(void)
{
	struct tk_base t0, t1;
	uint64_t c0, c1;
	int64_t ns;
	long pause_ns;

	for (pause_ns = 20000000; pause_ns <= 1280000000; pause_ns *= 2) {
		struct timespec pause = { pause_ns / NSEC_PER_SEC, pause_ns % NSEC_PER_SEC };

		t0 = host(CLOCK_MONOTONIC_RAW, 0);
		c0 = vdso_read_counter(tk.mode);
		nanosleep(&pause, NULL);
		c1 = vdso_read_counter(tk.mode);
		t1 = host(CLOCK_MONOTONIC_RAW, 0);
		ns = (int64_t)(t1.sec - t0.sec) * NSEC_PER_SEC + (int64_t)(t1.nsec - t0.nsec);
		if (c1 > c0 && ns > 0)
			return (uint64_t)((double)(c1 - c0) * 1e9 / (double)ns + 0.5);
	}
	die("the counter", "does not advance under this emulator");
	return 0;
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
	uint64_t hz;
	struct timespec period = { 0, VDSO_LOW_RES_NSEC };
	struct rate rate;
	sigset_t all;
	int rec;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* signals are the program's */
	tk.mode = h_counter_modes[0];
	tk.mask = ~0ULL;
#ifdef HARNESS_HAVE_ARCH_DATA
	/* First: a counter read may depend on it (s390's TOD steering). */
	harness_arch_fill(H_PAGE(VDSO_PAGE_ARCH), 0);
#endif
	hz = counter_hz();
#ifdef HARNESS_HAVE_ARCH_DATA
	/* Again, with the counter's rate (powerpc's tb_ticks_per_sec). */
	harness_arch_fill(H_PAGE(VDSO_PAGE_ARCH), hz);
#endif
	pick_rate(hz, 600, &rate);
	for (rec = 0; rec < 2; rec++) {
		/* One counter, one rate: the raw clock's record is the same as the other's. */
		tk.mult[rec] = rate.mult[0];
		tk.shift[rec] = rate.shift[0];
		tk.max_cycles[rec] = UINT64_MAX / rate.mult[0];
	}
	tk.hrtimer_res = 1;
	tick(td, 1);
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &period, NULL);
		tick(td, 0);
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
	s = (char *)stk + STACK_SIZE;
	for (i = 0; i < argc + envc; i++) {
		const char *from = i < argc ? argv[i] : envp[i - argc];

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

/* Enter the program as the kernel does: the stack pointer at argc, no rtld_fini. */
static void __attribute__((noreturn)) start(uintptr_t sp, uintptr_t entry)
{
#if defined(__aarch64__)
	/* The entry in a register of its own: x0 is set to 0 before the branch. */
	register uintptr_t to __asm__("x16") = entry;

	__asm__ volatile("mov sp, %0\n\tmov x0, xzr\n\tbr %1" : : "r"(sp), "r"(to) : "memory");
#elif defined(__powerpc64__) && _CALL_ELF == 2
	/* ELFv2: r12 holds the entry address, from which it finds its TOC. */
	__asm__ volatile("mr 1, %0\n\tmr 12, %1\n\tmtctr 12\n\tli 3, 0\n\tli 4, 0\n\tli 5, 0\n\t"
			 "li 6, 0\n\tli 7, 0\n\tli 8, 0\n\tbctr" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__powerpc64__)
	/* ELFv1: the entry is a function descriptor, the code address then the TOC pointer. */
	__asm__ volatile("mr 1, %0\n\tld 2, 8(%1)\n\tld 12, 0(%1)\n\tmtctr 12\n\tli 3, 0\n\tli 4, 0\n\t"
			 "li 5, 0\n\tli 6, 0\n\tli 7, 0\n\tli 8, 0\n\tbctr" : : "r"(sp), "b"(entry) : "memory");
#elif defined(__powerpc__)
	__asm__ volatile("mr 1, %0\n\tmtctr %1\n\tli 3, 0\n\tli 4, 0\n\tli 5, 0\n\tli 6, 0\n\tli 7, 0\n\t"
			 "li 8, 0\n\tbctr" : : "r"(sp), "r"(entry) : "memory");
#elif defined(__arm__)
	/* r0 would hold the dynamic linker's finaliser. */
	__asm__ volatile("mov sp, %0\n\tmov lr, %1\n\tmov r0, #0\n\tbx lr" : : "r"(sp), "r"(entry) : "memory");
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
#elif defined(__sparc__) && defined(__arch64__)
	/*
	 * argc sits one register window (16 doublewords) above the biased %sp;
	 * %g1 would hold the dynamic linker's finaliser.  The entry in a
	 * register of its own: %g1 is set to 0 before the jump.
	 */
	register uintptr_t to __asm__("g5") = entry;

	__asm__ volatile("sub %0, 128 + 2047, %%sp\n\tmov %%g0, %%fp\n\tmov %%g0, %%g1\n\tjmpl %1, %%g0\n\t nop"
			 : : "r"(sp), "r"(to) : "memory");
#else
#error "loader.c: no program entry for this architecture"
#endif
	__builtin_unreachable();
}

/*
 * loader --timekeeper PAGES: keep the data pages (and a test build's
 * counter) in the file PAGES current until standard input ends; one line
 * "ready" on standard output once they are.  A process of its own, which
 * `vdsogen run` starts under a qemu of its own: its clock syscalls are not
 * in the log of the program's (--syscall-counts).
 */
static int keep_time(const char *pages)
{
	char c;
	struct timespec wait = { 0, 1000000 };

	map_pages(pages, 0, 1);
#if H_TEST_COUNTER
	spawn(counter);
#endif
	spawn(timekeeper);
	while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		nanosleep(&wait, NULL);
	if (write(1, "ready\n", 6) != 6)
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

	if (argc == 3 && strcmp(argv[1], "--timekeeper") == 0)
		return keep_time(argv[2]);
	if (argc < 4) {
		fprintf(stderr, "usage: loader --timekeeper PAGES | loader PAGES IMAGE PROGRAM [ARG...]\n");
		return 125;
	}
	pagesz = getauxval(AT_PAGESZ);
	map_vdso(argv[1], argv[2]);
	load(argv[3], &program);
	entry = program.entry;
	if (program.interp[0]) {
		load(program.interp, &interp);
		interp_base = interp.bias;
		entry = interp.entry;
	}
	/* The environment as the kernel passed it, right after argv. */
	start(build_stack(argc - 3, argv + 3, argv + argc + 1, &program, interp_base), entry);
}
