/*
 * A small dynamic-symbol reader over a mapped vDSO image, doing what a libc
 * does when it looks up a vDSO entry: PT_DYNAMIC, then DT_GNU_HASH or
 * DT_HASH, then DT_VERSYM and DT_VERDEF.  Every access is bounds-checked
 * against the file, so a broken image yields a reason, never a crash.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define BLOOM_BITS	(8 * sizeof(HW(Addr)))

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The SysV ELF hash of the gABI (DT_HASH, vd_hash). */
uint32_t h_elf_hash(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	uint32_t h = 0, top;

	while (*p) {
		h = (h << 4) + *p++;
		top = h & 0xf0000000u;
		if (top)
			h ^= top >> 24;
		h &= ~top;
	}
	return h;
}

/* The GNU hash (DT_GNU_HASH): h = h * 33 + c from 5381. */
uint32_t h_gnu_hash(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	uint32_t h = 5381;

	while (*p)
		h = h * 33 + *p++;
	return h;
}

/* Pointer to [vaddr, vaddr + len) of the image, or NULL when it leaves the file. */
static const void *at(const struct h_image *im, uint64_t vaddr, uint64_t len)
{
	if (vaddr > im->size || len > im->size - vaddr)
		return NULL;
	return im->base + vaddr;
}

static const char *str_at(const struct h_image *im, uint64_t off)
{
	if (!im->strtab || off >= im->strsz)
		return NULL;
	if (!memchr(im->strtab + off, 0, im->strsz - off))
		return NULL;
	return im->strtab + off;
}

const char *h_sym_name(const struct h_image *im, const HW(Sym) *sym)
{
	return str_at(im, sym->st_name);
}

/*
 * Check the DT_GNU_HASH table at file offset off as glibc reads it, so that
 * a lookup only walks what this found sound: the header, bloom filter and
 * buckets inside the file, a bloom filter of a power of two words (glibc
 * masks the index with its size - 1), a bloom shift below the word's bits,
 * each bucket empty or at symoffset or above, and each chain ending (its
 * low bit set) inside the file and, with DT_HASH, inside its nchain
 * symbols.  Without DT_HASH, nsyms becomes the highest index a chain
 * reaches plus one, as for a libc that has only this table.  Every error
 * names the offset of the word at fault.
 */
static int gnu_check(struct h_image *im, uint64_t off, int have_hash, char *err, size_t errlen)
{
	const uint32_t *gh, *buckets, *chain;
	uint32_t nbuckets, symoffset, nbloom, shift, b, idx, top = 0;
	uint64_t at_buckets, at_chain;

	if (off % sizeof(HW(Addr)))
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: not aligned to its %zu-byte bloom words",
			    (unsigned long long)off, sizeof(HW(Addr)));
	gh = at(im, off, 16);
	if (!gh)
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: its 16-byte header runs past the end of the file",
			    (unsigned long long)off);
	nbuckets = gh[0];
	symoffset = gh[1];
	nbloom = gh[2];
	shift = gh[3];
	if (nbuckets == 0)
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: 0 buckets", (unsigned long long)off);
	if (nbloom == 0 || (nbloom & (nbloom - 1)))
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: %u bloom words, not a power of two",
			    (unsigned long long)off, nbloom);
	if (shift >= 32)
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: bloom shift %u, not below 32 (at offset %#llx)",
			    (unsigned long long)off, shift, (unsigned long long)off + 12);
	at_buckets = off + 16 + (uint64_t)nbloom * sizeof(HW(Addr));
	buckets = at(im, at_buckets, (uint64_t)nbuckets * 4);
	if (!buckets)
		return fail(err, errlen, "DT_GNU_HASH at offset %#llx: %u bloom words and %u buckets run past "
			    "the end of the file", (unsigned long long)off, nbloom, nbuckets);
	at_chain = at_buckets + (uint64_t)nbuckets * 4;
	chain = buckets + nbuckets;
	for (b = 0; b < nbuckets; b++) {
		if (buckets[b] == 0)
			continue;
		if (buckets[b] < symoffset)
			return fail(err, errlen, "DT_GNU_HASH at offset %#llx: bucket %u (offset %#llx) holds symbol "
				    "%u, below symoffset %u", (unsigned long long)off, b,
				    (unsigned long long)at_buckets + 4 * b, buckets[b], symoffset);
		for (idx = buckets[b];; idx++) {
			uint64_t w = at_chain + 4 * (uint64_t)(idx - symoffset);

			if (!at(im, w, 4))
				return fail(err, errlen, "DT_GNU_HASH at offset %#llx: the chain of bucket %u runs "
					    "past the end of the file (offset %#llx)", (unsigned long long)off, b,
					    (unsigned long long)w);
			if (have_hash && idx >= im->nsyms)
				return fail(err, errlen, "DT_GNU_HASH at offset %#llx: the chain of bucket %u reaches "
					    "symbol %u (offset %#llx), past DT_HASH's %zu", (unsigned long long)off,
					    b, idx, (unsigned long long)w, im->nsyms);
			if (chain[idx - symoffset] & 1)
				break;
		}
		if (idx > top)
			top = idx;
	}
	im->gnu_hash = gh;
	if (!have_hash)
		im->nsyms = top >= symoffset ? (size_t)top + 1 : symoffset;
	return 0;
}

/* DT_HASH word i, of the image's word size (an 8-byte word's value fits 32 bits, or it is not one). */
static uint32_t hash_at(const struct h_image *im, uint64_t i)
{
	uint64_t w;

	if (im->hash_word == 8) {
		memcpy(&w, (const unsigned char *)im->hash + 8 * i, 8);
		return w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
	}
	return im->hash[i];
}

int h_image_parse(struct h_image *im, const unsigned char *base, size_t size,
		  int elf_class, int elf_data, int machine, char *err, size_t errlen)
{
	const HW(Ehdr) *eh = (const HW(Ehdr) *)base;
	const HW(Phdr) *ph;
	const HW(Dyn) *dyn = NULL, *d;
	uint64_t strtab = 0, symtab = 0, hash = 0, gnu_hash = 0, versym = 0, verdef = 0;
	uint64_t syment = 0, soname = 0, dyn_size = 0;
	int have_soname = 0, have_strtab = 0, have_symtab = 0, have_exec = 0;
	size_t i;

	memset(im, 0, sizeof(*im));
	im->base = base;
	im->size = size;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return fail(err, errlen, "not an ELF file");
	if (eh->e_ident[EI_CLASS] != (elf_class == 64 ? ELFCLASS64 : ELFCLASS32))
		return fail(err, errlen, "EI_CLASS %u, the spec says ELF%d",
			    eh->e_ident[EI_CLASS], elf_class);
	if (eh->e_ident[EI_DATA] != elf_data)
		return fail(err, errlen, "EI_DATA %u, the spec says %d", eh->e_ident[EI_DATA], elf_data);
	if (eh->e_type != ET_DYN)
		return fail(err, errlen, "e_type %u, want ET_DYN", eh->e_type);
	if (eh->e_machine != machine)
		return fail(err, errlen, "e_machine %u, the spec says %d", eh->e_machine, machine);
	if (eh->e_phentsize != sizeof(*ph) ||
	    !(ph = at(im, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph))))
		return fail(err, errlen, "program headers outside the file");

	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			/* The kernel maps the whole file at the text address: vaddr must equal offset. */
			if (ph[i].p_vaddr != ph[i].p_offset)
				return fail(err, errlen, "PT_LOAD at offset %#llx has vaddr %#llx; "
					    "the kernel maps the file flat",
					    (unsigned long long)ph[i].p_offset,
					    (unsigned long long)ph[i].p_vaddr);
			if (ph[i].p_filesz != ph[i].p_memsz)
				return fail(err, errlen, "PT_LOAD at %#llx: memsz %#llx != filesz %#llx",
					    (unsigned long long)ph[i].p_vaddr,
					    (unsigned long long)ph[i].p_memsz,
					    (unsigned long long)ph[i].p_filesz);
			if (!at(im, ph[i].p_offset, ph[i].p_filesz))
				return fail(err, errlen, "PT_LOAD at %#llx runs past the end of the file",
					    (unsigned long long)ph[i].p_offset);
			if (ph[i].p_flags & PF_W)
				return fail(err, errlen, "PT_LOAD at %#llx is writable",
					    (unsigned long long)ph[i].p_vaddr);
			if (ph[i].p_flags & PF_X) {
				im->exec_lo = ph[i].p_vaddr;
				im->exec_hi = ph[i].p_vaddr + ph[i].p_memsz;
				have_exec = 1;
			}
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = at(im, ph[i].p_offset, ph[i].p_filesz);
			dyn_size = ph[i].p_filesz;
			if (!dyn)
				return fail(err, errlen, "PT_DYNAMIC outside the file");
		}
	}
	if (!have_exec)
		return fail(err, errlen, "no executable PT_LOAD");
	if (!dyn)
		return fail(err, errlen, "no PT_DYNAMIC");

	for (d = dyn; (uint64_t)((const unsigned char *)(d + 1) - (const unsigned char *)dyn) <= dyn_size; d++) {
		if (d->d_tag == DT_NULL)
			break;
		switch (d->d_tag) {
		case DT_STRTAB: strtab = d->d_un.d_ptr; have_strtab = 1; break;
		case DT_STRSZ: im->strsz = d->d_un.d_val; break;
		case DT_SYMTAB: symtab = d->d_un.d_ptr; have_symtab = 1; break;
		case DT_SYMENT: syment = d->d_un.d_val; break;
		case DT_HASH: hash = d->d_un.d_ptr; break;
		case DT_GNU_HASH: gnu_hash = d->d_un.d_ptr; break;
		case DT_VERSYM: versym = d->d_un.d_ptr; break;
		case DT_VERDEF: verdef = d->d_un.d_ptr; break;
		case DT_VERDEFNUM: im->verdefnum = d->d_un.d_val; break;
		case DT_SONAME: soname = d->d_un.d_val; have_soname = 1; break;
		default: break;
		}
	}
	if (!have_strtab || !have_symtab)
		return fail(err, errlen, "PT_DYNAMIC lacks DT_STRTAB or DT_SYMTAB");
	if (syment != sizeof(HW(Sym)))
		return fail(err, errlen, "DT_SYMENT %llu, want %zu", (unsigned long long)syment,
			    sizeof(HW(Sym)));
	im->strtab = at(im, strtab, im->strsz);
	if (!im->strtab)
		return fail(err, errlen, "DT_STRTAB/DT_STRSZ outside the file");
	if (have_soname && !(im->soname = str_at(im, soname)))
		return fail(err, errlen, "DT_SONAME outside .dynstr");

	if (hash) {
		im->hash_word = elf_class == 64 && machine == EM_S390 ? 8 : 4;
		im->hash = at(im, hash, 2 * im->hash_word);
		if (!im->hash || !at(im, hash, im->hash_word * (2 + (uint64_t)hash_at(im, 0) + hash_at(im, 1))))
			return fail(err, errlen, "DT_HASH table outside the file");
		im->nsyms = hash_at(im, 1);
	}
	if (gnu_hash && gnu_check(im, gnu_hash, hash != 0, err, errlen) != 0)
		return -1;
	if (!hash && !gnu_hash)
		return fail(err, errlen, "neither DT_HASH nor DT_GNU_HASH");
	im->symtab = at(im, symtab, (uint64_t)im->nsyms * sizeof(HW(Sym)));
	if (!im->symtab)
		return fail(err, errlen, "%zu symbols at DT_SYMTAB run outside the file", im->nsyms);
	if (versym && !(im->versym = at(im, versym, (uint64_t)im->nsyms * sizeof(HW(Half)))))
		return fail(err, errlen, "DT_VERSYM outside the file");
	if (verdef && !(im->verdef = at(im, verdef, sizeof(HW(Verdef)))))
		return fail(err, errlen, "DT_VERDEF outside the file");
	return 0;
}

int h_symbol_version(const struct h_image *im, long idx, const char **vname,
		     uint32_t *vhash, unsigned int *vflags, int *hidden,
		     char *err, size_t errlen)
{
	const unsigned char *p = im->verdef;
	unsigned int ndx;
	size_t i;

	if (!im->versym)
		return fail(err, errlen, "no DT_VERSYM");
	if (!im->verdef)
		return fail(err, errlen, "no DT_VERDEF");
	if (idx < 0 || (size_t)idx >= im->nsyms)
		return fail(err, errlen, "symbol index %ld out of range", idx);
	*hidden = !!(im->versym[idx] & 0x8000);
	ndx = im->versym[idx] & 0x7fff;
	if (ndx <= 1)
		return fail(err, errlen, "versym %u: the symbol is unversioned", ndx);
	for (i = 0; i < im->verdefnum; i++) {
		const HW(Verdef) *vd;
		const HW(Verdaux) *aux;
		uint64_t off = (uint64_t)(p - im->base);

		vd = at(im, off, sizeof(*vd));
		if (!vd)
			return fail(err, errlen, "verdef %zu outside the file", i);
		if (vd->vd_version != VER_DEF_CURRENT)
			return fail(err, errlen, "verdef %zu has vd_version %u", i, vd->vd_version);
		if (vd->vd_ndx == ndx) {
			aux = at(im, off + vd->vd_aux, sizeof(*aux));
			if (!aux || !(*vname = str_at(im, aux->vda_name)))
				return fail(err, errlen, "verdef %zu: verdaux name outside the file", i);
			*vhash = vd->vd_hash;
			*vflags = vd->vd_flags;
			return 0;
		}
		if (vd->vd_next == 0)
			break;
		p += vd->vd_next;
	}
	return fail(err, errlen, "versym %u: no verdef with that index", ndx);
}

/* Does symbol idx carry version node `version`? */
static int has_version(const struct h_image *im, long idx, const char *version)
{
	const char *vname;
	uint32_t vhash;
	unsigned int vflags;
	int hidden;
	char err[8];

	if (h_symbol_version(im, idx, &vname, &vhash, &vflags, &hidden, err, sizeof(err)) != 0)
		return 0;
	return strcmp(vname, version) == 0;
}

/* A defined symbol called name? */
static int matches(const struct h_image *im, uint32_t idx, const char *name)
{
	const char *s;

	if (idx >= im->nsyms)
		return 0;
	s = h_sym_name(im, &im->symtab[idx]);
	return s && im->symtab[idx].st_shndx != SHN_UNDEF && strcmp(s, name) == 0;
}

long h_lookup_sysv(const struct h_image *im, const char *name, const char *version)
{
	uint32_t nbucket, nchain, idx, steps = 0;
	long first = -1;

	if (!im->hash || hash_at(im, 0) == 0)
		return -1;
	nbucket = hash_at(im, 0);
	nchain = hash_at(im, 1);
	for (idx = hash_at(im, 2 + h_elf_hash(name) % nbucket); idx != STN_UNDEF && idx < nchain;
	     idx = hash_at(im, 2 + (uint64_t)nbucket + idx)) {
		if (++steps > nchain)
			break;		/* a loop in the chain */
		if (!matches(im, idx, name))
			continue;
		if (has_version(im, idx, version))
			return idx;
		if (first < 0)
			first = idx;
	}
	return first;
}

long h_lookup_gnu(const struct h_image *im, const char *name, const char *version)
{
	const uint32_t *gh = im->gnu_hash;
	const HW(Addr) *bloom;
	const uint32_t *buckets, *chain;
	uint32_t nbuckets, symoffset, nbloom, shift, h1, idx;
	HW(Addr) word, mask;
	long first = -1;

	if (!gh)
		return -1;
	nbuckets = gh[0];
	symoffset = gh[1];
	nbloom = gh[2];
	shift = gh[3];
	bloom = at(im, (uint64_t)((const unsigned char *)gh - im->base) + 16,
		   (uint64_t)nbloom * sizeof(HW(Addr)) + (uint64_t)nbuckets * 4);
	if (!bloom)
		return -1;
	buckets = (const uint32_t *)(bloom + nbloom);
	chain = buckets + nbuckets;

	h1 = h_gnu_hash(name);
	word = bloom[(h1 / BLOOM_BITS) % nbloom];
	mask = ((HW(Addr))1 << (h1 % BLOOM_BITS)) |
	       ((HW(Addr))1 << ((h1 >> shift) % BLOOM_BITS));
	if ((word & mask) != mask)
		return -1;
	idx = buckets[h1 % nbuckets];
	if (idx < symoffset)
		return -1;
	for (;; idx++) {
		uint32_t h2;

		if (idx >= im->nsyms ||
		    !at(im, (uint64_t)((const unsigned char *)&chain[idx - symoffset] - im->base), 4))
			break;
		h2 = chain[idx - symoffset];
		if ((h1 | 1) == (h2 | 1) && matches(im, idx, name)) {
			if (has_version(im, idx, version))
				return idx;
			if (first < 0)
				first = idx;
		}
		if (h2 & 1)
			break;
	}
	return first;
}

int h_section(const unsigned char *base, size_t size, const char *name, size_t *off, size_t *len)
{
	const HW(Ehdr) *eh = (const HW(Ehdr) *)base;
	const HW(Shdr) *sh, *names;
	size_t i;

	if (size < sizeof(*eh) || eh->e_shentsize != sizeof(*sh) || eh->e_shstrndx >= eh->e_shnum ||
	    eh->e_shoff > size || (size - eh->e_shoff) / sizeof(*sh) < eh->e_shnum)
		return -1;
	sh = (const HW(Shdr) *)(base + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (names->sh_offset > size || names->sh_size > size - names->sh_offset)
		return -1;
	for (i = 0; i < eh->e_shnum; i++) {
		const char *n = (const char *)base + names->sh_offset + sh[i].sh_name;

		if (sh[i].sh_name >= names->sh_size ||
		    !memchr(n, 0, names->sh_size - sh[i].sh_name) || strcmp(n, name) != 0)
			continue;
		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
			return -1;
		*off = sh[i].sh_offset;
		*len = sh[i].sh_size;
		return 0;
	}
	return -1;
}
