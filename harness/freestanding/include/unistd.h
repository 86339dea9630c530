/* Freestanding harness: POSIX calls (see fs.h). */
#ifndef FS_UNISTD_H
#define FS_UNISTD_H

#include <sys/types.h>

#define STDIN_FILENO	0
#define STDOUT_FILENO	1
#define STDERR_FILENO	2

#define _SC_PAGESIZE	30
#define _SC_NPROCESSORS_ONLN	84

ssize_t read(int fd, void *buf, size_t n);
ssize_t write(int fd, const void *buf, size_t n);
int close(int fd);
_Noreturn void _exit(int status);
unsigned int alarm(unsigned int secs);
pid_t getpid(void);
pid_t gettid(void);
int getpagesize(void);
long sysconf(int name);
long syscall(long nr, ...);
pid_t fork(void);
int pipe(int fds[2]);

#endif
