"""sparc32-compat: the 32-bit compat vDSO of sparc64 kernels (issue 25), as
Linux 7.1+ builds arch/sparc/vdso/vdso32/ with the generic vDSO library.

What the generic tests do not: the export set against Linux's vdso32.lds.S,
the ELF identity of a V8+ image, the counter read split into the two
32-bit halves of a 64-bit C value (high word first), the syscall's carry
in %icc, the catalogue's eras (6.12's _stick exports), and the
freestanding library's SPARC port (variant II TLS, clone's %o1, setjmp of
the caller's window, signal handlers returning through their restorer).
"""

import io
import re
import subprocess

from conftest import build_broken, run_broken
from vdsogen import paths
from vdsogen.audit.run import audit_path
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.harness.driver import build_harness, freestanding_argv, runner
from vdsogen.isa import base, for_machine, sparc
from vdsogen.spec.model import load_target

# Linux 7.2's arch/sparc/vdso/vdso32/vdso32.lds.S: every name in LINUX_2.6, the bare ones the
# weak aliases vclock_gettime.c defines.
LINUX_VDSO32 = {"clock_gettime": "WEAK", "__vdso_clock_gettime": "GLOBAL",
                "clock_gettime64": "WEAK", "__vdso_clock_gettime64": "GLOBAL",
                "gettimeofday": "WEAK", "__vdso_gettimeofday": "GLOBAL"}
O4, O5 = 12, 13


def words(path):
    img = ElfImage(path)
    text = next(s for s in img.sections if s.name == ".text")
    code = img.data[text.offset:text.offset + text.size]
    return [int.from_bytes(code[i:i + 4], "big") for i in range(0, len(code), 4)]


def test_exports_are_linux_vdso32_lds(built):
    """The image exports exactly what vdso32.lds.S lists, each in LINUX_2.6, the aliases weak;
    so does the catalogue for a 7.2 kernel (and not the _stick copies of 6.12's)."""
    target, so, _ = built("sparc32-compat")
    img = ElfImage(so)
    names = {s.name: s for s in img.dynsym[1:] if s.defined and s.type == 2}
    assert {n: {1: "GLOBAL", 2: "WEAK"}[s.bind] for n, s in names.items()} == LINUX_VDSO32
    assert {(n, v) for n, v, _ in target.symbols()} == {(n, "LINUX_2.6") for n in LINUX_VDSO32}
    assert {e.name for e in target.abi.exports if e.alive((7, 2, 0))} == set(LINUX_VDSO32)
    assert {e.name for e in target.abi.exports if e.alive((6, 12, 0))} == \
        set(LINUX_VDSO32) - {"clock_gettime64", "__vdso_clock_gettime64"} | \
        {"__vdso_clock_gettime_stick", "__vdso_gettimeofday_stick"}


def test_image_identity_and_audit(built):
    """ELF32 big-endian EM_SPARC32PLUS with EF_SPARC_32PLUS, soname linux-gate.so.1 (Linux's
    -soname), and audit takes it for the sparc32 ABI with no error."""
    _, so, _ = built("sparc32-compat")
    img = ElfImage(so)
    assert (img.elf_class, img.e_machine, img.endian, img.e_flags) == (32, 18, "big", 0x100)
    assert for_machine(sparc.EM_SPARC32PLUS) is for_machine(sparc.EM_SPARCV9)
    report = audit_path(str(so))
    assert report.detection.abi.name == "sparc32"
    assert not [f for f in report.findings if f.severity == "error"], report.findings


def test_counter_read_high_word_first(built):
    """V8+: rd %tick / rd %stick writes 64 bits into one register, C's uint64_t is a pair, high
    word in the even register.  Every read puts the count into %o5 (the low word) and the next
    instruction copies its top half into %o4 (the high word): out registers, whose upper halves
    a 32-bit task keeps.  Swapped, the clocks run from the low word as seconds (next test)."""
    _, so, _ = built("sparc32-compat")
    code = words(so)
    reads = [i for i, w in enumerate(code) if sparc.sparc_class(w) == base.COUNTER]
    assert len(reads) >= 2
    for i in reads:
        rd, srlx = code[i], code[i + 1]
        assert (rd >> 25) & 31 == O5, hex(rd)
        # srlx %o5, 32, %o4: op 2, op3 0x26, x = 1, shift count 32
        assert srlx == (2 << 30 | O4 << 25 | 0x26 << 19 | O5 << 14 | 1 << 13 | 1 << 12 | 32), hex(srlx)
    assert {(code[i] >> 14) & 31 for i in reads} == {sparc.ASR_TICK, sparc.ASR_STICK}


def test_swapped_halves_fail_the_harness(tmp_path):
    """The harness catches a split read with the words swapped: the counter's low half taken as
    its high, so every counter clock is off by the TSC's high word in seconds."""
    target = load_target("sparc32-compat")
    swapped = build_broken(target, tmp_path / "old", {"vdso_arch.h": [
        (r'"rd " asr ", %L0\n\tsrlx %L0, 32, %H0"', r'"rd " asr ", %H0\n\tsrlx %H0, 32, %L0"')]})
    harness = build_harness(target, tmp_path / "h", Builder(target, stream=io.StringIO()))
    _status, outcome, out = run_broken(target, harness, swapped)
    for check in ("clock_gettime.MONOTONIC", "clock_gettime64.REALTIME", "gettimeofday"):
        assert check in outcome.failed, out
    for check in ("clock_gettime.REALTIME_COARSE", "clock_gettime64.MONOTONIC_COARSE"):
        assert check in outcome.passed, out


def test_syscall_carry_in_icc(built):
    """A 32-bit task's syscall reports failure in the carry of %icc (qemu-sparc32plus sets no
    other): the fallback's bcs,a tests icc, then negates the errno in %o0."""
    _, so, _ = built("sparc32-compat")
    code = words(so)
    traps = [i for i, w in enumerate(code) if sparc.sparc_class(w) == base.SYSCALL]
    assert traps and all(code[i] == 0x91d02010 for i in traps)                     # ta 0x10
    for i in traps:
        bcs = code[i + 1]
        assert bcs >> 30 == 0 and (bcs >> 22) & 7 == 1 and (bcs >> 25) & 15 == 5, hex(bcs)   # BPcc, cs
        assert (bcs >> 20) & 3 == 0 and bcs >> 29 & 1, hex(bcs)                     # %icc, annulled
        assert code[i + 2] == 0x90200008                                            # neg %o0


def test_freestanding_library_selftest(tmp_path):
    """harness/freestanding/arch/sparc/: ta 0x10, start-up (argc above the window save area),
    clone (the child by %o1, fn and arg in the window), TLS variant II at %g7, setjmp of the
    caller's window across a signal, SPARC's signal numbers, flags and errno values."""
    target = load_target("sparc32-compat")
    exe = tmp_path / "selftest"
    argv = freestanding_argv(target, tmp_path, [paths.HARNESS / "freestanding" / "test" / "selftest.c"], exe)
    subprocess.run(argv, check=True, capture_output=True, text=True)
    proc = subprocess.run([*runner(target), str(exe), "arg"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", proc.stdout, re.M), proc.stdout
    for check in ("printf.llu", "thread.create", "thread.tls", "thread.join", "signal.siginfo",
                  "signal.mask", "setjmp.zero", "nanosleep", "errno", "strerror"):
        assert f"ok {check}\n" in proc.stdout, proc.stdout


def test_audit_knows_the_6_12_image(tmp_path):
    """An image as Linux 6.12 exports it (sparc's own vDSO: the _stick copies the kernel patched
    in by symbol, no clock_gettime64) is a sparc32 image of its era: known exports, no error, and
    glibc finds what it looks up; its clock_gettime64 would be a backport (S009)."""
    (tmp_path / "s32-612.toml").write_text('''extends = "sparc32-compat"

[elf]
linux_version = "6.12.0"

[[export]]
name = "__vdso_clock_gettime"
impl = "clock_gettime"
aliases = ["clock_gettime"]

[[export]]
name = "__vdso_gettimeofday"
impl = "gettimeofday"
aliases = ["gettimeofday"]

[[export]]
name = "__vdso_clock_gettime_stick"
impl = "clock_gettime"

[[export]]
name = "__vdso_gettimeofday_stick"
impl = "gettimeofday"

[[export]]
name = "__vdso_clock_gettime64"
impl = "clock_gettime64"
''')
    target = load_target("s32-612", tmp_path)
    report = audit_path(str(build_broken(target, tmp_path / "out", {})))
    assert report.detection.abi.name == "sparc32"
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    s009 = sorted(f.message.split(":")[0] for f in report.findings if f.rule == "S009")
    assert s009 == ["__vdso_clock_gettime64"], report.findings
    assert {v.consumer: v.verdict for v in report.consumers}["glibc"] == "works"
