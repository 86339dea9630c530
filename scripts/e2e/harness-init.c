/*
 * /init of the initramfs that scripts/kernel-harness.sh boots: runs the
 * vdsogen harness on a real kernel.
 *
 *   1. mounts proc, sysfs and devtmpfs, and makes sure fds 0-2 are the
 *      console (the kernel opens /dev/console for us when the archive has
 *      it; devtmpfs is the fallback);
 *   2. pins itself to each CPU it may run on in turn and prints what the
 *      getcpu syscall answers there, "init: cpu C node N" (on powerpc64 also
 *      the SPR 259 the kernel loads per CPU, on s390x the TOD programmable
 *      field it sets per CPU, on arm the generic timer, on mips the CP0
 *      Count through rdhwr), so the log shows the machine's CPU and NUMA
 *      layout took effect;
 *   3. runs "/harness /vdso.so" as a child with every CPU allowed and
 *      init's environment, with each NAME=VALUE line of /harness.env
 *      added (where kernel-harness.sh puts the harness's VDSOGEN_HARNESS_*:
 *      the kernel's command line is too short on some boards), waits for
 *      it and prints "init: harness exit N" (or "signal N");
 *   4. powers the machine off.  PID 1 never exits: the kernel would panic.
 *
 * Static, no libc beyond what a static glibc link brings; the script
 * builds it with -static -O2 -Wall -Wextra.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HARNESS "/harness"
#define IMAGE "/vdso.so"
#define ENV_FILE "/harness.env"

/* Mount one pseudo file system, creating its directory; failures are reported, not fatal. */
static void mount_fs(const char *type, const char *dir)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, 0, NULL) != 0 && errno != EBUSY)
		printf("init: mount %s on %s: %s\n", type, dir, strerror(errno));
}

/* Fds 0-2 on the console, opened from devtmpfs when the kernel could not give us one. */
static void console(void)
{
	int fd;

	if (fcntl(1, F_GETFD) != -1)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;	/* nowhere to say so */
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

#if defined(__powerpc64__)
/* SPR 259 is the user-readable alias of SPRG3, which Linux loads with the CPU and node of each CPU. */
static unsigned long read_spr259(void)
{
	unsigned long v;

	__asm__ volatile("mfspr %0, 259" : "=r"(v));
	return v;
}
#elif defined(__s390x__)
/*
 * The TOD programmable field: the last two bytes of the 16 that STORE CLOCK
 * EXTENDED stores, which Linux sets to each CPU's number (SCKPF at CPU start).
 */
static unsigned int read_tod_pf(void)
{
	struct { unsigned char b[16]; } __attribute__((aligned(8))) clk;

	__asm__ volatile("stcke %0" : "=Q"(clk) : : "cc");
	return (unsigned int)clk.b[14] << 8 | clk.b[15];
}
#elif defined(__aarch64__)
/* The generic timer as EL0 reads it (the kernel enables EL0 access to both). */
static unsigned long read_cntfrq(void)
{
	unsigned long v;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}

static unsigned long long read_cntvct(void)
{
	unsigned long v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
#elif defined(__arm__)
/* The same registers through CP15 (AArch32 at EL0, under an arm64 kernel). */
static unsigned long read_cntfrq(void)
{
	unsigned long v;

	__asm__ volatile("mrc p15, 0, %0, c14, c0, 0" : "=r"(v));
	return v;
}

static unsigned long long read_cntvct(void)
{
	unsigned long lo, hi;

	__asm__ volatile("isb; mrrc p15, 1, %0, %1, c14" : "=r"(lo), "=r"(hi) : : "memory");
	return (unsigned long long)hi << 32 | lo;
}
#elif defined(__mips__)
/*
 * The CP0 Count as user space reads it, rdhwr $2 (release 2 and later; the
 * kernel enables it in HWREna), and its resolution, rdhwr $3 (CCRes).
 */
static unsigned int read_hwr_cc(void)
{
	unsigned long v;

	__asm__ volatile(".set push\n\t.set mips32r2\n\trdhwr %0, $2\n\t.set pop" : "=r"(v));
	return (unsigned int)v;
}

static unsigned int read_hwr_ccres(void)
{
	unsigned long v;

	__asm__ volatile(".set push\n\t.set mips32r2\n\trdhwr %0, $3\n\t.set pop" : "=r"(v));
	return (unsigned int)v;
}
#endif

/* What getcpu says on each CPU of ALL, one line each. */
static void show_cpus(const cpu_set_t *all)
{
	unsigned int cpu, node;
	cpu_set_t one;
	int c;

	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0) {
			printf("init: cpu %d: cannot pin: %s\n", c, strerror(errno));
			continue;
		}
		cpu = node = ~0u;
		if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0) {
			printf("init: cpu %d: getcpu: %s\n", c, strerror(errno));
			continue;
		}
#if defined(__powerpc64__)
		printf("init: cpu %u node %u (spr259 %#lx)\n", cpu, node, read_spr259());
#elif defined(__s390x__)
		printf("init: cpu %u node %u (tod pf %#x)\n", cpu, node, read_tod_pf());
#elif defined(__aarch64__) || defined(__arm__)
		printf("init: cpu %u node %u (cntfrq %lu cntvct %#llx)\n", cpu, node,
		       read_cntfrq(), read_cntvct());
#elif defined(__mips__)
		printf("init: cpu %u node %u (count %#x ccres %u)\n", cpu, node,
		       read_hwr_cc(), read_hwr_ccres());
#else
		printf("init: cpu %u node %u\n", cpu, node);
#endif
	}
}

/* Add each NAME=VALUE line of ENV_FILE to the environment, when there is one. */
static void harness_env(void)
{
	static char buf[4096];
	char *line, *next;
	ssize_t n;
	int fd;

	fd = open(ENV_FILE, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0 || n == sizeof(buf) - 1) {
		printf("init: %s: %s\n", ENV_FILE, n < 0 ? strerror(errno) : "too long");
		return;
	}
	buf[n] = '\0';
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (strchr(line, '=') && putenv(line) != 0)
			printf("init: putenv %s: %s\n", line, strerror(errno));
	}
}

/* Fork and exec the harness on the image; its exit status (128+N for signal N), -1 if it did not run. */
static int run_harness(void)
{
	char *argv[] = { HARNESS, IMAGE, NULL };
	int status;
	pid_t pid, w;

	pid = fork();
	if (pid < 0) {
		printf("init: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execve(HARNESS, argv, environ);	/* environ: unistd.h, _GNU_SOURCE */
		printf("init: exec %s: %s\n", HARNESS, strerror(errno));
		_exit(127);
	}
	/* PID 1 also reaps any orphan: wait for this child in particular. */
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	if (w < 0) {
		printf("init: waitpid: %s\n", strerror(errno));
		return -1;
	}
	if (WIFSIGNALED(status)) {
		printf("init: harness killed by signal %d\n", WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

int main(void)
{
	cpu_set_t all;
	int code;

	mount_fs("devtmpfs", "/dev");
	console();
	setvbuf(stdout, NULL, _IOLBF, 0);
	mount_fs("proc", "/proc");
	mount_fs("sysfs", "/sys");
	mkdir("/tmp", 01777);

	printf("init: %ld CPU(s) online\n", sysconf(_SC_NPROCESSORS_ONLN));
	if (sched_getaffinity(0, sizeof(all), &all) == 0) {
		show_cpus(&all);
		sched_setaffinity(0, sizeof(all), &all);	/* the harness chooses its own CPUs */
	} else {
		printf("init: sched_getaffinity: %s\n", strerror(errno));
	}

	harness_env();
	code = run_harness();
	printf("init: harness exit %d\n", code);
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	/* Not reached unless power-off failed: PID 1 must not return. */
	printf("init: power off failed: %s\n", strerror(errno));
	for (;;)
		pause();
}
