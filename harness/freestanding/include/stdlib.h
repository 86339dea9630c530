/* Freestanding harness: what it uses of stdlib (see fs.h). */
#ifndef FS_STDLIB_H
#define FS_STDLIB_H

#include <stddef.h>

#define EXIT_SUCCESS	0
#define EXIT_FAILURE	1

long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
_Noreturn void exit(int status);
_Noreturn void abort(void);
char *getenv(const char *name);		/* start.c: the environment the kernel passed */

#endif
