/*
 * Freestanding harness: the ELF structures and constants the harness reads
 * (see fs.h), from the System V gABI.
 */
#ifndef FS_ELF_H
#define FS_ELF_H

#include <stdint.h>

typedef uint16_t	Elf32_Half, Elf64_Half;
typedef uint32_t	Elf32_Word, Elf64_Word;
typedef int32_t		Elf32_Sword, Elf64_Sword;
typedef uint64_t	Elf32_Xword, Elf64_Xword;
typedef int64_t		Elf32_Sxword, Elf64_Sxword;
typedef uint32_t	Elf32_Addr, Elf32_Off;
typedef uint64_t	Elf64_Addr, Elf64_Off;
typedef uint16_t	Elf32_Section, Elf64_Section;
typedef Elf32_Half	Elf32_Versym;
typedef Elf64_Half	Elf64_Versym;

#define EI_NIDENT	16

/* Spelled out per class: the two order their members differently. */
typedef struct {
	unsigned char	e_ident[EI_NIDENT];
	Elf32_Half	e_type, e_machine;
	Elf32_Word	e_version;
	Elf32_Addr	e_entry;
	Elf32_Off	e_phoff, e_shoff;
	Elf32_Word	e_flags;
	Elf32_Half	e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
} Elf32_Ehdr;

typedef struct {
	unsigned char	e_ident[EI_NIDENT];
	Elf64_Half	e_type, e_machine;
	Elf64_Word	e_version;
	Elf64_Addr	e_entry;
	Elf64_Off	e_phoff, e_shoff;
	Elf64_Word	e_flags;
	Elf64_Half	e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
} Elf64_Ehdr;

typedef struct {
	Elf32_Word	p_type;
	Elf32_Off	p_offset;
	Elf32_Addr	p_vaddr, p_paddr;
	Elf32_Word	p_filesz, p_memsz, p_flags, p_align;
} Elf32_Phdr;

typedef struct {
	Elf64_Word	p_type, p_flags;
	Elf64_Off	p_offset;
	Elf64_Addr	p_vaddr, p_paddr;
	Elf64_Xword	p_filesz, p_memsz, p_align;
} Elf64_Phdr;

typedef struct {
	Elf32_Word	sh_name, sh_type, sh_flags;
	Elf32_Addr	sh_addr;
	Elf32_Off	sh_offset;
	Elf32_Word	sh_size, sh_link, sh_info, sh_addralign, sh_entsize;
} Elf32_Shdr;

typedef struct {
	Elf64_Word	sh_name, sh_type;
	Elf64_Xword	sh_flags;
	Elf64_Addr	sh_addr;
	Elf64_Off	sh_offset;
	Elf64_Xword	sh_size;
	Elf64_Word	sh_link, sh_info;
	Elf64_Xword	sh_addralign, sh_entsize;
} Elf64_Shdr;

typedef struct {
	Elf32_Word	st_name;
	Elf32_Addr	st_value;
	Elf32_Word	st_size;
	unsigned char	st_info, st_other;
	Elf32_Section	st_shndx;
} Elf32_Sym;

typedef struct {
	Elf64_Word	st_name;
	unsigned char	st_info, st_other;
	Elf64_Section	st_shndx;
	Elf64_Addr	st_value;
	Elf64_Xword	st_size;
} Elf64_Sym;

typedef struct {
	Elf32_Sword	d_tag;
	union {
		Elf32_Word	d_val;
		Elf32_Addr	d_ptr;
	} d_un;
} Elf32_Dyn;

typedef struct {
	Elf64_Sxword	d_tag;
	union {
		Elf64_Xword	d_val;
		Elf64_Addr	d_ptr;
	} d_un;
} Elf64_Dyn;

/* Version definitions: the same shape in both classes. */
#define FS_ELF_VERDEF(B)					\
typedef struct {						\
	Elf##B##_Half	vd_version, vd_flags, vd_ndx, vd_cnt;	\
	Elf##B##_Word	vd_hash, vd_aux, vd_next;		\
} Elf##B##_Verdef;						\
typedef struct {						\
	Elf##B##_Word	vda_name, vda_next;			\
} Elf##B##_Verdaux;
FS_ELF_VERDEF(32)
FS_ELF_VERDEF(64)
#undef FS_ELF_VERDEF

#define ELFMAG		"\177ELF"
#define SELFMAG		4
#define EI_CLASS	4
#define EI_DATA		5
#define EI_VERSION	6
#define EI_OSABI	7
#define ELFCLASS32	1
#define ELFCLASS64	2
#define ELFDATA2LSB	1
#define ELFDATA2MSB	2
#define EV_CURRENT	1

#define ET_EXEC		2
#define ET_DYN		3

#define EM_386		3
#define EM_MIPS		8
#define EM_PPC		20
#define EM_PPC64	21
#define EM_S390		22
#define EM_ARM		40
#define EM_X86_64	62
#define EM_AARCH64	183
#define EM_RISCV	243
#define EM_LOONGARCH	258

#define PT_NULL		0
#define PT_LOAD		1
#define PT_DYNAMIC	2
#define PT_INTERP	3
#define PT_NOTE		4
#define PT_PHDR		6
#define PT_TLS		7
#define PT_GNU_EH_FRAME	0x6474e550
#define PT_GNU_STACK	0x6474e551
#define PF_X		1
#define PF_W		2
#define PF_R		4

#define DT_NULL		0
#define DT_HASH		4
#define DT_STRTAB	5
#define DT_SYMTAB	6
#define DT_STRSZ	10
#define DT_SYMENT	11
#define DT_SONAME	14
#define DT_GNU_HASH	0x6ffffef5
#define DT_VERSYM	0x6ffffff0
#define DT_VERDEF	0x6ffffffc
#define DT_VERDEFNUM	0x6ffffffd

#define SHT_NULL	0
#define SHT_PROGBITS	1
#define SHT_SYMTAB	2
#define SHT_STRTAB	3
#define SHT_RELA	4
#define SHT_HASH	5
#define SHT_DYNAMIC	6
#define SHT_NOTE	7
#define SHT_NOBITS	8
#define SHT_REL		9
#define SHT_DYNSYM	11
#define SHT_GNU_HASH	0x6ffffff6
#define SHT_GNU_verdef	0x6ffffffd
#define SHT_GNU_versym	0x6fffffff
#define SHF_WRITE	0x1
#define SHF_ALLOC	0x2
#define SHF_EXECINSTR	0x4

#define STN_UNDEF	0
#define SHN_UNDEF	0
#define SHN_ABS		0xfff1

#define STB_LOCAL	0
#define STB_GLOBAL	1
#define STB_WEAK	2
#define STT_NOTYPE	0
#define STT_OBJECT	1
#define STT_FUNC	2
#define STT_SECTION	3
#define STT_TLS		6
#define STT_GNU_IFUNC	10
#define ELF32_ST_BIND(i)	((i) >> 4)
#define ELF32_ST_TYPE(i)	((i) & 0xf)
#define ELF64_ST_BIND(i)	((i) >> 4)
#define ELF64_ST_TYPE(i)	((i) & 0xf)

#define VER_DEF_CURRENT	1
#define VER_FLG_BASE	0x1
#define VERSYM_HIDDEN	0x8000

#define AT_SYSINFO_EHDR	33

#endif
