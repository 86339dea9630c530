/*
 * vdsogen test harness: types shared by the generated harness_target.h, the
 * ELF reader (elf.c) and the checks (internal.h and the other files of harness/).
 *
 * The harness is built for the target it tests (natively or for qemu-user),
 * so the image's byte order is the harness's own; its ELF class is too,
 * except for an x32 image, which a 64-bit harness runs.  HW() names the
 * image's structures; the driver passes -DH_IMAGE_CLASS.
 */
#ifndef VDSOGEN_HARNESS_H
#define VDSOGEN_HARNESS_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#if H_IMAGE_CLASS == 32
#define HW(type)	Elf32_##type
#elif H_IMAGE_CLASS == 64
#define HW(type)	Elf64_##type
#else
#error "H_IMAGE_CLASS must be 32 or 64"
#endif

/*
 * What an entry point handed back: the return register and the convention's
 * error flag where it has one (CR0.SO for cr0-so; 0 elsewhere).  Only the
 * h_ret_*() functions of harness_target.h interpret it.
 */
struct h_ret {
	long	raw;
	int	flag;
};

enum h_kind {
	H_KIND_EXPORT,		/* an [[export]]: its impl is called by the checks */
	H_KIND_ALIAS,		/* another name of an export, same address */
	H_KIND_TRAMPOLINE,	/* a signal trampoline: only its bytes are checked */
};

/* One exported symbol, from the spec. */
struct h_symbol {
	const char	*name;
	const char	*version;	/* expected verdef name */
	int		impl;		/* its function: IMPL_* index in h_fn[]; -1 for trampolines */
	const char	*primary;	/* the export an alias belongs to (itself otherwise) */
	int		weak;		/* expected binding STB_WEAK, else STB_GLOBAL */
	int		kind;		/* enum h_kind */
	int		trampoline;	/* index in h_trampolines[], or -1 */
};

/* Instruction words at and right before a trampoline symbol. */
struct h_trampoline {
	const char	*name;
	const uint32_t	*lead;
	size_t		nlead;
	const uint32_t	*words;
	size_t		nwords;
	size_t		match;		/* bytes of words unwinders compare (the catalogue's `match`) */
};

/* A syscall number from the spec, and libc's SYS_ number (-1: libc has none). */
struct h_sysnr {
	const char	*name;
	long		spec;
	long		libc;
};

/* The dynamic-linking view of a mapped image. */
struct h_image {
	const unsigned char	*base;		/* file offset 0 == vaddr 0 */
	size_t			size;		/* file size */
	uint64_t		exec_lo, exec_hi;	/* vaddr range of the executable PT_LOAD */
	const char		*strtab;
	size_t			strsz;
	const HW(Sym)		*symtab;
	size_t			nsyms;
	const uint32_t		*hash;		/* DT_HASH */
	unsigned int		hash_word;	/* its word size: 8 on s390x, where GNU ld writes 64-bit words, else 4 */
	const uint32_t		*gnu_hash;	/* DT_GNU_HASH */
	const HW(Half)	*versym;
	const unsigned char	*verdef;
	size_t			verdefnum;
	const char		*soname;
};

uint32_t h_elf_hash(const char *name);
uint32_t h_gnu_hash(const char *name);

/* 0, or -1 with a one-line reason in err. */
int h_image_parse(struct h_image *im, const unsigned char *base, size_t size,
		  int elf_class, int elf_data, int machine, char *err, size_t errlen);

/* Symbol index of name (preferring the one defined at version), or -1. */
long h_lookup_sysv(const struct h_image *im, const char *name, const char *version);
long h_lookup_gnu(const struct h_image *im, const char *name, const char *version);

/* The symbol's version node; 0, or -1 with a reason in err. */
int h_symbol_version(const struct h_image *im, long idx, const char **vname,
		     uint32_t *vhash, unsigned int *vflags, int *hidden,
		     char *err, size_t errlen);

const char *h_sym_name(const struct h_image *im, const HW(Sym) *sym);

/* The file range of the section called name, from the section headers: 0, or -1. */
int h_section(const unsigned char *base, size_t size, const char *name, size_t *off, size_t *len);

#endif /* VDSOGEN_HARNESS_H */
