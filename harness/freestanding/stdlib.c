/* Freestanding harness: strtol and process exit (see fs.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>

static int digit(char c, int base)
{
	int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 :
		c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;

	return d < base ? d : -1;
}

unsigned long strtoul(const char *s, char **end, int base)
{
	const char *p = s;
	unsigned long v = 0;
	int neg = 0, d, any = 0;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && digit(p[2], 16) >= 0) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = p[0] == '0' ? 8 : 10;
	}
	for (; (d = digit(*p, base)) >= 0; p++, any = 1)
		v = v * (unsigned long)base + (unsigned long)d;
	if (end)
		*end = (char *)(any ? p : s);
	return neg ? -v : v;
}

long strtol(const char *s, char **end, int base)
{
	return (long)strtoul(s, end, base);
}

_Noreturn void exit(int status)
{
	fflush(stdout);
	fflush(stderr);
	_exit(status);
}

_Noreturn void abort(void)
{
	raise(SIGABRT);
	_exit(127);
}
