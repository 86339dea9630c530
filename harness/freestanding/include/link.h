/* Freestanding harness: ElfW() of the process's own class (see fs.h). */
#ifndef FS_LINK_H
#define FS_LINK_H

#include <elf.h>

#if __SIZEOF_POINTER__ == 8
#define ElfW(type)	Elf64_##type
#else
#define ElfW(type)	Elf32_##type
#endif

#endif
