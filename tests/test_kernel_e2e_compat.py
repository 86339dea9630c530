"""The i386 and x32 images in the kernel end to end (scripts/kernel-e2e.sh
--arch=x86_64, issue 22).

The x86_64 kernel is configured to run i386 and x32 programs, so the glue
builds vdsogen's vdso32 and vdsox32 with the x86-64 image; the guest runs
the kernel's selftests as i386 and x32 programs and
scripts/e2e/compat-checks.c (the image's build-id; i386's signal
trampolines), and the negative control breaks all three specs.  The boot
itself is by hand (it downloads and builds a kernel): here, the script's
configuration, and compat-checks.c built for both ABIs and run on i386,
its build-id check against vdsogen's image under `vdsogen run`, its
signal checks against the running kernel's own vDSO.
"""

import re
import subprocess

import pytest

from conftest import ROOT, isolated_run_cache, vdsogen
from vdsogen.elf.reader import ElfImage

SCRIPT = ROOT / "scripts" / "kernel-e2e.sh"
CHECKS = ROOT / "scripts" / "e2e" / "compat-checks.c"
CC = {"i386": "i686-linux-gnu-gcc", "x32": "x86_64-linux-gnux32-gcc"}

run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)


def _x86_64_branch():
    text = SCRIPT.read_text()
    return re.search(r"^x86_64\)\n(.*?)^\t;;", text, re.S | re.M).group(1)


def test_the_x86_64_kernel_runs_i386_and_x32_programs():
    """IA32_EMULATION (COMPAT_32: the glue's vdso32) and X86_X32_ABI (vdsox32)
    set and required, and both specs broken by the negative control too."""
    branch = _x86_64_branch()
    config = " ".join(re.findall(r'CONFIG="([^"]*)"', branch))
    assert "-e IA32_EMULATION" in config and "-e X86_X32_ABI" in config
    must = re.search(r'MUST_CONFIG="([^"]*)"', branch).group(1).split()
    assert {"IA32_EMULATION=y", "COMPAT_32=y", "X86_X32_ABI=y"} <= set(must)
    assert re.search(r'MORE_SPECS="i386 x32"', branch)


def _build_id(path):
    for n in ElfImage(str(path)).notes:
        if n.name == "GNU" and n.type == 3:
            return bytes(n.desc).hex()
    raise AssertionError(f"{path}: no build-id")


def _compile(abi, build_id, out):
    """compat-checks.c for ABI expecting BUILD_ID, warning-free, static, as the script builds it."""
    subprocess.run([CC[abi], "-static", "-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror",
                    f'-DVDSOGEN_BUILD_ID="{build_id}"', str(CHECKS), "-o", str(out)],
                   check=True, capture_output=True, text=True)


@pytest.mark.parametrize("abi", ["i386", "x32"])
def test_compat_checks_build_for_both_abis(abi, tmp_path):
    _compile(abi, "00", tmp_path / f"{abi}-build-id")


def test_the_build_id_check_sees_vdsogen_s_image(built, tmp_path):
    """Under `vdsogen run` the image at AT_SYSINFO_EHDR is vdsogen's i386 one:
    its build-id passes, another fails."""
    _, so, _ = built("i386")
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    _compile("i386", _build_id(so), good / "i386-build-id")
    _compile("i386", "0" * 40, bad / "i386-build-id")
    proc = vdsogen("run", "--arch=i386", f"--image={so}", "--", str(good / "i386-build-id"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = vdsogen("run", "--arch=i386", f"--image={so}", "--", str(bad / "i386-build-id"))
    assert proc.returncode == 1, proc.stdout + proc.stderr


@pytest.mark.parametrize("check", ["sigreturn", "rt-sigreturn"])
def test_the_signal_checks_pass_on_the_running_kernel(check, tmp_path):
    """A handler without SA_RESTORER returns through the running kernel's own
    i386 vDSO, into the trampoline its symbol table names."""
    prog = tmp_path / f"i386-{check}"
    _compile("i386", "00", prog)
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert re.fullmatch(r"handler ran, returned to (0x[0-9a-f]+), __kernel_(rt_)?sigreturn at \1\n", proc.stdout)
