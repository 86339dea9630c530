"""The 32-bit ARM targets: `arm` (a 32-bit kernel's vDSO) and
`arm64-compat` (the AArch32 vDSO of an arm64 kernel), with clang and lld
and with the GNU toolchain.

Linux's identity and export sets, Thumb-2 code, the counter read with the
barriers each needs, e_flags without float-ABI bits (as vdsomunge leaves
them), no unwind-table reference to __aeabi_unwind_cpp_pr* that nothing
defines; and the option of arm64-compat specs for kernels 5.3-5.7, the
four sigreturn trampolines, byte-exact, each inside an EHABI entry that
describes the signal frame.  Both images are clean under `check` and
`audit` with either toolchain (tests/test_targets.py); the harness runs
both targets through their test builds (tests/test_injected_counter.py,
tests/test_harness.py)."""

import dataclasses
import io
import re
import subprocess
from pathlib import Path

import pytest

from conftest import build_broken, run_broken
from vdsogen.audit.check import build_validator, check_image
from vdsogen.audit.run import audit_path
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.elf.consts import EM_ARM, STB_LOCAL, STT_FUNC
from vdsogen.elf.reader import ElfImage
from vdsogen.harness.driver import build_harness, run_tests_full
from vdsogen.spec.model import load_target

TOOLCHAINS = {"llvm": {}, "gnu": {"CROSS_COMPILE": "arm-linux-gnueabihf-"}}
# Linux 5.6's set, which 5.7's trampoline spec keeps; Linux 7.0 added __vdso_clock_getres_time64.
EXPORTS_5_7 = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_clock_getres", "__vdso_clock_gettime64"}
EXPORTS = EXPORTS_5_7 | {"__vdso_clock_getres_time64"}
EF_ARM_ABI_FLOAT_SOFT, EF_ARM_ABI_FLOAT_HARD = 0x200, 0x400

# Thumb-2 encodings, as the bytes are in the image: each halfword little-endian, the first one first.
ISB, DMB_ISH, DMB_ISHLD = bytes.fromhex("bff36f8f"), bytes.fromhex("bff35b8f"), bytes.fromhex("bff3598f")
MRRC_CNTVCT = bytes.fromhex("53ec1e2f")      # mrrc p15, 1, r2, r3, c14
READS = {"arm": ISB + MRRC_CNTVCT, "arm64-compat": ISB + MRRC_CNTVCT + ISB}
BARRIERS = {"arm": (DMB_ISH, DMB_ISHLD), "arm64-compat": (DMB_ISHLD, DMB_ISH)}    # (used, not used)

TRAMPOLINES = {
    # name: (instruction set, what the bytes at the symbol are, its signal frame's r0 offset)
    "__kernel_sigreturn_arm": ("arm", bytes.fromhex("7770a0e3000000ef"), 32),
    "__kernel_rt_sigreturn_arm": ("arm", bytes.fromhex("ad70a0e3000000ef"), 160),
    "__kernel_sigreturn_thumb": ("thumb", bytes.fromhex("772700df"), 32),
    "__kernel_rt_sigreturn_thumb": ("thumb", bytes.fromhex("ad2700df"), 160),
}
NOP = {"arm": bytes.fromhex("00f020e3"), "thumb": bytes.fromhex("00bf")}


def build(target, out, toolchain, files=None):
    builder = Builder(target, env=TOOLCHAINS[toolchain], stream=io.StringIO())
    return build_target(target, out, builder=builder, validate=build_validator, files=files)


@pytest.fixture
def images(built_with):
    """(target name, toolchain) -> (target, vdso.so, vdso.so.dbg), built once per session."""
    return lambda name, toolchain: built_with(name, TOOLCHAINS[toolchain])


def defined_dynsym(img):
    # GNU ld also defines the version node's name as an absolute symbol.
    return {s.name: s for s in img.dynsym if s.defined and s.name != "LINUX_2.6"}


def code(img):
    return img.data[img.section(".text").offset:][:img.section(".text").size]


@pytest.mark.parametrize("toolchain", sorted(TOOLCHAINS))
@pytest.mark.parametrize("name", ["arm", "arm64-compat"])
def test_identity_exports_and_thumb2_code(images, name, toolchain):
    _, so, _ = images(name, toolchain)
    img = ElfImage(str(so))
    assert (img.elf_class, img.e_machine, img.endian) == (32, EM_ARM, "little")
    assert img.e_flags == 0x05000000        # EABI 5, no float-ABI bit
    assert img.dynstr(img.dyn("SONAME")) == "linux-vdso.so.1"
    syms = defined_dynsym(img)
    assert set(syms) == EXPORTS
    assert all(s.type == STT_FUNC and s.value & 1 for s in syms.values()), "exports must be Thumb functions"
    # One page of text, as Linux's own (2464-2976 bytes loaded).
    assert len(img.loads) == 1 and img.loads[0].memsz <= 4096
    attrs = subprocess.run(["arm-linux-gnueabihf-readelf", "-A", str(so)], capture_output=True, text=True,
                           check=True).stdout
    assert "Tag_THUMB_ISA_use: Thumb-2" in attrs
    assert ("Tag_CPU_arch: v8" if name == "arm64-compat" else "Tag_CPU_arch: v7") in attrs
    # No FP or SIMD state: nothing for either float ABI's callers to trip on.
    assert "Tag_FP_arch" not in attrs and "Tag_Advanced_SIMD_arch" not in attrs


@pytest.mark.parametrize("toolchain", sorted(TOOLCHAINS))
@pytest.mark.parametrize("name", ["arm", "arm64-compat"])
def test_counter_read_and_barriers(images, name, toolchain):
    _, so, _ = images(name, toolchain)
    text = code(ElfImage(str(so)))
    assert READS[name] in text
    used, other = BARRIERS[name]
    assert used in text and other not in text


@pytest.mark.parametrize("toolchain", sorted(TOOLCHAINS))
@pytest.mark.parametrize("name", ["arm", "arm64-compat"])
def test_nothing_undefined_not_even_the_personality_routines(images, name, toolchain):
    _, so, dbg = images(name, toolchain)
    for path in (so, dbg):
        img = ElfImage(str(path))
        for table in (img.dynsym, img.symtab):
            assert [s.name for s in table[1:] if not s.defined] == [], path
            assert not [s.name for s in table if s.name.startswith("__aeabi") and s.bind != STB_LOCAL], path


@pytest.mark.parametrize("toolchain", sorted(TOOLCHAINS))
def test_float_abi_flags_are_cleared_after_the_link(toolchain, tmp_path):
    """The linkers stamp the objects' float ABI (hard or soft); Linux clears
    it so both kinds of process can use the image.  Without the rewrite,
    check reports it."""
    target = load_target("arm")
    assert target.elf.rewrite_flags
    raw = dataclasses.replace(target, elf=dataclasses.replace(target.elf, rewrite_flags=False))
    builder = Builder(raw, env=TOOLCHAINS[toolchain], stream=io.StringIO())
    so, _ = build_target(raw, tmp_path, builder=builder)
    assert ElfImage(str(so)).e_flags & (EF_ARM_ABI_FLOAT_SOFT | EF_ARM_ABI_FLOAT_HARD)
    assert "H006" in {f.rule for f in check_image(target, so) if f.severity == "error"}


# --- arm64-compat for kernels 5.3-5.7: the sigreturn trampolines ----------

# The spec option, as docs/examples/arm64-compat-5.7 spells it out.
EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "arm64-compat-5.7"


@pytest.fixture(scope="module")
def sigtramp(tmp_path_factory):
    """toolchain -> (target, vdso.so, vdso.so.dbg) of the spec with trampolines."""
    base = tmp_path_factory.mktemp("sigtramp")
    target = load_target("arm64-compat-5.7", str(EXAMPLE))
    assert target.elf.linux_version < (5, 8, 0) and target.harness.checks == ("sigreturn",)
    cache = {}

    def get(toolchain):
        if toolchain not in cache:
            cache[toolchain] = (target, *build(target, base / toolchain, toolchain))
        return cache[toolchain]

    return get


def unwind_entries(path):
    """{function start: the lines of its EHABI entry}, as binutils' readelf decodes .ARM.exidx."""
    out = subprocess.run(["arm-linux-gnueabihf-readelf", "-u", str(path)], capture_output=True, text=True,
                         check=True).stdout
    entries = {}
    for block in out.split("\n\n"):
        head = re.match(r"\s*0x([0-9a-f]+)\b", block)
        if head:
            entries[int(head[1], 16)] = block
    return entries


@pytest.mark.parametrize("toolchain", sorted(TOOLCHAINS))
def test_trampolines_byte_exact_thumb_odd_in_their_unwind_entries(sigtramp, toolchain):
    target, so, dbg = sigtramp(toolchain)
    assert check_image(target, so) == [] and check_image(target, dbg) == []
    img = ElfImage(str(so))
    syms = defined_dynsym(img)
    assert set(syms) == EXPORTS_5_7 | set(TRAMPOLINES)
    entries = unwind_entries(so)
    starts = sorted(entries)
    for name, (isa, words, regs_offset) in TRAMPOLINES.items():
        sym = syms[name]
        assert sym.type == STT_FUNC and sym.size == len(words)
        assert bool(sym.value & 1) == (isa == "thumb"), f"{name} at {sym.value:#x}"
        addr = sym.value & ~1
        assert img.bytes_at(addr, len(words)) == words, name
        assert img.bytes_at(addr - len(NOP[isa]), len(NOP[isa])) == NOP[isa], name
        # The entry that covers the nop before the symbol and the symbol itself.
        start = max(s for s in starts if s <= addr - len(NOP[isa]))
        assert start == addr - len(NOP[isa]), name
        entry = entries[start]
        assert f"vsp = vsp + {regs_offset}\n" in entry, entry
        assert "pop {r0, r1, r2, r3}" in entry and "pop {r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15}" in entry
    # The personality routine the entries name is answered inside the image, never exported.
    dbg_img = ElfImage(str(dbg))
    pr = [s for s in dbg_img.symtab if s.name.startswith("__aeabi_unwind_cpp_pr")]
    assert pr and all(s.defined and s.bind == STB_LOCAL for s in pr), pr
    assert not [s for s in img.dynsym if s.name.startswith("__aeabi")]
    # The trampolines tell audit the image is arm64-compat's, not arm's.
    assert audit_path(str(so)).detection.abi.name == "arm64-compat"


def test_without_the_personality_symbol_lld_leaves_it_undefined(sigtramp, tmp_path):
    """What the hidden __aeabi_unwind_cpp_prN symbols prevent: lld keeps the
    entries' R_ARM_NONE reference as an undefined symbol, which check refuses."""
    target, _, _ = sigtramp("llvm")
    edits = {"vdso.lds": [(f"\tPROVIDE_HIDDEN(__aeabi_unwind_cpp_pr{i} = ADDR(.ARM.extab));\n", "")
                          for i in range(3)]}
    so = build_broken(target, tmp_path / "image", edits)
    und = [s.name for s in ElfImage(str(so)).dynsym[1:] if not s.defined]
    assert und == ["__aeabi_unwind_cpp_pr1"]
    assert "S001" in {f.rule for f in check_image(target, so) if f.severity == "error"}


def test_trampolines_in_the_harness(sigtramp, tmp_path):
    """The harness (on the test build) finds the four at their symbols, Thumb
    bit and all, unwinds through each with libgcc's EHABI unwinder and
    returns from a signal through each (arch/arm/harness-check-sigreturn.c.j2)."""
    target, _, _ = sigtramp("llvm")
    out = io.StringIO()
    status, outcome = run_tests_full(target, workdir=tmp_path, stream=out, builder=Builder(target, stream=out))
    assert status == 0, out.getvalue()
    for kind in ("trampoline", "unwind", "sigreturn"):
        assert {f"{kind}.{n}" for n in TRAMPOLINES} <= set(outcome.passed), out.getvalue()


# Breakages of one trampoline: the file, the edit, and the checks that must FAIL
# (None: the return itself kills the harness, a frame read as the other kind).
TRAMPOLINE_BREAKAGES = {
    # The other kind's syscall: the kernel reads the frame as the other kind's.
    "arm-rt-syscall": ("sigreturn-arm.S", "mov\tr7, #119", "mov\tr7, #173", None),
    "rt-thumb-plain-syscall": ("rt_sigreturn-thumb.S", "movs\tr7, #173", "movs\tr7, #119", None),
    # The EHABI entry describes another frame: unwinders lose the registers.
    "rt-thumb-plain-pad": ("rt_sigreturn-thumb.S", ".pad\t#160", ".pad\t#32",
                           ["unwind.__kernel_rt_sigreturn_thumb"]),
    "arm-pad-off-by-a-word": ("sigreturn-arm.S", ".pad\t#32", ".pad\t#36", ["unwind.__kernel_sigreturn_arm"]),
    # No nop inside the entry: the unwinder looks up the return address less 2, before the entry.
    "thumb-no-nop": ("sigreturn-thumb.S", "\tnop\n", "", ["unwind.__kernel_sigreturn_thumb"]),
}


@pytest.fixture(scope="module")
def sigtramp_harness(sigtramp, tmp_path_factory):
    target, _, _ = sigtramp("llvm")
    test = target.test_build()
    return test, build_harness(test, tmp_path_factory.mktemp("sigtramp-harness"), Builder(test, stream=io.StringIO()))


@pytest.mark.parametrize("breakage", sorted(TRAMPOLINE_BREAKAGES))
def test_harness_catches_a_broken_trampoline(sigtramp_harness, breakage, tmp_path):
    test, harness = sigtramp_harness
    fname, old, new, must_fail = TRAMPOLINE_BREAKAGES[breakage]
    so = build_broken(test, tmp_path / "image", {fname: [(old, new)]})
    # A frame read as the other kind's restores a garbage context: the
    # harness may die at once or spin with every signal blocked, where only
    # the driver's timeout (a whole run takes a few seconds) ends it.
    status, outcome, output = run_broken(test, harness, so, timeout=15)
    assert status != 0, output
    if must_fail is None:
        assert status < 0 and any(f.startswith("trampoline.") for f in outcome.failed), output
    else:
        assert sorted(outcome.failed) == sorted(must_fail), output


def test_a_broken_trampoline_is_caught(sigtramp, tmp_path):
    target, _, _ = sigtramp("llvm")
    edits = {"rt_sigreturn-thumb.S": [("movs\tr7, #173", "movs\tr7, #172")]}
    so = build_broken(target, tmp_path / "image", edits)
    assert {f.rule for f in check_image(target, so) if f.severity == "error"} == {"T001"}


def test_counter_words_match_arm_code_too(tmp_path):
    """T002 finds the words in ARM code as well as in Thumb-2: an -marm
    build passes with the ARM encoding of the read and fails with the
    Thumb-2 one, whose isb is encoded otherwise."""
    target = load_target("arm")
    cflags = tuple("-marm" if f == "-mthumb" else f for f in target.toolchain.cflags)
    arm_code = dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, cflags=cflags))
    so, _ = build_target(arm_code, tmp_path, builder=Builder(arm_code, stream=io.StringIO()))
    assert not ElfImage(str(so)).dynsym[1].value & 1
    assert [f.rule for f in check_image(arm_code, so)] == ["T002"]
    words = (0xF57FF06F, 0xEC532F1E)        # isb sy; mrrc p15, 1, r2, r3, c14 (A1)
    arm_words = dataclasses.replace(arm_code, counter=dataclasses.replace(target.counter, words=words))
    assert check_image(arm_words, so) == []
