/* Freestanding harness: CPU affinity (see fs.h). */
#ifndef FS_SCHED_H
#define FS_SCHED_H

#include <sys/types.h>

#define CPU_SETSIZE	1024

typedef struct {
	unsigned long	bits[CPU_SETSIZE / (8 * sizeof(unsigned long))];
} cpu_set_t;

#define FS_CPU_WORD(c)		((unsigned int)(c) / (8 * sizeof(unsigned long)))
#define FS_CPU_BIT(c)		(1UL << ((unsigned int)(c) % (8 * sizeof(unsigned long))))
#define CPU_ZERO(s)		__builtin_memset((s), 0, sizeof(cpu_set_t))
#define CPU_SET(c, s)		((s)->bits[FS_CPU_WORD(c)] |= FS_CPU_BIT(c))
#define CPU_CLR(c, s)		((s)->bits[FS_CPU_WORD(c)] &= ~FS_CPU_BIT(c))
#define CPU_ISSET(c, s)		(((s)->bits[FS_CPU_WORD(c)] & FS_CPU_BIT(c)) != 0)

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set);
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set);
int sched_getcpu(void);
int sched_yield(void);

#endif
