/* Freestanding harness: the auxiliary vector (see fs.h). */
#ifndef FS_SYS_AUXV_H
#define FS_SYS_AUXV_H

#define AT_NULL		0
#define AT_PHDR		3
#define AT_PHENT	4
#define AT_PHNUM	5
#define AT_PAGESZ	6
#define AT_HWCAP	16
#define AT_SYSINFO_EHDR	33

unsigned long getauxval(unsigned long type);

#endif
