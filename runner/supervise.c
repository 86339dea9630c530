/*
 * supervise: run a program so that every process of it (and of whatever it
 * forks and execs) sees a given vDSO image in place of the kernel's.
 *
 *   supervise [--counts FILE] [--sysinfo OFFSET] [--sigreturn OFFSET --rt-sigreturn OFFSET] [--exec FILE]
 *             IMAGE DATA_BYTES PROGRAM [ARG...]
 *   supervise --dump-filter
 *
 * The program runs under ptrace (PTRACE_SEIZE) with fork, vfork, clone and
 * exec events, every process and thread of it, from before its first exec.  At
 * each exec stop, before the new program runs one instruction, the image
 * replaces the kernel's vDSO at the same address (so AT_SYSINFO_EHDR stays
 * right and the kernel's data pages stay directly below it), mapped as a
 * kernel maps one: the whole file, section headers too, zero-padded to whole
 * pages.  Where it fits in the kernel's [vdso] it is written over that
 * mapping's pages through /proc/PID/mem (copied on write, as a debugger's
 * breakpoints are), zeros after it: the mapping stays the kernel's, named
 * [vdso] in /proc/PID/maps.  A larger image gets an anonymous mapping in its
 * place (a special mapping cannot grow, and a kernel names an anonymous
 * mapping [anon:NAME] at most), by a mmap the tracee is made to issue itself (a syscall
 * instruction written over its next instruction, with an int3 behind it, then
 * both put back), and needs the pages after the kernel's vDSO
 * free.  Where they are not, the image's PT_LOADs (all a program reads of it)
 * go into the [vdso] if they fit, without the section headers after them, and
 * one line on standard error says so.  DATA_BYTES is the size of the data pages the image expects below it:
 * the kernel's own ([vvar] and [vvar_vclock]) must add up to it, else the
 * process is refused.
 *
 * Only processes of the image's ABI (its ELF class and machine) get it;
 * others keep the kernel's vDSO.  With --counts, a seccomp filter sends the
 * clock syscalls (clock_gettime, gettimeofday, time, clock_getres and their
 * time64 forms) to this tracer, which counts them by name and clock id and
 * writes the counts to FILE at the end; --dump-filter prints that filter.  --sysinfo gives the offset of the
 * image's __kernel_vsyscall, which i386 processes get as AT_SYSINFO;
 * --sigreturn and --rt-sigreturn those of its __kernel_sigreturn and
 * __kernel_rt_sigreturn, through which i386 signal handlers installed without
 * SA_RESTORER then return (supply_restorer(): the seccomp filter traces i386's
 * sigaction and rt_sigaction; the filter sets no_new_privs, as with --counts).
 * --exec names the file to execute, PROGRAM found in PATH (vdsogen finds
 * it), PROGRAM staying its argv[0]: an ELF file the kernel refuses (an x32
 * program where the kernel lacks CONFIG_X86_X32_ABI) is then reported as
 * such, and only a file that is no ELF one runs under /bin/sh, as a shell
 * runs a script without "#!".  Without it PROGRAM goes to execvp().
 *
 * The exit status is the program's; one killed by signal N gives 128+N, with
 * one line on standard error, as a shell reports it.
 *
 * The supervisor stays out of the way of signals.  Those to the program are
 * delivered; a stop signal stops it for real (a group-stop, held with
 * PTRACE_LISTEN until a SIGCONT), so job control works: SIGSTOP, Ctrl-Z
 * (SIGTSTP to the job, supervisor and program), fg.  SIGTERM, SIGINT,
 * SIGHUP and SIGQUIT sent to the supervisor are sent on to the program, but
 * for those the terminal sends (to the whole foreground job, the program
 * already has them).  No process of the program runs on without the
 * supervisor, since outside it the programs it execs would get the kernel's
 * vDSO: they all die with it (PTRACE_O_EXITKILL), killed with SIGKILL when it
 * is, and what the program leaves running when it ends is killed then, with
 * one line on standard error.  A process has one tracer: strace, gdb and
 * other ptrace users inside fail with EPERM.
 */
#define _GNU_SOURCE

/*
 * The syscall numbers of the three ABIs an x86-64 kernel runs, from the
 * kernel's own headers.  <asm/unistd_32.h>, <asm/unistd_64.h> (through
 * <asm/unistd.h>, with __X32_SYSCALL_BIT) and <asm/unistd_x32.h> define the
 * same __NR_ names, so each is read into a table right after it is included,
 * before any other header: past this point __NR_* are x32's, and this file
 * uses only the tables (no <sys/syscall.h>).
 */
enum { C_GETTIME, C_GETTIMEOFDAY, C_TIME, C_GETRES, C_N };	/* the clock syscalls counted */

struct abi_nrs {
	long	mmap, munmap;		/* what inject() makes; i386's mmap2 takes its offset in pages */
	long	sigaction, rt_sigaction;	/* i386's: see supply_restorer() */
	long	counted[C_N][2];	/* the clock syscalls, by what they are; 0: none */
};

#include <asm/unistd_32.h>
static const struct abi_nrs nrs_i386 = {
	__NR_mmap2, __NR_munmap, __NR_sigaction, __NR_rt_sigaction, {
		[C_GETTIME] = { __NR_clock_gettime, __NR_clock_gettime64 },
		[C_GETTIMEOFDAY] = { __NR_gettimeofday },
		[C_TIME] = { __NR_time },
		[C_GETRES] = { __NR_clock_getres, __NR_clock_getres_time64 },
	},
};
#include <asm/unistd.h>
static const struct abi_nrs nrs_64 = {
	__NR_mmap, __NR_munmap, 0, 0, {
		[C_GETTIME] = { __NR_clock_gettime },
		[C_GETTIMEOFDAY] = { __NR_gettimeofday },
		[C_TIME] = { __NR_time },
		[C_GETRES] = { __NR_clock_getres },
	},
};
#include <asm/unistd_x32.h>
static const struct abi_nrs nrs_x32 = {
	__NR_mmap, __NR_munmap, 0, 0, {
		[C_GETTIME] = { __NR_clock_gettime },
		[C_GETTIMEOFDAY] = { __NR_gettimeofday },
		[C_TIME] = { __NR_time },
		[C_GETRES] = { __NR_clock_getres },
	},
};

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL

static const char *prog = "vdsogen run";

/*
 * The image as a kernel maps it: the whole file (section headers too), its
 * PT_LOADs where the file has them, zero-padded to whole pages.
 */
static unsigned char *image;
static size_t image_size;		/* page-rounded */
static size_t load_size;		/* its PT_LOADs' part, page-rounded */
static int image_class, image_machine;
static size_t data_bytes;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(125);
}

/* A process that cannot have the image does not run on without it. */
#define refuse(pid, ...)	do { kill((pid), SIGKILL); die(__VA_ARGS__); } while (0)

/*
 * The PT_LOADs of the image in `file`, for either ELF class: each must sit
 * at the same distance from its file offset as the first (a kernel maps a
 * vDSO file as one piece); `end` becomes the end of the last in memory.
 */
#define CHECK_SEGMENTS(Ehdr, Phdr) do {							\
	const Ehdr *eh = (const void *)file;						\
	int first = 1;									\
	uint64_t bias = 0;								\
											\
	image_machine = eh->e_machine;							\
	for (i = 0; i < eh->e_phnum; i++) {						\
		const Phdr *ph = (const void *)(file + eh->e_phoff + i * eh->e_phentsize); \
											\
		if (eh->e_phoff + (i + 1) * eh->e_phentsize > (size_t)st.st_size)	\
			die("%s: program header %zu is outside the file", path, i);	\
		if (ph->p_type != PT_LOAD)						\
			continue;							\
		if (ph->p_offset + ph->p_filesz > (size_t)st.st_size)			\
			die("%s: a PT_LOAD runs past the end of the file", path);	\
		if (first)								\
			bias = ph->p_vaddr - ph->p_offset;				\
		else if (ph->p_vaddr - ph->p_offset != bias)				\
			die("%s: its PT_LOADs are not laid out as in the file (a kernel maps a vDSO file as it is)", \
			    path);							\
		first = 0;								\
		if (ph->p_offset + ph->p_memsz > end)					\
			end = ph->p_offset + ph->p_memsz;				\
	}										\
} while (0)

static void load_image(const char *path)
{
	unsigned char *file;
	struct stat st;
	size_t i, end = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		die("%s: %s", path, strerror(errno));
	file = malloc(st.st_size + 1);
	if (!file || read(fd, file, st.st_size) != st.st_size)
		die("%s: cannot read", path);
	close(fd);
	if ((size_t)st.st_size < sizeof(Elf32_Ehdr) || memcmp(file, ELFMAG, SELFMAG) != 0)
		die("%s: not an ELF image", path);
	image_class = file[EI_CLASS];
	if (image_class == ELFCLASS64)
		CHECK_SEGMENTS(Elf64_Ehdr, Elf64_Phdr);
	else
		CHECK_SEGMENTS(Elf32_Ehdr, Elf32_Phdr);
	if (!end || end > (64UL << 20))
		die("%s: no usable PT_LOAD segments", path);
	load_size = (end + PAGE - 1) & ~(PAGE - 1);
	if (end < (size_t)st.st_size)
		end = st.st_size;
	image_size = (end + PAGE - 1) & ~(PAGE - 1);
	image = calloc(1, image_size);
	memcpy(image, file, st.st_size);
	free(file);
}

/* ---- tracees ---------------------------------------------------------- */

enum abi { ABI_OTHER, ABI_64, ABI_X32, ABI_I386 };

/* The ABI of the program PID now runs, from its ELF header. */
static enum abi tracee_abi(pid_t pid, int *class, int *machine)
{
	char path[64];
	unsigned char eh[EI_NIDENT + 4];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return ABI_OTHER;
	if (read(fd, eh, sizeof(eh)) != sizeof(eh)) {
		close(fd);
		return ABI_OTHER;
	}
	close(fd);
	*class = eh[EI_CLASS];
	*machine = eh[EI_NIDENT + 2] | eh[EI_NIDENT + 3] << 8;	/* e_machine, little-endian */
	if (*machine == EM_X86_64)
		return *class == ELFCLASS64 ? ABI_64 : ABI_X32;
	return *machine == EM_386 ? ABI_I386 : ABI_OTHER;
}

/* The [vdso] of PID, and the start of the kernel's data mappings directly below it. */
static int find_vdso(pid_t pid, unsigned long *lo, unsigned long *hi, unsigned long *data_lo,
		     unsigned long *next)
{
	char path[64], line[512];
	unsigned long a, b, prev_hi = 0, run_lo = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	*next = ~0UL;
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '[');

		if (sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		if (found) {
			*next = a;
			break;
		}
		if (run_lo && prev_hi != a)
			run_lo = 0;
		/* A run of adjacent [vvar...] mappings ends at [vdso]. */
		if (name && strncmp(name, "[vvar", 5) == 0) {
			if (!run_lo)
				run_lo = a;
		} else if (name && strncmp(name, "[vdso]", 6) == 0) {
			*lo = a;
			*hi = b;
			*data_lo = run_lo ? run_lo : a;
			found = 1;
		} else {
			run_lo = 0;
		}
		prev_hi = b;
	}
	fclose(f);
	return found ? 0 : -1;
}

static int mem_io(pid_t pid, int write, unsigned long addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, write ? O_RDWR : O_RDONLY);
	if (fd < 0)
		return -1;
	n = write ? pwrite(fd, buf, len, addr) : pread(fd, buf, len, addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/*
 * Make the stopped tracee issue one syscall at its instruction pointer:
 * `mov $nr, %eax; syscall` (`int $0x80` for i386) and an int3, which stops
 * it again.  The number is in the code because at an exec stop the kernel
 * has yet to store execve's result in rax.  The caller puts the tracee's code
 * and registers back.
 */
#define PATCH 8

static long inject(pid_t pid, enum abi abi, const struct user_regs_struct *saved, sigset_t *deferred, long nr,
		   unsigned long a0, unsigned long a1, unsigned long a2, unsigned long a3,
		   unsigned long a4, unsigned long a5)
{
	unsigned char code[PATCH] = { 0xb8, nr, nr >> 8, nr >> 16, nr >> 24, 0x0f, 0x05, 0xcc };
	struct user_regs_struct r = *saved;
	int status;

	if (abi == ABI_I386) {
		code[5] = 0xcd;
		code[6] = 0x80;
	}
	if (mem_io(pid, 1, saved->rip, code, PATCH) != 0)
		return -EFAULT;
	r.orig_rax = -1;	/* not in a syscall: nothing to restart */
	if (abi == ABI_I386) {
		r.rbx = a0; r.rcx = a1; r.rdx = a2; r.rsi = a3; r.rdi = a4; r.rbp = a5;
	} else {
		r.rdi = a0; r.rsi = a1; r.rdx = a2; r.r10 = a3; r.r8 = a4; r.r9 = a5;
	}
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0 || ptrace(PTRACE_CONT, pid, 0, 0) != 0)
		return -ESRCH;
	for (;;) {
		if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status))
			return -ESRCH;
		if (WSTOPSIG(status) == SIGTRAP && !(status >> 16))
			break;
		/* No handler of the program runs here: a signal waits until the program runs (substitute()). */
		if (!(status >> 16))
			sigaddset(deferred, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, pid, 0, 0) != 0)
			return -ESRCH;
	}
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0)
		return -ESRCH;
	if (abi == ABI_I386)	/* eax: an address, or -errno */
		return (unsigned int)r.rax >= -4095U ? (long)(int)r.rax : (long)(unsigned int)r.rax;
	return (long)r.rax;
}

/*
 * i386 programs make syscalls through the address in AT_SYSINFO, the
 * kernel's __kernel_vsyscall: point it at the image's.  The auxiliary vector
 * follows argc, argv[] and envp[] (each ending in a null) on the stack.
 */
static unsigned long sysinfo_offset;

static int set_sysinfo(pid_t pid, unsigned long sp, unsigned long value)
{
	uint32_t w[2];
	unsigned long addr = sp + 4;	/* past argc */
	int nulls = 0;

	while (nulls < 2) {
		if (mem_io(pid, 0, addr, w, 4) != 0)
			return -1;
		addr += 4;
		nulls += !w[0];
	}
	for (;; addr += 8) {
		if (mem_io(pid, 0, addr, w, 8) != 0 || w[0] == AT_NULL)
			return -1;
		if (w[0] == AT_SYSINFO) {
			w[1] = value;
			return mem_io(pid, 1, addr, w, 8);
		}
	}
}

/*
 * An image larger than the kernel's [vdso] (a special mapping, which cannot
 * grow): an anonymous mapping in its place, which /proc/PID/maps names not.
 */
static void replace_vdso(pid_t pid, enum abi abi, const struct abi_nrs *nrs, unsigned long lo, unsigned long end)
{
	struct user_regs_struct saved;
	unsigned char code[PATCH];
	sigset_t deferred;
	long rc;

	if (ptrace(PTRACE_GETREGS, pid, 0, &saved) != 0 || mem_io(pid, 0, saved.rip, code, PATCH) != 0)
		refuse(pid, "process %d: cannot read its registers or code", pid);
	/* Over the whole of the kernel's vDSO (a special mapping cannot be split). */
	sigemptyset(&deferred);
	rc = inject(pid, abi, &saved, &deferred, nrs->mmap, lo, end - lo, PROT_READ | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1UL, 0);
	if (rc != (long)lo)
		refuse(pid, "process %d: mapping the image at 0x%lx failed (%ld)", pid, lo, rc);
	if (mem_io(pid, 1, lo, image, image_size) != 0)
		refuse(pid, "process %d: writing the image failed: %s", pid, strerror(errno));
	if (mem_io(pid, 1, saved.rip, code, PATCH) != 0 || ptrace(PTRACE_SETREGS, pid, 0, &saved) != 0)
		refuse(pid, "process %d: cannot restore its code and registers", pid);
	/* The signals that came meanwhile, sent again (their sender's siginfo is lost). */
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&deferred, sig) == 1)
			tgkill(pid, pid, sig);
}

static void substitute(pid_t pid)
{
	struct user_regs_struct regs;
	unsigned long lo = 0, hi = 0, data_lo = 0, next, end;
	int class, machine;
	enum abi abi = tracee_abi(pid, &class, &machine);
	const struct abi_nrs *nrs = abi == ABI_I386 ? &nrs_i386 : abi == ABI_X32 ? &nrs_x32 : &nrs_64;

	if (abi == ABI_OTHER || class != image_class || machine != image_machine)
		return;		/* another ABI: it keeps the kernel's vDSO */
	if (find_vdso(pid, &lo, &hi, &data_lo, &next) != 0)
		return;		/* no vDSO at all (vdso=0): nothing to replace */
	if (lo - data_lo != data_bytes)
		refuse(pid, "process %d: the kernel's data pages below its vDSO take %lu bytes, the image expects %zu",
		       pid, lo - data_lo, data_bytes);
	end = lo + image_size;
	if (end > hi && end > next) {
		/*
		 * The whole file fits neither in the kernel's [vdso] nor with the pages
		 * after it: its PT_LOADs' part (all the program sees, as mapped before the
		 * whole file was) goes into the [vdso], without what the file has after it
		 * (section headers), said once per run.
		 */
		static int said;

		if (lo + load_size > hi)
			refuse(pid, "process %d: the image (%zu bytes, %zu of them loaded) does not fit where the kernel's "
			       "vDSO (%lu bytes) is: the next mapping starts at 0x%lx", pid, image_size, load_size, hi - lo,
			       next);
		if (!said++)
			fprintf(stderr, "%s: the image (%zu bytes) is larger than the kernel's [vdso] (%lu bytes), "
				"which a mapping follows: its loaded part (%zu bytes) is mapped, without the section headers "
				"after it\n", prog, image_size, hi - lo, load_size);
		end = lo + load_size;
	}

	if (end <= hi) {
		/*
		 * The image within the kernel's [vdso]: written over its pages (copied on
		 * write, as a debugger's breakpoints are), zeros after it.  The mapping stays
		 * the kernel's, named [vdso], and the kernel's bookkeeping of it stays right.
		 */
		unsigned char *whole = calloc(1, hi - lo);

		if (!whole)
			refuse(pid, "out of memory");
		memcpy(whole, image, end - lo);
		if (mem_io(pid, 1, lo, whole, hi - lo) != 0)
			refuse(pid, "process %d: writing the image into its [vdso] failed: %s", pid, strerror(errno));
		free(whole);
	} else {
		replace_vdso(pid, abi, nrs, lo, end);
	}
	if (abi == ABI_I386 && sysinfo_offset && (ptrace(PTRACE_GETREGS, pid, 0, &regs) != 0 ||
						  set_sysinfo(pid, regs.rsp, lo + sysinfo_offset) != 0))
		refuse(pid, "process %d: cannot find AT_SYSINFO on its stack", pid);
}

/* ---- i386 signal handlers without SA_RESTORER ------------------------------ */

/*
 * An i386 handler installed without SA_RESTORER (glibc installs its handlers
 * so) returns where the kernel puts it: into the kernel's own vDSO image, at
 * the offset of its __kernel_sigreturn (__kernel_rt_sigreturn for an
 * SA_SIGINFO handler), where the substituted image has other bytes.  So the
 * supervisor supplies the restorer on the program's behalf, as if the kernel's
 * image were the substituted one: at sigaction and rt_sigaction (the seccomp
 * filter traces them), a copy of the new action with SA_RESTORER and the
 * image's trampoline of that kind goes to the kernel in place of the
 * program's (below its stack pointer: i386 has no red zone, and the kernel
 * copies the action before the program runs again).  At the syscall's exit
 * its pointer register is put back and an old action read back loses what
 * was supplied.  The kernel builds the frame it builds for any restorer: the
 * handler's frame is what it would be with the image as the kernel's vDSO.
 */
#define I386_SA_SIGINFO		0x4u
#define I386_SA_RESTORER	0x04000000u
#define I386_SIG_IGN		1u

static unsigned long sigreturn_offset[2];	/* the image's __kernel_sigreturn, __kernel_rt_sigreturn */

/* The actions in flight, between their seccomp stop and their syscall-exit stop. */
static struct in_flight {
	pid_t	pid;
	int	rt;				/* rt_sigaction, or sigaction */
	uint32_t act, oact;			/* the program's pointers */
	unsigned long vdso;
} in_flight[64];

/* Where flags and restorer sit, in words: struct sigaction of the i386 kernel, or its old_sigaction. */
#define FLAGS_AT(rt)		((rt) ? 1 : 2)
#define RESTORER_AT(rt)		((rt) ? 2 : 3)

/* At the seccomp stop of an i386 sigaction or rt_sigaction: whether to stop at its exit. */
static int supply_restorer(pid_t pid)
{
	struct user_regs_struct r;
	unsigned long lo, hi, data_lo, next;
	struct in_flight *f = NULL;
	uint32_t act[5];

	if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0 || find_vdso(pid, &lo, &hi, &data_lo, &next) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(in_flight) / sizeof(in_flight[0]) && !f; i++)
		if (!in_flight[i].pid)
			f = &in_flight[i];
	if (!f)
		refuse(pid, "process %d: more than %zu sigaction calls at once", pid,
		       sizeof(in_flight) / sizeof(in_flight[0]));
	*f = (struct in_flight){ pid, (long)r.orig_rax == nrs_i386.rt_sigaction, (uint32_t)r.rcx, (uint32_t)r.rdx, lo };
	if (f->act && mem_io(pid, 0, f->act, act, (f->rt ? 5 : 4) * 4) == 0 && act[0] > I386_SIG_IGN &&
	    !(act[FLAGS_AT(f->rt)] & I386_SA_RESTORER)) {
		uint32_t copy = ((uint32_t)r.rsp - 128) & ~15u;

		act[RESTORER_AT(f->rt)] = lo + sigreturn_offset[!!(act[FLAGS_AT(f->rt)] & I386_SA_SIGINFO)];
		act[FLAGS_AT(f->rt)] |= I386_SA_RESTORER;
		r.rcx = copy;
		if (mem_io(pid, 1, copy, act, (f->rt ? 5 : 4) * 4) != 0 || ptrace(PTRACE_SETREGS, pid, 0, &r) != 0)
			refuse(pid, "process %d: cannot give the kernel its signal action with a restorer", pid);
	}
	return 1;
}

/* At the syscall-exit stop of one: the program's pointer back, and its old action as it set it. */
static void restorer_exit(pid_t pid)
{
	struct user_regs_struct r;
	struct in_flight *f = NULL;
	uint32_t old[5];

	for (size_t i = 0; i < sizeof(in_flight) / sizeof(in_flight[0]) && !f; i++)
		if (in_flight[i].pid == pid)
			f = &in_flight[i];
	if (!f || ptrace(PTRACE_GETREGS, pid, 0, &r) != 0)
		return;
	r.rcx = f->act;
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0)
		refuse(pid, "process %d: cannot restore its registers after sigaction", pid);
	if (f->oact && (int)r.rax == 0 && mem_io(pid, 0, f->oact, old, (f->rt ? 5 : 4) * 4) == 0) {
		uint32_t *flags = &old[FLAGS_AT(f->rt)], *restorer = &old[RESTORER_AT(f->rt)];

		if ((*flags & I386_SA_RESTORER) && *restorer == f->vdso + sigreturn_offset[!!(*flags & I386_SA_SIGINFO)]) {
			*flags &= ~I386_SA_RESTORER;
			*restorer = 0;
			mem_io(pid, 1, f->oact, old, (f->rt ? 5 : 4) * 4);
		}
	}
	f->pid = 0;
}

/* ---- the clock-syscall counter ----------------------------------------- */

static const char *const counter_names[C_N] = { "clock_gettime", "gettimeofday", "time", "clock_getres" };
#define NCLOCKS 24
static unsigned long counts[C_N][NCLOCKS + 1];	/* [NCLOCKS]: other clock ids */

/*
 * A classic BPF program built instruction by instruction, its jumps to
 * labels resolved once it is complete: no offset is counted by hand.
 */
#define BPF_MAX 64
#define BPF_NEXT (-1)		/* a jump's label: the next instruction */

struct bpf_builder {
	struct sock_filter insn[BPF_MAX];
	int	jt[BPF_MAX], jf[BPF_MAX];	/* labels, or BPF_NEXT */
	int	at[BPF_MAX];			/* label -> the instruction it names */
	int	n, nlabels;
};

static int bpf_label(struct bpf_builder *b)
{
	if (b->nlabels == BPF_MAX)
		die("the syscall counter's filter has too many labels");
	b->at[b->nlabels] = -1;
	return b->nlabels++;
}

/* The next instruction emitted is the one `label` names. */
static void bpf_place(struct bpf_builder *b, int label)
{
	b->at[label] = b->n;
}

static void bpf_emit(struct bpf_builder *b, uint16_t code, uint32_t k, int jt, int jf)
{
	if (b->n == BPF_MAX)
		die("the syscall counter's filter is longer than %d instructions", BPF_MAX);
	b->insn[b->n] = (struct sock_filter)BPF_STMT(code, k);
	b->jt[b->n] = jt;
	b->jf[b->n] = jf;
	b->n++;
}

static void bpf_stmt(struct bpf_builder *b, uint16_t code, uint32_t k)
{
	bpf_emit(b, code, k, BPF_NEXT, BPF_NEXT);
}

/* if (A == k) goto jt; else goto jf; */
static void bpf_jeq(struct bpf_builder *b, uint32_t k, int jt, int jf)
{
	bpf_emit(b, BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf);
}

/* A jump's offset: forward only, and within the 8 bits BPF gives it. */
static uint8_t bpf_offset(const struct bpf_builder *b, int i, int label)
{
	int off;

	if (label == BPF_NEXT)
		return 0;
	off = b->at[label] - (i + 1);
	if (b->at[label] < 0 || off < 0 || off > 255)
		die("the syscall counter's filter: instruction %d jumps to an unplaced or unreachable label", i);
	return (uint8_t)off;
}

static void bpf_resolve(struct bpf_builder *b)
{
	for (int i = 0; i < b->n; i++)
		if (BPF_CLASS(b->insn[i].code) == BPF_JMP) {
			b->insn[i].jt = bpf_offset(b, i, b->jt[i]);
			b->insn[i].jf = bpf_offset(b, i, b->jf[i]);
		}
}

/* Trace each clock syscall of `nrs` (to count it, by what it is); fall through past them. */
static void bpf_count(struct bpf_builder *b, const struct abi_nrs *nrs)
{
	for (int what = 0; what < C_N; what++)
		for (int v = 0; v < 2 && nrs->counted[what][v]; v++) {
			int other = bpf_label(b);

			bpf_jeq(b, (uint32_t)nrs->counted[what][v], BPF_NEXT, other);
			bpf_stmt(b, BPF_RET | BPF_K, SECCOMP_RET_TRACE | what);
			bpf_place(b, other);
		}
}

/* What the filter traces besides the clock syscalls: an i386 program's sigaction and rt_sigaction. */
#define TRACE_SIGACTION	C_N

/*
 * The filter: x86-64 syscalls (x32's with AUDIT_ARCH_X86_64 too, their
 * numbers with __X32_SYSCALL_BIT), then i386's; with `counting` the clock
 * syscalls go to this tracer, with `restorers` i386's sigaction and
 * rt_sigaction; everything else runs.
 */
static void build_filter(struct bpf_builder *b, int counting, int restorers)
{
	static const struct { uint32_t arch; const struct abi_nrs *nrs[2]; } abis[] = {
		{ AUDIT_ARCH_X86_64, { &nrs_64, &nrs_x32 } },
		{ AUDIT_ARCH_I386, { &nrs_i386, NULL } },
	};

	bpf_stmt(b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++) {
		int other_arch = bpf_label(b);

		bpf_jeq(b, abis[a].arch, BPF_NEXT, other_arch);
		bpf_stmt(b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
		for (int i = 0; i < 2 && abis[a].nrs[i]; i++) {
			const long calls[] = { abis[a].nrs[i]->sigaction, abis[a].nrs[i]->rt_sigaction };

			if (counting)
				bpf_count(b, abis[a].nrs[i]);
			for (int k = 0; k < 2 && restorers && calls[k]; k++) {
				int other = bpf_label(b);

				bpf_jeq(b, (uint32_t)calls[k], BPF_NEXT, other);
				bpf_stmt(b, BPF_RET | BPF_K, SECCOMP_RET_TRACE | TRACE_SIGACTION);
				bpf_place(b, other);
			}
		}
		bpf_stmt(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		bpf_place(b, other_arch);
	}
	bpf_stmt(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	bpf_resolve(b);
}

/* supervise --dump-filter: the counter's program, one "code jt jf k" line per instruction (for the tests). */
static int dump_counter(void)
{
	struct bpf_builder b = { .n = 0 };

	build_filter(&b, 1, 0);
	for (int i = 0; i < b.n; i++)
		printf("%#06x %u %u %#x\n", b.insn[i].code, b.insn[i].jt, b.insn[i].jf, b.insn[i].k);
	return 0;
}

static void install_filter(int counting, int restorers)
{
	struct bpf_builder b = { .n = 0 };
	struct sock_fprog fp;

	build_filter(&b, counting, restorers);
	fp.len = (unsigned short)b.n;
	fp.filter = b.insn;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) != 0) {
		fprintf(stderr, "%s: cannot install the supervisor's seccomp filter: %s\n", prog, strerror(errno));
		_exit(125);
	}
}

/* What the filter's SECCOMP_RET_TRACE said of the syscall PID stopped at. */
static unsigned long seccomp_what(pid_t pid)
{
	unsigned long what;

	return ptrace(PTRACE_GETEVENTMSG, pid, 0, &what) == 0 ? what : ~0UL;
}

static void count(pid_t pid)
{
	struct user_regs_struct r;
	unsigned long what = seccomp_what(pid), clk;
	int class, machine;

	if (what >= C_N || ptrace(PTRACE_GETREGS, pid, 0, &r) != 0)
		return;
	clk = tracee_abi(pid, &class, &machine) == ABI_I386 ? (unsigned int)r.rbx : r.rdi;
	counts[what][clk < NCLOCKS ? clk : NCLOCKS]++;
}

static void write_counts(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (int c = 0; c < C_N; c++)
		for (int k = 0; k <= NCLOCKS; k++) {
			if (!counts[c][k])
				continue;
			if ((c == C_GETTIME || c == C_GETRES) && k < NCLOCKS)
				fprintf(f, "%s %d %lu\n", counter_names[c], k, counts[c][k]);
			else if (c == C_GETTIME || c == C_GETRES)
				fprintf(f, "%s other %lu\n", counter_names[c], counts[c][k]);
			else
				fprintf(f, "%s - %lu\n", counter_names[c], counts[c][k]);
		}
	if (fclose(f) != 0)
		die("%s: %s", path, strerror(errno));
}

/* ---- the tracer loop ---------------------------------------------------- */

/*
 * After the program's end: whether any process of it is still running (its
 * ends already reported are collected first).
 */
static int left_running(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0)
		if (WIFSTOPPED(status))
			return 1;
	return pid == 0;
}

/* Signals sent to the supervisor go to the program, but for the terminal's: the program has those. */
static pid_t program;

static void forward(int sig, siginfo_t *si, void *context)
{
	(void)context;
	if (si->si_code != SI_KERNEL)
		kill(program, sig);
}

static void forward_signals(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Whether the file at path starts as an ELF file does. */
static int is_elf(const char *path)
{
	unsigned char head[SELFMAG];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof(head));

	if (fd >= 0)
		close(fd);
	return n == SELFMAG && memcmp(head, ELFMAG, SELFMAG) == 0;
}

int main(int argc, char **argv)
{
	const char *counts_path = NULL, *exec_path = NULL;
	int status, err, go[2], restorers;
	pid_t child, pid;
	char c;

	if (argc == 2 && strcmp(argv[1], "--dump-filter") == 0)
		return dump_counter();
	while (argc > 2 && strncmp(argv[1], "--", 2) == 0) {
		if (strcmp(argv[1], "--counts") == 0)
			counts_path = argv[2];
		else if (strcmp(argv[1], "--sysinfo") == 0)
			sysinfo_offset = strtoul(argv[2], NULL, 0);
		else if (strcmp(argv[1], "--sigreturn") == 0)
			sigreturn_offset[0] = strtoul(argv[2], NULL, 0);
		else if (strcmp(argv[1], "--rt-sigreturn") == 0)
			sigreturn_offset[1] = strtoul(argv[2], NULL, 0);
		else if (strcmp(argv[1], "--exec") == 0)
			exec_path = argv[2];
		else
			break;
		argv += 2;
		argc -= 2;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: supervise [--counts FILE] [--sysinfo OFFSET] [--sigreturn OFFSET --rt-sigreturn OFFSET] "
			"[--exec FILE] IMAGE DATA_BYTES "
			"PROGRAM [ARG...]\n");
		return 125;
	}
	load_image(argv[1]);
	data_bytes = strtoul(argv[2], NULL, 0);
	restorers = sigreturn_offset[0] && sigreturn_offset[1];

	if (pipe2(go, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (child == 0) {
		/* Traced before it runs anything: a byte once the supervisor has it, the end if it died first. */
		close(go[1]);
		while ((err = read(go[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (err != 1)
			_exit(125);
		if (counts_path || restorers)
			install_filter(counts_path != NULL, restorers);
		if (!exec_path) {
			execvp(argv[3], argv + 3);
			err = errno;
		} else {
			execv(exec_path, argv + 3);
			err = errno;
			if (err == ENOEXEC && !is_elf(exec_path)) {
				/* A script without "#!": run by sh, as a shell runs one. */
				argv[2] = "sh";
				argv[3] = (char *)exec_path;
				execv("/bin/sh", argv + 2);
				err = errno;
			}
		}
		/* An ELF program refused: of an ABI this kernel does not run (x32 without CONFIG_X86_X32_ABI). */
		fprintf(stderr, "%s: %s: %s\n", prog, exec_path ? exec_path : argv[3], strerror(err));
		_exit(err == ENOENT ? 127 : 126);	/* as a shell says it */
	}
	close(go[0]);
	program = child;
	if (ptrace(PTRACE_SEIZE, child, 0,
		   PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
		   PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) != 0)
		refuse(child, "ptrace: %s", strerror(errno));
	forward_signals();
	if (write(go[1], "", 1) != 1)
		refuse(child, "the program did not start: %s", strerror(errno));
	close(go[1]);

	for (;;) {
		int sig = 0, event;

		pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("lost the program: %s", strerror(errno));
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			for (size_t i = 0; i < sizeof(in_flight) / sizeof(in_flight[0]); i++)
				if (in_flight[i].pid == pid)
					in_flight[i].pid = 0;
			if (pid != child)
				continue;
			if (counts_path)
				write_counts(counts_path);
			if (left_running())
				fprintf(stderr, "%s: %s: what it left running is killed with it (outside the supervisor "
					"its execs would get the kernel's vDSO)\n", prog, argv[3]);
			if (WIFEXITED(status))
				return WEXITSTATUS(status);
			sig = WTERMSIG(status);
			fprintf(stderr, "%s: %s: killed by SIG%s (%s)\n", prog, argv[3],
				sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", strsignal(sig));
			return 128 + WTERMSIG(status);
		}
		if (!WIFSTOPPED(status))
			continue;
		event = status >> 16;
		sig = WSTOPSIG(status);
		if (event == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)) {
			/* A group-stop: stopped, as the signal means, until a SIGCONT (then PTRACE_EVENT_STOP again). */
			ptrace(PTRACE_LISTEN, pid, 0, 0);
			continue;
		}
		if (event == 0 && sig == (SIGTRAP | 0x80)) {
			/* The exit of a sigaction supply_restorer() saw (PTRACE_O_TRACESYSGOOD marks it). */
			restorer_exit(pid);
			ptrace(PTRACE_CONT, pid, 0, 0);
			continue;
		}
		if (event == PTRACE_EVENT_EXEC)
			substitute(pid);
		else if (event == PTRACE_EVENT_SECCOMP && seccomp_what(pid) == TRACE_SIGACTION) {
			if (supply_restorer(pid)) {
				ptrace(PTRACE_SYSCALL, pid, 0, 0);
				continue;
			}
		} else if (event == PTRACE_EVENT_SECCOMP) {
			count(pid);
		}
		/* Only a signal-delivery-stop has a signal to deliver; the others (a new tracee's first stop too) none. */
		ptrace(PTRACE_CONT, pid, 0, event == 0 ? sig : 0);
	}
}
