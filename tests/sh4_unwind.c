/*
 * libgcc's unwinder through the image's SuperH signal trampolines
 * (tests/test_sh4_unwind.py), under qemu-sh4 or qemu-sh4eb with the image
 * as the vDSO (`vdsogen run`).  Built with harness/freestanding/ and a
 * libgcc unwinder gcc 12 did not miscompile: Debian trixie's libgcc_eh.a
 * (gcc 14) for sh4, GCC 12.2's built at -O0 for sh4eb.
 *
 *   sh4_unwind SIGRETURN RT_SIGRETURN    the trampolines' offsets in the image
 *
 * For each trampoline: a SIGSEGV handler installed with it as the restorer
 * (SA_RESTORER, as a C library does), and victim (below) storing into a page
 * that is not accessible yet.  The handler runs _Unwind_Backtrace, which
 * finds the FDEs of the image and of this program through _dl_find_object
 * (below), as glibc's libgcc does.  unwind.NAME passes when the image's own
 * FDE covers the trampoline (libgcc's fallback, which matches the code, is
 * not what answers), and the backtrace goes from the trampoline's frame to
 * victim at the faulting instruction as a signal frame, with the
 * trampoline's CFA the interrupted r15 and every register as the
 * sigcontext holds it, then to victim's caller at victim's return address.
 * The handler then opens the page; sigreturn.NAME passes when the store,
 * and victim, complete.
 */
#include <elf.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unwind.h>

#include "fs.h"

#define SA_RESTORER	0x04000000
#define PAGE		4096

/* Linux's struct sigcontext (uapi asm/sigcontext.h), as far as the rules go. */
struct sigcontext {
	unsigned long	oldmask, regs[16], pc, pr, sr, gbr, mach, macl;
};
/* An rt frame's ucontext: uc_flags, uc_link, uc_stack (12 bytes), then uc_mcontext. */
#define UC_MCONTEXT	20

/*
 * DWARF numbers (GCC's for SuperH) the trampolines' CFI restores, but r15
 * (the CFA) and gbr (19: no column of libgcc's, whose _Unwind_GetGR aborts).
 */
static const int COLUMNS[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 20, 21};
#define NCOLUMNS	(int)(sizeof(COLUMNS) / sizeof(COLUMNS[0]))

static unsigned long sc_value(const struct sigcontext *sc, int column)
{
	switch (column) {
	case 17: return sc->pr;
	case 20: return sc->mach;
	case 21: return sc->macl;
	default: return sc->regs[column];
	}
}

/*
 * victim(page): r8-r14 saved (its CFI says where), then every register but
 * r4 (the page), r15 and pr, and mach and macl, given a value of its own,
 * so that a rule reading another register's slot reads another value; then
 * the store that faults.  After sigreturn it restores r8-r14 and returns.
 */
void victim(volatile unsigned long *page);
__asm__(
	"	.text\n"
	"	.p2align 1\n"
	"	.globl	victim\n"
	"	.type	victim, @function\n"
	"victim:\n"
	"	.cfi_startproc\n"
	"	mov.l	r8, @-r15\n"
	"	.cfi_def_cfa_offset 4\n"
	"	.cfi_offset 8, -4\n"
	"	mov.l	r9, @-r15\n"
	"	.cfi_def_cfa_offset 8\n"
	"	.cfi_offset 9, -8\n"
	"	mov.l	r10, @-r15\n"
	"	.cfi_def_cfa_offset 12\n"
	"	.cfi_offset 10, -12\n"
	"	mov.l	r11, @-r15\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset 11, -16\n"
	"	mov.l	r12, @-r15\n"
	"	.cfi_def_cfa_offset 20\n"
	"	.cfi_offset 12, -20\n"
	"	mov.l	r13, @-r15\n"
	"	.cfi_def_cfa_offset 24\n"
	"	.cfi_offset 13, -24\n"
	"	mov.l	r14, @-r15\n"
	"	.cfi_def_cfa_offset 28\n"
	"	.cfi_offset 14, -28\n"
	"	mov	#0x70, r1\n"
	"	lds	r1, mach\n"
	"	mov	#0x71, r1\n"
	"	lds	r1, macl\n"
	"	mov	#0x60, r0\n"
	"	mov	#0x61, r1\n"
	"	mov	#0x62, r2\n"
	"	mov	#0x63, r3\n"
	"	mov	#0x65, r5\n"
	"	mov	#0x66, r6\n"
	"	mov	#0x67, r7\n"
	"	mov	#0x68, r8\n"
	"	mov	#0x69, r9\n"
	"	mov	#0x6a, r10\n"
	"	mov	#0x6b, r11\n"
	"	mov	#0x6c, r12\n"
	"	mov	#0x6d, r13\n"
	"	mov	#0x6e, r14\n"
	"	mov.l	r0, @r4\n"		/* faults */
	"	mov.l	@r15+, r14\n"
	"	mov.l	@r15+, r13\n"
	"	mov.l	@r15+, r12\n"
	"	mov.l	@r15+, r11\n"
	"	mov.l	@r15+, r10\n"
	"	mov.l	@r15+, r9\n"
	"	rts\n"
	"	mov.l	@r15+, r8\n"
	"	.cfi_endproc\n"
	"	.size	victim, . - victim\n");
#define VICTIM_STORES	0x60

/* ------------------------------------------------------------------ */
/* What libgcc's unwinder takes from the C library                    */

/* glibc's struct dl_find_object (no dlfo_eh_dbase, no dlfo_eh_count on sh). */
struct dl_find_object {
	unsigned long long	dlfo_flags;
	void			*dlfo_map_start, *dlfo_map_end;
	void			*dlfo_link_map;
	void			*dlfo_eh_frame;
	unsigned long long	dlfo_reserved[7];
};

/* The object of program headers `ph` loaded at `bias`, if it holds pc. */
static int find_in(const ElfW(Phdr) *ph, unsigned int n, uintptr_t bias, uintptr_t pc, struct dl_find_object *r)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (ph[i].p_type == PT_LOAD) {
			lo = ph[i].p_vaddr + bias < lo ? ph[i].p_vaddr + bias : lo;
			hi = ph[i].p_vaddr + ph[i].p_memsz + bias > hi ? ph[i].p_vaddr + ph[i].p_memsz + bias : hi;
		} else if (ph[i].p_type == PT_GNU_EH_FRAME) {
			eh = ph[i].p_vaddr + bias;
		}
	}
	if (pc < lo || pc >= hi)
		return -1;
	memset(r, 0, sizeof(*r));
	r->dlfo_map_start = (void *)lo;
	r->dlfo_map_end = (void *)hi;
	r->dlfo_eh_frame = (void *)eh;
	return 0;
}

/* glibc's lookup (2.35 on), over this program and the vDSO, which glibc reports alike. */
int _dl_find_object(void *pc, struct dl_find_object *r)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	unsigned int i, n = (unsigned int)getauxval(AT_PHNUM);
	uintptr_t bias = 0;

	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	if (find_in(ph, n, bias, (uintptr_t)pc, r) == 0)
		return 0;
	if (!eh)
		return -1;
	ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	for (i = 0; i < eh->e_phnum && ph[i].p_type != PT_LOAD; i++)
		;
	bias = (uintptr_t)eh - (i < eh->e_phnum ? ph[i].p_vaddr : 0);
	return find_in(ph, eh->e_phnum, bias, (uintptr_t)pc, r);
}

/* libgcc's locks and once (gthr-posix): this program has one thread, which never waits. */
int pthread_once(int *once, void (*init)(void))
{
	if (!*once) {
		*once = 1;
		init();
	}
	return 0;
}

int pthread_mutex_lock(void *m)
{
	(void)m;
	return 0;
}

int pthread_mutex_unlock(void *m)
{
	(void)m;
	return 0;
}

int pthread_cond_broadcast(void *c)
{
	(void)c;
	return 0;
}

int pthread_cond_wait(void *c, void *m)
{
	(void)c, (void)m;
	abort();
}

/* For __register_frame and its kin, which this program does not call. */
void *malloc(size_t n)
{
	(void)n;
	abort();
}

void free(void *p)
{
	(void)p;
	abort();
}

/* libgcc's: the FDE covering pc, and the start of the code it covers (bases->func). */
struct dwarf_eh_bases {
	void	*tbase, *dbase, *func;
};
const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

/* ------------------------------------------------------------------ */
/* The checks                                                         */

#define NFRAMES	16

struct frame {
	uintptr_t	ip, cfa;
	int		before;		/* ip is the next instruction's (a signal frame) */
};

static struct walk {
	uintptr_t	tramp;
	const struct sigcontext *sc;	/* the interrupted code's */
	int		rt, n;
	struct frame	f[NFRAMES];
	unsigned long	regs[NCOLUMNS];	/* of the frame after the trampoline's */
	char		why[160];	/* unwind.NAME's failure, if any */
} w;
static volatile unsigned long *page;

/*
 * A frame of the backtrace; it stops at victim's caller, or at the frame
 * after the trampoline's if that is not victim's (whose rules, applied to
 * the registers a broken CFI gives, could read anywhere).
 */
static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct frame *f = &w.f[w.n];
	int i, after = w.n > 0 && w.f[w.n - 1].ip == w.tramp;

	(void)arg;
	f->ip = _Unwind_GetIPInfo(ctx, &f->before);
	f->cfa = _Unwind_GetCFA(ctx);
	if (after)
		for (i = 0; i < NCOLUMNS; i++)
			w.regs[i] = _Unwind_GetGR(ctx, COLUMNS[i]);
	w.n++;
	if (w.n == NFRAMES || (after && (f->ip != w.sc->pc || !f->before)) || (w.n >= 3 && w.f[w.n - 3].ip == w.tramp))
		return _URC_NORMAL_STOP;
	return _URC_NO_REASON;
}

static void check(const struct sigcontext *sc)
{
	struct dwarf_eh_bases bases;
	int t, i;

	if (!_Unwind_Find_FDE((void *)(w.tramp - 1), &bases) || (uintptr_t)bases.func > w.tramp - 1
	    || (uintptr_t)bases.func < getauxval(AT_SYSINFO_EHDR)) {
		snprintf(w.why, sizeof(w.why), "no FDE of the image covers %#lx", (unsigned long)w.tramp - 1);
		return;
	}
	w.sc = sc;
	_Unwind_Backtrace(step, NULL);
	for (t = 0; t < w.n && w.f[t].ip != w.tramp; t++)
		;
	if (t + 1 >= w.n) {
		snprintf(w.why, sizeof(w.why), "%d frames, %s", w.n, t < w.n ? "none after the trampoline's"
			 : "none at the trampoline");
		return;
	}
	if (w.f[t + 1].ip != sc->pc || !w.f[t + 1].before) {
		snprintf(w.why, sizeof(w.why), "after the trampoline, %#lx%s, not the interrupted pc %#lx as a signal frame",
			 (unsigned long)w.f[t + 1].ip, w.f[t + 1].before ? "" : " as a return address", sc->pc);
		return;
	}
	if (w.f[t + 1].cfa != sc->regs[15]) {
		snprintf(w.why, sizeof(w.why), "CFA is %#lx, not the interrupted r15 %#lx",
			 (unsigned long)w.f[t + 1].cfa, sc->regs[15]);
		return;
	}
	for (i = 0; i < NCOLUMNS; i++)
		if (w.regs[i] != sc_value(sc, COLUMNS[i])) {
			snprintf(w.why, sizeof(w.why), "DWARF register %d unwinds to %#lx, the sigcontext holds %#lx",
				 COLUMNS[i], w.regs[i], sc_value(sc, COLUMNS[i]));
			return;
		}
	if (t + 2 >= w.n || w.f[t + 2].ip != sc->pr || w.f[t + 2].before)
		snprintf(w.why, sizeof(w.why), "after victim, %#lx, not its return address %#lx",
			 t + 2 < w.n ? (unsigned long)w.f[t + 2].ip : 0UL, sc->pr);
}

/*
 * SIGSEGV's: Linux passes sig, the siginfo and the ucontext of an rt frame;
 * for a frame of sigreturn's, sig, 0 and the sigcontext (setup_frame).
 */
static void handler(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	check(w.rt ? (const struct sigcontext *)((char *)ctx + UC_MCONTEXT) : ctx);
	mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE);
}

static int run(const char *name, uintptr_t tramp, int rt)
{
	struct fs_ksigaction k = {.handler = (void *)handler, .restorer = (void *)tramp,
				  .flags = SA_RESTORER | (rt ? SA_SIGINFO : 0)};
	int failed = 0;

	memset(&w, 0, sizeof(w));
	w.tramp = tramp;
	w.rt = rt;
	page = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || fs_sys4(SYS_rt_sigaction, SIGSEGV, &k, NULL, 8) != 0) {
		printf("FAIL unwind.%s: mmap or rt_sigaction failed\n", name);
		return 2;
	}
	victim(page);
	if (w.n == 0 && !w.why[0])
		snprintf(w.why, sizeof(w.why), "no SIGSEGV");
	if (w.why[0])
		printf("FAIL unwind.%s: %s\n", name, w.why), failed++;
	else
		printf("ok unwind.%s\n", name);
	if (*page != VICTIM_STORES)
		printf("FAIL sigreturn.%s: the store did not complete\n", name), failed++;
	else
		printf("ok sigreturn.%s\n", name);
	munmap((void *)page, PAGE);
	return failed;
}

int main(int argc, char **argv)
{
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	int failed;

	if (argc != 3 || !base) {
		fprintf(stderr, "usage: sh4_unwind SIGRETURN RT_SIGRETURN (under a vDSO)\n");
		return 2;
	}
	failed = run("__kernel_sigreturn", base + strtoul(argv[1], NULL, 0), 0);
	failed += run("__kernel_rt_sigreturn", base + strtoul(argv[2], NULL, 0), 1);
	printf("%d passed, %d failed\n", 4 - failed, failed);
	return failed != 0;
}
