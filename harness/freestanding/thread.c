/*
 * Freestanding harness: pthread_create and pthread_join on clone(2) (see
 * fs.h).  Each thread gets a mapped stack and a TLS block of its own; the
 * kernel clears the thread's tid word and wakes its futex when the thread
 * exits (CLONE_CHILD_CLEARTID), which is what join waits for.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fs.h"

#define STACK_SIZE	(256 * 1024)

#define CLONE_VM		0x00000100
#define CLONE_FS		0x00000200
#define CLONE_FILES		0x00000400
#define CLONE_SIGHAND		0x00000800
#define CLONE_THREAD		0x00010000
#define CLONE_SYSVSEM		0x00040000
#define CLONE_SETTLS		0x00080000
#define CLONE_PARENT_SETTID	0x00100000
#define CLONE_CHILD_CLEARTID	0x00200000

#define FUTEX_WAIT		0

struct fs_thread {
	volatile int	tid;		/* 0 once the thread has exited */
	void		*(*fn)(void *);
	void		*arg;
	void		*ret;
	void		*stack;
	void		*tls;
	size_t		tls_size;
};

/* arch/ARCH/clone.S: runs fn(arg) on stack, then exits the thread. */
long fs_clone(unsigned long flags, void *stack, int *ptid, int *ctid, void *tls,
	      int (*fn)(void *), void *arg);

static int thread_main(void *p)
{
	struct fs_thread *t = p;

	t->ret = t->fn(t->arg);
	return 0;
}

int pthread_create(pthread_t *tp, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			      CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	struct fs_thread *t;
	unsigned char *mem;
	void *tls;
	long r;

	(void)attr;
	mem = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return EAGAIN;
	/* The descriptor sits at the top of its own stack. */
	t = (struct fs_thread *)(mem + STACK_SIZE) - 1;
	t->fn = fn;
	t->arg = arg;
	t->stack = mem;
	tls = fs_tls_new(&t->tls, &t->tls_size);
	if (tls)
		flags |= CLONE_SETTLS;
	r = fs_clone(flags, (void *)((uintptr_t)t & ~(uintptr_t)15), (int *)&t->tid, (int *)&t->tid, tls,
		     thread_main, t);
	if (r < 0) {
		if (t->tls)
			munmap(t->tls, t->tls_size);
		munmap(mem, STACK_SIZE);
		return (int)-r;
	}
	*tp = t;
	return 0;
}

int pthread_join(pthread_t t, void **ret)
{
	int tid;

	while ((tid = t->tid) != 0)
		fs_sys4(SYS_futex, &t->tid, FUTEX_WAIT, tid, NULL);
	if (ret)
		*ret = t->ret;
	if (t->tls)
		munmap(t->tls, t->tls_size);
	munmap(t->stack, STACK_SIZE);
	return 0;
}
