/* Freestanding harness: the ABI's syscall numbers, SYS_name (see fs.h). */
#ifndef FS_SYS_SYSCALL_H
#define FS_SYS_SYSCALL_H

#include "fs_arch_syscall.h"

#endif
