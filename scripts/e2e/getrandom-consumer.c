/*
 * A consumer of the vDSO's getrandom through the C library
 * (scripts/getrandom-glibc.sh): glibc 2.41+ answers getrandom(2) from the
 * vDSO when it exports __vdso_getrandom, with a state per thread mapped as
 * the vDSO's opaque-state query says.
 *
 *   getrandom-consumer N	N calls of 16 bytes, the ns per call, and the first 16 bytes in hex
 *   getrandom-consumer fork	parent and child draw 16 bytes each after a fork: "fork distinct" or
 *				"fork same"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

int main(int argc, char **argv)
{
	unsigned char b[16], c[16];
	char text[33];
	int p[2], status;
	double t0, t1;
	long i, n;

	if (argc == 2 && strcmp(argv[1], "fork") == 0) {
		if (getrandom(b, sizeof(b), 0) != sizeof(b) || pipe(p) != 0)
			return 1;
		if (fork() == 0) {
			if (getrandom(c, sizeof(c), 0) != sizeof(c))
				_exit(1);
			_exit(write(p[1], c, sizeof(c)) == sizeof(c) ? 0 : 1);
		}
		if (getrandom(b, sizeof(b), 0) != sizeof(b) || read(p[0], c, sizeof(c)) != sizeof(c) ||
		    wait(&status) < 0 || status != 0)
			return 1;
		printf("fork %s\n", memcmp(b, c, sizeof(b)) ? "distinct" : "same");
		return 0;
	}
	n = argc == 2 ? strtol(argv[1], NULL, 10) : 100000;
	t0 = now();
	for (i = 0; i < n; i++)
		if (getrandom(b, sizeof(b), 0) != sizeof(b))
			return 1;
	t1 = now();
	hex(b, sizeof(b), text);
	printf("calls %ld ns/call %.1f last %s\n", n, (t1 - t0) / n, text);
	return 0;
}
