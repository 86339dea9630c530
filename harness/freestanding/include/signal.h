/*
 * Freestanding harness: signals (see fs.h), in the generic Linux numbering
 * and layouts; sigaction() converts to the ABI's kernel struct (fs_arch.h).
 */
#ifndef FS_SIGNAL_H
#define FS_SIGNAL_H

#include <sys/types.h>

#define SIGHUP		1
#define SIGINT		2
#define SIGQUIT		3
#define SIGILL		4
#define SIGTRAP		5
#define SIGABRT		6
#define SIGFPE		8
#define SIGKILL		9
#define SIGSEGV		11
#define SIGPIPE		13
#define SIGALRM		14
#define SIGTERM		15
#define NSIG		65

#ifdef __sparc__
/* SPARC's own numbers and flags (arch/sparc/include/uapi/asm/signal.h). */
#define SIGBUS		10
#define SIGSYS		12
#define SIGSTOP		17
#define SIGCONT		19
#define SIGCHLD		20
#define SIGUSR1		30
#define SIGUSR2		31

#define SA_ONSTACK	0x00000001
#define SA_RESTART	0x00000002
#define SA_RESETHAND	0x00000004
#define SA_NODEFER	0x00000020
#define SA_SIGINFO	0x00000200

#define SIG_BLOCK	1
#define SIG_UNBLOCK	2
#define SIG_SETMASK	4
#else
#define SIGBUS		7
#define SIGUSR1		10
#define SIGUSR2		12
#define SIGCHLD		17
#define SIGCONT		18
#define SIGSTOP		19
#define SIGSYS		31

#define SA_SIGINFO	0x00000004
#define SA_ONSTACK	0x08000000
#define SA_RESTART	0x10000000
#define SA_NODEFER	0x40000000
#define SA_RESETHAND	0x80000000

#define SIG_BLOCK	0
#define SIG_UNBLOCK	1
#define SIG_SETMASK	2
#endif

#define SIG_DFL		((void (*)(int))0)
#define SIG_IGN		((void (*)(int))1)

typedef int sig_atomic_t;

/* The kernel's: 64 signals. */
typedef struct {
	unsigned long	sig[64 / (8 * sizeof(unsigned long))];
} sigset_t;

union sigval {
	int	sival_int;
	void	*sival_ptr;
};

/* The preamble, then the union at pointer alignment, as the kernel lays it out. */
typedef struct {
	int	si_signo;
	int	si_errno;
	int	si_code;
	union {
		char	pad[128 - 3 * sizeof(int)];
		struct {
			void	*addr;
		} fault;
		struct {
			pid_t	pid;
			uid_t	uid;
			union sigval value;
		} rt;
	} fields __attribute__((aligned(sizeof(void *))));
} siginfo_t;

#define si_addr		fields.fault.addr
#define si_pid		fields.rt.pid
#define si_value	fields.rt.value

typedef struct {
	void	*ss_sp;
	int	ss_flags;
	size_t	ss_size;
} stack_t;

#define SS_ONSTACK	1
#define SS_DISABLE	2

struct sigaction {
	union {
		void	(*sa_handler)(int);
		void	(*sa_sigaction)(int, siginfo_t *, void *);
	};
	sigset_t	sa_mask;
	int		sa_flags;
};

int sigaction(int sig, const struct sigaction *sa, struct sigaction *old);
int sigaltstack(const stack_t *ss, stack_t *old);
int sigprocmask(int how, const sigset_t *set, sigset_t *old);
int sigemptyset(sigset_t *set);
int sigfillset(sigset_t *set);
int sigaddset(sigset_t *set, int sig);
int sigdelset(sigset_t *set, int sig);
int sigismember(const sigset_t *set, int sig);
int kill(pid_t pid, int sig);
int raise(int sig);

#endif
