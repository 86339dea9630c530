/* Freestanding harness: threads, as many as it starts (see fs.h). */
#ifndef FS_PTHREAD_H
#define FS_PTHREAD_H

#include <sys/types.h>

typedef struct fs_thread *pthread_t;
typedef struct { int unused; } pthread_attr_t;

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int pthread_join(pthread_t t, void **ret);

#endif
