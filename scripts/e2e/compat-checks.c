/*
 * The checks of the 32-bit images in the guest of scripts/kernel-e2e.sh
 * --arch=x86_64 (a kernel with IA32_EMULATION and X86_X32_ABI, whose
 * vdso32 and vdsox32 vdsogen built through the glue), built as an i386 and
 * as an x32 program and installed in /t once per check: scripts/e2e/init.c
 * runs each, and the name it runs under says which check.
 *
 *   ABI-build-id        the image at AT_SYSINFO_EHDR has the build-id of
 *                       vdsogen's vdso.so for this ABI (VDSOGEN_BUILD_ID,
 *                       given when this is compiled);
 *   i386-sigreturn      a handler installed without SA_RESTORER, and
 *   i386-rt-sigreturn   without or with SA_SIGINFO, returns into the image's
 *                       __kernel_sigreturn or __kernel_rt_sigreturn (the
 *                       kernel takes their offsets from vdsogen's image:
 *                       vdso_image_32), and that trampoline returns from
 *                       the handler.
 *
 * The handler is installed by the rt_sigaction system call itself: glibc's
 * sigaction always gives its own restorer.  Exit 0 when the check passes.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The image at AT_SYSINFO_EHDR and its program headers. */
static const ElfW(Ehdr) *eh;
static const ElfW(Phdr) *ph;

/* The build-id of the image in hex, in `out`; 0 when found. */
static int build_id(char *out, size_t size)
{
	int i;

	for (i = 0; i < eh->e_phnum; i++) {
		const char *p = (const char *)eh + ph[i].p_offset, *end = p + ph[i].p_filesz;

		if (ph[i].p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const unsigned char *desc = (const unsigned char *)(n + 1) + ((n->n_namesz + 3) & ~3u);
			unsigned int j;

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(n + 1, "GNU", 4) &&
			    2 * n->n_descsz < size) {
				for (j = 0; j < n->n_descsz; j++)
					sprintf(out + 2 * j, "%02x", desc[j]);
				return 0;
			}
			p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return -1;
}

#ifdef __i386__
/* The address of the image's defined symbol `name` (its DT_HASH counts the symbols), or NULL. */
static void *vdso_symbol(const char *name)
{
	const ElfW(Sym) *sym = NULL;
	const Elf32_Word *hash = NULL;
	const char *str = NULL;
	uintptr_t bias = 0;
	int i;
	Elf32_Word j;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias = (uintptr_t)eh + ph[i].p_offset - ph[i].p_vaddr;
			break;
		}
	for (i = 0; i < eh->e_phnum; i++) {
		const ElfW(Dyn) *d;

		if (ph[i].p_type != PT_DYNAMIC)
			continue;
		for (d = (const void *)(bias + ph[i].p_vaddr); d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_SYMTAB)
				sym = (const void *)(bias + d->d_un.d_ptr);
			else if (d->d_tag == DT_STRTAB)
				str = (const void *)(bias + d->d_un.d_ptr);
			else if (d->d_tag == DT_HASH)
				hash = (const void *)(bias + d->d_un.d_ptr);
		}
	}
	if (!sym || !str || !hash)
		return NULL;
	for (j = 0; j < hash[1]; j++)	/* nchain: the number of symbols */
		if (sym[j].st_shndx != SHN_UNDEF && !strcmp(str + sym[j].st_name, name))
			return (void *)(bias + sym[j].st_value);
	return NULL;
}

static volatile int handled;
static void *volatile returned_to;	/* the handler's return address: the frame's restorer */

static void handler(int sig)
{
	(void)sig;
	handled = 1;
	returned_to = __builtin_return_address(0);
}

static void rt_handler(int sig, siginfo_t *info, void *uc)
{
	(void)sig, (void)info, (void)uc;
	handled = 1;
	returned_to = __builtin_return_address(0);
}

/* The kernel's struct sigaction of rt_sigaction (i386): sa_restorer not used. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long long mask;
};

static int check_sigreturn(int rt)
{
	const char *tramp = rt ? "__kernel_rt_sigreturn" : "__kernel_sigreturn";
	struct kernel_sigaction sa = {
		.handler = rt ? (void *)rt_handler : (void *)handler,
		.flags = rt ? SA_SIGINFO : 0,
	};
	void *want;

	want = vdso_symbol(tramp);
	if (!want) {
		printf("no %s in the vDSO\n", tramp);
		return 1;
	}
	if (syscall(SYS_rt_sigaction, SIGUSR1, &sa, NULL, sizeof(sa.mask))) {
		perror("rt_sigaction");
		return 1;
	}
	syscall(SYS_kill, getpid(), SIGUSR1);
	printf("handler %s, returned to %p, %s at %p\n", handled ? "ran" : "did not run", returned_to, tramp, want);
	return !(handled && returned_to == want);
}
#endif

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/'), *check;
	char id[128] = "";

	(void)argc;
	eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!eh) {
		printf("no vDSO (AT_SYSINFO_EHDR)\n");
		return 1;
	}
	ph = (const void *)((const char *)eh + eh->e_phoff);
	check = strchr(base ? base : argv[0], '-');	/* i386-CHECK, x32-CHECK */
	check = check ? check + 1 : "";
	if (!strcmp(check, "build-id")) {
		if (build_id(id, sizeof(id)))
			printf("no build-id in the vDSO\n");
		else
			printf("build-id %s, vdsogen's %s\n", id, VDSOGEN_BUILD_ID);
		return strcmp(id, VDSOGEN_BUILD_ID) != 0;
	}
#ifdef __i386__
	if (!strcmp(check, "sigreturn") || !strcmp(check, "rt-sigreturn"))
		return check_sigreturn(check[0] == 'r');
#endif
	printf("%s: no such check\n", argv[0]);
	return 1;
}
