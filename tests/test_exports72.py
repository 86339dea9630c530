"""Linux 7.2's exports (issue 20): clock_getres_time64 on the 32-bit ABIs
that have clock_gettime64, x86's robust-futex unlock with the labels of its
critical section, and audit's report of which Linux's export set an image
has.

The facts are spelt out here, not taken from the catalogue the build uses:
the syscall numbers, which ABI has which unlock, the instructions around
the labels.  Linux's own images (the sid corpus of scripts/fetch-real-vdso.sh)
pass the same harness checks; they are not at hand in CI, so the export-set
report is tested on vdsogen's images with exports taken away.
"""

import json
import re
import subprocess

import pytest

from conftest import build_broken, dynsym, harness_target, run_broken, vdsogen
from elfmut import Mutant
from vdsogen.audit.run import audit_path
from vdsogen.build.emit import read_embedding, render
from vdsogen.spec import abi

# target -> clock_getres_time64's syscall number (the time64 table: 406, +4000 on o32, +6000 on n32)
GETRES_TIME64 = {"i386": 406, "arm": 406, "arm64-compat": 406, "mips-o32": 4406, "mips-o32-be": 4406,
                 "mips-n32": 6406, "mips-n32-be": 6406}
# target -> the unlocks Linux 7.2 exports there, with the bytes of the pending-op pointer each clears
FUTEX = {"x86_64": {"64": 8, "32": 4}, "x32": {"64": 8, "32": 4}, "i386": {"32": 4}}


# --- clock_getres_time64 ----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GETRES_TIME64))
def test_getres_time64_is_exported_as_linux_does(built, name):
    target, so, _ = built(name)
    e = next(e for e in target.exports if e.name == "__vdso_clock_getres_time64")
    assert e.function.name == "clock_getres_time64" and e.version == "LINUX_2.6"
    assert target.syscall("clock_getres_time64") == GETRES_TIME64[name]
    sym = dynsym(so)["__vdso_clock_getres_time64"]
    assert sym["st_info"]["type"] == "STT_FUNC" and sym["st_info"]["bind"] == "STB_GLOBAL"
    assert target.elf.linux_version >= (7, 0, 0)        # its note says a Linux that has it
    assert abi.get(target.abi.name).export("__vdso_clock_getres_time64").since == (7, 0, 0)


def test_the_other_abis_do_not_have_it():
    """64-bit ABIs and those without clock_gettime64 have no time64 variant."""
    for name in ("x86_64", "x32", "arm64", "mips-n64", "riscv64", "loongarch64", "s390x"):
        assert abi.get(name).export("__vdso_clock_getres_time64") is None, name


# --- the robust-futex unlock -------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FUTEX))
def test_futex_unlocks_are_the_ones_linux_exports(built, name):
    _, so, _ = built(name)
    have = {n for n in dynsym(so) if "futex" in n}
    assert have == {f"__vdso_futex_robust_list{b}_try_unlock" for b in FUTEX[name]}
    for n in have:
        assert dynsym(so)[n]["st_info"]["type"] == "STT_FUNC"


def disassembly(so, start, end):
    """[(offset, mnemonic, operands)] of [start, end) of the image, by llvm-objdump
    (the image is linked at 0); a lock prefix is a line of its own there."""
    out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={end:#x}", str(so)], capture_output=True, text=True, check=True).stdout
    lines = []
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            lines.append((int(m[1], 16), m[2], m[3].strip()))
    return lines


def emitted(target, so, dbg):
    files = dict(render(target, read_embedding(target, so, dbg), ("c",)))
    out = {}
    for line in files["vdso-offsets.h"].decode().splitlines():
        parts = line.split()
        if line.startswith("#define vdso_offset_"):
            out[parts[1][len("vdso_offset_"):]] = int(parts[2], 0)
    return out


@pytest.mark.parametrize("name", sorted(FUTEX))
def test_futex_labels_bracket_the_critical_section(built, name):
    """start right after the lock cmpxchg, a jnz to end there, success at the
    store of the pointer's width through edx/rdx, end right after it: what
    Linux's kernel expects at the labels it reads (vdso2c)."""
    target, so, dbg = built(name)
    d = emitted(target, so, dbg)
    reg = "%edx" if name == "i386" else "%rdx"
    for bits, width in FUTEX[name].items():
        fn = d[f"__vdso_futex_robust_list{bits}_try_unlock"]
        start, success, end = (d[f"__futex_list{bits}_try_unlock_cs_{w}"] for w in ("start", "success", "end"))
        assert fn < start < success < end
        code = disassembly(so, fn, end + 8)
        at = {off: (mn, ops) for off, mn, ops in code}
        before = [c for c in code if c[0] < start]
        assert before[-2][1] == "lock" and before[-1][1] == "cmpxchgl", before
        assert at[start][0] in ("jne", "jnz") and int(at[start][1].split()[0], 16) == end, at[start]
        assert at[success][0] == {8: "movq", 4: "movl"}[width] and at[success][1].endswith(f", ({reg})"), \
            at[success]
        assert [off for off, _, _ in code if start < off <= end] == [success, end]


@pytest.fixture(scope="module")
def x86_harness(harnesses):
    return harnesses("x86_64")


def test_futex_checks_pass_with_the_labels(built, x86_harness):
    target, so, _ = built("x86_64")
    status, outcome, output = run_broken(target, x86_harness, so)
    for bits in ("64", "32"):
        for c in ("unlock", "contended", "critical_section"):
            assert f"futex_robust_list{bits}_try_unlock.{c}" in outcome.passed, output
    assert output.count("its labels bracket it") == 2, output


LIST64 = "impl-futex_robust_list64_try_unlock.S"
STORE64 = "\tmovq\t%rcx, (%rdx)\t\t/* *pop = 0 */\n"
# Each breakage: the edits of the rendered source, and the FAIL line's words of each check that must fail.
FUTEX_BREAKAGES = {
    # The store before the compare: a contended unlock clears the pending op too.
    "store-first": ({LIST64: [(STORE64, ""), ("\tlock cmpxchgl", "\tmovq\t%rcx, (%rdx)\n\tlock cmpxchgl")]},
                    {"futex_robust_list64_try_unlock.contended": "want *lock returned and nothing written",
                     "futex_robust_list64_try_unlock.critical_section": "no stop with the lock free"}),
    # start before the cmpxchg: stopped there with ZF from the xor, the kernel would clear pop.
    "start-early": ({LIST64: [("__futex_list64_try_unlock_cs_start:\n", ""),
                              ("\tlock cmpxchgl", "__futex_list64_try_unlock_cs_start:\n\tlock cmpxchgl")]},
                    {"futex_robust_list64_try_unlock.critical_section": "labels ["}),
    # pop moved out of rdx inside the window: the kernel would clear the wrong word.
    "pop-not-in-rdx": ({LIST64: [(STORE64, "\tmovq\t%rdx, %r8\n\txorl\t%edx, %edx\n\tmovq\t%rcx, (%r8)\n")]},
                       {"futex_robust_list64_try_unlock.critical_section": "the kernel would not clear pop"}),
    # 32-bit store for the 64-bit pointer: half of it left.
    "narrow-store": ({LIST64: [(STORE64, "\tmovl\t%ecx, (%rdx)\n")]},
                     {"futex_robust_list64_try_unlock.unlock": "want tid, 0, cleared"}),
}


@pytest.mark.parametrize("case", sorted(FUTEX_BREAKAGES))
def test_futex_checks_catch_broken_unlocks(case, x86_harness, tmp_path):
    edits, fails = FUTEX_BREAKAGES[case]
    target = harness_target("x86_64")
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = run_broken(target, x86_harness, image)
    assert status == 1, output
    for check, words in fails.items():
        assert check in outcome.failed and words in outcome.failed[check], f"{check} did not fail:\n{output}"
    assert "futex_robust_list32_try_unlock.critical_section" in outcome.passed, output


# --- audit: the export set --------------------------------------------------------

def without(built, tmp_path, name, *symbols):
    """The target's image with these exports made undefined, as an older
    kernel's lacks them (those it does not have are left out)."""
    _, so, _ = built(name)
    m = Mutant(so)
    have = dynsym(so)
    for s in symbols:
        if s in have:
            m.set_sym_shndx(m.dynsym(s), 0)
    return m.save(tmp_path / f"{name}-older.so")


def spans(report):
    return [(s.as_dict()["from"], s.as_dict()["until"]) for s in report.exports.matches]


def test_export_set_of_i386_images_by_era(built, tmp_path):
    """vdsogen's i386 image has 7.2's set; taking away what 7.2, 7.0 and 6.2
    added walks it back as Debian's bookworm image is (6.1: 5.6 up to 6.2)."""
    _, so, _ = built("i386")
    r = audit_path(str(so))
    assert spans(r) == [("7.2", None)] and r.exports.lacks == () and r.exports.unknown == ()
    futex, getres, getcpu = ("__vdso_futex_robust_list32_try_unlock", "__vdso_clock_getres_time64", "__vdso_getcpu")
    steps = [((futex,), ("7.0", "7.2")), ((futex, getres), ("6.2", "7.0")), ((futex, getres, getcpu), ("5.6", "6.2"))]
    for gone, span in steps:
        r = audit_path(str(without(built, tmp_path, "i386", *gone)))
        assert spans(r) == [span], r.exports
        assert [n for n, _ in r.exports.lacks] == [n for n in (getcpu, getres, futex) if n in gone]


def test_an_optional_export_widens_nothing_and_a_missing_core_one_matches_nothing(built, tmp_path):
    """x86_64: sgx has a note (CONFIG_X86_SGX), so its absence still matches;
    an image without gettimeofday has no Linux's set."""
    r = audit_path(str(without(built, tmp_path, "x86_64", "__vdso_futex_robust_list32_try_unlock",
                               "__vdso_futex_robust_list64_try_unlock", "__vdso_getrandom", "getrandom")))
    assert spans(r) == [("5.3", "6.11")], r.exports
    assert ("__vdso_sgx_enter_enclave", "with CONFIG_X86_SGX") in r.exports.lacks
    r = audit_path(str(without(built, tmp_path, "x86_64", "__vdso_gettimeofday", "gettimeofday")))
    assert r.exports.matches == () and "the set of no Linux" in r.exports.line()


def test_export_set_in_text_and_json(built, tmp_path):
    old = without(built, tmp_path, "arm", "__vdso_clock_getres_time64")
    text = vdsogen("audit", str(old))       # exit 1: the undefined entry is an error of its own
    assert (f"{old}: exports: the set of Linux 5.6 up to 7.0; of the newest set (Linux 7.0 and later) "
            f"it lacks: __vdso_clock_getres_time64\n") in text.stdout
    doc = json.loads(vdsogen("audit", "--format=json", str(old)).stdout)
    assert doc["images"][0]["exports"] == {
        "abi": "arm", "matches": [{"from": "5.6", "until": "7.0"}], "newest": "7.0",
        "lacks": [{"name": "__vdso_clock_getres_time64", "note": ""}], "unknown": []}


def test_every_catalogued_abi_has_spans_ending_open():
    from vdsogen.audit.exportset import spans as cut
    for name in ("x86_64", "x32", "i386", "arm", "arm64-compat", "mips-o32", "mips-n32"):
        s = cut(abi.get(name))
        assert s[-1].until is None and all(a.until == b.first for a, b in zip(s, s[1:])), name
    assert str(cut(abi.get("x86_64"))[-1]) == "Linux 7.2 and later"
