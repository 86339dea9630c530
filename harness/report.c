/*
 * vdsogen test harness: one line per check, and a crash or a hang in the
 * image ends one group, not the run; a fatal failure ends the run.
 *
 * Each check prints "ok NAME" or "FAIL NAME: detail"; lines starting with
 * "# " are information; a group or step that does not run after a fatal
 * failure prints "not run NAME: CHECK failed"; the last line is "N passed,
 * N failed", with ", N not run" after a fatal failure.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


/* ------------------------------------------------------------------ */
/* Reporting                                                           */

static unsigned int n_pass, n_fail, n_not_run;
static char h_current[160];		/* the check in progress, for crash reports */
static char h_last_fail[160];		/* the check that failed last */
static const char *h_fatal;		/* it, once its failure ended the run */

void chk_start(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->name, sizeof(k->name), fmt, ap);
	va_end(ap);
	k->why[0] = 0;
	k->failures = 0;
	memcpy(h_current, k->name, sizeof(h_current));
}

void chk_fail(struct chk *k, const char *fmt, ...)
{
	va_list ap;

	if (k->failures++ == 0) {
		va_start(ap, fmt);
		vsnprintf(k->why, sizeof(k->why), fmt, ap);
		va_end(ap);
	}
}

void chk_end(struct chk *k)
{
	if (k->failures) {
		printf("FAIL %s: %s\n", k->name, k->why);
		memcpy(h_last_fail, k->name, sizeof(h_last_fail));
		n_fail++;
	} else {
		printf("ok %s\n", k->name);
		n_pass++;
	}
	h_current[0] = 0;
}

void report_ok(const char *name)
{
	printf("ok %s\n", name);
	n_pass++;
}

void report_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	snprintf(h_last_fail, sizeof(h_last_fail), "%s", name);
	n_fail++;
}

int finish(void)
{
	if (n_not_run)
		printf("%u passed, %u failed, %u not run\n", n_pass, n_fail, n_not_run);
	else
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

/*
 * SIGTERM (vdsogen test --timeout stops the harness so): say what was
 * running, for the driver's report, and end.
 */
static void on_term(int sig)
{
	char msg[256];
	int n;

	n = snprintf(msg, sizeof(msg), "# stopped by SIGTERM in %s\n",
		     h_current[0] ? h_current : h_group ? h_group : "harness");
	if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
		_exit(3);
	_exit(128 + sig);
}

int h_soak;	/* main.c sets it from VDSOGEN_HARNESS_SOAK; the run loader, which links this file, never */
int h_watchdog = 30;	/* seconds before the watchdog gives up on a group (VDSOGEN_HARNESS_WATCHDOG) */

/* The watchdog's allowance: a soak adds its seconds for each racing writer a group may run. */
static int group_timeout(void)
{
	return h_watchdog + h_soak * (1 + H_NCOUNTER_MODES);
}

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "FAIL %s: no answer within %d s (a hang in the image?)\n"
		     "%u passed, %u failed\n", h_current[0] ? h_current : h_group ? h_group : "harness",
		     group_timeout(), n_pass, n_fail + 1);
	if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
		_exit(3);
	_exit(1);
}

void setup_signals(void)
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
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * Run a group's checks (fn), or a step (step_fn: 0, or -1 after a FAIL
 * line), under the watchdog; a crash fails the check it was in.  After a
 * fatal failure neither runs: "not run NAME".  Returns -1 when the step
 * failed or crashed, or did not run.
 */
static int guarded(const char *name, void (*fn)(void), int (*step_fn)(void))
{
	sigjmp_buf jb;
	volatile int rc = 0;

	if (h_fatal) {
		printf("not run %s: %s failed\n", name, h_fatal);
		n_not_run++;
		return -1;
	}
	h_group = name;
	h_current[0] = 0;
	alarm((unsigned int)group_timeout());
	if (sigsetjmp(jb, 1) == 0) {
		h_jmp = &jb;
		if (fn)
			fn();
		else
			rc = step_fn();
	} else {
		report_fail(h_current[0] ? h_current : name, "killed by signal %d (%s) at %p",
			    (int)h_signo, strsignal(h_signo), h_fault_addr);
		/* A finisher may still owe the page its second seq bump. */
		thread_stop();
		rc = -1;
	}
	h_jmp = NULL;
	alarm(0);
	h_group = NULL;
	return rc;
}

void group(const char *name, void (*fn)(void))
{
	guarded(name, fn, NULL);
}

int run_stopped(void)
{
	return h_fatal != NULL;
}

void step(const char *name, int (*fn)(void))
{
	if (guarded(name, NULL, fn) == 0 || h_fatal)
		return;
	h_fatal = h_last_fail[0] ? h_last_fail : name;
	printf("# %s failed: no later check could mean anything, so none runs\n", h_fatal);
}

/* ------------------------------------------------------------------ */
/* CPUs: keep the checks on one CPU so counter reads are comparable     */

static int h_cpu = -1;
int h_other_cpu = -1;

void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

void pin_cpus(void)
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
