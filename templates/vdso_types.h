/*
 * The types of the vDSO's exported functions (vdsogen's functions.toml
 * declares each function with these), shared by the generic core and by
 * the test harness that calls the exports.  These are the native-word
 * shapes of the uapi structures: `long` seconds.
 */
#ifndef VDSOGEN_TYPES_H
#define VDSOGEN_TYPES_H

typedef int clockid_t;

struct vdso_timespec {
	long	tv_sec;
	long	tv_nsec;
};

struct vdso_timeval {
	long	tv_sec;
	long	tv_usec;
};

struct vdso_timezone {
	int	tz_minuteswest;
	int	tz_dsttime;
};

#endif /* VDSOGEN_TYPES_H */
