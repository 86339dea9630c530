"""`vdsogen run` finds a foreign dynamically linked program's libraries itself.

qemu-user looks for a guest's interpreter (PT_INTERP) and libraries under
QEMU_LD_PREFIX (its -L).  Unset, `run` gives it Debian's cross sysroot of the
target's GNU triple, /usr/TRIPLE, where that holds the program's interpreter,
and says so under -v; where nothing holds it, `run` says which interpreter it
looked for, where, and how to set QEMU_LD_PREFIX, before qemu starts.  A
user's QEMU_LD_PREFIX stays the one used.
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from vdsogen.spec.model import load_target

PROGRAM = r"""
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	printf("clock %d\n", clock_gettime(CLOCK_MONOTONIC, &ts) == 0 && ts.tv_sec > 0);
	return 0;
}
"""
ARCH = "arm64"
INTERP = "/lib/ld-linux-aarch64.so.1"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """{"dynamic": ..., "static": ...}: PROGRAM for arm64 against Debian's cross glibc."""
    work = tmp_path_factory.mktemp("ld-prefix")
    (work / "prog.c").write_text(PROGRAM)
    cc = f"{load_target(ARCH).toolchain.gnu_triple}-gcc"
    out = {}
    for kind, flags in (("dynamic", []), ("static", ["-static"])):
        out[kind] = work / kind
        subprocess.run([cc, "-O2", *flags, str(work / "prog.c"), "-o", str(out[kind])], check=True)
    return out


def run(arch, argv, env=None):
    env = {k: v for k, v in os.environ.items() if k != "QEMU_LD_PREFIX"} | (env or {})
    return subprocess.run([sys.executable, "-m", "vdsogen", "run", f"--arch={arch}", "-v", "--", *map(str, argv)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_cross_sysroot_serves_a_dynamic_program(programs):
    sysroot = f"/usr/{load_target(ARCH).toolchain.gnu_triple}"
    assert os.path.isfile(sysroot + INTERP)
    p = run(ARCH, [programs["dynamic"]])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "clock 1\n"
    assert (f"vdsogen run: {ARCH}: {programs['dynamic']} is dynamically linked: its interpreter {INTERP} and "
            f"libraries from {sysroot} (Debian's cross sysroot of aarch64-linux-gnu, QEMU_LD_PREFIX being "
            f"unset)\n") in p.stderr


def test_a_static_program_needs_none(programs):
    p = run(ARCH, [programs["static"]])
    assert p.returncode == 0 and p.stdout == "clock 1\n", p.stderr
    assert "dynamically linked" not in p.stderr


def test_the_users_prefix_is_the_one_used(programs, tmp_path):
    """QEMU_LD_PREFIX set: used as given (here a copy of the sysroot's loader and libraries)."""
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    sysroot = f"/usr/{load_target(ARCH).toolchain.gnu_triple}/lib"
    for name in (INTERP.rsplit("/", 1)[1], "libc.so.6"):
        (root / "lib" / name).write_bytes(open(os.path.join(sysroot, name), "rb").read())
    p = run(ARCH, [programs["dynamic"]], {"QEMU_LD_PREFIX": str(root)})
    assert p.returncode == 0 and p.stdout == "clock 1\n", p.stderr
    assert f"libraries from {root} (QEMU_LD_PREFIX)\n" in p.stderr


def test_a_prefix_without_the_interpreter_is_said_so(programs, tmp_path):
    p = run(ARCH, [programs["dynamic"]], {"QEMU_LD_PREFIX": str(tmp_path)})
    assert p.returncode == 127 and p.stdout == ""
    assert p.stderr == (f"vdsogen: {programs['dynamic']}: dynamically linked, and its interpreter is at none of "
                        f"{tmp_path}{INTERP} (QEMU_LD_PREFIX), {INTERP} (this host's): set QEMU_LD_PREFIX to the "
                        f"directory that holds the {ARCH} C library, with the interpreter at DIR{INTERP} (Debian's "
                        f"cross packages, libc6-ARCH-cross, put it in /usr/TRIPLE)\n")


def test_a_target_without_a_cross_sysroot_asks_for_one(tmp_path):
    """loongarch64 has no GNU triple (Debian 12 has no LoongArch gcc): a dynamic program of it
    (clang and lld, no C library: its PT_INTERP is all that matters) needs QEMU_LD_PREFIX."""
    interp = "/lib64/ld-linux-loongarch-lp64d.so.1"
    (tmp_path / "start.c").write_text("void _start(void) { for (;;) ; }\n")
    exe = tmp_path / "prog"
    subprocess.run(["clang-19", "--target=loongarch64-linux-gnu", "-ffreestanding", "-nostdlib", "-fuse-ld=lld",
                    "-fPIE", "-pie", f"-Wl,--dynamic-linker={interp}", str(tmp_path / "start.c"), "-o", str(exe)],
                   check=True)
    p = run("loongarch64", [exe])
    assert p.returncode == 127
    assert p.stderr == (f"vdsogen: {exe}: dynamically linked, and its interpreter is at none of {interp} (this "
                        f"host's); loongarch64 has no GNU triple, so no Debian cross sysroot: set QEMU_LD_PREFIX to "
                        f"the directory that holds the loongarch64 C library, with the interpreter at DIR{interp} "
                        f"(Debian's cross packages, libc6-ARCH-cross, put it in /usr/TRIPLE)\n")
