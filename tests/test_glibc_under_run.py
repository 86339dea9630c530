"""glibc programs under `vdsogen run` on the powerpc and 32-bit arm targets (issue 23).

Two ways the guest loader (runner/loader.c) must enter a program as the kernel does.  On 64-bit big-endian powerpc (ELFv1) an ELF file's entry point is a function descriptor (code address, TOC
pointer) as linked: in a position-independent object, such as the dynamic loader, both words are to be
relocated by the object's load bias, which the kernel adds before it enters (the loader relocates its .opd
itself only later).  The guest loader (runner/loader.c) must do the same, or a dynamically linked program
dies of SIGSEGV on its first instruction, before any vDSO call.  On arm the kernel enters with every
general register but sp and pc zero, and glibc 2.36's dynamic loader relies on it: its _dl_start_user
loads a word at its GOT plus r4 before it ever sets r4, so a loader that zeroes r0 only loses a
dynamically linked program at the end of the dynamic loader's start-up (while a static one runs).

A dynamically linked glibc program (the cross toolchain's glibc), entered through its PT_INTERP and, on
ppc64, through the dynamic loader run as the program, prints what it computed, and its clock calls are
answered by the image: qemu's syscall log has the one clock_gettime it makes as a syscall, none of its
thousand clock_gettime through glibc nor its gettimeofday.
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

# target: its glibc's dynamic loader (the cross toolchain's, found through gcc -print-file-name)
LDSO = {"ppc64": "ld64.so.1", "ppc32": "ld.so.1", "ppc64le": "ld64.so.2",
        "arm": "ld-linux-armhf.so.3", "arm64-compat": "ld-linux-armhf.so.3"}

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
	int back = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (b.tv_sec < a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec < a.tv_nsec))
			back++;
		a = b;
	}
	gettimeofday(&tv, NULL);
#ifdef __arm__
	long long boot[2];	/* the syscall's struct __kernel_timespec */

	syscall(SYS_clock_gettime64, CLOCK_BOOTTIME, boot);
#else
	syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &b);
#endif
	printf("backwards %d realtime-set %d\n", back, tv.tv_sec > 1600000000);
	return 0;
}
"""


def glibc_program(arch, tmp_path):
    """The program, dynamically linked against the target's glibc; its sysroot, whose lib/ holds the
    dynamic loader."""
    cc = compiler(load_target(arch))
    (tmp_path / "prog.c").write_text(PROGRAM)
    exe = tmp_path / "prog"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", str(tmp_path / "prog.c"), "-o", str(exe)], check=True)
    ldso = subprocess.run([cc, f"-print-file-name={LDSO[arch]}"], check=True, capture_output=True,
                          text=True).stdout.strip()
    return exe, Path(ldso).resolve().parent.parent


def run(arch, argv, sysroot, tmp_path):
    counts = tmp_path / "counts"
    env = dict(os.environ, QEMU_LD_PREFIX=str(sysroot))
    p = subprocess.run([sys.executable, "-m", "vdsogen", "run", f"--arch={arch}", f"--syscall-counts={counts}",
                        "--", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return p, counts.read_text() if counts.exists() else None


@pytest.mark.parametrize("arch", ["ppc64", "ppc32", "ppc64le", "arm", "arm64-compat"])
def test_glibc_program_through_its_interpreter(arch, tmp_path):
    exe, sysroot = glibc_program(arch, tmp_path)
    if arch.startswith("arm"):
        readelf = compiler(load_target(arch)).replace("gcc", "readelf")
        assert "Requesting program interpreter: /lib/" + LDSO[arch] in subprocess.run(
            [readelf, "-l", str(exe)], check=True, capture_output=True, text=True).stdout
    p, counts = run(arch, [str(exe)], sysroot, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "backwards 0 realtime-set 1\n"
    assert counts == "clock_gettime 7 1\n"


def test_ppc64_dynamic_loader_as_the_program(tmp_path):
    exe, sysroot = glibc_program("ppc64", tmp_path)
    ldso = sysroot / "lib" / LDSO["ppc64"]
    p, counts = run("ppc64", [str(ldso), "--library-path", str(sysroot / "lib"), str(exe)], sysroot, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "backwards 0 realtime-set 1\n"
    assert counts == "clock_gettime 7 1\n"
