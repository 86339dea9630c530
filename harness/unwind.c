/*
 * vdsogen test harness: unwinding through the image's signal trampolines,
 * and returning through them (the unwind.NAME and sigreturn.NAME checks).
 *
 * For each trampoline of a kind the arch's harness-signal.h.j2 can install
 * (HARNESS_HAVE_SIGNAL_RESTORER): the image's .eh_frame is registered with
 * libgcc's unwinder, a SIGSEGV handler is installed with the trampoline as
 * its restorer, and a function of its own section (victim) stores into a
 * page that is not accessible yet.  The handler runs _Unwind_Backtrace;
 * unwind.NAME passes when, right after the trampoline's frame, the
 * backtrace reaches victim at the faulting instruction (as a signal
 * frame's pc, not a return address) with victim's own CFA, and then
 * victim's caller at victim's return address; when the trampoline's CFA
 * is the interrupted stack pointer; and, for an rt frame, when every
 * register the arch fragment names unwinds to the value the handler's
 * ucontext holds.  The handler then opens the page; sigreturn.NAME passes
 * when the store, and victim, then complete as if nothing had happened.
 *
 * libgcc's __register_frame takes a .eh_frame that ends with a zero
 * terminator, which an image's .eh_frame need not have (consumers find it
 * through PT_GNU_EH_FRAME): the harness registers a terminated copy, with
 * each FDE's pc-relative start re-based so that it still names the image's
 * code.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "internal.h"

#ifdef HARNESS_HAVE_SIGNAL_RESTORER
#ifndef HARNESS_UC_FIRST_REG
/* The first DWARF register the ucontext holds (riscv's x0 is no register to restore). */
#define HARNESS_UC_FIRST_REG	0
#endif
#ifndef HARNESS_CFA_SP_OFFSET
/* A frame's CFA is the stack pointer at the call (s390x adds its register save area). */
#define HARNESS_CFA_SP_OFFSET	0
#endif

/* libgcc's */
void __register_frame(void *begin);
void __deregister_frame(void *begin);

/* ------------------------------------------------------------------ */
/* The image's .eh_frame, registered with libgcc                      */

#define DW_EH_PE_omit		0xff
#define DW_EH_PE_absptr		0x00
#define DW_EH_PE_udata2		0x02
#define DW_EH_PE_udata4		0x03
#define DW_EH_PE_udata8		0x04
#define DW_EH_PE_sdata2		0x0a
#define DW_EH_PE_sdata4		0x0b
#define DW_EH_PE_sdata8		0x0c
#define DW_EH_PE_pcrel		0x10
#define DW_EH_PE_datarel	0x30

/* An encoded pointer: its size (0: an encoding this reader does not know). */
static size_t enc_size(unsigned int enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return sizeof(void *);
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	default: return 0;
	}
}

/* The number an encoded value at p holds (its format only). */
static int64_t read_raw(const unsigned char *p, unsigned int enc)
{
	uint16_t v2;
	uint32_t v4;
	uint64_t v8;

	switch (enc_size(enc)) {
	case 2:
		memcpy(&v2, p, 2);
		return (enc & 0x08) ? (int64_t)(int16_t)v2 : (int64_t)v2;
	case 4:
		memcpy(&v4, p, 4);
		return (enc & 0x08) ? (int64_t)(int32_t)v4 : (int64_t)v4;
	case 8:
		memcpy(&v8, p, 8);
		return (int64_t)v8;
	default:
		return 0;
	}
}

/*
 * The address an encoded pointer at p names: pc-relative to p, relative
 * to datarel, or absolute, which in an image linked at 0 means relative to
 * the image.  0 for an application this reader does not know.
 */
static uintptr_t read_enc(const unsigned char *p, unsigned int enc, uintptr_t datarel)
{
	uintptr_t v = (uintptr_t)read_raw(p, enc);

	switch (enc & 0x70) {
	case 0: return (uintptr_t)h_text + v;
	case DW_EH_PE_pcrel: return (uintptr_t)p + v;
	case DW_EH_PE_datarel: return datarel ? datarel + v : 0;
	default: return 0;
	}
}

/* Store address a at p as encoding enc (pc-relative or absolute); -1 when it does not fit. */
static int write_enc(unsigned char *p, unsigned int enc, uintptr_t a)
{
	int64_t v = (enc & 0x70) == DW_EH_PE_pcrel ? (int64_t)(intptr_t)(a - (uintptr_t)p) : (int64_t)a;
	size_t n = enc_size(enc);
	uint32_t v4 = (uint32_t)v;
	uint16_t v2 = (uint16_t)v;
	uint64_t v8 = (uint64_t)v;

	if ((enc & 0x70) == DW_EH_PE_pcrel && (uintptr_t)(p + v) != a)
		return -1;
	if (n == 2 && ((enc & 0x08) ? (int16_t)v2 != v : v2 != (uint64_t)v))
		return -1;
	if (n == 4 && ((enc & 0x08) ? (int32_t)v4 != v : v4 != (uint64_t)v))
		return -1;
	if (n == 2)
		memcpy(p, &v2, 2);
	else if (n == 4)
		memcpy(p, &v4, 4);
	else if (n == 8)
		memcpy(p, &v8, 8);
	return n ? 0 : -1;
}

static const unsigned char *uleb(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (p < end && shift < 64) {
		*v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
		if (!(*p++ & 0x80))
			return p;
	}
	return NULL;
}

/* In the image: [p, p + n) lies inside the file. */
static int in_image(const unsigned char *p, size_t n)
{
	return p >= h_text && n <= h_image_size && (size_t)(p - h_text) <= h_image_size - n;
}

/* A record's length, from its first word: 0 for the terminator, -1 when it leaves the image or is 64-bit DWARF. */
static long record_len(const unsigned char *rec)
{
	uint32_t len;

	if (!in_image(rec, 4))
		return -1;
	memcpy(&len, rec, 4);
	if (len == 0xffffffffu || !in_image(rec, 4 + (size_t)len))
		return -1;
	return len;
}

/*
 * The .eh_frame that PT_GNU_EH_FRAME leads to: its start, and its end as
 * far as the records .eh_frame_hdr lists (each FDE and its CIE) reach.
 * NULL, with the reason in why, when the image has none or it is unusable.
 */
static const unsigned char *find_eh_frame(size_t *size, char *why, size_t n)
{
	const HW(Ehdr) *eh = (const void *)h_text;
	const HW(Phdr) *ph;
	const unsigned char *hdr = NULL, *frame, *p, *end = NULL, *fde, *cie;
	unsigned int i, tenc;
	uintptr_t count;
	uint32_t id;
	long len;

	ph = (const void *)(h_text + eh->e_phoff);
	if (!in_image((const unsigned char *)ph, (size_t)eh->e_phnum * sizeof(*ph))) {
		snprintf(why, n, "the program headers leave the image");
		return NULL;
	}
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME && in_image(h_text + ph[i].p_vaddr, 4 + 3 * 8))
			hdr = h_text + ph[i].p_vaddr;
	if (!hdr) {
		snprintf(why, n, "no PT_GNU_EH_FRAME");
		return NULL;
	}
	tenc = hdr[3];
	if (hdr[0] != 1 || hdr[1] == DW_EH_PE_omit || hdr[2] == DW_EH_PE_omit || tenc == DW_EH_PE_omit ||
	    !enc_size(hdr[1]) || !enc_size(hdr[2]) || !enc_size(tenc)) {
		snprintf(why, n, ".eh_frame_hdr version %u, encodings %#x %#x %#x: not one this harness reads",
			 hdr[0], hdr[1], hdr[2], tenc);
		return NULL;
	}
	p = hdr + 4;
	frame = (const unsigned char *)read_enc(p, hdr[1], (uintptr_t)hdr);
	p += enc_size(hdr[1]);
	count = (uintptr_t)read_raw(p, hdr[2]);
	p += enc_size(hdr[2]);
	if (!in_image(frame, 4) || count > h_image_size / (2 * enc_size(tenc)) ||
	    !in_image(p, count * 2 * enc_size(tenc))) {
		snprintf(why, n, ".eh_frame_hdr points outside the image");
		return NULL;
	}
	end = frame;
	for (; count; count--, p += 2 * enc_size(tenc)) {
		fde = (const unsigned char *)read_enc(p + enc_size(tenc), tenc, (uintptr_t)hdr);
		len = fde < frame ? -1 : record_len(fde);
		if (len <= 4) {
			snprintf(why, n, ".eh_frame_hdr lists an FDE at %#lx that is not one",
				 (unsigned long)(fde - h_text));
			return NULL;
		}
		memcpy(&id, fde + 4, 4);
		cie = id <= (size_t)(fde + 4 - frame) ? fde + 4 - id : NULL;
		if (fde + 4 + len > end)
			end = fde + 4 + len;
		len = cie ? record_len(cie) : -1;
		if (len <= 0) {
			snprintf(why, n, "the FDE at %#lx has no CIE", (unsigned long)(fde - h_text));
			return NULL;
		}
		if (cie + 4 + len > end)
			end = cie + 4 + len;
	}
	*size = (size_t)(end - frame);
	return frame;
}

/* The R (FDE pointer) encoding of the CIE at cie; -1 when this reader cannot tell. */
static int cie_fde_encoding(const unsigned char *cie, const unsigned char *end)
{
	const unsigned char *aug = cie + 9, *p = memchr(aug, 0, (size_t)(end - aug));
	uint64_t v;

	if (!p || cie[8] == 4)				/* version 4 adds address and segment sizes */
		return -1;
	if (aug[0] != 'z')
		return aug[0] ? -1 : DW_EH_PE_absptr;
	p = uleb(p + 1, end, &v);			/* code alignment */
	p = p ? uleb(p, end, &v) : NULL;		/* data alignment (skipped like a ULEB128) */
	if (p && cie[8] == 1)
		p++;					/* return address column */
	else if (p)
		p = uleb(p, end, &v);
	p = p ? uleb(p, end, &v) : NULL;		/* augmentation data length */
	for (aug++; p && p < end && *aug; aug++) {
		if (*aug == 'R')
			return *p;
		if (*aug == 'L')
			p++;
		else if (*aug != 'S' && *aug != 'B')	/* 'P': a personality this harness does not run */
			return -1;
	}
	return p ? DW_EH_PE_absptr : -1;
}

/*
 * @size bytes near the image, so that 32-bit pc-relative offsets reach it
 * on 64-bit hosts too: a hint is only a hint (where threads' stacks took
 * the first one, qemu-user maps elsewhere), so try a few, 1 MiB apart.
 */
static unsigned char *map_near_image(size_t size)
{
	unsigned char *hint = h_text + ((h_image_size + 0xffff) & ~(size_t)0xffff) + 0x100000, *p;
	int i;

	for (i = 0; i < 64; i++, hint += 0x100000) {
		p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || (size_t)(p > h_text ? p - h_text : h_text - p) < 0x40000000)
			return p;
		munmap(p, size);
	}
	return MAP_FAILED;
}

/*
 * A copy of .eh_frame [frame, frame + size) with a zero terminator, its
 * FDEs' initial locations re-encoded for their new place.  NULL, with the
 * reason in why, when a record is not one this harness can move.
 */
static unsigned char *terminated_copy(const unsigned char *frame, size_t size, char *why, size_t n)
{
	unsigned char *copy, *rec, *cie;
	uint32_t len, id;
	int enc;

	copy = map_near_image(size + 4);
	if (copy == MAP_FAILED) {
		snprintf(why, n, "mapping a copy of .eh_frame: %s", strerror(errno));
		return NULL;
	}
	memcpy(copy, frame, size);
	memset(copy + size, 0, 4);
	for (rec = copy; rec < copy + size; rec += 4 + len) {
		memcpy(&len, rec, 4);
		if (len == 0)
			continue;
		if ((size_t)(copy + size - rec) < 8 || len > (size_t)(copy + size - rec) - 4) {
			snprintf(why, n, "the record at .eh_frame+%#lx overruns it", (unsigned long)(rec - copy));
			munmap(copy, size + 4);
			return NULL;
		}
		memcpy(&id, rec + 4, 4);
		if (id == 0)
			continue;
		cie = id <= (size_t)(rec + 4 - copy) ? rec + 4 - id : NULL;
		enc = cie && cie < rec ? cie_fde_encoding(cie, copy + size) : -1;
		if (enc < 0 || !enc_size((unsigned int)enc) || (enc & 0x70 & ~DW_EH_PE_pcrel) ||
		    write_enc(rec + 8, (unsigned int)enc,
			      read_enc(frame + (rec - copy) + 8, (unsigned int)enc, 0)) != 0) {
			snprintf(why, n, "the FDE at .eh_frame+%#lx (encoding %#x) cannot be moved",
				 (unsigned long)(rec - copy), enc);
			munmap(copy, size + 4);
			return NULL;
		}
	}
	return copy;
}

/* ------------------------------------------------------------------ */
/* The interrupted function and the handler                            */

/* victim's code, bounded by the linker. */
extern const char __start_h_unwind_victim[], __stop_h_unwind_victim[];

static int in_victim(uintptr_t pc)
{
	return pc >= (uintptr_t)__start_h_unwind_victim && pc < (uintptr_t)__stop_h_unwind_victim;
}

static struct {
	uintptr_t	tramp;		/* the trampoline's address */
	unsigned char	*page;		/* not accessible until the handler opens it */
	sigjmp_buf	escape;		/* out of a fault the check did not plan */
	int		depth;		/* handlers running */
	int		handled;	/* handlers that returned */
	/* From inside victim, before the fault. */
	uintptr_t	ref_cfa;	/* victim's CFA */
	uintptr_t	ret;		/* victim's return address */
	/*
	 * From the handler's backtrace.  libgcc hands each frame's callback
	 * the CFA of the frame below it (its callee), the frame's stack pointer:
	 * at victim's frame that is the trampoline's CFA, at victim's caller's
	 * victim's.
	 */
	int		stage;		/* 0 before the trampoline, 1 at it, 2 at victim, 3 at its caller */
	int		frames;
	uintptr_t	ip, sp, tramp_cfa, cfa, caller_ip;
	int		ip_before;	/* the unwinder takes ip for the faulting instruction itself */
	/*
	 * The trampoline's CFI gives the stack pointer no rule (Linux's i386
	 * ones): unwinders take the CFA for it, DWARF's convention, and libgcc
	 * holds no value to read, so reading it faults; the probe catches that.
	 */
	int		probing, sp_by_cfa;
	sigjmp_buf	probe;
	/* An rt handler's ucontext, and the first register the unwinder recovers otherwise. */
	const void	*uc;
	int		bad_reg;
	unsigned long	bad_got, bad_want;
} u;

/* Stops at victim's caller, with victim's CFA. */
static _Unwind_Reason_Code ref_frame(struct _Unwind_Context *ctx, void *arg)
{
	int *frames = arg;

	if (*frames < 0) {
		u.ref_cfa = _Unwind_GetCFA(ctx);
		return _URC_END_OF_STACK;
	}
	if (in_victim(_Unwind_GetIP(ctx) - 1))
		*frames = -1;
	else if (++*frames > 64)
		return _URC_END_OF_STACK;
	return _URC_NO_REASON;
}

static __attribute__((noinline)) void ref_backtrace(void)
{
	int frames = 0;

	_Unwind_Backtrace(ref_frame, &frames);
}

/* Stores a into *p, which faults first; then a + b. */
static __attribute__((noinline, noclone, section("h_unwind_victim"))) int victim(volatile int *p, int a, int b)
{
	u.ret = (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
	ref_backtrace();
	*p = a;
	return *p + b;
}

/* Every register the arch's fragment names, as the unwinder recovers it, against the ucontext. */
static void compare_registers(struct _Unwind_Context *ctx)
{
	unsigned long got, want;
	unsigned int r;

	for (r = HARNESS_UC_FIRST_REG; u.uc && r < HARNESS_UC_REGS && u.bad_reg < 0; r++) {
		got = u.sp_by_cfa && r == (unsigned int)__builtin_dwarf_sp_column() ? u.sp : _Unwind_GetGR(ctx, (int)r);
		want = harness_uc_reg(u.uc, r);
		if (got != want) {
			u.bad_reg = (int)r;
			u.bad_got = got;
			u.bad_want = want;
		}
	}
}

static _Unwind_Reason_Code sig_frame(struct _Unwind_Context *ctx, void *arg)
{
	int before = 0;
	uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);

	(void)arg;
	if (++u.frames > 64)
		return _URC_END_OF_STACK;
	switch (u.stage) {
	case 0:
		if (ip == u.tramp)
			u.stage = 1;
		return _URC_NO_REASON;
	case 1:
		u.ip = ip;
		u.ip_before = before;
		u.tramp_cfa = _Unwind_GetCFA(ctx);
		/* Where the trampoline's CFI says the stack pointer was; without a rule, the CFA. */
		u.probing = 1;
		if (sigsetjmp(u.probe, 1) == 0) {
			u.sp = _Unwind_GetGR(ctx, __builtin_dwarf_sp_column());
		} else {
			u.sp = u.tramp_cfa - HARNESS_CFA_SP_OFFSET;
			u.sp_by_cfa = 1;
		}
		u.probing = 0;
		compare_registers(ctx);
		u.stage = 2;
		return _URC_NO_REASON;
	default:
		u.caller_ip = ip;
		u.cfa = _Unwind_GetCFA(ctx);
		u.stage = 3;
		return _URC_END_OF_STACK;
	}
}

static void on_fault_common(void)
{
	/* Reading a stack pointer the CFI gives no rule (u.probing). */
	if (u.probing) {
		u.probing = 0;
		siglongjmp(u.probe, 1);
	}
	/* A fault inside the handler (the unwinder following bad rules), or after it returned. */
	if (u.depth++ || u.handled)
		siglongjmp(u.escape, u.handled ? 2 : 1);
	_Unwind_Backtrace(sig_frame, NULL);
	mprotect(u.page, (size_t)getpagesize(), PROT_READ | PROT_WRITE);
#ifdef HARNESS_TRAMP_CFA
	/* The frame the trampoline's rt_sigreturn restores from, where the emulator looks (parisc). */
	harness_before_sigreturn();
#endif
	u.depth--;
	u.handled++;
}

static void on_fault_plain(int sig)
{
	(void)sig;
	on_fault_common();
}

static void on_fault_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (!u.depth)
		u.uc = uc;
	on_fault_common();
}

/* ------------------------------------------------------------------ */
/* The checks                                                          */

#define VICTIM_A	0x1234567
#define VICTIM_B	0x7654321

static void unwind_through(const char *name, int rt, uintptr_t tramp)
{
	size_t ps = (size_t)getpagesize();
	harness_sigsave_t old;
	struct chk k, ks;
	volatile int got = 0, escaped = 0;
	int e;

	memset(&u, 0, sizeof(u));
	u.tramp = tramp;
	u.bad_reg = -1;
	u.page = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	chk_start(&k, "unwind.%s", name);
	if (u.page == MAP_FAILED) {
		chk_fail(&k, "mapping a page: %s", strerror(errno));
		chk_end(&k);
		return;
	}
	e = harness_install_restorer(SIGSEGV, rt ? (void *)on_fault_info : (void *)on_fault_plain, rt,
				     (const void *)tramp, &old);
	if (e) {
		chk_fail(&k, "installing a SIGSEGV handler with %s as its restorer: %s", name, strerror(-e));
		chk_end(&k);
		munmap(u.page, ps);
		return;
	}
	escaped = sigsetjmp(u.escape, 1);
	if (!escaped)
		got = victim((volatile int *)u.page, VICTIM_A, VICTIM_B);
	harness_restore_action(SIGSEGV, &old);

	if (escaped == 1)
		chk_fail(&k, "the unwinder faulted in the handler, following the trampoline's rules");
	else if (u.stage < 1)
		chk_fail(&k, "the backtrace from the handler never reached %s at %#lx", name, (unsigned long)tramp);
	else if (u.stage < 2)
		chk_fail(&k, "the backtrace ends at %s", name);
	else if (!in_victim(u.ip))
		chk_fail(&k, "after %s the backtrace goes to %#lx, not to the interrupted function [%p, %p)",
			 name, (unsigned long)u.ip, (const void *)__start_h_unwind_victim,
			 (const void *)__stop_h_unwind_victim);
	else if (!u.ip_before)
		chk_fail(&k, "the interrupted pc %#lx counts as a return address: no signal frame ('S')",
			 (unsigned long)u.ip);
#ifdef HARNESS_TRAMP_CFA
	/* parisc: Linux's CFI makes the frame's sigcontext the CFA. */
	else if (u.tramp_cfa != HARNESS_TRAMP_CFA(u.uc, u.sp))
		chk_fail(&k, "%s's CFA is %#lx, the frame's sigcontext is at %#lx", name,
			 (unsigned long)u.tramp_cfa, (unsigned long)HARNESS_TRAMP_CFA(u.uc, u.sp));
#else
	else if (u.tramp_cfa != u.sp + HARNESS_CFA_SP_OFFSET)
		chk_fail(&k, "%s's CFA is %#lx, the interrupted stack pointer %#lx (+%d)", name,
			 (unsigned long)u.tramp_cfa, (unsigned long)u.sp, HARNESS_CFA_SP_OFFSET);
#endif
	else if (u.stage < 3 || u.caller_ip != u.ret)
		chk_fail(&k, "the interrupted function's caller comes out at %#lx, its return address is %#lx",
			 (unsigned long)u.caller_ip, (unsigned long)u.ret);
	else if (u.cfa != u.ref_cfa)
		chk_fail(&k, "the interrupted function's CFA is %#lx through %s, %#lx from inside it",
			 (unsigned long)u.cfa, name, (unsigned long)u.ref_cfa);
	else if (u.bad_reg >= 0)
		chk_fail(&k, "DWARF register %d unwinds to %#lx, the ucontext says %#lx", u.bad_reg,
			 u.bad_got, u.bad_want);
	chk_end(&k);

	chk_start(&ks, "sigreturn.%s", name);
	if (escaped == 2)
		chk_fail(&ks, "a second SIGSEGV after the handler returned through %s", name);
	else if (escaped || u.handled != 1)
		chk_fail(&ks, "the handler did not return (%d returns)", u.handled);
	else if (*(volatile int *)u.page != VICTIM_A || got != VICTIM_A + VICTIM_B)
		chk_fail(&ks, "the interrupted function stored %#x and returned %#x, want %#x and %#x",
			 *(volatile int *)u.page, got, VICTIM_A, VICTIM_A + VICTIM_B);
	chk_end(&ks);
	munmap(u.page, ps);
}

/* The trampoline's address, resolved as check_symbols() resolves it; 0 when it does not. */
static uintptr_t trampoline_address(const struct h_image *im, size_t t)
{
	long i, idx;

	for (i = 0; h_symbols[i].name; i++)
		if (h_symbols[i].kind == H_KIND_TRAMPOLINE && h_symbols[i].trampoline == (int)t) {
			idx = h_lookup_gnu(im, h_symbols[i].name, h_symbols[i].version);
			if (idx < 0)
				idx = h_lookup_sysv(im, h_symbols[i].name, h_symbols[i].version);
			return idx < 0 ? 0 : (uintptr_t)h_text + (uintptr_t)im->symtab[idx].st_value;
		}
	return 0;
}

void grp_unwind(void)
{
	const unsigned char *frame;
	unsigned char *copy = NULL;
	struct h_image im;
	char why[160];
	size_t t, size = 0;
	struct chk k;

	if (!h_trampolines[0].name)
		return;
	chk_start(&k, "unwind.eh_frame");
	if (h_image_parse(&im, h_text, h_image_size, H_IMAGE_CLASS, H_ELF_DATA, H_ELF_MACHINE,
			  why, sizeof(why)) != 0) {
		chk_fail(&k, "%s", why);
		chk_end(&k);
		return;
	}
	frame = find_eh_frame(&size, why, sizeof(why));
	if (frame) {
		copy = terminated_copy(frame, size, why, sizeof(why));
		if (!copy)
			chk_fail(&k, "%s", why);
		else
			__register_frame(copy);
	} else {
		printf("# unwind: %s: what the unwinder itself knows of the trampolines is checked\n", why);
	}
	chk_end(&k);
	for (t = 0; h_trampolines[t].name; t++) {
		if (h_trampoline_rt[t] < 0)
			printf("# unwind: %s returns from no signal\n", h_trampolines[t].name);
		else if (!harness_restorer_kind_ok(h_trampoline_rt[t]))
			printf("# unwind: %s: this harness's tasks get no %s frame\n", h_trampolines[t].name,
			       h_trampoline_rt[t] ? "rt" : "plain");
		else
			unwind_through(h_trampolines[t].name, h_trampoline_rt[t], trampoline_address(&im, t));
	}
	if (copy) {
		__deregister_frame(copy);
		munmap(copy, size + 4);
	}
}
#else /* !HARNESS_HAVE_SIGNAL_RESTORER */
void grp_unwind(void)
{
	if (h_trampolines[0].name)
		printf("# unwind: no arch/ARCH/harness-signal.h.j2, or a freestanding harness without libgcc: no trampoline is installed as a restorer\n");
}
#endif
