"""The x32 target: Linux's x32 vDSO is the x86-64 code in an ELF32
container.  Its harness is a 64-bit program that maps the image below
4 GiB and answers the image's syscalls from a SIGSYS handler, checking the
number and the arguments each fallback passed."""

import re

import pytest

from conftest import vdsogen
from vdsogen.elf.consts import EM_X86_64
from vdsogen.elf.reader import ElfImage

EXPORTS = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_getcpu", "__vdso_time", "__vdso_clock_getres",
           "__vdso_futex_robust_list64_try_unlock", "__vdso_futex_robust_list32_try_unlock"}
TRAP_CHECKS = {"trap", "trap.answered", "trap.none", "trap.clock_gettime", "trap.clock_gettime.invalid",
               "trap.clock_getres", "trap.gettimeofday"}


@pytest.mark.parametrize("toolchain", ["llvm", "gnu"])
def test_x32_builds_checks_audits_and_runs(toolchain, tmp_path):
    env = {"CROSS_COMPILE": "x86_64-linux-gnu-"} if toolchain == "gnu" else {}
    out = tmp_path / "out"
    build = vdsogen("build", "--arch=x32", f"--out={out}", env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    so = out / "vdso.so"
    img = ElfImage(str(so))
    assert (img.elf_class, img.e_machine, img.endian) == (32, EM_X86_64, "little")
    # GNU ld also defines the version node's name as an absolute symbol.
    assert {s.name for s in img.dynsym if s.defined} - {"LINUX_2.6"} == EXPORTS

    check = vdsogen("check", "--arch=x32", str(so))
    assert check.returncode == 0 and "0 error(s)" in check.stdout, check.stdout
    audit = vdsogen("audit", str(so))
    assert audit.returncode == 0 and "ABI x32 (detected)" in audit.stdout, audit.stdout

    test = vdsogen("test", "--arch=x32", f"--image={so}", f"--workdir={tmp_path / 'h'}")
    assert test.returncode == 0, test.stdout + test.stderr
    passed = {line[3:] for line in test.stdout.splitlines() if line.startswith("ok ")}
    assert TRAP_CHECKS <= passed, test.stdout
    base = re.search(r"bytes at (0x[0-9a-f]+), \d+ data pages of \d+ bytes at (0x[0-9a-f]+)", test.stdout)
    assert base and int(base[1], 16) < 1 << 32 and int(base[2], 16) < 1 << 32, "not mapped below 4 GiB"
