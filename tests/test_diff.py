"""`vdsogen diff OLD NEW`: synthetic pairs of vdsogen's own images (an export
removed by a --specs copy, a trampoline moved off its words, a data offset
moved by a layout of its own), its exit codes and JSON schema; and the
real-image corpus's pairs of consecutive kernels where the corpus is
present (see REAL below)."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, vdsogen
from elfmut import Mutant
from vdsogen.audit import diff
from vdsogen.elf.reader import ElfImage


def version(text):
    return tuple(int(x) for x in text.split("."))


def run(old, new, *args):
    return vdsogen("diff", str(old), str(new), *args)


def as_json(old, new):
    r = run(old, new, "--format=json")
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout)


@pytest.fixture(scope="session")
def variants(tmp_path_factory):
    """Images of --specs copies of x86_64: without __vdso_time (x86_64-notime),
    and on a layout of its own whose clock records have 8 more bytes before
    cycle_last (x86_64-padded)."""
    specs = tmp_path_factory.mktemp("diff-specs")
    (specs / "layouts").mkdir()
    text = (ROOT / "specs" / "x86_64.toml").read_text()
    block = '[[export]]\nname = "__vdso_time"\nimpl = "time"\naliases = ["time"]\n\n'
    assert block in text
    (specs / "x86_64-notime.toml").write_text(text.replace(block, ""))
    (specs / "x86_64-padded.toml").write_text(text.replace('layout = "linux-6.17-x86"', 'layout = "x86-padded"'))
    layout = (ROOT / "specs" / "layouts" / "linux-6.17-x86.toml").read_text()
    start = layout.index("[[struct]]\nname = \"vdso_clock\"")
    end = layout.index("[[struct]]", start + 1)
    clock = layout[start:end].replace('{ name = "cycle_last"', '{ name = "pad", type = "u64" },\n    '
                                                               '{ name = "cycle_last"')
    (specs / "layouts" / "x86-padded.toml").write_text(
        'description = "linux-6.17-x86 with 8 more bytes before cycle_last"\nextends = "linux-6.17-x86"\n\n' + clock)
    out = tmp_path_factory.mktemp("diff-images")
    r = vdsogen("build", f"--specs={specs}", "--arch=x86_64-notime,x86_64-padded", f"--out={out}")
    assert r.returncode == 0, r.stderr
    return {name: out / name / "vdso.so" for name in ("x86_64-notime", "x86_64-padded")}


def test_an_image_against_itself_has_no_change(built):
    _t, so, _dbg = built("x86_64")
    r = run(so, so)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "0 change(s), 0 breaking"
    assert diff.compare(diff.read(str(so)), diff.read(str(so))) == []


def test_a_removed_export_breaks_glibc_and_comes_first(built, variants):
    _t, so, _dbg = built("x86_64")
    code, doc = as_json(so, variants["x86_64-notime"])
    assert code == 1 and doc["exit_code"] == 1
    changes = {(c["kind"], c["what"]): c for c in doc["changes"]}
    removed = changes["export", "__vdso_time@LINUX_2.6"]
    assert removed == {"kind": "export", "what": "__vdso_time@LINUX_2.6", "old": "__vdso_time@LINUX_2.6",
                       "new": None, "breaks": ["glibc"]}
    # No consumer the audit models looks `time` up: it breaks the programs that do.
    assert changes["export", "time@LINUX_2.6"]["breaks"] == ["callers"]
    assert changes["consumer", "glibc"]["breaks"] == ["glibc"]
    assert changes["consumer", "glibc"]["old"] == "works (6/6 found)"        # getrandom too (Linux 6.11)
    assert changes["consumer", "glibc"]["new"] == "degraded (5/6 found)"
    flags = [bool(c["breaks"]) for c in doc["changes"]]
    assert flags == sorted(flags, reverse=True)          # the breaking ones first
    text = run(so, variants["x86_64-notime"])
    lines = text.stdout.splitlines()
    assert text.returncode == 1
    assert "BREAKS export   __vdso_time@LINUX_2.6: removed (breaks glibc)" in lines
    assert re.fullmatch(r"\d+ change\(s\), 3 breaking: callers, glibc", lines[-1])
    # The other way round, the export is added: nothing breaks.
    back = run(variants["x86_64-notime"], so)
    assert back.returncode == 0, back.stdout
    assert "       export   __vdso_time@LINUX_2.6: added" in back.stdout.splitlines()


def test_a_trampoline_moved_off_its_words_breaks_the_unwinders(built, tmp_path):
    _t, so, _dbg = built("arm64")
    m = Mutant(so)
    sym = m.dynsym("__kernel_rt_sigreturn")
    m.set_sym_value(sym, sym.value - 4)                  # onto the nop vdsogen puts before it
    moved = tmp_path / "moved.so"
    m.save(moved)
    code, doc = as_json(so, moved)
    assert code == 1
    changes = {(c["kind"], c["what"]): c for c in doc["changes"]}
    assert changes["trampoline", "__kernel_rt_sigreturn words"] == {
        "kind": "trampoline", "what": "__kernel_rt_sigreturn words", "old": "d2801168 d4000001",
        "new": "d503201f d2801168", "breaks": ["unwinders"]}
    text = run(so, moved).stdout.splitlines()
    assert text[0].startswith("arm64: ")
    assert text[1] == ("BREAKS trampoline __kernel_rt_sigreturn words: d2801168 d4000001 -> d503201f d2801168; "
                       "no longer the words unwinders compare, and no CFI covers it (breaks unwinders)")
    assert changes["trampoline", "__kernel_rt_sigreturn offset"]["new"] == sym.value - 4
    assert changes["trampoline", "__kernel_rt_sigreturn offset"]["breaks"] == []


def test_a_trampoline_that_moves_with_its_words_breaks_nothing(built):
    old = diff.read(str(built("arm64")[1]))
    new = diff.read(str(built("arm64")[1]))
    new.trampolines["__kernel_rt_sigreturn"].address += 0x40
    changes = diff.compare(old, new)
    assert [(c.kind, c.breaks) for c in changes] == [("trampoline", [])]
    assert diff.exit_code(changes) == 0


def test_lost_cfi_breaks_the_unwinders_only_where_the_words_differ(built):
    so = str(built("arm64")[1])
    old, new = diff.read(so), diff.read(so)
    old.trampolines["__kernel_rt_sigreturn"].cfi = "signal frame"
    assert [(c.kind, c.breaks) for c in diff.compare(old, new)] == [("cfi", [])]
    new.trampolines["__kernel_rt_sigreturn"].matches = False
    new.trampolines["__kernel_rt_sigreturn"].words = "d503201f d2801168"
    kinds = {(c.kind, c.what): c.breaks for c in diff.compare(old, new)}
    assert kinds == {("cfi", "__kernel_rt_sigreturn"): ["unwinders"],
                     ("trampoline", "__kernel_rt_sigreturn words"): ["unwinders"]}
    old.trampolines["__kernel_rt_sigreturn"].cfi = new.trampolines["__kernel_rt_sigreturn"].cfi = "signal frame"
    assert [(c.kind, c.breaks) for c in diff.compare(old, new)] == [("trampoline", [])]


def test_a_layout_of_its_own_moves_the_data_offsets_the_code_reads(built, variants):
    _t, so, _dbg = built("x86_64")
    code, doc = as_json(so, variants["x86_64-padded"])
    assert code == 0
    data = {c["what"]: c for c in doc["changes"] if c["kind"] == "data"}
    assert "__vdso_clock_gettime" in data and "__vdso_gettimeofday" in data
    gettime = data["__vdso_clock_gettime"]
    assert gettime["breaks"] == []
    # cycle_last, 8 bytes into the first clock record, is read 8 bytes further on.
    assert -0x6000 + 8 in gettime["old"] and -0x6000 + 8 not in gettime["new"]
    assert -0x6000 + 16 in gettime["new"]
    assert doc["old"]["data_offsets"] and doc["new"]["data_offsets"]
    notes = {c["what"] for c in doc["changes"] if c["kind"] == "note"}
    assert notes == {"vdsogen layout"}                   # the layout note names the layout


def test_data_offsets_hold_every_rip_relative_read_objdump_shows(built):
    """The x86-64 data flow against llvm-objdump: every RIP-relative operand
    but lea's (an address, not a read) outside the image is read, and
    everything read is in the target's six data pages below the image."""
    _t, so, _dbg = built("x86_64")
    img = ElfImage(so)
    dump = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", str(so)], capture_output=True,
                          text=True, check=True).stdout
    rip = {int(m[2], 16) - (1 << 64) for m in re.finditer(r"\t(\w+)\t.*\(%rip\).*# 0x(f[0-9a-f]+)", dump)
           if not m[0].startswith("\tlea")}
    got = set().union(*diff.data_offsets(img).values())
    assert rip and rip <= got
    assert all(-6 * 4096 <= a < 0 for a in got)
    assert got - rip                         # and loads through the register a lea set


@pytest.mark.parametrize("name", ["x86_64", "x32", "i386", "arm64", "ppc32", "ppc64", "ppc64le", "riscv64",
                                  "loongarch64"])
def test_every_data_offset_is_in_the_spec_data_pages(built, name):
    """Every decoded ISA: what the exports read lies in the data pages below
    the image, and clock_gettime reads the first record's seq and clock_mode,
    the data area's first two words."""
    target, so, _dbg = built(name)
    data = diff.data_offsets(ElfImage(so))
    start = -target.datapage.pages * target.datapage.page_size
    assert all(start <= a < 0 for offsets in data.values() for a in offsets), data
    gettime = next(v for k, v in data.items() if k.endswith("clock_gettime"))
    assert {start, start + 4} <= set(gettime)


def test_an_isa_whose_data_flow_is_not_decoded_says_so(built):
    _t, so, _dbg = built("s390x")
    assert diff.data_offsets(ElfImage(so)) is None
    r = run(so, so)
    assert r.returncode == 0
    assert f"note: {so}: data offsets are not decoded for s390x" in r.stdout.splitlines()
    assert as_json(so, so)[1]["old"]["data_offsets"] is False


def test_cfi_ranges_are_pyelftools_fdes(built):
    from elftools.elf.elffile import ELFFile
    _t, so, _dbg = built("x86_64")
    with open(so, "rb") as f:
        fdes = [e for e in ELFFile(f).get_dwarf_info().EH_CFI_entries() if type(e).__name__ == "FDE"]
        want = sorted((e.header.initial_location, e.header.initial_location + e.header.address_range) for e in fdes)
    assert sorted((lo, hi) for lo, hi, _s in diff.fde_ranges(ElfImage(so))) == want
    assert want


def test_images_of_two_abis_and_unusable_files_exit_2(built, tmp_path):
    x86, arm64 = built("x86_64")[1], built("arm64")[1]
    r = run(x86, arm64)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"vdsogen: {x86} is of ABI x86_64 and {arm64} of ABI arm64: diff compares two images "
                        "of one ABI\n")
    r = run(x86, tmp_path / "missing.so")
    assert r.returncode == 2
    assert r.stderr == f"vdsogen: {tmp_path / 'missing.so'}: cannot read: No such file or directory\n"
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF file")
    r = run(junk, x86, "--format=json")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"vdsogen: {junk} @0x0: not an ELF file")


def test_the_json_schema(built, variants):
    _t, so, _dbg = built("x86_64")
    _code, doc = as_json(so, variants["x86_64-notime"])
    assert set(doc) == {"schema", "tool", "old", "new", "exit_code", "changes"}
    assert doc["schema"] == "vdsogen-diff/1"
    assert doc["old"] == {"file": str(so), "abi": "x86_64", "linux": "7.2", "data_offsets": True}
    for c in doc["changes"]:
        assert set(c) == {"kind", "what", "old", "new", "breaks"}
        assert c["kind"] in diff.KINDS
        assert isinstance(c["breaks"], list)


def test_every_kind_is_documented():
    text = (ROOT / "docs" / "audit.rst").read_text()
    section = text[text.index("Comparing two images"):]
    for kind in diff.KINDS:
        assert f"``{kind}``" in section, kind


# --- the real-image corpus ------------------------------------------------------------
#
# REAL: the cache scripts/fetch-real-vdso.sh fills ($VDSOGEN_REAL_VDSO, default
# ~/.cache/vdsogen/real-vdso), as scripts/audit-corpus.sh reads it.  Like that
# script it is outside CI (minutes of downloads): the pairs below are tests
# only where the cache holds their images.  Setting VDSOGEN_REAL_VDSO says
# the corpus is there: then a missing image is a failure, not a test left out.

REAL = Path(os.environ.get("VDSOGEN_REAL_VDSO") or Path.home() / ".cache" / "vdsogen" / "real-vdso") / "images"
REQUIRED = bool(os.environ.get("VDSOGEN_REAL_VDSO"))

# (old, new, exit status, exports added, what breaks)
PAIRS = [
    ("bookworm/amd64/x86_64", "trixie/amd64/x86_64", 0,
     {"__vdso_getrandom@LINUX_2.6", "getrandom@LINUX_2.6"}, set()),
    ("trixie/amd64/x86_64", "sid/amd64/x86_64", 0,
     {"__vdso_futex_robust_list32_try_unlock@LINUX_2.6", "__vdso_futex_robust_list64_try_unlock@LINUX_2.6"},
     set()),
    # Linux links arm64's vDSO without DT_HASH since 6.11: musl and DT_HASH-only parsers make syscalls.
    ("bookworm/arm64/arm64", "trixie/arm64/arm64", 1, {"__kernel_getrandom@LINUX_2.6.39"}, {"musl", "sysv"}),
    ("trixie/arm64/arm64", "sid/arm64/arm64", 0, set(), set()),
    ("bookworm/arm64/arm64", "sid/arm64/arm64", 1, {"__kernel_getrandom@LINUX_2.6.39"}, {"musl", "sysv"}),
    ("bookworm/amd64/i386", "sid/amd64/i386", 0,
     {"__vdso_clock_getres_time64@LINUX_2.6", "__vdso_futex_robust_list32_try_unlock@LINUX_2.6",
      "__vdso_getcpu@LINUX_2.6"}, set()),
]
PRESENT = [p for p in PAIRS if REQUIRED or all((REAL / f"{x}.so").is_file() for x in p[:2])]


if PRESENT:
    @pytest.mark.parametrize("old,new,status,added,breaks", PRESENT, ids=[f"{p[0]}->{p[1]}" for p in PRESENT])
    def test_real_consecutive_kernels(old, new, status, added, breaks):
        for x in (old, new):
            assert (REAL / f"{x}.so").is_file(), f"{REAL / x}.so: not in the corpus (scripts/fetch-real-vdso.sh)"
        code, doc = as_json(REAL / f"{old}.so", REAL / f"{new}.so")
        assert code == status
        got = {c["what"] for c in doc["changes"] if c["kind"] == "export" and c["old"] is None}
        assert got == added
        assert {b for c in doc["changes"] for b in c["breaks"]} == breaks
        assert not [c for c in doc["changes"] if c["kind"] == "export" and c["new"] is None]
        assert version(doc["old"]["linux"]) < version(doc["new"]["linux"])

if REQUIRED or (REAL / "sid/amd64/x86_64.so").is_file():
    def test_vdsogen_x86_64_against_linux_7_2(built):
        _t, so, _dbg = built("x86_64")
        code, doc = as_json(so, REAL / "sid/amd64/x86_64.so")
        assert code == 0
        # vdsogen's image offers every export of Linux 7.2's (getrandom and the
        # robust-futex unlocks included) but the SGX entry, a CONFIG_X86_SGX one.
        exports = [c for c in doc["changes"] if c["kind"] == "export"]
        assert {c["what"] for c in exports if c["old"] is None} == {"__vdso_sgx_enter_enclave@LINUX_2.6"}
        assert not [c for c in exports if c["new"] is None]
        assert not [c for c in doc["changes"] if c["breaks"]]
        # Both read their data pages below the image, from 0x6000 below it.
        data = {c["what"]: c for c in doc["changes"] if c["kind"] == "data"}
        assert all(min(c["old"] + c["new"]) >= -0x6000 for c in data.values())

