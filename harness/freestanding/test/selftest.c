/*
 * Self-test of harness/freestanding/, run by tests/test_loongarch64.py and tests/test_sh4.py
 * under qemu-user: each part of the C library stand-in against what the
 * C standard and POSIX say it does.  One "ok NAME" or "FAIL NAME: why"
 * line per check, then "N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;

static void check(const char *name, int ok, const char *why)
{
	if (ok) {
		printf("ok %s\n", name);
		passed++;
	} else {
		printf("FAIL %s: %s\n", name, why);
		failed++;
	}
}

/* snprintf of fmt (one argument) gives want. */
#define FMT(name, want, fmt, arg) do {						\
	char buf_[96];								\
										\
	snprintf(buf_, sizeof(buf_), fmt, arg);					\
	check(name, strcmp(buf_, want) == 0, buf_);				\
} while (0)

static void t_printf(void)
{
	char small[8];
	int n;

	FMT("printf.d", "-42", "%d", -42);
#if __SIZEOF_LONG__ == 8
	FMT("printf.ld", "-9223372036854775807", "%ld", -9223372036854775807L);
#else	/* sh4 */
	FMT("printf.ld", "-2147483647", "%ld", -2147483647L);
#endif
	FMT("printf.llu", "18446744073709551615", "%llu", 18446744073709551615ULL);
	FMT("printf.zu", "4096", "%zu", (size_t)4096);
	FMT("printf.x", "deadbeef", "%x", 0xdeadbeefu);
	FMT("printf.#lx", "0x1f", "%#lx", 0x1fUL);
	FMT("printf.#lx0", "0", "%#lx", 0UL);
	FMT("printf.#010x", "0x00000abc", "%#010x", 0xabcu);
	FMT("printf.09lld", "000000042", "%09lld", 42LL);
	FMT("printf.width", "   ab", "%5s", "ab");
	FMT("printf.left", "ab   |", "%-5s|", "ab");
	FMT("printf.prec_s", "abc", "%.3s", "abcdef");
	FMT("printf.p", "0x1000", "%p", (void *)0x1000);
	FMT("printf.c", "x", "%c", 'x');
	FMT("printf.pct", "100%", "100%%%s", "");
	FMT("printf.f", "3.142", "%.3f", 3.14159);
	FMT("printf.f0", "-2", "%.0f", -1.5);
	FMT("printf.neg_zero_pad", "-0042", "%05d", -42);
	snprintf(small, sizeof(small), "%s", "0123456789");
	n = snprintf(small, sizeof(small), "%d", 123456789);
	check("snprintf.truncates", strcmp(small, "1234567") == 0 && n == 9, small);
	n = snprintf(small, sizeof(small), "%*s", 3, "a");
	check("printf.star", strcmp(small, "  a") == 0 && n == 3, small);
}

static void t_scan(void)
{
	unsigned long lo = 0, hi = 0;
	char name[8] = "";
	char *end;
	int n;

	n = sscanf("7f00-7fff r-xp 0 00:00 0 [vdso]", "%lx-%lx %*s %*s %*s %*s %7s", &lo, &hi, name);
	check("sscanf.maps", n == 3 && lo == 0x7f00 && hi == 0x7fff && strcmp(name, "[vdso]") == 0, name);
	check("strtol.dec", strtol("-123x", &end, 10) == -123 && *end == 'x', end);
	check("strtol.hex", strtol("0x1F", NULL, 0) == 31, "0x1F");
	check("strtol.none", strtol("z", &end, 10) == 0 && *end == 'z', end);
}

static void t_string(void)
{
	char buf[16];

	memset(buf, 'a', sizeof(buf));
	memmove(buf + 1, buf, 4);
	memcpy(buf, "xyz", 4);
	check("string.mem", memcmp(buf, "xyz\0a", 5) == 0 && memchr(buf, 'a', 16) == buf + 4, buf);
	check("string.str", strlen("abc") == 3 && strcmp("ab", "ac") < 0 && strncmp("abx", "aby", 2) == 0 &&
	      strchr("abc", 'c') && !strchr("abc", 'd'), "");
	check("strerror", strcmp(strerror(EINVAL), "Invalid argument") == 0 &&
	      strcmp(strerrorname_np(ENOSYS), "ENOSYS") == 0 && !strerrorname_np(4095), strerror(EINVAL));
	check("strsignal", strcmp(strsignal(SIGSEGV), "Segmentation fault") == 0, strsignal(SIGSEGV));
}

static void t_syscalls(void)
{
	struct timespec a, b, d = { 0, 20 * 1000 * 1000 };
	long ns;

	errno = 0;
	check("errno", close(-1) == -1 && errno == EBADF, strerror(errno));
	check("auxv.pagesz", getauxval(AT_PAGESZ) == (unsigned long)getpagesize() && getpagesize() >= 4096, "");
	clock_gettime(CLOCK_MONOTONIC, &a);
	nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
	check("nanosleep", ns >= 20 * 1000 * 1000, "slept too little");
}

static __thread int tls_value = 42;
static __thread int tls_zero;
static int thread_saw;

static void *thread_fn(void *arg)
{
	thread_saw = tls_value * 100 + tls_zero;
	tls_value = 7;
	return arg;
}

static void t_threads(void)
{
	pthread_t t;
	void *ret = NULL;

	tls_value = 1;
	tls_zero = 5;
	check("thread.create", pthread_create(&t, NULL, thread_fn, (void *)0x1234) == 0, "");
	pthread_join(t, &ret);
	/* The thread starts from the initial image, not from this thread's values. */
	check("thread.tls", thread_saw == 4200 && tls_value == 1 && tls_zero == 5, "");
	check("thread.join", ret == (void *)0x1234, "");
}

static sigjmp_buf jb;
static volatile int fault_sig;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	fault_sig = sig;
	fault_addr = si->si_addr;
	siglongjmp(jb, 3);
}

static void t_signals(void)
{
	volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa, old;
	sigset_t mask;
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	r = sigsetjmp(jb, 1);
	if (r == 0)
		*page = 1;
	sigaction(SIGSEGV, &old, NULL);
	check("signal.siginfo", r == 3 && fault_sig == SIGSEGV && fault_addr == (void *)page, "");
	/* The mask saved by sigsetjmp came back: SIGSEGV is not blocked after the jump. */
	sigprocmask(SIG_BLOCK, NULL, &mask);
	check("signal.mask", !sigismember(&mask, SIGSEGV), "SIGSEGV still blocked");
	r = setjmp(jb);
	if (r == 0)
		longjmp(jb, 0);
	check("setjmp.zero", r == 1, "longjmp(env, 0) must return 1");
}

int main(int argc, char **argv)
{
	check("argv", argc == 2 && strcmp(argv[1], "arg") == 0, "argv[1] is not \"arg\"");
	t_printf();
	t_scan();
	t_string();
	t_syscalls();
	t_threads();
	t_signals();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
