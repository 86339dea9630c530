/*
 * x86-64's own check in the kernel end-to-end test (scripts/kernel-e2e.sh
 * --arch=x86_64, run by scripts/e2e/init.c beside the kernel's selftests): a
 * static program that checks, inside the booted kernel, that the vDSO the
 * kernel maps is vdsogen's and that it answers from the data pages.
 *
 *   - AT_SYSINFO_EHDR's image carries the build-id of the image vdsogen
 *     built (VDSOGEN_BUILD_ID), and its symbols sit at the offsets
 *     vdsogen's vdso-offsets.h gives;
 *   - a seccomp filter traps clock_gettime, gettimeofday, time and
 *     clock_getres made from anywhere but this program's own raw-syscall
 *     stub, and a SIGSYS handler counts them by where they came from (the
 *     vDSO or not) before making them through the stub: the page clocks,
 *     gettimeofday, time and clock_getres of those clocks must make none,
 *     through the vDSO's entries and through glibc; a CPU-time clock must
 *     make exactly one, from inside the vDSO (the counter works);
 *   - every answer agrees with the raw syscall around it: s1 <= vdso <= s2
 *     for clocks, equal resolutions and errors;
 *   - in a new time namespace (monotonic and boottime offsets) a child's
 *     vDSO clocks follow the namespace page to the real data and agree
 *     with the syscalls there too;
 *   - x32 (when built with VDSOGEN_X32_BUILD_ID and VDSOGEN_X32_DATA_BYTES):
 *     runner/supervise.c runs the x32 probe (runner/probe.c) with vdsogen's
 *     x32 image for this kernel (/x32.so) in place of the kernel's x32
 *     vDSO; the probe must see that image, make no clock syscall for the
 *     page clocks (its own filter and the supervisor's counts agree) and
 *     answer within this program's syscalls before and after it.
 *
 * One "ok NAME" or "FAIL NAME: why" line per check, a summary, then, as
 * PID 1, the verdict through QEMU's isa-debug-exit port (QEMU's exit status
 * 1 = passed, 3 = failed); run as any other process it just exits.
 * Built with -I the vdsogen build directory (vdso-offsets.h, and the
 * src/datapage.h and src/vdso_config.h the image was built from).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "src/datapage.h"
#include "src/vdso_config.h"
#include "vdso-offsets.h"

#ifndef VDSOGEN_BUILD_ID
#error "build with -DVDSOGEN_BUILD_ID=\"<hex build-id of vdsogen's vdso.so>\""
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

#define ITERATIONS	1000
/* The data page's clock mode, as the kernel keeps writing it. */
#define VDSO_CLOCK_MODE(vd)	(*(const volatile int32_t *)&VDSO_CLOCKS(vd)[0].clock_mode)

/* The one place this program makes the trapped syscalls itself: the filter lets it through. */
long raw_syscall(long nr, long a, long b, long c);
extern const char rawsys_start[], rawsys_end[];
__asm__(".pushsection .text.rawsys, \"ax\", @progbits\n"
	".globl raw_syscall, rawsys_start, rawsys_end\n"
	"rawsys_start:\n"
	"raw_syscall:\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	syscall\n"
	"	ret\n"
	"rawsys_end:\n"
	".popsection\n");

static unsigned long vdso_lo, vdso_hi;
static volatile long trapped_vdso, trapped_other;
static int passed, failed;

static void check(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok %s\n", name);
		passed++;
		return;
	}
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failed++;
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	unsigned long at = (unsigned long)si->si_call_addr;

	(void)sig;
	if (at >= vdso_lo && at < vdso_hi)
		trapped_vdso++;
	else
		trapped_other++;
	g[REG_RAX] = raw_syscall(si->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX]);
}

static int trap_time_syscalls(void)
{
	unsigned long lo = (unsigned long)rawsys_start, hi = (unsigned long)rawsys_end;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_gettime, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettimeofday, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_time, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clock_getres, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* Let the stub through: ip in [lo, hi), both in the low 4 GiB of a static binary. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct sigaction sa;

	if (hi >> 32)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL))
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The vDSO's symbols, through DT_HASH as a loader finds them. */
static void *vdso_sym(const char *name)
{
	const Elf64_Ehdr *eh = (const void *)vdso_lo;
	const Elf64_Phdr *ph = (const void *)(vdso_lo + eh->e_phoff);
	const Elf64_Dyn *dyn = NULL;
	const Elf64_Sym *sym = NULL;
	const uint32_t *hash = NULL;
	const char *str = NULL;
	uint32_t i;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(vdso_lo + ph[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_HASH)
			hash = (const void *)(vdso_lo + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_SYMTAB)
			sym = (const void *)(vdso_lo + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const void *)(vdso_lo + dyn->d_un.d_ptr);
	}
	if (!hash || !sym || !str)
		return NULL;
	for (i = 0; i < hash[1]; i++)
		if (sym[i].st_shndx != SHN_UNDEF && !strcmp(str + sym[i].st_name, name))
			return (void *)(vdso_lo + sym[i].st_value);
	return NULL;
}

static void vdso_build_id(char *out, size_t n)
{
	const Elf64_Ehdr *eh = (const void *)vdso_lo;
	const Elf64_Phdr *ph = (const void *)(vdso_lo + eh->e_phoff);
	int i;

	snprintf(out, n, "none");
	for (i = 0; i < eh->e_phnum; i++) {
		const char *p = (const char *)vdso_lo + ph[i].p_vaddr, *end = p + ph[i].p_filesz;

		while (ph[i].p_type == PT_NOTE && p + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const void *)p;
			const unsigned char *desc = (const unsigned char *)p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);
			unsigned int j;

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(nh + 1, "GNU", 4)) {
				for (j = 0; j < nh->n_descsz && 2 * j + 2 < n; j++)
					sprintf(out + 2 * j, "%02x", desc[j]);
				return;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, struct timezone *);
typedef time_t (*time_fn)(time_t *);
typedef int (*getres_fn)(clockid_t, struct timespec *);

static gettime_fn v_gettime;
static gettimeofday_fn v_gettimeofday;
static time_fn v_time;
static getres_fn v_getres;

static const struct { clockid_t id; const char *name; } page_clocks[] = {
	{ CLOCK_REALTIME, "REALTIME" }, { CLOCK_MONOTONIC, "MONOTONIC" },
	{ CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW" }, { CLOCK_REALTIME_COARSE, "REALTIME_COARSE" },
	{ CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE" }, { CLOCK_BOOTTIME, "BOOTTIME" },
	{ CLOCK_TAI, "TAI" },
};
#define NPAGE_CLOCKS	(int)(sizeof(page_clocks) / sizeof(page_clocks[0]))

static long long ns_of(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

static void reset_traps(void)
{
	trapped_vdso = trapped_other = 0;
}

/* clock_gettime of every page clock: no syscall, and between two syscalls. */
static void check_clocks(const char *prefix)
{
	char name[96];
	int i, k, bad;

	for (i = 0; i < NPAGE_CLOCKS; i++) {
		struct timespec s1, v, s2, first = { 0, 0 };

		bad = 0;
		reset_traps();
		for (k = 0; k < ITERATIONS; k++) {
			raw_syscall(SYS_clock_gettime, page_clocks[i].id, (long)&s1, 0);
			if (v_gettime(page_clocks[i].id, &v))
				bad = 1;
			raw_syscall(SYS_clock_gettime, page_clocks[i].id, (long)&s2, 0);
			if (!k)
				first = v;
			if (ns_of(&v) < ns_of(&s1) || ns_of(&v) > ns_of(&s2))
				bad = 2;
			if (bad)
				break;
		}
		snprintf(name, sizeof(name), "%sclock_gettime.%s", prefix, page_clocks[i].name);
		check(!bad && !trapped_vdso && !trapped_other, name,
		      "%s; %ld syscall(s) from the vDSO (%lld.%09ld <= %lld.%09ld <= %lld.%09ld?)",
		      bad == 1 ? "error" : bad == 2 ? "outside the syscalls' interval" : "agrees",
		      trapped_vdso, (long long)s1.tv_sec, s1.tv_nsec, (long long)v.tv_sec, v.tv_nsec,
		      (long long)s2.tv_sec, s2.tv_nsec);
		if (!prefix[0] && i < 2)
			printf("# %s: %lld.%09ld\n", page_clocks[i].name, (long long)first.tv_sec, first.tv_nsec);
	}
}

static void check_gettimeofday_time(void)
{
	struct timeval s1, v, s2;
	struct timezone tz1, tz2;
	long t1, t2, vt, vt2 = 0;
	int k, bad = 0;

	reset_traps();
	for (k = 0; k < ITERATIONS && !bad; k++) {
		raw_syscall(SYS_gettimeofday, (long)&s1, (long)&tz1, 0);
		if (v_gettimeofday(&v, &tz2))
			bad = 1;
		raw_syscall(SYS_gettimeofday, (long)&s2, 0, 0);
		if (v.tv_sec * 1000000LL + v.tv_usec < s1.tv_sec * 1000000LL + s1.tv_usec ||
		    v.tv_sec * 1000000LL + v.tv_usec > s2.tv_sec * 1000000LL + s2.tv_usec ||
		    tz1.tz_minuteswest != tz2.tz_minuteswest || tz1.tz_dsttime != tz2.tz_dsttime)
			bad = 2;
	}
	check(!bad && !trapped_vdso && !trapped_other, "gettimeofday",
	      "%s; %ld syscall(s) from the vDSO", bad ? "disagrees with the syscall" : "agrees", trapped_vdso);

	bad = 0;
	reset_traps();
	for (k = 0; k < ITERATIONS && !bad; k++) {
		t1 = raw_syscall(SYS_time, 0, 0, 0);
		vt = v_time(&vt2);
		t2 = raw_syscall(SYS_time, 0, 0, 0);
		if (vt < t1 || vt > t2 || vt != vt2)
			bad = 1;
	}
	check(!bad && !trapped_vdso && !trapped_other, "time",
	      "%s; %ld syscall(s) from the vDSO", bad ? "disagrees with the syscall" : "agrees", trapped_vdso);
}

static void check_getres(void)
{
	static const clockid_t ids[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 100, -1, -6 };
	int i, bad = 0, page_traps = 0, fallback = 0;
	char detail[128] = "";

	for (i = 0; i < (int)(sizeof(ids) / sizeof(ids[0])); i++) {
		struct timespec a = { -1, -1 }, b = { -1, -1 };
		long ra, rb;
		int is_page = 0, j;

		for (j = 0; j < NPAGE_CLOCKS; j++)
			is_page |= page_clocks[j].id == ids[i];
		reset_traps();
		ra = v_getres(ids[i], &a);
		if (is_page)
			page_traps += trapped_vdso + trapped_other;
		else
			fallback += trapped_vdso;
		rb = raw_syscall(SYS_clock_getres, ids[i], (long)&b, 0);
		if (ra != rb || a.tv_sec != b.tv_sec || a.tv_nsec != b.tv_nsec) {
			bad = 1;
			snprintf(detail, sizeof(detail), "clock %d: vDSO %ld {%ld, %ld}, syscall %ld {%ld, %ld}",
				 (int)ids[i], ra, (long)a.tv_sec, a.tv_nsec, rb, (long)b.tv_sec, b.tv_nsec);
		}
		if (ids[i] == CLOCK_MONOTONIC || ids[i] == CLOCK_REALTIME_COARSE)
			printf("# clock_getres(%s) = %ld ns\n", ids[i] == CLOCK_MONOTONIC ? "MONOTONIC" : "REALTIME_COARSE", a.tv_nsec);
	}
	check(!bad, "clock_getres.agrees", "%s", detail);
	check(!page_traps, "clock_getres.page_clocks_no_syscall", "%d syscall(s)", page_traps);
	check(fallback > 0, "clock_getres.others_fall_back", "no syscall from the vDSO for other clock ids");
}

/* The counter catches the vDSO's own syscalls: a CPU-time clock must make exactly one. */
static void check_fallback_counted(void)
{
	struct timespec t;

	reset_traps();
	v_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	check(trapped_vdso == 1 && trapped_other == 0, "clock_gettime.PROCESS_CPUTIME_falls_back",
	      "%ld syscall(s) from the vDSO, %ld elsewhere (expected 1, 0)", trapped_vdso, trapped_other);
}

/* glibc's own clock_gettime, gettimeofday and time go through the same vDSO. */
static void check_glibc(void)
{
	struct timespec t;
	struct timeval tv;
	int k;

	reset_traps();
	for (k = 0; k < ITERATIONS; k++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		clock_gettime(CLOCK_REALTIME_COARSE, &t);
		gettimeofday(&tv, NULL);
		time(NULL);
	}
	check(!trapped_vdso && !trapped_other, "glibc.no_syscall", "%ld from the vDSO, %ld elsewhere",
	      trapped_vdso, trapped_other);
}

static void check_timens(void)
{
	struct timespec before, after;
	int fd, status;
	pid_t pid;
	static const char offsets[] = "monotonic 864000 0\nboottime 1728000 0\n";

	if (access("/proc/self", F_OK) && mount("proc", "/proc", "proc", 0, NULL)) {
		check(0, "timens", "mount /proc: %s", strerror(errno));
		return;
	}
	if (unshare(CLONE_NEWTIME)) {
		check(0, "timens", "unshare(CLONE_NEWTIME): %s", strerror(errno));
		return;
	}
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || write(fd, offsets, sizeof(offsets) - 1) != (ssize_t)(sizeof(offsets) - 1)) {
		check(0, "timens", "timens_offsets: %s", strerror(errno));
		return;
	}
	close(fd);
	raw_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&before, 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		passed = failed = 0;
		check_clocks("timens.");
		v_gettime(CLOCK_MONOTONIC, &after);
		check(after.tv_sec - before.tv_sec >= 864000, "timens.MONOTONIC_offset",
		      "%lld s after %lld s", (long long)after.tv_sec, (long long)before.tv_sec);
		fflush(stdout);
		_exit(failed ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		check(0, "timens", "fork: %s", strerror(errno));
		return;
	}
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "timens.child", "status 0x%x", status);
}

/* The image's one struct alt_instr: 12 bytes up to Linux 6.1 (a u16 feature), 14 from 6.2 (u32). */
#define ALT_ENTRY_SIZE	vdso_alt_len
typedef long (*getcpu_fn)(unsigned int *cpu, unsigned int *node, void *unused);

/*
 * getcpu against the syscall, and the kernel's patching of its alternative:
 * where the CPU has RDPID the original (lsl) must now hold the replacement.
 */
static void check_getcpu(void)
{
	const unsigned char *alt = (const void *)(vdso_lo + vdso_alt);
	unsigned int cpu = ~0U, node = ~0U, scpu = ~1U, snode = ~1U, a, b, c, d;
	const unsigned char *orig, *repl;
	int32_t rel;
	int rdpid, patched;
	getcpu_fn v_getcpu = (getcpu_fn)vdso_sym("__vdso_getcpu");

	if (!v_getcpu) {
		check(0, "getcpu", "no __vdso_getcpu");
		return;
	}
	check(v_getcpu(&cpu, &node, NULL) == 0 && syscall(SYS_getcpu, &scpu, &snode, NULL) == 0 &&
	      cpu == scpu && node == snode, "getcpu", "cpu %u node %u, the syscall says %u %u", cpu, node, scpu, snode);
	memcpy(&rel, alt, 4);
	orig = alt + rel;
	memcpy(&rel, alt + 4, 4);
	repl = alt + 4 + rel;
	rdpid = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c >> 22 & 1);
	patched = !memcmp(orig, repl, alt[ALT_ENTRY_SIZE - 1]);	/* replacementlen */
	printf("# getcpu: the CPU %s RDPID; the alternative site holds %s\n", rdpid ? "has" : "lacks",
	       patched ? "the replacement (rdpid)" : "the original (lsl)");
	check(patched == rdpid, "getcpu.alternative", "CPU %s RDPID, the site holds %s", rdpid ? "has" : "lacks",
	      patched ? "rdpid" : "lsl");
}

#ifdef VDSOGEN_X32_BUILD_ID
#ifndef VDSOGEN_X32_DATA_BYTES
#error "build with -DVDSOGEN_X32_DATA_BYTES=<the x32 spec's data pages * page size> too"
#endif
/*
 * x32: `/supervise --counts X32_COUNTS /x32.so DATA_BYTES /probe-x32`, as
 * `vdsogen run --arch=x32 -- vdsogen-probe` runs it.  The child that execs
 * the supervisor is forked first thing, before this program's seccomp filter
 * (inherited, it would trap the plain 64-bit clock syscalls that an x32
 * vDSO's fallbacks make and kill the probe with SIGSYS) and before its time
 * namespace; it waits on a pipe for the word, and its standard output and
 * error come back through another.
 */
#define STR_(x)		#x
#define STR(x)		STR_(x)
#define X32_COUNTS	"/tmp/x32.counts"

static pid_t x32_pid = -1;
static int x32_go = -1, x32_out = -1;

static void x32_fork(void)
{
	int go[2], out[2];
	char c;

	if (pipe(go))
		return;
	if (pipe(out)) {
		close(go[0]);
		close(go[1]);
		return;
	}
	fflush(stdout);
	x32_pid = fork();
	if (x32_pid == 0) {
		close(go[1]);
		close(out[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(125);
		close(go[0]);
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(out[1]);
		execl("/supervise", "/supervise", "--counts", X32_COUNTS, "/x32.so", STR(VDSOGEN_X32_DATA_BYTES),
		      "/probe-x32", (char *)NULL);
		dprintf(2, "exec /supervise: %s\n", strerror(errno));
		_exit(127);
	}
	close(go[0]);
	close(out[1]);
	if (x32_pid < 0) {
		close(go[1]);
		close(out[0]);
		return;
	}
	x32_go = go[1];
	x32_out = out[0];
}

/* The value of the probe's "probe.KEY VALUE" line that starts with `key ` in `out`, or NULL. */
static const char *x32_value(const char *out, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return p + n + 1;
	return NULL;
}

/* The first word of a value (up to 63 characters), or "(none)". */
static const char *x32_word(const char *v, char *buf, size_t n)
{
	if (!v)
		return "(none)";
	snprintf(buf, n, "%.*s", (int)strcspn(v, " \n"), v);
	return buf;
}

static int x32_is_page_clock(long id)
{
	for (int i = 0; i < NPAGE_CLOCKS; i++)
		if (page_clocks[i].id == id)
			return 1;
	return 0;
}

static void check_x32(void)
{
	static char out[16384];
	struct timespec before[NPAGE_CLOCKS], after[NPAGE_CLOCKS];
	char detail[192] = "", line[128], w1[64], w2[64];
	const char *v, *p;
	size_t len = 0;
	ssize_t n;
	int status = -1, i, bad, counted_page = 0, counted_cpu = 0, getres_answers = 0, crng, counts_errno = 0;
	uint64_t seed;
	FILE *f;

	if (x32_pid < 0) {
		check(0, "x32.run", "could not fork the child that runs the supervisor");
		return;
	}
	if (access("/proc/self", F_OK) && mount("proc", "/proc", "proc", 0, NULL)) {
		check(0, "x32.run", "mount /proc (the supervisor needs it): %s", strerror(errno));
		return;
	}
	crng = getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed);
	for (i = 0; i < NPAGE_CLOCKS; i++)
		raw_syscall(SYS_clock_gettime, page_clocks[i].id, (long)&before[i], 0);
	if (write(x32_go, "g", 1) != 1) {
		check(0, "x32.run", "cannot start the child: %s", strerror(errno));
		return;
	}
	close(x32_go);
	while (len < sizeof(out) - 1 && (n = read(x32_out, out + len, sizeof(out) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += n;
	}
	out[len] = 0;
	close(x32_out);
	while (waitpid(x32_pid, &status, 0) < 0 && errno == EINTR)
		;
	for (i = 0; i < NPAGE_CLOCKS; i++)
		raw_syscall(SYS_clock_gettime, page_clocks[i].id, (long)&after[i], 0);

	for (p = out; *p; ) {
		const char *e = strchr(p, '\n');
		int w = e ? (int)(e - p) : (int)strlen(p);

		printf("# x32: %.*s\n", w, p);
		p += w + (e != NULL);
	}

	/*
	 * The supervisor's own count (its seccomp filter, under the probe's):
	 * no page clock, gettimeofday or time syscall, whatever the probe's
	 * filter caught.  The CPU-time call reaches it when the probe's filter
	 * lets it through.  glibc's startup makes one MONOTONIC syscall of its
	 * own when getrandom finds the CRNG not ready (its malloc's tcache key,
	 * before the vDSO is set up): the kernel-e2e.sh boot trusts the CPU's
	 * RDRAND (random.trust_cpu=on) so that the CRNG is ready.
	 */
	f = fopen(X32_COUNTS, "r");
	if (!f)
		counts_errno = errno;
	while (f && fgets(line, sizeof(line), f)) {
		char what[32], clk[16];
		unsigned long k;

		line[strcspn(line, "\n")] = 0;
		printf("# x32: %s: %s\n", X32_COUNTS, line);
		if (sscanf(line, "%31s %15s %lu", what, clk, &k) != 3)
			continue;
		if (!strcmp(what, "clock_gettime") && !strcmp(clk, "2"))
			counted_cpu += k;
		else if (!strcmp(what, "gettimeofday") || !strcmp(what, "time") ||
			 (isdigit((unsigned char)clk[0]) && x32_is_page_clock(atol(clk))))
			counted_page += k;
	}
	if (f)
		fclose(f);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "x32.run",
	      "/supervise ... /probe-x32: status %#x (exit %d)", status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	v = x32_value(out, "probe.build-id");
	check(v && !strncmp(v, VDSOGEN_X32_BUILD_ID, strlen(VDSOGEN_X32_BUILD_ID)) &&
	      (v[strlen(VDSOGEN_X32_BUILD_ID)] == '\n' || !v[strlen(VDSOGEN_X32_BUILD_ID)]),
	      "x32.run.build_id", "the probe's vDSO has build-id %s, vdsogen built %s", x32_word(v, w1, sizeof(w1)),
	      VDSOGEN_X32_BUILD_ID);

	v = x32_value(out, "probe.syscalls");
	p = x32_value(out, "probe.getres-syscalls");
	check(v && p && atoi(v) == 0 && isdigit((unsigned char)*v) && atoi(p) == 0 && isdigit((unsigned char)*p),
	      "x32.run.syscalls", "probe.syscalls %s, probe.getres-syscalls %s", x32_word(v, w1, sizeof(w1)),
	      x32_word(p, w2, sizeof(w2)));

	/*
	 * The vDSO's fallbacks make the plain x86-64 syscalls (as Linux's x32
	 * vDSO does), which the probe's filter marks beside the x32 numbers
	 * (__X32_SYSCALL_BIT + N); a filter that missed them would let the
	 * CPU-time call through to the supervisor's count instead.
	 */
	v = x32_value(out, "probe.control");
	check(v && !strncmp(v, "1", 1) && (v[1] == '\n' || !v[1]), "x32.run.control",
	      "probe.control %s: the probe's filter missed the CPU-time clock's syscall%s", x32_word(v, w1, sizeof(w1)),
	      counted_cpu ? " (the supervisor counted it: the vDSO's plain x86-64 syscall number, which the probe's "
	      "filter does not mark)" : "");

	/* Every page clock between this program's syscalls before and after the run. */
	bad = 0;
	for (i = 0; i < NPAGE_CLOCKS; i++) {
		long long sec;
		long nsec;
		struct timespec t;

		snprintf(line, sizeof(line), "probe.clock %d", (int)page_clocks[i].id);
		v = x32_value(out, line);
		if (!v || sscanf(v, "%lld.%ld", &sec, &nsec) != 2) {
			snprintf(detail, sizeof(detail), "%s: no answer", page_clocks[i].name);
			bad = 1;
			break;
		}
		t.tv_sec = sec;
		t.tv_nsec = nsec;
		if (ns_of(&t) < ns_of(&before[i]) || ns_of(&t) > ns_of(&after[i])) {
			snprintf(detail, sizeof(detail), "%s: %lld.%09ld not within %lld.%09ld .. %lld.%09ld",
				 page_clocks[i].name, sec, nsec, (long long)before[i].tv_sec, before[i].tv_nsec,
				 (long long)after[i].tv_sec, after[i].tv_nsec);
			bad = 1;
			break;
		}
	}
	check(!bad, "x32.run.clock_gettime", "%s", detail);

	/* gettimeofday within REALTIME (index 0), time within REALTIME_COARSE (index 3), whole units. */
	{
		long long sec = -1, usec = -1, t = -1;

		v = x32_value(out, "probe.gettimeofday");
		if (v)
			sscanf(v, "%lld.%lld", &sec, &usec);
		check(v && sec * 1000000 + usec >= ns_of(&before[0]) / 1000 &&
		      sec * 1000000 + usec <= ns_of(&after[0]) / 1000, "x32.run.gettimeofday",
		      "%lld.%06lld not within %lld.%09ld .. %lld.%09ld", sec, usec, (long long)before[0].tv_sec,
		      before[0].tv_nsec, (long long)after[0].tv_sec, after[0].tv_nsec);
		v = x32_value(out, "probe.time");
		if (v)
			sscanf(v, "%lld", &t);
		check(v && t >= before[3].tv_sec && t <= after[3].tv_sec, "x32.run.time",
		      "%lld not within %lld .. %lld (REALTIME_COARSE)", t, (long long)before[3].tv_sec,
		      (long long)after[3].tv_sec);
	}

	/* clock_getres as the syscall says. */
	bad = 0;
	for (p = out; (p = strstr(p, "probe.clock_getres ")); p++) {
		int id;
		long long sec, nsec;
		struct timespec r = { -1, -1 };

		if (sscanf(p, "probe.clock_getres %d %lld.%lld", &id, &sec, &nsec) != 3)
			continue;
		raw_syscall(SYS_clock_getres, id, (long)&r, 0);
		if (r.tv_sec != sec || r.tv_nsec != nsec) {
			snprintf(detail, sizeof(detail), "clock %d: %lld.%09lld, the syscall says %lld.%09ld", id, sec, nsec,
				 (long long)r.tv_sec, r.tv_nsec);
			bad = 1;
		}
		getres_answers++;
	}
	check(!bad && getres_answers == 3, "x32.run.clock_getres", "%s (%d answers)", bad ? detail : "agree",
	      getres_answers);

	check(!counts_errno && !counted_page, "x32.run.counts", "%s: %s; %d page-clock syscall(s) counted%s",
	      X32_COUNTS, counts_errno ? strerror(counts_errno) : "read", counted_page, crng ? "" :
	      " (the CRNG is not ready: the probe's glibc then takes its malloc key from clock_gettime(MONOTONIC), "
	      "by syscall, before it has set up the vDSO)");
	printf("# x32: the supervisor counted %d CPU-time clock_gettime syscall(s); the CRNG was %s\n", counted_cpu,
	       crng ? "ready" : "not ready");
}
#endif

static void finish(void)
{
	printf("vdsotest: %d passed, %d failed\n", passed, failed);
	fflush(stdout);
	if (getpid() != 1)
		_exit(failed ? 1 : 0);
	/* As the test kernel's init: QEMU's isa-debug-exit, exit status (value << 1) | 1. */
	if (!ioperm(0xf4, 1, 1))
		outb(failed ? 1 : 0, 0xf4);
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

int main(void)
{
	char id[64];
	const vdso_time_data_t *vd;
	unsigned long at;
	int waited;

	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef VDSOGEN_X32_BUILD_ID
	x32_fork();
#endif
	vdso_lo = getauxval(AT_SYSINFO_EHDR);
	if (!vdso_lo) {
		check(0, "vdso", "no AT_SYSINFO_EHDR");
		finish();
	}
	vdso_hi = vdso_lo + vdso_image_size;
	vdso_build_id(id, sizeof(id));
	printf("# vDSO at %#lx, build-id %s\n", vdso_lo, id);
	check(!strcmp(id, VDSOGEN_BUILD_ID), "vdso.build_id", "%s, vdsogen built %s", id, VDSOGEN_BUILD_ID);

	v_gettime = (gettime_fn)vdso_sym("__vdso_clock_gettime");
	v_gettimeofday = (gettimeofday_fn)vdso_sym("__vdso_gettimeofday");
	v_time = (time_fn)vdso_sym("__vdso_time");
	v_getres = (getres_fn)vdso_sym("__vdso_clock_getres");
	at = (unsigned long)v_gettime - vdso_lo;
	check(v_gettime && v_gettimeofday && v_time && v_getres &&
	      at == vdso_offset___vdso_clock_gettime &&
	      (unsigned long)v_time - vdso_lo == vdso_offset___vdso_time, "vdso.symbols",
	      "lookups or offsets differ from vdso-offsets.h");
	if (!v_gettime || !v_gettimeofday || !v_time || !v_getres)
		finish();

	/*
	 * Under TCG the TSC clocksource (vDSO clock mode 1) may come only with
	 * the refined calibration, a second or so after boot; before it the
	 * page says clock mode NONE and the vDSO rightly makes the syscalls.
	 * 20 s, within init.c's 30 s per check.
	 */
	vd = (const void *)(vdso_lo + vdso_page_time);
	for (waited = 0; !VDSO_CLOCK_MODE(vd) && waited < 200; waited++)
		usleep(100000);
	printf("# vvar page at %#lx: clock_mode %d after %d ms, hrtimer_res %u\n", vdso_lo + vdso_page_time,
	       (int)VDSO_CLOCK_MODE(vd), waited * 100, (unsigned)VDSO_HRTIMER_RES(vd));
	check(VDSO_CLOCK_MODE(vd) != 0, "vdso.clock_mode", "still NONE after 20 s: no vDSO-capable clocksource");

	if (trap_time_syscalls()) {
		check(0, "seccomp", "cannot install the filter: %s", strerror(errno));
		finish();
	}
	check_fallback_counted();
	check_clocks("");
	check_gettimeofday_time();
	check_getres();
	check_glibc();
	check_timens();
	check_getcpu();
#ifdef VDSOGEN_X32_BUILD_ID
	check_x32();
#endif
	finish();
	return 0;
}
