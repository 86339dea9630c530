"""The riscv64 target: built with clang + lld and with the GNU cross
toolchain, Linux's export set, no relocation; the signal trampoline's CFI
described in full.  tests/test_targets.py has the rest: each image clean
under `check` and `audit`, every harness check passing (the CFI proven by
unwinding through a frame laid out as Linux lays it out, qemu-user giving
riscv no SA_RESTORER; __vdso_riscv_hwprobe answering from the arch page as
Linux fills it), and the harness checks able to fail.
"""

import pytest
from elftools.dwarf.callframe import CIE, FDE, instruction_name

from conftest import breg, dynsym, elf

TOOLCHAINS = {"clang": {}, "gnu": {"CROSS_COMPILE": "riscv64-linux-gnu-"}}
TRAMPOLINE = "__vdso_rt_sigreturn"

# The trampoline's sp is the rt_sigframe: 128 bytes of siginfo, then the
# ucontext, whose uc_mcontext (at 176) starts with pc, x1 ... x31.
REGS = 128 + 176
PC_COLUMN = 64


@pytest.fixture
def images(built_with):
    """toolchain -> (target, vdso.so, vdso.so.dbg), built once."""
    return lambda tc: built_with("riscv64", TOOLCHAINS[tc])


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_linux_export_set_and_no_relocation(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    assert e.header.e_machine == "EM_RISCV" and e.header.e_flags == 1   # RVC, soft-float ABI, as Linux
    names = {n for n, s in dynsym(so).items() if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] == "STT_FUNC"}
    assert names == {"__vdso_rt_sigreturn", "__vdso_gettimeofday", "__vdso_clock_gettime", "__vdso_clock_getres",
                     "__vdso_getcpu", "__vdso_flush_icache", "__vdso_riscv_hwprobe", "__vdso_getrandom"}
    assert not [s.name for s in e.iter_sections() if s["sh_type"] in ("SHT_REL", "SHT_RELA")]
    loads = [p for p in e.iter_segments() if p["p_type"] == "PT_LOAD"]
    assert [(p["p_offset"], p["p_flags"]) for p in loads] == [(0, 5)]


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_trampoline_cfi(tc, images):
    _, so, _ = images(tc)
    sym = dynsym(so)[TRAMPOLINE]
    start = sym["st_value"]
    fdes = [e for e in elf(so).get_dwarf_info().EH_CFI_entries() if isinstance(e, FDE)
            and e.header["initial_location"] <= start - 1 < e.header["initial_location"] + e.header["address_range"]]
    assert len(fdes) == 1, f"no FDE covers {TRAMPOLINE} - 1"
    fde = fdes[0]
    assert fde.header["initial_location"] + fde.header["address_range"] >= start + sym["st_size"]
    assert isinstance(fde.cie, CIE) and "S" in fde.cie.header["augmentation"].decode()
    assert fde.cie.header["return_address_register"] == PC_COLUMN
    assert not [i for i in fde.instructions if instruction_name(i.opcode).startswith("DW_CFA_advance_loc")]
    cfa = [i for i in fde.instructions if i.opcode == 0x0f]
    regs = {i.args[0]: breg(i.args[1], 2) for i in fde.instructions if i.opcode == 0x10}
    assert len(cfa) == 1 and breg(cfa[0].args[0], 2) == (REGS + 16, [0x06]), cfa
    assert regs == {PC_COLUMN: (REGS, []), **{n: (REGS + 8 * n, []) for n in range(1, 32)}}, regs
