/* Freestanding harness: the C library's basic types (see fs.h). */
#ifndef FS_SYS_TYPES_H
#define FS_SYS_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef long		ssize_t;
typedef long		off_t;
typedef int		pid_t;
typedef unsigned int	uid_t;
typedef unsigned int	mode_t;
/* 64-bit everywhere: 32-bit ABIs without the old time syscalls (rv32) have only the time64 ones. */
typedef long long	time_t;
typedef int		clockid_t;

#endif
