/*
 * Freestanding harness: from the kernel's initial stack to main(), and the
 * thread-local storage of the process and of each thread it starts.
 */
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs.h"

int main(int argc, char **argv);
_Noreturn void fs_start(long *sp);

const unsigned long *fs_auxv;
static char **fs_environ;	/* envp, for getenv */

/* The executable's PT_TLS: the initial image of every thread's block. */
static const ElfW(Phdr) *tls_phdr;

char *getenv(const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = fs_environ; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

unsigned long getauxval(unsigned long type)
{
	const unsigned long *a;

	for (a = fs_auxv; a && a[0] != AT_NULL; a += 2)
		if (a[0] == type)
			return a[1];
	return 0;
}

static size_t tls_align(void)
{
	return tls_phdr->p_align > 16 ? tls_phdr->p_align : 16;
}

/*
 * A fresh TLS block: mapped (its mapping in *block, *size), the initial
 * image copied in, the rest zero.  Returns what the thread pointer holds.
 * The block starts at the thread pointer plus the image's misalignment
 * within its own alignment, which is where the linker's local-exec
 * offsets put it.
 */
void *fs_tls_new(void **block, size_t *size)
{
	size_t align, skew;
	unsigned char *p, *tp;

	*block = NULL;
	*size = 0;
	if (!tls_phdr)
		return NULL;
	align = tls_align();
	skew = tls_phdr->p_vaddr & (tls_phdr->p_align ? tls_phdr->p_align - 1 : 0);
	*size = FS_TLS_TCB_SIZE + skew + tls_phdr->p_memsz + align;
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	*block = p;
	tp = (unsigned char *)(((uintptr_t)p + FS_TLS_TCB_SIZE + align - 1) & ~(uintptr_t)(align - 1));
	memcpy(tp + skew, (const void *)tls_phdr->p_vaddr, tls_phdr->p_filesz);
#ifdef FS_TLS_TCB_AT_TP
	/* The thread pointer at the TCB, the block max(TCB, p_align) above it (SuperH); align leaves room. */
	tp -= tls_phdr->p_align > FS_TLS_TCB_SIZE ? tls_phdr->p_align : FS_TLS_TCB_SIZE;
#endif
#ifdef FS_TLS_VARIANT_II
	/*
	 * Variant II (SPARC): the thread pointer right above the block, from
	 * which GNU ld's offsets reach back p_memsz rounded up to p_align (the
	 * segment starts aligned: skew is 0).
	 */
	tp += (tls_phdr->p_memsz + (tls_phdr->p_align ? tls_phdr->p_align : 1) - 1) &
	      ~(uintptr_t)(tls_phdr->p_align ? tls_phdr->p_align - 1 : 0);
#endif
	return tp;
}

_Noreturn void fs_start(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	const ElfW(Phdr) *ph;
	unsigned long i, n;
	void *block, *tp;
	size_t size;

	fs_environ = envp;
	while (*envp)
		envp++;
	fs_auxv = (const unsigned long *)(envp + 1);
	ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	n = getauxval(AT_PHNUM);
	for (i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_TLS)
			tls_phdr = &ph[i];
	tp = fs_tls_new(&block, &size);
	if (tls_phdr && !tp)
		_exit(127);
	if (tp)
		fs_set_tp(tp);
	exit(main(argc, argv));
}
