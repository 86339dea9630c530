/*
 * Freestanding harness: signals and sigsetjmp's signal mask (see fs.h).
 * The kernel's struct sigaction differs between ABIs: fs_arch.h has it.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"

/* The kernel's sigset: 64 signals, 8 bytes. */
#define KSIGSET_SIZE	8

int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	struct fs_ksigaction k, ko;
	long r;

	if (sa) {
		memset(&k, 0, sizeof(k));
		k.handler = (void *)sa->sa_handler;
		k.flags = (unsigned long)(unsigned int)sa->sa_flags;
		memcpy(&k.mask, &sa->sa_mask, KSIGSET_SIZE);
	}
#ifdef FS_RT_SIGACTION_RESTORER
	/* SPARC: the restorer is an argument, before the size. */
	r = fs_sys5(SYS_rt_sigaction, sig, sa ? &k : NULL, old ? &ko : NULL,
		    FS_RT_SIGACTION_RESTORER(sa ? k.flags : 0), KSIGSET_SIZE);
#else
	r = fs_sys4(SYS_rt_sigaction, sig, sa ? &k : NULL, old ? &ko : NULL, KSIGSET_SIZE);
#endif
	if (r == 0 && old) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = (void (*)(int))ko.handler;
		old->sa_flags = (int)ko.flags;
		memcpy(&old->sa_mask, &ko.mask, KSIGSET_SIZE);
	}
	return (int)fs_ret(r);
}

int sigaltstack(const stack_t *ss, stack_t *old)
{
	return (int)fs_ret(fs_sys2(SYS_sigaltstack, ss, old));
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return (int)fs_ret(fs_sys4(SYS_rt_sigprocmask, how, set, old, KSIGSET_SIZE));
}

int sigemptyset(sigset_t *set)
{
	memset(set, 0, sizeof(*set));
	return 0;
}

int sigfillset(sigset_t *set)
{
	memset(set, 0xff, sizeof(*set));
	return 0;
}

#define SIGWORD(s)	(((unsigned int)(s) - 1) / (8 * sizeof(unsigned long)))
#define SIGBIT(s)	(1UL << (((unsigned int)(s) - 1) % (8 * sizeof(unsigned long))))

int sigaddset(sigset_t *set, int sig)
{
	set->sig[SIGWORD(sig)] |= SIGBIT(sig);
	return 0;
}

int sigdelset(sigset_t *set, int sig)
{
	set->sig[SIGWORD(sig)] &= ~SIGBIT(sig);
	return 0;
}

int sigismember(const sigset_t *set, int sig)
{
	return (set->sig[SIGWORD(sig)] & SIGBIT(sig)) != 0;
}

int kill(pid_t pid, int sig)
{
	return (int)fs_ret(fs_sys2(SYS_kill, pid, sig));
}

int raise(int sig)
{
	return (int)fs_ret(fs_sys3(SYS_tgkill, getpid(), gettid(), sig));
}

/* arch/ARCH/setjmp.S */
_Noreturn void fs_longjmp(struct fs_jmp *env, int val);
int fs_sigsetjmp_mask(struct fs_jmp *env, int savemask);

/* sigsetjmp's second half, once setjmp.S saved the registers. */
int fs_sigsetjmp_mask(struct fs_jmp *env, int savemask)
{
	env->mask_saved = savemask;
	if (savemask)
		sigprocmask(SIG_BLOCK, NULL, &env->mask);
	return 0;
}

_Noreturn void siglongjmp(sigjmp_buf env, int val)
{
	if (env->mask_saved)
		sigprocmask(SIG_SETMASK, &env->mask, NULL);
	fs_longjmp(env, val);
}

_Noreturn void longjmp(jmp_buf env, int val)
{
	fs_longjmp(env, val);
}
