"""glibc programs under `vdsogen run` on the 32-bit arm targets (issue 23).

The kernel enters a program on arm with every general register but sp and pc zero.  glibc 2.36's dynamic
loader relies on it: its _dl_start_user loads a word at its GOT plus r4 before it ever sets r4.  The guest
loader (runner/loader.c) must zero them too, or a dynamically linked program dies of SIGSEGV at the end of
the dynamic loader's start-up, before main (while a static one, entered at its own _start, runs).

A dynamically linked glibc program (the cross toolchain's, hard-float) entered through its PT_INTERP prints
its clocks, and its clock calls are answered by the image: qemu's syscall log has none of its thousand
clock_gettime nor its gettimeofday, only the one it makes as a syscall.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, isolated_run_cache
from vdsogen.harness.driver import compiler
from vdsogen.spec.model import load_target

run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)

LDSO = "ld-linux-armhf.so.3"

PROGRAM = r"""
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/time.h>

int main(void)
{
	struct timespec a, b;
	struct timeval tv;
	long long boot[2];	/* the syscall's struct __kernel_timespec */
	int back = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (b.tv_sec < a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec < a.tv_nsec))
			back++;
		a = b;
	}
	gettimeofday(&tv, NULL);
	syscall(SYS_clock_gettime64, CLOCK_BOOTTIME, boot);
	printf("backwards %d realtime-set %d\n", back, tv.tv_sec > 1600000000);
	return 0;
}
"""


@pytest.mark.parametrize("arch", ["arm", "arm64-compat"])
def test_glibc_program_through_its_interpreter(arch, tmp_path):
    cc = compiler(load_target(arch))
    (tmp_path / "prog.c").write_text(PROGRAM)
    exe = tmp_path / "prog"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", str(tmp_path / "prog.c"), "-o", str(exe)], check=True)
    assert "Requesting program interpreter: /lib/" + LDSO in subprocess.run(
        [cc.replace("gcc", "readelf"), "-l", str(exe)], check=True, capture_output=True, text=True).stdout
    ldso = subprocess.run([cc, f"-print-file-name={LDSO}"], check=True, capture_output=True, text=True).stdout
    counts = tmp_path / "counts"
    env = dict(os.environ, QEMU_LD_PREFIX=str(Path(ldso.strip()).resolve().parent.parent))
    p = subprocess.run([sys.executable, "-m", "vdsogen", "run", f"--arch={arch}", f"--syscall-counts={counts}",
                        "--", str(exe)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "backwards 0 realtime-set 1\n"
    assert counts.read_text() == "clock_gettime 7 1\n"
