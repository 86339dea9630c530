/*
 * Freestanding harness: the string functions, and the names of errno
 * values and signals (see fs.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *p, int c, size_t n)
{
	unsigned char *d = p;

	while (n--)
		*d++ = (unsigned char)c;
	return p;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

void *memchr(const void *p, int c, size_t n)
{
	const unsigned char *s = p;

	for (; n; n--, s++)
		if (*s == (unsigned char)c)
			return (void *)s;
	return NULL;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++)
		if (*a != *b || !*a)
			return (unsigned char)*a - (unsigned char)*b;
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

/* The errno values the harness can meet, by name and description. */
static const struct {
	int		e;
	const char	*name, *text;
} errnos[] = {
	{ EPERM, "EPERM", "Operation not permitted" },
	{ ENOENT, "ENOENT", "No such file or directory" },
	{ ESRCH, "ESRCH", "No such process" },
	{ EINTR, "EINTR", "Interrupted system call" },
	{ EIO, "EIO", "Input/output error" },
	{ ENXIO, "ENXIO", "No such device or address" },
	{ E2BIG, "E2BIG", "Argument list too long" },
	{ ENOEXEC, "ENOEXEC", "Exec format error" },
	{ EBADF, "EBADF", "Bad file descriptor" },
	{ ECHILD, "ECHILD", "No child processes" },
	{ EAGAIN, "EAGAIN", "Resource temporarily unavailable" },
	{ ENOMEM, "ENOMEM", "Cannot allocate memory" },
	{ EACCES, "EACCES", "Permission denied" },
	{ EFAULT, "EFAULT", "Bad address" },
	{ EBUSY, "EBUSY", "Device or resource busy" },
	{ EEXIST, "EEXIST", "File exists" },
	{ ENODEV, "ENODEV", "No such device" },
	{ ENOTDIR, "ENOTDIR", "Not a directory" },
	{ EISDIR, "EISDIR", "Is a directory" },
	{ EINVAL, "EINVAL", "Invalid argument" },
	{ ENFILE, "ENFILE", "Too many open files in system" },
	{ EMFILE, "EMFILE", "Too many open files" },
	{ ENOTTY, "ENOTTY", "Inappropriate ioctl for device" },
	{ EFBIG, "EFBIG", "File too large" },
	{ ENOSPC, "ENOSPC", "No space left on device" },
	{ ESPIPE, "ESPIPE", "Illegal seek" },
	{ EROFS, "EROFS", "Read-only file system" },
	{ EPIPE, "EPIPE", "Broken pipe" },
	{ EDOM, "EDOM", "Numerical argument out of domain" },
	{ ERANGE, "ERANGE", "Numerical result out of range" },
	{ EDEADLK, "EDEADLK", "Resource deadlock avoided" },
	{ ENAMETOOLONG, "ENAMETOOLONG", "File name too long" },
	{ ENOSYS, "ENOSYS", "Function not implemented" },
	{ EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported" },
	{ ETIMEDOUT, "ETIMEDOUT", "Connection timed out" },
};

const char *strerrorname_np(int e)
{
	size_t i;

	for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].e == e)
			return errnos[i].name;
	return NULL;
}

char *strerror(int e)
{
	static char unknown[32];
	size_t i;

	for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].e == e)
			return (char *)errnos[i].text;
	snprintf(unknown, sizeof(unknown), "Unknown error %d", e);
	return unknown;
}

char *strsignal(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "Hangup", [SIGINT] = "Interrupt", [SIGQUIT] = "Quit",
		[SIGILL] = "Illegal instruction", [SIGTRAP] = "Trace/breakpoint trap",
		[SIGABRT] = "Aborted", [SIGBUS] = "Bus error", [SIGFPE] = "Floating point exception",
		[SIGKILL] = "Killed", [SIGSEGV] = "Segmentation fault", [SIGPIPE] = "Broken pipe",
		[SIGALRM] = "Alarm clock", [SIGTERM] = "Terminated", [SIGSYS] = "Bad system call",
	};
	static char unknown[32];

	if (sig > 0 && (size_t)sig < sizeof(names) / sizeof(names[0]) && names[sig])
		return (char *)names[sig];
	snprintf(unknown, sizeof(unknown), "Unknown signal %d", sig);
	return unknown;
}
