"""The i386 target (linux-gate.so.1): built with clang + lld and with the GNU
cross toolchain, e_entry at __kernel_vsyscall, no relocation, signal-frame
CFI on both trampolines, time64 entries.  tests/test_targets.py has the
rest: each image clean under `check` and `audit`, every harness check
passing natively, and the unwind, sigreturn, vsyscall and y2038 checks
catching broken images.
"""

import io
import struct

import pytest
from elftools.dwarf.callframe import CIE, FDE, instruction_name

from vdsogen.audit.check import build_validator
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness, run_harness
from vdsogen.spec.model import load_target

from conftest import breg, dynsym, elf, expected_checks, run_broken

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


# --- time64 ----------------------------------------------------------------

def test_clock_getres_time64_export(tmp_path):
    """The image exports __vdso_clock_getres_time64 (Linux 7.0's) and passes
    the time64 clock_getres checks."""
    target = load_target("i386")
    assert "clock_getres_time64" in {e.impl for e in target.exports}
    out = io.StringIO()
    builder = Builder(target, stream=out)
    so, _ = build_target(target, tmp_path / "image", builder=builder, validate=build_validator)
    exe = build_harness(target, tmp_path, builder)
    status, outcome = run_harness(target, exe, so, builder, out)
    assert status == 0 and not outcome.failed, out.getvalue()
    assert "clock_getres_time64.MONOTONIC" in outcome.passed
    assert not [c for c in expected_checks(target) if c not in outcome.passed], out.getvalue()


def test_legacy_entries_truncate_past_2038(images, harness):
    """The y2038 checks ran on the 32-bit entries: the native ones truncate, time64 does not."""
    target, so, _ = images("clang")
    _, outcome, output = run_broken(target, harness, so)
    for check in ("y2038.clock_gettime64.REALTIME", "y2038.clock_gettime.REALTIME",
                  "y2038.clock_gettime64.REALTIME_COARSE", "y2038.gettimeofday", "y2038.time"):
        assert check in outcome.passed, output
