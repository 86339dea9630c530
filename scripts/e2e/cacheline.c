/*
 * Preloaded into the s390x guest of scripts/kernel-e2e.sh: sysconf()'s L1
 * data-cache line size, which glibc asks the CPU for with ECAG, and which
 * qemu's TCG does not describe (ECAG answers -1, so sysconf() does too).
 * vdso_test_getrandom rounds its per-thread state size up to that line,
 * and with -1 rounds it to 0 and divides by it.  LINE is the machine's
 * line (256 bytes on z/Architecture); every other name is glibc's answer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

long sysconf(int name)
{
	static long (*next)(int);

	if (name == _SC_LEVEL1_DCACHE_LINESIZE)
		return LINE;
	if (!next)
		next = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
	return next(name);
}
