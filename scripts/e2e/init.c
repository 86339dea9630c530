/*
 * /init of the initramfs that scripts/kernel-e2e.sh boots on a kernel whose
 * vDSO vdsogen built: runs each check as a child and powers off.
 *
 *   - /t/CHECK for every file in /t (the kernel's own vDSO selftests, built
 *     from the same source, on x86_64 also as i386 and x32 programs, and the
 *     family's own checks): passes when it exits 0; exit 4 is kselftest's
 *     skip (vdso_test_getcpu on an ABI whose vDSO has no getcpu), reported
 *     as "skip NAME";
 *   - /probe (vdsogen's, runner/probe.c): passes when the image at
 *     AT_SYSINFO_EHDR has the build-id of vdsogen's vdso.so (VDSOGEN_BUILD_ID,
 *     given when this is compiled), glibc's page clocks made no syscall and
 *     the CPU-time control clock one.
 *
 * Each check has CHECK_TIMEOUT seconds: one still running then is killed
 * with its process group and FAILs.  A broken image can hang rather than
 * crash: a seqlock reader given a page whose "sequence" word is odd waits
 * for a writer that never comes (ppc64le's negative control reads the
 * clock records from the systemcfg page, whose "SYST" is odd in little
 * endian).  The limit is a hundred times the longest check of a passing
 * run (under 0.3 s under TCG; the summary gives it), so it only ends a
 * hang.
 *
 * Prints "ok NAME", "skip NAME" or "FAIL NAME (why)" per check, every line
 * of the probe's output with "# ", and last "e2e: P passed, S skipped, F
 * failed; longest check T s (limit L s)".  The timing reads the clock by
 * the syscall: this program's own glibc would use the vDSO under test.  PID 1
 * never exits (the kernel would panic): it resets the machine, which
 * qemu -no-reboot turns into qemu's exit (a kernel without ACPI cannot
 * power off).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK_TIMEOUT 30	/* seconds per check: vdsotest.c waits up to 20 s for the TSC */

#define KSFT_SKIP 4

static int passed, skipped, failed;
static double longest;		/* seconds, the longest check that ended by itself */

/* CLOCK_MONOTONIC in seconds, from the kernel. */
static double now(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void result(int ok, const char *name, const char *why)
{
	if (ok) {
		passed++;
		printf("ok %s\n", name);
	} else {
		failed++;
		printf("FAIL %s (%s)\n", name, why);
	}
}

/*
 * Run argv[0] with its output to fd `out` (-1: the console), in a process
 * group of its own; its wait status, -1 when it could not, or -2 when it
 * still ran after CHECK_TIMEOUT seconds (it and its group are killed).
 * SIGCHLD is blocked (main): sigtimedwait sleeps until a child ends or the
 * time is up, and a child ending before the wait leaves it pending.
 */
static int run(char *const argv[], int out)
{
	sigset_t chld;
	struct timespec nap;
	double start = now(), left;
	int status;
	pid_t pid, r;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		setpgid(0, 0);
		if (out >= 0)
			dup2(out, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	setpgid(pid, pid);	/* as the child does: whichever runs first */
	while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
		left = start + CHECK_TIMEOUT - now();
		if (left <= 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -2;
		}
		nap.tv_sec = (time_t)left;
		nap.tv_nsec = (long)((left - nap.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &nap);
	}
	if (r != pid)
		return -1;
	if (now() - start > longest)
		longest = now() - start;
	return status;
}

static void why(int status, char *buf, size_t size)
{
	if (status == -1)
		snprintf(buf, size, "fork: %s", strerror(errno));
	else if (status == -2)
		snprintf(buf, size, "still running after %d s: killed", CHECK_TIMEOUT);
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
}

static void selftests(void)
{
	struct dirent **names;
	int i, n = scandir("/t", &names, NULL, alphasort);

	for (i = 0; i < n; i++) {
		char path[300], reason[64];
		char *argv[] = { path, NULL };
		int status;

		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "/t/%s", names[i]->d_name);
			printf("# %s\n", path);
			fflush(stdout);
			status = run(argv, -1);
			why(status, reason, sizeof(reason));
			if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == KSFT_SKIP) {
				skipped++;
				printf("skip %s\n", names[i]->d_name);
			} else {
				result(status == 0, names[i]->d_name, reason);
			}
		}
		free(names[i]);
	}
	if (n < 0)
		result(0, "selftests", "no /t");
	free(names);
}

static void probe(void)
{
	char *argv[] = { "/probe", NULL };
	char line[256], build_id[128] = "", reason[64];
	int syscalls = -1, control = -1, status;
	FILE *f = tmpfile();

	status = f ? run(argv, fileno(f)) : -1;
	why(status, reason, sizeof(reason));
	result(status == 0, "probe.run", reason);
	if (!f)
		return;
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		printf("# %s", line);
		sscanf(line, "probe.build-id %127s", build_id);
		sscanf(line, "probe.syscalls %d", &syscalls);
		sscanf(line, "probe.control %d", &control);
	}
	result(!strcmp(build_id, VDSOGEN_BUILD_ID), "probe.build-id",
	       "not vdsogen's " VDSOGEN_BUILD_ID);
	result(syscalls == 0 && control == 1, "probe.no-syscalls",
	       "page clocks entered the kernel, or the count does not work");
}

int main(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	mkdir("/proc", 0555);
	mount("proc", "/proc", "proc", 0, NULL);
	mkdir("/sys", 0555);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mkdir("/tmp", 01777);
	setvbuf(stdout, NULL, _IOLBF, 0);
	selftests();
	probe();
	printf("e2e: %d passed, %d skipped, %d failed; longest check %.1f s (limit %d s)\n", passed, skipped,
	       failed, longest, CHECK_TIMEOUT);
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}
