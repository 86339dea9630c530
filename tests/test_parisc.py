"""PA-RISC (hppa, 32-bit): Linux's parisc vDSO (arch/parisc/kernel/vdso32/)
as a 32-bit Linux 6.12 kernel maps it, built from arch/parisc/ by a spec
without time data (specs/parisc.toml), with the GNU toolchain only.

Checked: the image builds, checks clean and audits clean as parisc; its
exports and version node are Linux 6.12's (plus the two trampolines, which
Linux's version script names and its images keep local); its trampolines
are Linux's bytes; the harness passes under qemu-hppa, unwinding the rt
trampoline's signal frame with libgcc; a broken trampoline fails check, a
broken CFI or time function fails the harness; `vdsogen run` runs a
program with the image; audit takes a QEMU-like image of the 5.18 node."""

import subprocess

import pytest

from conftest import build_broken, harness_target, run_broken, vdsogen
from vdsogen import paths
from vdsogen.audit.check import check_image
from vdsogen.audit.run import audit_path
from vdsogen.elf.reader import ElfImage

# Linux 6.12's vdso32 (generic-32bit_defconfig), as 32-bit big-endian words: at a 64-byte
# boundary the sigcontext's offset from the handler's stack pointer (-608), a nop, then
# __kernel_sigtramp_rt (ldi 0,r25; ldi 173,r20; ble 0x100(sr2,r0); nop; the same with ldi 1,r25);
# __kernel_restart_syscall (ldw 0(sp),r31; be 0x100(sr2,r0); ldi 0,r20).
LINUX_RT = [0xfffffda0, 0x08000240, 0x34190000, 0x3414015a, 0xe4008200, 0x08000240,
            0x34190002, 0x3414015a, 0xe4008200, 0x08000240]
LINUX_RESTART = [0x0fc0109f, 0xe0008200, 0x34140000]
# Linux 6.12's .dynsym: the time functions 6.11 added, under LINUX_6.11.
LINUX_EXPORTS = {"__vdso_gettimeofday", "__vdso_clock_gettime", "__vdso_clock_gettime64"}
TRAMPOLINES = {"__kernel_sigtramp_rt32", "__kernel_restart_syscall32"}
RT = "__kernel_sigtramp_rt32"


def words(img, addr, n):
    return [int.from_bytes(img.bytes_at(addr + 4 * i, 4), "big") for i in range(n)]


def symbols(img):
    return {s.name: s for s in img.dynsym if s.defined and s.name}


def test_the_image_is_linux_6_12s_with_its_trampolines_exported(built):
    _, so, _ = built("parisc")
    img = ElfImage(str(so))
    syms = symbols(img)
    assert set(syms) - {"LINUX_6.11"} == LINUX_EXPORTS | TRAMPOLINES
    assert [v.name for v in img.verdefs()] == ["linux-vdso32.so.1", "LINUX_6.11"]
    assert img.e_flags == 0x20b                       # PA-RISC 1.0, as Linux's image
    assert words(img, syms[RT].value - 8, len(LINUX_RT)) == LINUX_RT
    assert syms[RT].value % 64 == 8
    assert words(img, syms["__kernel_restart_syscall32"].value, 3) == LINUX_RESTART


def test_check_and_audit_are_clean(built):
    target, so, dbg = built("parisc")
    for path in (so, dbg):
        assert not check_image(target, path)
        report = audit_path(str(path))
        assert report.detection.abi.name == "parisc"
        # Only: no LINUX_5.18, the node 6.11 renamed (info).
        assert [(f.rule, f.severity) for f in report.findings] == [("V004", "info")], report.findings
        assert {v.consumer: v.verdict for v in report.consumers} == {"glibc": "n/a", "musl": "n/a", "go": "n/a",
                                                                     "sysv": "works"}


def test_the_kernel_labels_are_linux_offsets_names(tmp_path):
    """--emit writes the offsets Linux's signal.c links the trampolines by (VDSO32_SYMBOL(..., sigtramp_rt))."""
    r = vdsogen("build", "-q", "--arch=parisc", f"--out={tmp_path}", "--emit=c", "--emit-name=vdso32")
    assert r.returncode == 0, r.stderr
    offsets = (tmp_path / "vdso-offsets.h").read_text()
    syms = symbols(ElfImage(str(tmp_path / "vdso.so")))
    assert f"#define vdso32_offset_sigtramp_rt\t{syms[RT].value:#x}\t" in offsets, offsets
    assert f"#define vdso32_offset_restart_syscall\t{syms['__kernel_restart_syscall32'].value:#x}\t" in offsets
    assert "#define vdso32_data_size\t0x0\n" in offsets       # no data pages


def test_every_harness_check_passes(good_runs):
    status, outcome, output, _ = good_runs("parisc")
    assert status == 0 and not outcome.failed, output
    want = {"unwind.eh_frame", f"unwind.{RT}", f"sigreturn.{RT}", "gettimeofday.as_syscall",
            "gettimeofday.as_syscall_NULL", *(f"{fn}.as_syscall_{i}" for fn in ("clock_gettime", "clock_gettime64")
                                              for i in (0, 1, 4, 7, 11, 12, 100, -2, -57))}
    assert want <= set(outcome.passed), sorted(want - set(outcome.passed))
    assert "counter" not in outcome.passed and "clock_gettime.REALTIME" not in outcome.passed


BREAKAGES = {
    # The CFA a word off the sigcontext.
    "cfa": ({"sigtramp_rt.S": [(".cfi_escape 0x0f, 3, 0x8e, 0xa0, 0x7b", ".cfi_escape 0x0f, 3, 0x8e, 0xa4, 0x7b")]},
            "CFA is"),
    # r3 taken from r4's slot: every register is compared with the ucontext.
    "register": ({"sigtramp_rt.S": [(".cfi_offset 3, 16\t", ".cfi_offset 3, 20\t")]}, "DWARF register 3 unwinds to"),
    # The pc from sc_sar.
    "pc": ({"sigtramp_rt.S": [(".cfi_offset 89, 400", ".cfi_offset 89, 408")]}, "not to the interrupted function"),
    "no-signal-frame": ({"sigtramp_rt.S": [("\t.cfi_signal_frame\n", "")]}, "no signal frame"),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_a_broken_cfi_fails_its_unwind_check(case, harnesses, tmp_path):
    edits, words_ = BREAKAGES[case]
    target = harness_target("parisc")
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = run_broken(target, harnesses("parisc"), image)
    assert status == 1, output
    assert words_ in outcome.failed.get(f"unwind.{RT}", ""), output
    assert {c for c in outcome.failed} == {f"unwind.{RT}"}, output
    assert f"sigreturn.{RT}" in outcome.passed, output


def test_a_time_function_making_another_syscall_fails(harnesses, tmp_path):
    """clock_gettime making clock_getres (257) answers the resolution: its as_syscall checks fail."""
    target = harness_target("parisc")
    image = build_broken(target, tmp_path / "image",
                         {"impl-clock_gettime.S": [("ldi\t256, %r20", "ldi\t257, %r20")]})
    status, outcome, output = run_broken(target, harnesses("parisc"), image)
    assert status == 1, output
    assert "clock_gettime.as_syscall_1" in outcome.failed, output
    assert not [c for c in outcome.failed if not c.startswith("clock_gettime.")], output
    assert "clock_gettime64.as_syscall_1" in outcome.passed


def test_a_broken_trampoline_fails_check(tmp_path):
    """rt_sigreturn's number off by one in the rt trampoline: not the words gdb matches (T001)."""
    specs = tmp_path / "specs"
    frag = specs / "arch" / "parisc"
    frag.mkdir(parents=True)
    (specs / "parisc.toml").write_text((paths.ROOT / "specs" / "parisc.toml").read_text())
    src = (paths.ARCH / "parisc" / "sigtramp_rt.S.j2").read_text()
    assert "ldi\t{{ nr }}, %r20\t\t\t/*" in src
    (frag / "sigtramp_rt.S.j2").write_text(src.replace("ldi\t{{ nr }}, %r20\t\t\t/*", "ldi\t172, %r20\t\t\t/*"))
    r = vdsogen("build", "-q", f"--specs={specs}", "--arch=parisc", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "T001" in r.stderr and "34140158" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_vdsogen_run_gives_a_program_the_image(tmp_path):
    """The probe, under qemu-hppa through the loader: the image is its vDSO, its clocks answer."""
    r = vdsogen("run", "--arch=parisc", "--", "vdsogen-probe")
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.startswith("probe.") and " " in line)
    assert int(lines["probe.vdso"], 16) != 0
    assert "probe.clock" in lines and "probe.gettimeofday" in lines, r.stdout


def test_a_static_program_gets_its_arguments_and_status(tmp_path):
    """The loader's hppa entry: argc in r25, argv in r24, the stack growing up above the vectors."""
    src, exe = tmp_path / "p.c", tmp_path / "p"
    src.write_text('#include <stdio.h>\n#include <sys/auxv.h>\n'
                   'int main(int argc, char **argv) { printf("%d %s %s %d\\n", argc, argv[1], argv[argc - 1], '
                   'getauxval(AT_SYSINFO_EHDR) != 0); return 7; }\n')
    subprocess.run(["hppa-linux-gnu-gcc", "-O2", "-static", str(src), "-o", str(exe)], check=True)
    r = vdsogen("run", "--arch=parisc", "--", str(exe), "one", "two", "three")
    assert r.returncode == 7, r.stderr
    assert r.stdout == "4 one three 1\n", r.stdout


# An image of the 5.18 era as QEMU's own (no version note): only LINUX_5.18, the node 6.11 renamed.
QEMU_LIKE = """
	.text
	.align	64
	.word	-480
	nop
	.globl	__kernel_sigtramp_rt
	.type	__kernel_sigtramp_rt, @function
__kernel_sigtramp_rt:
	ldi	0, %r25
	ldi	173, %r20
	ble	0x100(%sr2, %r0)
	nop
	.size	__kernel_sigtramp_rt, . - __kernel_sigtramp_rt
	.section .note.GNU-stack, "", @progbits
"""


def test_audit_takes_the_renamed_node_of_a_noteless_image(tmp_path):
    src, obj, so, ver = tmp_path / "v.S", tmp_path / "v.o", tmp_path / "vdso32.so", tmp_path / "v.map"
    src.write_text(QEMU_LIKE)
    ver.write_text("LINUX_5.18 { local: *; };\n")
    subprocess.run(["hppa-linux-gnu-gcc", "-c", str(src), "-o", str(obj)], check=True)
    subprocess.run(["hppa-linux-gnu-ld", "-shared", "-soname=linux-vdso32.so.1", "--hash-style=both",
                    f"--version-script={ver}", str(obj), "-o", str(so)], check=True)
    report = audit_path(str(so), profile="qemu-user")
    assert report.detection.abi.name == "parisc"
    v004 = [f for f in report.findings if f.rule == "V004"]
    assert [f.severity for f in v004] == ["info"] and "LINUX_6.11" in v004[0].message, report.findings
