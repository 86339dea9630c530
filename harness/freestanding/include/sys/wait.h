/* Freestanding harness: waiting for a child (see fs.h). */
#ifndef FS_SYS_WAIT_H
#define FS_SYS_WAIT_H

#include <sys/types.h>

#define WIFEXITED(s)	(((s) & 0x7f) == 0)
#define WEXITSTATUS(s)	(((s) >> 8) & 0xff)

pid_t waitpid(pid_t pid, int *status, int options);

#endif
