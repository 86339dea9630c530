"""The riscv64 target: built with clang + lld and with the GNU cross
toolchain, each image clean under `check` and `audit`, no relocation; the
signal trampoline's CFI described in full and proven by unwinding through a
frame laid out as Linux lays it out (qemu-user gives riscv no SA_RESTORER);
__vdso_riscv_hwprobe answering from the arch page as Linux fills it and
leaving the rest to the syscall; and the harness checks of both able to fail.
"""


import pytest
from elftools.dwarf.callframe import CIE, FDE, instruction_name

from vdsogen.audit.check import check_image
from vdsogen.audit.run import audit_path
from vdsogen.spec.model import load_target

from conftest import breg, dynsym, elf
from test_harness import build_broken, expected_checks, harnesses, run_broken  # noqa: F401 (fixture)

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


@pytest.fixture
def harness(harnesses):
    return harnesses("riscv64")


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_check_is_clean(tc, images):
    target, so, dbg = images(tc)
    for path in (so, dbg):
        findings = check_image(target, path)
        assert not [f for f in findings if f.severity == "error"], findings
        # GNU ld leaves an empty DT_RELA on RISC-V (D007), as in Linux's own riscv64 images.
        assert {f.rule for f in findings} <= ({"D007"} if tc == "gnu" else set()), findings


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_audit_finds_no_error(tc, images):
    _, so, _ = images(tc)
    report = audit_path(str(so))
    assert report.detection.abi.name == "riscv64"
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    assert all(v.verdict == "works" for v in report.consumers if v.consumer != "glibc"), report.consumers


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_linux_export_set_and_no_relocation(tc, images):
    _, so, _ = images(tc)
    e = elf(so)
    assert e.header.e_machine == "EM_RISCV" and e.header.e_flags == 1   # RVC, soft-float ABI, as Linux
    names = {n for n, s in dynsym(so).items() if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] == "STT_FUNC"}
    assert names == {"__vdso_rt_sigreturn", "__vdso_gettimeofday", "__vdso_clock_gettime", "__vdso_clock_getres",
                     "__vdso_getcpu", "__vdso_flush_icache", "__vdso_riscv_hwprobe"}
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


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_every_harness_check_passes(tc, images, harness):
    target, so, _ = images(tc)
    status, outcome, output = run_broken(target, harness, so)
    assert not outcome.failed, output
    assert status == 0, output
    missing = [c for c in expected_checks(target) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"
    for check in (f"unwind.{TRAMPOLINE}", f"sigreturn.{TRAMPOLINE}", "riscv_hwprobe", "flush_icache", "getcpu"):
        assert check in outcome.passed, output


# --- the checks can fail ---------------------------------------------------

# Each: an edit of the rendered sources, the check that must then FAIL, with what it says.
BREAKAGES = {
    # The CFA read from sc.a0's neighbour, not sc.sp.
    "cfa": ({"rt_sigreturn.S": [("0x0f, 4, 0x72, 0xc0, 0x02, 0x06", "0x0f, 4, 0x72, 0xc8, 0x02, 0x06")]},
            f"unwind.{TRAMPOLINE}", "CFA is"),
    # The pc taken from sc.sp.
    "pc": ({"rt_sigreturn.S": [("0x10, 64, 3, 0x72, 0xb0, 0x02", "0x10, 64, 3, 0x72, 0xc0, 0x02")]},
           f"unwind.{TRAMPOLINE}", "not to the interrupted function"),
    # s0 taken from the pc's slot: every register is compared with the ucontext.
    "register": ({"rt_sigreturn.S": [("0x10, 8, 3, 0x72, 0xf0, 0x02", "0x10, 8, 3, 0x72, 0xb0, 0x02")]},
                 f"unwind.{TRAMPOLINE}", "DWARF register 8 unwinds to"),
    # No 'S': the interrupted pc would be taken for a return address.
    "no-signal-frame": ({"rt_sigreturn.S": [("\t.cfi_signal_frame\n", "")]},
                        f"unwind.{TRAMPOLINE}", "no signal frame"),
    # A key past the page's last answered from beyond the array.
    "hwprobe-key-bound": ({"impl-riscv_hwprobe.S": [("li\tt3, 14", "li\tt3, 15")]},
                          "riscv_hwprobe", "unknown key 15"),
    # The page answers before the kernel marked it ready.
    "hwprobe-ready": ({"impl-riscv_hwprobe.S": [("(t0)\t\t/* ready */\n\tbeqz\tt1, 4f", "(t0)\t\t/* ready */")]},
                      "riscv_hwprobe", "page not ready"),
    # A CPU set answered from the page though the CPUs differ.
    "hwprobe-homogeneous": ({"impl-riscv_hwprobe.S": [("/* homogeneous_cpus */\n\tbeqz\tt1, 4f",
                                                       "/* homogeneous_cpus */")]},
                            "riscv_hwprobe", "CPUs that differ"),
    # A flag answered from the page.
    "hwprobe-flags": ({"impl-riscv_hwprobe.S": [("bnez\ta4, 4f", "nop")]}, "riscv_hwprobe", "flags 1"),
    # flush_icache makes the wrong syscall.
    "flush_icache-nr": ({"impl-flush_icache.S": [("li\ta7, 259", "li\ta7, 258")]}, "flush_icache", "returned"),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_check_catches_breakage(breakage, harness, tmp_path):
    target = load_target("riscv64")
    edits, check, words = BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    assert words in outcome.failed.get(check, ""), output
    assert "clock_gettime.MONOTONIC" in outcome.passed, output
