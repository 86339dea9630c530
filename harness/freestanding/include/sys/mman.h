/* Freestanding harness: memory mappings (see fs.h). */
#ifndef FS_SYS_MMAN_H
#define FS_SYS_MMAN_H

#include <sys/types.h>

#define PROT_NONE	0
#define PROT_READ	1
#define PROT_WRITE	2
#define PROT_EXEC	4

#define MAP_SHARED	0x01
#define MAP_PRIVATE	0x02
#define MAP_FIXED	0x10
#define MAP_ANONYMOUS	0x20
#ifdef __sparc__
#define MAP_NORESERVE	0x40		/* SPARC's (arch/sparc/include/uapi/asm/mman.h) */
#else
#define MAP_NORESERVE	0x4000
#endif
#define MAP_FIXED_NOREPLACE	0x100000
#define MAP_FAILED	((void *)-1)
#define MADV_WIPEONFORK	18

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int munmap(void *addr, size_t len);
int mprotect(void *addr, size_t len, int prot);
int madvise(void *addr, size_t len, int advice);

#endif
