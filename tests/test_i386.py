"""The i386 target (linux-gate.so.1): built with clang + lld and with the GNU
cross toolchain, each image clean under `check` and `audit`, e_entry at
__kernel_vsyscall, no relocation, signal-frame CFI on both trampolines, and
every harness check passing natively; the unwind checks catch broken CFI.
"""

import dataclasses
import io
import struct

import pytest
from elftools.dwarf.callframe import CIE, FDE, instruction_name

from vdsogen.audit.check import build_validator, check_image
from vdsogen.audit.run import audit_path
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness, run_harness
from vdsogen.spec import functions
from vdsogen.spec.model import Export, load_target

from conftest import breg, dynsym, elf
from test_harness import build_broken, expected_checks, harnesses, run_broken  # noqa: F401 (fixture)

TOOLCHAINS = {"clang": {}, "gnu": {"CROSS_COMPILE": "i686-linux-gnu-"}}
TRAMPOLINES = ("__kernel_sigreturn", "__kernel_rt_sigreturn")

# Where the interrupted context's struct sigcontext is, from the trampoline's
# esp: i386's sigframe has it at 8 and rt_sigframe at 164 (16 + 128 bytes of
# siginfo + 20 into the ucontext), and the handler's ret took 4 bytes.
SIGCONTEXT_AT = {"__kernel_sigreturn": 4, "__kernel_rt_sigreturn": 160}
SC_ESP, SC_EIP = 28, 56


@pytest.fixture
def images(built_with):
    """toolchain -> (target, vdso.so, vdso.so.dbg), built once."""
    return lambda tc: built_with("i386", TOOLCHAINS[tc])


@pytest.fixture
def harness(harnesses):
    return harnesses("i386")


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_check_is_clean(tc, images):
    target, so, dbg = images(tc)
    for path in (so, dbg):
        findings = check_image(target, path)
        assert not [f for f in findings if f.severity == "error"], findings
        # The one warning left: the time entries (the core inlined three times
        # with 32-bit arithmetic) spread over two pages (S006).
        assert {f.rule for f in findings} <= {"S006"}, findings


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_audit_finds_no_error(tc, images):
    _, so, _ = images(tc)
    report = audit_path(str(so))
    assert report.detection.abi.name == "i386"
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    assert all(v.verdict == "works" for v in report.consumers), report.consumers


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_entry_is_kernel_vsyscall(tc, images):
    _, so, _ = images(tc)
    assert elf(so).header.e_entry == dynsym(so)["__kernel_vsyscall"]["st_value"] != 0


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_no_relocation_and_nothing_writable(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    assert not [s.name for s in e.iter_sections() if s["sh_type"] in ("SHT_REL", "SHT_RELA")]
    tags = {t.entry.d_tag for t in e.get_section_by_name(".dynamic").iter_tags()}
    assert not tags & {"DT_REL", "DT_RELA", "DT_JMPREL", "DT_TEXTREL", "DT_PLTGOT"}, tags
    loads = [p for p in e.iter_segments() if p["p_type"] == "PT_LOAD"]
    assert [(p["p_offset"], p["p_flags"]) for p in loads] == [(0, 5)]
    # The GOT anchor of the @GOTOFF accesses is inside that read-only segment.
    got = e.get_section_by_name(".got.plt")
    assert got is None or loads[0].section_in_segment(got)


def eh_frame_entries(path):
    return list(elf(path).get_dwarf_info().EH_CFI_entries())


@pytest.mark.parametrize("tc", TOOLCHAINS)
@pytest.mark.parametrize("name", TRAMPOLINES)
def test_trampoline_cfi(tc, name, images):
    _, so, _ = images(tc)
    sym = dynsym(so)[name]
    start = sym["st_value"]
    fdes = [e for e in eh_frame_entries(so) if isinstance(e, FDE)
            and e.header["initial_location"] <= start - 1 < e.header["initial_location"] + e.header["address_range"]]
    assert len(fdes) == 1, f"no FDE covers {name} - 1"
    fde = fdes[0]
    # The FDE starts at the nop right before the symbol and covers the trampoline.
    assert fde.header["initial_location"] == start - 1
    assert fde.header["initial_location"] + fde.header["address_range"] >= start + sym["st_size"]
    assert isinstance(fde.cie, CIE) and "S" in fde.cie.header["augmentation"].decode()
    # The first row (what unwinders see at the symbol): the CFA is sc.esp, eip is at sc.eip.
    first = []
    for ins in fde.instructions:
        if instruction_name(ins.opcode).startswith(("DW_CFA_advance_loc", "DW_CFA_set_loc")):
            break
        first.append(ins)
    cfa = [i for i in first if i.opcode == 0x0f]
    regs = {i.args[0]: i.args[1] for i in first if i.opcode == 0x10}
    at = SIGCONTEXT_AT[name]
    assert len(cfa) == 1 and breg(cfa[0].args[0], 4) == (at + SC_ESP, [0x06]), cfa
    assert breg(regs[8], 4) == (at + SC_EIP, []) and breg(regs[4], 4) == (at + SC_ESP, []), regs
    assert sorted(regs) == list(range(9)), "eax..edi, esp and eip all described"


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_eh_frame_hdr_finds_the_trampolines(tc, images):
    """The binary-search table of .eh_frame_hdr, which most unwinders use,
    answers for each trampoline's symbol - 1 and symbol, and for __kernel_vsyscall."""
    _, so, _ = images(tc)
    e = elf(so)
    hdr = e.get_section_by_name(".eh_frame_hdr")
    data, base = hdr.data(), hdr["sh_addr"]
    assert data[:4] == bytes([1, 0x1b, 0x03, 0x3b])   # pcrel sdata4, udata4, datarel sdata4
    count = struct.unpack_from("<I", data, 8)[0]
    table = [struct.unpack_from("<ii", data, 12 + 8 * i) for i in range(count)]
    starts = sorted(base + loc for loc, _ in table)
    fdes = {e.header["initial_location"]: e.header["address_range"] for e in eh_frame_entries(so)
            if isinstance(e, FDE)}
    for name in (*TRAMPOLINES, "__kernel_vsyscall"):
        value = dynsym(so)[name]["st_value"]
        for pc in (value - 1, value) if name in TRAMPOLINES else (value,):
            best = max(s for s in starts if s <= pc)
            assert pc < best + fdes[best], (name, hex(pc))


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_every_harness_check_passes(tc, images, harness):
    target, so, _ = images(tc)
    status, outcome, output = run_broken(target, harness, so)
    assert not outcome.failed, output
    assert status == 0, output
    missing = [c for c in expected_checks(target) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"
    for name in TRAMPOLINES:
        assert f"unwind.{name}" in outcome.passed and f"sigreturn.{name}" in outcome.passed, output


# --- the unwind checks can fail -------------------------------------------

# Each: an edit of the rendered trampolines and the check that must then FAIL, with what it says.
CFI_BREAKAGES = {
    # The CFA read from sc.esp + 4 (sc.ebx) instead of sc.esp.
    "cfa-offset": ({"rt_sigreturn.S": [("0x0f, 4, 0x74, 0xbc, 0x01, 0x06", "0x0f, 4, 0x74, 0xc0, 0x01, 0x06")]},
                   "unwind.__kernel_rt_sigreturn", "CFA is"),
    # The first row (the one unwinders use at the symbol) as if the popl had run.
    "first-row": ({"sigreturn.S": [("0x0f, 3, 0x74, 0x20, 0x06", "0x0f, 3, 0x74, 0x1c, 0x06")]},
                  "unwind.__kernel_sigreturn", "CFA is"),
    # eip taken from sc.cs.
    "eip": ({"sigreturn.S": [("0x10, 8, 2, 0x74, 0x3c", "0x10, 8, 2, 0x74, 0x40")]},
            "unwind.__kernel_sigreturn", "not to the interrupted function"),
    # ebx taken from sc.edx: the rt check compares every register with the ucontext.
    "register": ({"rt_sigreturn.S": [("0x10, 3, 3, 0x74, 0xc0, 0x01", "0x10, 3, 3, 0x74, 0xc4, 0x01")]},
                 "unwind.__kernel_rt_sigreturn", "DWARF register 3 unwinds to"),
    # No 'S': the interrupted pc would be taken for a return address.
    "no-signal-frame": ({"sigreturn.S": [("\t.cfi_signal_frame\n", "")]},
                        "unwind.__kernel_sigreturn", "no signal frame"),
}


@pytest.mark.parametrize("breakage", sorted(CFI_BREAKAGES))
def test_unwind_check_catches_broken_cfi(breakage, harness, tmp_path):
    target = load_target("i386")
    edits, check, words = CFI_BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    assert words in outcome.failed.get(check, ""), output
    other = [c for c in outcome.failed if c.startswith(("unwind.", "sigreturn.")) and c != check]
    assert not other, output
    assert "clock_gettime64.REALTIME" in outcome.passed, output


def test_sigreturn_check_catches_a_broken_trampoline(harness, tmp_path):
    """A trampoline that makes the wrong syscall does not return to the interrupted code."""
    target = load_target("i386")
    image = build_broken(target, tmp_path / "image", {"rt_sigreturn.S": [("movl\t$173, %eax", "movl\t$20, %eax")]})
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    assert "trampoline.__kernel_rt_sigreturn" in outcome.failed, output
    assert "sigreturn.__kernel_rt_sigreturn" in outcome.failed, output


def test_vsyscall_check_catches_a_clobbered_register(harness, tmp_path):
    """A __kernel_vsyscall that changes a register other than eax is caught."""
    target = load_target("i386")
    image = build_broken(target, tmp_path / "image", {"impl-vsyscall.S": [
        ("\tint\t$0x80\n", "\tint\t$0x80\n\tmovl\t$0x1234, %esi\n")]})
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    for check in ("vsyscall.getpid", "vsyscall.error", "vsyscall.six_arguments"):
        assert "esi was" in outcome.failed.get(check, ""), output


# --- time64 ----------------------------------------------------------------

def test_clock_getres_time64_export(tmp_path):
    """An image that also exports __vdso_clock_getres_time64 (as a 2025 patch
    proposes) passes the time64 clock_getres checks."""
    target = load_target("i386")
    extra = Export("__vdso_clock_getres_time64", functions.get("clock_getres_time64"), "LINUX_2.6", "global", (), "core")
    variant = dataclasses.replace(target, exports=(*target.exports, extra))
    out = io.StringIO()
    builder = Builder(variant, stream=out)
    so, _ = build_target(variant, tmp_path / "image", builder=builder, validate=build_validator)
    exe = build_harness(variant, tmp_path, builder)
    status, outcome = run_harness(variant, exe, so, builder, out)
    assert status == 0 and not outcome.failed, out.getvalue()
    assert "clock_getres_time64.MONOTONIC" in outcome.passed
    assert not [c for c in expected_checks(variant) if c not in outcome.passed], out.getvalue()


def test_legacy_entries_truncate_past_2038(images, harness):
    """The y2038 checks ran on the 32-bit entries: the native ones truncate, time64 does not."""
    target, so, _ = images("clang")
    _, outcome, output = run_broken(target, harness, so)
    for check in ("y2038.clock_gettime64.REALTIME", "y2038.clock_gettime.REALTIME",
                  "y2038.clock_gettime64.REALTIME_COARSE", "y2038.gettimeofday", "y2038.time"):
        assert check in outcome.passed, output


def test_y2038_check_catches_a_truncating_time64(harness, tmp_path):
    """A clock_gettime64 that goes through the native timespec fails past 2038."""
    target = load_target("i386")
    image = build_broken(target, tmp_path / "image", {"vdso_core.h": [
        ("\tif (likely(r == VDSO_OK))\n\t\treturn 0;",
         "\tif (likely(r == VDSO_OK)) {\n\t\tts->tv_sec = (long)ts->tv_sec;\n"
         "\t\treturn 0;\n\t}")]})
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    assert "y2038.clock_gettime64.REALTIME" in outcome.failed, output
    assert "clock_gettime64.REALTIME" in outcome.passed, output
