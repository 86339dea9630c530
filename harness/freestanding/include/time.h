/* Freestanding harness: clocks and sleeping (see fs.h). */
#ifndef FS_TIME_H
#define FS_TIME_H

#include <sys/types.h>

/* The kernel's __kernel_timespec on every ABI: 64-bit seconds, and the nanoseconds padded to 64 bits. */
struct timespec {
	time_t	tv_sec;
#if __SIZEOF_LONG__ == 4 && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	int	: 32;		/* the high half on a big-endian ABI (sh4eb): the kernel drops it */
#endif
	long	tv_nsec;
#if __SIZEOF_LONG__ == 4 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	int	: 32;		/* the high half on a little-endian ABI (rv32): the kernel drops it */
#endif
};

#define CLOCK_REALTIME			0
#define CLOCK_MONOTONIC			1
#define CLOCK_PROCESS_CPUTIME_ID	2
#define CLOCK_THREAD_CPUTIME_ID		3
#define CLOCK_MONOTONIC_RAW		4
#define CLOCK_REALTIME_COARSE		5
#define CLOCK_MONOTONIC_COARSE		6
#define CLOCK_BOOTTIME			7
#define CLOCK_TAI			11

int clock_gettime(clockid_t clk, struct timespec *ts);
int nanosleep(const struct timespec *req, struct timespec *rem);

#endif
