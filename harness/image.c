/*
 * vdsogen test harness: the image, mapped as the kernel maps a vDSO, and
 * its exports resolved as a libc resolves them (DT_GNU_HASH and DT_HASH,
 * versym, verdef name and vd_hash): the map, image, symbol.NAME,
 * trampoline.NAME and syscall_numbers checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* A 32-bit image in a 64-bit harness (x32) lives below 4 GiB, as in its own tasks. */
#if H_IMAGE_CLASS == 32 && UINTPTR_MAX > 0xffffffffU && defined(MAP_32BIT)
#define MAP_LOW		MAP_32BIT
#else
#define MAP_LOW		0
#endif

/* arm64's guarded pages (<asm/mman.h>), which a libc's headers may lack. */
#if H_TEXT_BTI && !defined(PROT_BTI)
#define PROT_BTI	0x10
#endif

unsigned char *h_data;
unsigned char *h_text;
size_t h_image_size;
int h_text_guarded;
int h_text_unbuilt;
static struct h_image h_im;

int map_image(const char *path)
{
	const size_t ps = VDSO_PAGE_SIZE;
	size_t data_len = (size_t)VDSO_DATA_PAGES * ps, text_len, total;
	unsigned char *res, *start, *end;
	struct stat st;
	int fd, unbuilt = 0;		/* an image not built for BTI: the driver says so */

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
	res = mmap(NULL, total + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_LOW, -1, 0);
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
#if H_TEST_COUNTER
	/* A test build's injected counter lives in the guard page's place. */
	if (mmap(start - ps, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		report_fail("map", "test counter page at %p: %s", (void *)(start - ps), strerror(errno));
		close(fd);
		return -1;
	}
#endif
	h_text = mmap(start + data_len, text_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
	close(fd);
	if (h_text == MAP_FAILED) {
		report_fail("map", "image at %p: %s", (void *)(start + data_len), strerror(errno));
		return -1;
	}
#ifdef HARNESS_HAVE_PATCH
	{
		char msg[160];
		int apply = getenv("VDSOGEN_HARNESS_NO_PATCH") == NULL;

		if (h_arch_patch(h_text, h_image_size, apply, msg, sizeof(msg)) != 0) {
			report_fail("patch", "%s: %s", path, msg);
			return -1;
		}
		printf("# patch: %s%s\n", msg, apply ? "" : " (VDSOGEN_HARNESS_NO_PATCH: none applied)");
		report_ok("patch");
	}
#endif
#if H_TEXT_BTI
	unbuilt = getenv("VDSOGEN_HARNESS_UNGUARDED") != NULL;
	/*
	 * Guarded, as a kernel built with BTI maps it.  A CPU without BTI (or
	 * qemu's -cpu without it: [toolchain] qemu_cpu) refuses PROT_BTI with
	 * EINVAL; there the text is mapped unguarded, as such a kernel maps
	 * it, and the bti check reads the landing pads instead of calling them.
	 * An image not built for BTI (no landing pad, as a kernel without BTI
	 * builds it) is mapped unguarded too: the driver says so
	 * (VDSOGEN_HARNESS_UNGUARDED).
	 */
	/* A kernel's image (VDSOGEN_HARNESS_KERNELS) needs no landing pad then; vdsogen's, built for BTI, do. */
	h_text_unbuilt = unbuilt && getenv("VDSOGEN_HARNESS_KERNELS") != NULL;
	if (unbuilt)
		printf("# the image is not built for BTI: mapped unguarded, as a kernel without BTI maps it\n");
	else if (mprotect(h_text, text_len, PROT_READ | PROT_EXEC | PROT_BTI) == 0)
		h_text_guarded = 1;
	else if (errno != EINVAL) {
		report_fail("map", "image at %p: mprotect with PROT_BTI: %s", (void *)h_text, strerror(errno));
		return -1;
	}
#endif
	if (!h_text_guarded && mprotect(h_text, text_len, PROT_READ | PROT_EXEC) != 0) {
		report_fail("map", "image at %p: mprotect: %s", (void *)h_text, strerror(errno));
		return -1;
	}
	printf("# %s: %zu bytes at %p%s, %d data pages of %zu bytes at %p\n", path, h_image_size, (void *)h_text,
	       h_text_guarded ? " (guarded: PROT_BTI)" : H_TEXT_BTI && !unbuilt ? " (PROT_BTI refused: no BTI here)" : "",
	       VDSO_DATA_PAGES, ps, (void *)h_data);
	report_ok("map");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Resolving the exports                                               */

void *h_fn[H_NIMPL + 1];
static uintptr_t h_addr[sizeof(h_symbols) / sizeof(h_symbols[0])];

/*
 * A kernel's image (one vdsogen did not build) may carry any soname its ABI's
 * kernels use, which the driver lists in VDSOGEN_HARNESS_SONAMES.
 */
static int abi_soname(const char *soname)
{
	const char *list = getenv("VDSOGEN_HARNESS_SONAMES"), *end;
	size_t n = strlen(soname);

	while (list && *list) {
		end = strchr(list, ' ');
		if (!end)
			end = list + strlen(list);
		if ((size_t)(end - list) == n && strncmp(list, soname, n) == 0)
			return 1;
		list = *end ? end + 1 : end;
	}
	return 0;
}

int check_image(void)
{
	char err[256];

	if (h_image_parse(&h_im, h_text, h_image_size, H_IMAGE_CLASS, H_ELF_DATA, H_ELF_MACHINE,
			  err, sizeof(err)) != 0) {
		report_fail("image", "%s", err);
		return -1;
	}
	if (!h_im.soname || (strcmp(h_im.soname, H_SONAME) != 0 && !abi_soname(h_im.soname))) {
		report_fail("image", "DT_SONAME %s, the spec says %s",
			    h_im.soname ? h_im.soname : "missing", H_SONAME);
		return 0;
	}
	if ((!H_HASH_SYSV && h_im.hash) || (!H_HASH_GNU && h_im.gnu_hash)) {
		report_fail("image", "%s present, the ABI's vDSO has %s only (hash_styles)",
			    !H_HASH_SYSV && h_im.hash ? "DT_HASH" : "DT_GNU_HASH", H_HASH_TABLES);
		return 0;
	}
	printf("# symbols: found through %s, as glibc finds them%s\n",
	       h_im.gnu_hash ? "DT_GNU_HASH" : "DT_HASH",
	       h_im.gnu_hash && h_im.hash ? "; DT_HASH must find the same" :
	       h_im.gnu_hash ? " (no DT_HASH)" : " (no DT_GNU_HASH)");
	report_ok("image");
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
	const HW(Sym) *sym;
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
	/*
	 * Found through every table the image has, the same symbol through
	 * both.  A table the image lacks is no failure here: glibc takes
	 * DT_GNU_HASH and only without it DT_HASH, and Linux links some
	 * vDSOs with one table only (arm64 has only DT_HASH in 6.1, only
	 * DT_GNU_HASH from 6.11).  Whether vdsogen's own images carry every
	 * table of their ABI is `vdsogen check`'s (rules X001, X002).
	 */
	if (g < 0 && h_im.gnu_hash)
		chk_fail(&k, "not found through DT_GNU_HASH");
	if (h < 0 && h_im.hash)
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
	if (s->kind == H_KIND_EXPORT && !h_fn[s->impl])
		h_fn[s->impl] = (void *)h_addr[i];
	chk_end(&k);
}

void check_symbols(void)
{
	long i;

	for (i = 0; h_symbols[i].name; i++)
		check_symbol(i);
}

void check_trampolines(void)
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
#if H_ELF_MACHINE == 40
		off &= ~(uint64_t)1;	/* EM_ARM: a Thumb symbol's address is odd */
#endif
		lead_off = off - 4 * t->nlead;
		if (off < 4 * t->nlead || off + 4 * t->nwords > h_image_size) {
			chk_fail(&k, "the words around %#llx leave the image", (unsigned long long)off);
			chk_end(&k);
			continue;
		}
		/* The bytes unwinders compare: the rest of a last word (i386's nop after int $0x80) may differ. */
		for (n = 0; n < t->nwords; n++) {
			size_t cmp = t->match - 4 * n < 4 ? t->match - 4 * n : 4;

			memcpy(&w, h_text + off + 4 * n, 4);
			if (4 * n < t->match && memcmp(h_text + off + 4 * n, &t->words[n], cmp) != 0)
				chk_fail(&k, "word %zu at the symbol is %#010x, want %#010x%s", n, w, t->words[n],
					 cmp < 4 ? " (its compared bytes)" : "");
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

int check_syscall_numbers(void)
{
	const struct h_sysnr *s;
	struct chk k;
	int bad;

	chk_start(&k, "syscall_numbers");
	for (s = h_sysnrs; s->name; s++)
		if (s->libc >= 0 && s->libc != s->spec)
			chk_fail(&k, "%s is %ld in the spec, %ld in the C library's headers",
				 s->name, s->spec, s->libc);
	bad = k.failures != 0;
	chk_end(&k);
	return bad ? -1 : 0;
}
