/* Freestanding harness: fstat, by statx (see fs.h). */
#ifndef FS_SYS_STAT_H
#define FS_SYS_STAT_H

#include <sys/types.h>

/* The fields the harness reads; fstat fills them from statx. */
struct stat {
	mode_t		st_mode;
	off_t		st_size;
};

#define S_IFMT		0170000
#define S_IFREG		0100000
#define S_ISREG(m)	(((m) & S_IFMT) == S_IFREG)

int fstat(int fd, struct stat *st);

#endif
