"""The s390x target: built with clang (linked by GNU ld, as lld writes
4-byte .hash words) and with the GNU cross toolchain, 8-byte .hash words;
every entry wrapped in a stack frame with a cleared back chain; the signal
trampolines' CFI.  tests/test_targets.py has the rest: each image clean
under `check` and `audit`, every harness check passing (the TOD counter
less tod_delta as the kernel's clocksource reads it, the CFI proven by unwinding
through real signal frames under qemu-s390x), and the checks able to fail.
"""

import dataclasses
import io

import pytest
from elftools.dwarf.callframe import CIE, FDE

from vdsogen.audit.check import build_validator
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.errors import BuildError
from vdsogen.spec.model import load_target

from conftest import breg, dynsym, elf

TOOLCHAINS = {"clang": {}, "gnu": {"CROSS_COMPILE": "s390x-linux-gnu-"}}
SIGNAL_TRAMPOLINES = {"__kernel_sigreturn": 176, "__kernel_rt_sigreturn": 336}   # where the _sigregs are
PC_COLUMN = 32

# aghi %r15,-168; stg %r14,160(%r15); xc 0(8,%r15),0(%r15)
ENTRY_PROLOGUE = bytes.fromhex("a7fbff58" "e3e0f0a00024" "d707f000f000")


@pytest.fixture
def images(built_with):
    """toolchain -> (target, vdso.so, vdso.so.dbg), built once."""
    return lambda tc: built_with("s390x", TOOLCHAINS[tc])


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_hash_words_are_8_bytes(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    assert e.get_section_by_name(".hash")["sh_entsize"] == 8
    assert e.get_section_by_name(".gnu.hash") is not None


def test_lld_link_is_refused(tmp_path):
    """Linked by lld, the .hash words are 4 bytes: the build's validation says so (X004)."""
    target = load_target("s390x")
    lld = dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, clang_linker="lld"))
    with pytest.raises(BuildError, match="X004 error .*4-byte .hash words"):
        build_target(lld, tmp_path, builder=Builder(lld, env={}, stream=io.StringIO()), validate=build_validator)


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_linux_export_set_and_no_relocation(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    syms = {n: s for n, s in dynsym(so).items() if s["st_shndx"] != "SHN_UNDEF" and s.name.startswith("__kernel")}
    assert set(syms) == {"__kernel_gettimeofday", "__kernel_clock_gettime", "__kernel_clock_getres",
                         "__kernel_getcpu", "__kernel_getrandom", "__kernel_restart_syscall", "__kernel_sigreturn",
                         "__kernel_rt_sigreturn"}
    assert all(s["st_info"]["type"] == "STT_FUNC" for s in syms.values())
    assert not [s.name for s in e.iter_sections() if s["sh_type"] in ("SHT_REL", "SHT_RELA")]
    loads = [p for p in e.iter_segments() if p["p_type"] == "PT_LOAD"]
    assert [(p["p_offset"], p["p_flags"]) for p in loads] == [(0, 5)]


def code_at(e, addr, n):
    text = e.get_section_by_name(".text")
    return text.data()[addr - text["sh_addr"]:addr - text["sh_addr"] + n]


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_entries_make_a_frame_with_a_cleared_back_chain(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    for name in ("__kernel_gettimeofday", "__kernel_clock_gettime", "__kernel_clock_getres", "__kernel_getcpu"):
        assert code_at(e, dynsym(so)[name]["st_value"], len(ENTRY_PROLOGUE)) == ENTRY_PROLOGUE, name


@pytest.mark.parametrize("tc", TOOLCHAINS)
@pytest.mark.parametrize("name", sorted(SIGNAL_TRAMPOLINES))
def test_trampoline_cfi(tc, name, images):
    _, so, _ = images(tc)
    sym = dynsym(so)[name]
    start = sym["st_value"]
    fdes = [e for e in elf(so).get_dwarf_info().EH_CFI_entries() if isinstance(e, FDE)
            and e.header["initial_location"] <= start - 1 < e.header["initial_location"] + e.header["address_range"]]
    assert len(fdes) == 1, f"no FDE covers {name} - 1"
    fde = fdes[0]
    assert isinstance(fde.cie, CIE) and "S" in fde.cie.header["augmentation"].decode()
    assert fde.cie.header["return_address_register"] == PC_COLUMN
    sregs = SIGNAL_TRAMPOLINES[name]
    cfa = [i for i in fde.instructions if i.opcode == 0x0f]
    regs = {i.args[0]: breg(i.args[1], 15) for i in fde.instructions if i.opcode == 0x10}
    # CFA = gprs[15] + 160; psw.addr and gprs[0..15] from the _sigregs.
    assert len(cfa) == 1 and breg(cfa[0].args[0], 15) == (sregs + 16 + 120, [0x06, 0x23, 0xa0, 0x01]), cfa
    assert regs == {PC_COLUMN: (sregs + 8, []), **{n: (sregs + 16 + 8 * n, []) for n in range(16)}}, regs


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_getcpu_reads_the_tod_programmable_field(tc, images):
    """getcpu answers in user space, as Linux's does: stcke, then the CPU
    number from its last two bytes; the node is 0; no svc on the way."""
    from vdsogen.bench import hotpath
    from vdsogen.elf.reader import ElfImage

    target, so, dbg = images(tc)
    assert target.getcpu == "tod"
    img = ElfImage(str(so))
    assert hotpath.export_hot_path(img, "__kernel_getcpu", 1, hotpath.cold_ranges(ElfImage(str(dbg)))) is not None
    assert hotpath.export_hot_path(img, "__kernel_getcpu", 0) is None, "the CPU number comes with the clock"


# --- [harness] checks ------------------------------------------------------

@pytest.mark.parametrize("checks, key, words", [
    ('["no_such_check"]', "harness.checks[0]", "no fragment arch/s390/harness-check-no_such_check.c.j2"),
    ('["tod steering"]', "harness.checks[0]", "not a C identifier"),
    ('["tod_steering", "tod_steering"]', "harness.checks[1]", "checked already"),
    ('["getcpu"]', "harness.checks[0]", "checked already"),
])
def test_harness_checks_are_validated(checks, key, words, tmp_path):
    from vdsogen import paths
    from vdsogen.errors import SpecError

    text = (paths.SPECS / "s390x.toml").read_text()
    old = 'checks = ["tod_steering", "restart_syscall"]'
    assert old in text
    (tmp_path / "s390x.toml").write_text(text.replace(old, f"checks = {checks}"))
    with pytest.raises(SpecError) as e:
        load_target("s390x", specs=tmp_path)
    assert e.value.key == key and words in e.value.message, str(e.value)
