/* Freestanding harness: open (see fs.h). */
#ifndef FS_FCNTL_H
#define FS_FCNTL_H

#include <sys/types.h>

#define O_RDONLY	00
#define O_WRONLY	01
#define O_RDWR		02
#ifdef __sparc__
/* SPARC's own values (arch/sparc/include/uapi/asm/fcntl.h). */
#define O_APPEND	0x0008
#define O_CREAT		0x0200
#define O_TRUNC		0x0400
#define O_CLOEXEC	0x400000
#else
#define O_CREAT		0100
#define O_TRUNC		01000
#define O_APPEND	02000
#define O_CLOEXEC	02000000
#endif
#define AT_FDCWD	(-100)

int open(const char *path, int flags, ...);

#endif
