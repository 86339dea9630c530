/* Freestanding harness: open (see fs.h). */
#ifndef FS_FCNTL_H
#define FS_FCNTL_H

#include <sys/types.h>

#define O_RDONLY	00
#define O_WRONLY	01
#define O_RDWR		02
#define O_CREAT		0100
#define O_TRUNC		01000
#define O_APPEND	02000
#define O_CLOEXEC	02000000
#define AT_FDCWD	(-100)

int open(const char *path, int flags, ...);

#endif
