"""SuperH (sh4): Linux's SH vDSO (arch/sh/kernel/vsyscall/, the same from
2.6.19 to 6.17), built from arch/sh/ by a spec without time data (no
[counter], no [datapage]: vdsogen/spec/model.py), with the GNU toolchain
only (LLVM has no SuperH backend).

The spec is held here and built from a temporary --specs=DIR: the harness
cannot run on this machine yet (Debian's sh4 glibc does not start under
qemu-sh4 7.2), so it is not in specs/, where every generic test would run
it.  Checked: the image builds and checks clean, audits as sh4 with no
finding, its trampolines are Linux's bytes with a signal frame's CFI, its
e_entry is __kernel_vsyscall; a broken trampoline fails check (T001)."""

import json
import subprocess

import pytest

from conftest import ROOT, vdsogen
from vdsogen.spec import abi

SPEC = """\
# SuperH (sh4, little-endian), as Linux maps its vDSO since 2.6.19
# (arch/sh/kernel/vsyscall/, unchanged to 6.17): one page, no time data,
# __kernel_vsyscall (e_entry) and the two signal trampolines under
# LINUX_2.6.  No [counter] and no [datapage]: nothing here reads time data.
abi = "sh4"
arch = "sh"

[elf]
flags = 1                   # EF_SH1: the code uses the SH-1 instructions only, gas marks it so
linux_version = "6.17.0"
eh_frame = true             # the trampolines' signal-frame CFI

[[export]]
name = "__kernel_vsyscall"
impl = "vsyscall"

[[trampoline]]
name = "__kernel_sigreturn"
fragment = "sigreturn"

[[trampoline]]
name = "__kernel_rt_sigreturn"
fragment = "rt_sigreturn"

[syscall]
fragment = "trapa"

[entry]
style = "c"

[toolchain]
gnu_triple = "sh4-linux-gnu"
qemu = "sh4"
default = "gnu"             # clang-19 has no SuperH backend
"""

# Linux's trampolines (vsyscall-sigreturn.S): mov.w 1f, r3; trapa #0x10;
# five `or r0, r0`; 1: .short NR -- eight halfwords, little-endian.
LINUX_BYTES = {
    "__kernel_sigreturn": bytes.fromhex("0593 10c3 0b20 0b20 0b20 0b20 0b20 7700"),
    "__kernel_rt_sigreturn": bytes.fromhex("0593 10c3 0b20 0b20 0b20 0b20 0b20 ad00"),
}


def write_specs(root, spec=SPEC):
    specs = root / "specs"
    specs.mkdir(parents=True)
    (specs / "sh4.toml").write_text(spec)
    return specs


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = tmp_path_factory.mktemp("sh4")
    specs = write_specs(root)
    r = vdsogen("build", "-q", f"--specs={specs}", "--arch=sh4", f"--out={root / 'out'}")
    assert r.returncode == 0, r.stderr
    return specs, root / "out" / "vdso.so"


def symbols(path):
    """{name: value} of the image's defined functions."""
    out = subprocess.run(["sh4-linux-gnu-readelf", "-W", "--dyn-syms", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return {f[7].split("@")[0]: int(f[1], 16) for f in (line.split() for line in out.splitlines())
            if len(f) >= 8 and f[0][:-1].isdigit() and f[3] == "FUNC" and f[6] != "UND"}


def test_checks_and_audits_clean(image):
    specs, so = image
    r = vdsogen("check", f"--specs={specs}", "--arch=sh4", str(so))
    assert r.returncode == 0 and "0 error(s), 0 warning(s), 0 info" in r.stdout, r.stdout + r.stderr
    doc = json.loads(vdsogen("audit", "--format=json", str(so)).stdout)
    (img,) = doc["images"]
    assert img["abi"]["name"] == "sh4" and img["findings"] == [], img["findings"]


def test_exports_entry_and_no_data_pages(image):
    _, so = image
    syms = symbols(so)
    assert set(syms) == {e.name for e in abi.get("sh4").exports}
    head = subprocess.run(["sh4-linux-gnu-readelf", "-Wlh", str(so)], capture_output=True, text=True,
                          check=True).stdout
    assert f"Entry point address:               {syms['__kernel_vsyscall']:#x}" in head
    assert "linux-gate.so.1" in subprocess.run(["sh4-linux-gnu-readelf", "-d", str(so)], capture_output=True,
                                               text=True, check=True).stdout
    # One PT_LOAD from address 0: no data pages below the text.
    loads = [line.split() for line in head.splitlines() if line.strip().startswith("LOAD")]
    assert len(loads) == 1 and int(loads[0][2], 16) == 0, loads


def test_trampolines_are_linux_bytes_with_signal_frame_cfi(image):
    _, so = image
    syms = symbols(so)
    data = so.read_bytes()      # one PT_LOAD at offset 0, address 0: file offset = address
    for name, want in LINUX_BYTES.items():
        assert data[syms[name]:syms[name] + 16] == want, name
    frames = subprocess.run(["sh4-linux-gnu-readelf", "--debug-dump=frames", str(so)], capture_output=True,
                            text=True, check=True).stdout
    assert frames.count('Augmentation:          "zRS"') >= 1, frames
    for name in LINUX_BYTES:
        # The FDE starts at the nop before the symbol (a handler's return address - 1 is inside it).
        assert f"pc={syms[name] - 2:08x}.." in frames, (name, frames)
    # CFA = sc_regs[15] (DW_OP_breg15 64 from the sigcontext; 148 + 64 in the rt frame), deref.
    assert "DW_CFA_def_cfa_expression (DW_OP_breg15 (r15): 64; DW_OP_deref)" in frames, frames
    assert "DW_CFA_def_cfa_expression (DW_OP_breg15 (r15): 212; DW_OP_deref)" in frames, frames
    assert "DW_CFA_expression: r16 (DW_OP_breg15 (r15): 68)" in frames, frames


def test_a_broken_trampoline_fails_check(image, tmp_path):
    specs, _ = image
    arch = specs / "arch" / "sh"
    arch.mkdir(parents=True)
    text = (ROOT / "arch" / "sh" / "sigframe-cfi.S.j2").read_text()
    assert "\ttrapa\t#0x10\n" in text
    (arch / "sigframe-cfi.S.j2").write_text(text.replace("\ttrapa\t#0x10\n", "\ttrapa\t#0x11\n"))
    try:
        out = tmp_path / "out"
        r = vdsogen("build", "-q", f"--specs={specs}", "--arch=sh4", f"--out={out}")
        assert r.returncode != 0 and "T001 error" in r.stderr and "__kernel_rt_sigreturn" in r.stderr, r.stderr
    finally:
        (arch / "sigframe-cfi.S.j2").unlink()
        arch.rmdir()
        (specs / "arch").rmdir()


def test_no_llvm(image, tmp_path):
    specs, _ = image
    r = vdsogen("build", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}", env={"LLVM": "-19"})
    assert r.returncode != 0 and "LLVM has no backend for the sh4 ABI" in r.stderr, r.stderr


@pytest.mark.parametrize("edit, key, message", [
    # time data is all or nothing: each table is "missing" on its own, as for every target
    ('[syscall]', "datapage", "missing"),
    ('[[export]]\nname = "__kernel_time"\nimpl = "time"\n\n[syscall]', "counter", "missing"),
    ('default = "gnu"', "toolchain.clang_target", "missing: only a target with default"),
])
def test_time_data_and_toolchain_errors(tmp_path, edit, key, message):
    spec = SPEC
    if edit == "[syscall]":
        spec = spec.replace("[syscall]", '[counter]\nfragment = "none"\nmodes = []\nmask = false\n'
                                         'clamp_backwards = false\n\n[syscall]')
    elif edit.startswith("[[export]]"):
        spec = spec.replace("[syscall]", edit)
    else:
        spec = spec.replace(edit + "             # clang-19 has no SuperH backend\n", "")
    specs = write_specs(tmp_path, spec)
    r = vdsogen("build", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{key}: {message}" in r.stderr, r.stderr


def test_the_harness_builds_without_time_data(image, tmp_path):
    """The harness's C compiles for a target without time data (over the
    nominal pages of vdsogen/harness/driver.py: harness_view), with
    H_TIME_DATA 0 and the check of __kernel_vsyscall beside arch/sh's."""
    from vdsogen.harness.driver import build_harness, harness_sources
    from vdsogen.spec.model import load_target

    specs, _ = image
    target = load_target("sh4", specs)
    files = dict(harness_sources(target))
    assert "#define H_TIME_DATA\t\t0" in files["harness_target.h"]
    assert "h_check_vsyscall" in files["check-vsyscall.c"]
    assert build_harness(target, tmp_path).is_file()


# `vdsogen run` takes a target without time data since parisc's (its loader maps the image over
# nominal pages); SuperH's loader entry is what it lacks.
@pytest.mark.parametrize("command, message", [
    (("bench",), "nothing to benchmark"),
])
def test_run_and_bench_say_there_is_no_time_data(image, command, message):
    specs, _ = image
    r = vdsogen(command[0], f"--specs={specs}", "--arch=sh4", *command[1:])
    assert r.returncode != 0 and "no time data" in r.stderr and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
