/*
 * vdsogen test harness: runs a vDSO image the way a process sees it.
 *
 *   harness IMAGE
 *   harness --bench [OPTIONS] IMAGE	(bench.c)
 *
 * Maps IMAGE as the kernel does (the data pages, then the file right above
 * them), resolves every export through the image's own hash tables and
 * version definitions, then plays the kernel's timekeeper on the data pages
 * and checks what each entry point answers, one line per check (report.c).
 * A failure that leaves no later check meaningful (the image not mapped,
 * a syscall number that is not the C library's, no counter rate) ends the
 * run: what follows is reported "not run".  The exit status is 0 only when
 * nothing failed.
 *
 * Everything target-specific comes from harness_target.h (generated from
 * the spec), harness_functions.h and .c (the core functions' checks and
 * benchmark rows, generated from vdsogen/spec/functions.toml), datapage.h,
 * vdso_arch.h and vdso_types.h (the vDSO's own headers), and the arch
 * checks rendered beside them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The functions an arch fragment implements have their checks beside it
 * (arch/ARCH/harness-check-NAME.c.j2); harness_target.h lists those the
 * target exports.  Each returns at once when its symbol did not resolve.
 */
static void grp_arch(void)
{
	static void (*const checks[])(void) = { H_ARCH_CHECKS NULL };
	struct tk tk;
	size_t i;

#if H_TIME_DATA
	tk_fresh(&tk, h_counter_modes[0]);
#else
	(void)tk;
#endif
	for (i = 0; checks[i]; i++)
		checks[i]();
}

static const char *h_image_path;

/* The image, mapped and parsed: without it nothing can run. */
static int step_image(void)
{
	return map_image(h_image_path) != 0 || check_image() != 0 ? -1 : 0;
}

/*
 * Every symbol and trampoline; a function whose symbol did not resolve is
 * not checked (its checks do not run), the others are.
 */
static int step_symbols(void)
{
	int n;

	check_symbols();
	for (n = 0; n < H_NIMPL; n++)
		if (!h_fn[n])
			printf("# %s did not resolve: its checks do not run\n", h_impl_names[n]);
	check_trampolines();
	return 0;
}

#if H_TRAP_SYSCALLS
static int step_trap(void)
{
	return trap_install((uintptr_t)h_text, (uintptr_t)h_text + h_image_size);
}
#endif

int main(int argc, char **argv)
{
	const struct h_group *g;
	const char *soak, *watchdog;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "--bench") == 0) {
		printf("# vdsogen harness for %s (%s): benchmark\n", H_TARGET, H_SPEC);
		return bench_main(argc, argv);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s IMAGE\n       %s --bench [OPTIONS] IMAGE\n", argv[0], argv[0]);
		return 2;
	}
	printf("# vdsogen harness for %s (%s)\n", H_TARGET, H_SPEC);
	h_image_path = argv[1];
	soak = getenv("VDSOGEN_HARNESS_SOAK");
	if (soak) {
		h_soak = (int)strtol(soak, NULL, 10);
		printf("# soak: each racing writer runs %d s\n", h_soak);
	}
	/* A shorter watchdog for a run expected to hang (a test of a broken image). */
	watchdog = getenv("VDSOGEN_HARNESS_WATCHDOG");
	if (watchdog && strtol(watchdog, NULL, 10) > 0) {
		h_watchdog = (int)strtol(watchdog, NULL, 10);
		printf("# watchdog: %d s a group\n", h_watchdog);
	}
	setup_signals();
	pin_cpus();

	/*
	 * The steps the groups rely on.  A failure in one is fatal: with the
	 * image unmapped, its syscalls going to numbers the C library does not
	 * use, or no counter rate, no later check could mean anything, so the
	 * rest is reported "not run".
	 */
	step("image", step_image);
	step("symbols", step_symbols);
	step("syscall_numbers", check_syscall_numbers);
#if H_TRAP_SYSCALLS
	step("trap.install", step_trap);
#endif
#if H_TIME_DATA
	step("counter", calibrate);
#else
	printf("# no time data: no counter to calibrate, no clock to check\n");
#endif

#if H_TIME_DATA
	/* The core functions' checks, as functions.toml's [NAME.harness] lists them. */
	for (g = h_function_groups; g->name; g++)
		if (h_fn[g->impl] || run_stopped())
			group(g->name, g->run);
	group("y2038", grp_y2038);
#else
	/*
	 * Those compare with the timekeeper, which an image without time data
	 * never reads: its functions are syscalls (parisc's), which the arch's
	 * checks (harness-check-NAME.c.j2, the "arch" group) hold to the syscall.
	 */
	(void)g;
#endif
	/* The data page's own groups, read through clock_gettime (checks-modes.c, seqcount.c). */
#if defined(H_HAS_CLOCK_GETTIME) && H_TIME_DATA
	if (h_fn[IMPL_CLOCK_GETTIME] || run_stopped()) {
		group("clock_mode", grp_clock_modes);
#if VDSO_HAS_MAX_CYCLES
		group("max_cycles", grp_max_cycles);
#endif
#if VDSO_HAS_TIMENS
		group("timens", grp_timens);
#endif
		group("seqcount", grp_seqcount);
	}
#endif
#if H_TRAP_SYSCALLS
	group("trap", grp_trap);
#endif
	group("arch", grp_arch);
	group("unwind", grp_unwind);
	return finish();
}
