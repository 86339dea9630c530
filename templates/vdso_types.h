/*
 * The types of the vDSO's exported functions (vdsogen's functions.toml
 * declares each function with these), shared by the generic core and by
 * the test harness that calls the exports.  vdso_timespec and vdso_timeval
 * are the native-word shapes of the uapi structures (`long` seconds: 32
 * bits on 32-bit ABIs); vdso_timespec64 is __kernel_timespec, the time64
 * entry points' (64-bit seconds everywhere).
 */
#ifndef VDSOGEN_TYPES_H
#define VDSOGEN_TYPES_H

#include <stdint.h>

typedef int clockid_t;

struct vdso_timespec {
	long	tv_sec;
	long	tv_nsec;
};

struct vdso_timespec64 {
	int64_t	tv_sec;
	int64_t	tv_nsec;
};

/* __kernel_suseconds_t: a long but on sparc64, whose vdso_config.h says so (abi.toml suseconds). */
#ifndef VDSO_SUSECONDS_T
#define VDSO_SUSECONDS_T	long
#endif

struct vdso_timeval {
	long			tv_sec;
	VDSO_SUSECONDS_T	tv_usec;
};

struct vdso_timezone {
	int	tz_minuteswest;
	int	tz_dsttime;
};

#endif /* VDSOGEN_TYPES_H */
