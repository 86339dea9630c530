"""arm64's boot-time alternatives (vdsogen/harness/alternatives.py), on images made here.

Linux's arm64 kernel patches its vDSO's .altinstructions records at boot
before it maps it: Debian's 6.12 and 7.2 images begin __kernel_getrandom
with a `b` to its -ENOSYS path that a HAS_FPSIMD record makes a nop.  The
harness and `vdsogen run` map an image so patched, for the caps of the CPU
they play (alternatives.toml: HAS_FPSIMD; no HAS_ECV, no erratum).  Here
vdsogen's own arm64 test build gets such a section (llvm-objcopy), with
records of a present cap, of a cap the CPU lacks, and of callbacks: what is
patched, what is left, and the harness failing getrandom when the patching
is skipped.
"""

import io
import struct

import pytest

from conftest import build_validator, build_target, harness_target, run_broken, with_alt_records
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import HarnessError
from vdsogen.harness import alternatives
from vdsogen.harness.driver import build_harness

CB = 1 << 15
FPSIMD, ECV = 26, 19        # their numbers from Linux 6.16 (alternatives.toml); the image's note says 6.17
NOP, UDF = 0xD503201F, 0x00000000


def word(b: bytes) -> int:
    return int.from_bytes(b, "little")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(target, the arm64 test build, {export: file offset of its first word})."""
    target = harness_target("arm64")
    out = tmp_path_factory.mktemp("alt-image")
    so, _ = build_target(target, out, builder=Builder(target, stream=io.StringIO()), validate=build_validator)
    img = ElfImage(str(so))
    load = img.loads[0]
    entries = {s.name: s.value - load.vaddr + load.offset for s in img.dynsym if s.defined and s.size}
    return target, so, entries


def with_records(so, dest, records, tail=(), edits=()):
    """A copy of `so` with arm64 records (orig, repl, cap, orig_len, alt_len) and the replacement words
    `tail` (conftest.with_alt_records); `edits` are (file offset, word) written over the copy first."""
    return with_alt_records(so, dest, records, b"".join(struct.pack("<I", w) for w in tail),
                            [(at, w.to_bytes(4, "little")) for at, w in edits], "<iiHBB", align=4)


def tail_at(path):
    """The file offset of an image's replacement words (with_records)."""
    sec = ElfImage(str(path)).section(".altinstr_replacement")
    assert sec is not None
    return sec.offset + -sec.offset % 4


def test_a_present_cap_is_patched_and_an_absent_one_left(image, tmp_path):
    _, so, at = image
    get, clock = at["__kernel_getrandom"], at["__kernel_clock_gettime"]
    first = word(so.read_bytes()[clock:clock + 4])
    altered = with_records(so, tmp_path / "vdso.so", [
        (get, ("tail", 0), FPSIMD, 4, 4),           # the CPU has FP/SIMD: patched
        (clock, ("tail", 0), ECV, 4, 4),            # it lacks FEAT_ECV: left
        (clock, 0, CB | ECV, 4, 0),                 # a callback of a cap it lacks: left, as the kernel leaves it
        (clock, ("tail", 0), 99, 4, 4),             # a number no cap of the table has: left
    ], tail=[NOP], edits=[(get, UDF)])
    booted = alternatives.boot(altered)
    assert booted is not None
    assert word(booted.data[get:get + 4]) == NOP
    assert word(booted.data[clock:clock + 4]) == first
    assert booted.applied == (f"HAS_FPSIMD at 0x{get:x} (__kernel_getrandom)",)
    assert booted.left == (f"HAS_ECV at 0x{clock:x}, 0x{clock:x} (the CPU lacks it)",
                           f"cap 99 at 0x{clock:x} (vdsogen names no cap 99 for Linux 6.17 "
                           f"(alternatives.toml's row 6.16))")
    # Nothing else changes.
    original = altered.read_bytes()
    assert [i for i in range(len(original)) if original[i] != booted.data[i]] == list(range(get, get + 4))


def test_a_callback_of_a_present_cap_is_an_error(image, tmp_path):
    _, so, at = image
    altered = with_records(so, tmp_path / "vdso.so", [(at["__kernel_getrandom"], 0, CB | FPSIMD, 4, 0)])
    with pytest.raises(HarnessError) as e:
        alternatives.boot(altered)
    assert "record 0 at 0x" in str(e.value) and "a callback record of HAS_FPSIMD" in str(e.value)


def test_a_replacement_branch_reaches_what_it_reached(image, tmp_path):
    _, so, at = image
    get = at["__kernel_getrandom"]
    # The tail's word 0 branches to the export's second word; word 1 branches to word 2, inside the replacement.
    altered = with_records(so, tmp_path / "vdso.so", [(get, ("tail", 0), FPSIMD, 8, 8)],
                           tail=[0, 0x14000001, NOP])
    tail = tail_at(altered)
    data = bytearray(altered.read_bytes())
    struct.pack_into("<I", data, tail, 0x14000000 | ((get + 4 - tail) // 4) & 0x3FFFFFF)
    altered.write_bytes(bytes(data))
    booted = alternatives.boot(altered)
    assert booted is not None
    assert word(booted.data[get:get + 4]) == 0x14000001             # b .+4: the export's second word still
    assert word(booted.data[get + 4:get + 8]) == 0x14000001         # inside the replacement: as it was


def test_a_literal_load_cannot_move(image, tmp_path):
    _, so, at = image
    altered = with_records(so, tmp_path / "vdso.so", [(at["__kernel_getrandom"], ("tail", 0), FPSIMD, 4, 4)],
                           tail=[0x58000040])                       # ldr x0, .+8
    with pytest.raises(HarnessError, match="0x58000040 .* cannot move"):
        alternatives.boot(altered)


def test_an_image_without_records_runs_as_built(image):
    _, so, _ = image
    assert alternatives.boot(so) is None


def test_the_harness_maps_the_image_as_booted(image, tmp_path, monkeypatch):
    """getrandom's first word is undefined unless the HAS_FPSIMD record puts it back: the harness passes
    with the record applied, and fails getrandom's checks when it is not."""
    target, so, at = image
    get = at["__kernel_getrandom"]
    first = word(so.read_bytes()[get:get + 4])
    altered = with_records(so, tmp_path / "vdso.so", [(get, ("tail", 0), FPSIMD, 4, 4)], tail=[first],
                           edits=[(get, UDF)])
    exe = build_harness(target, tmp_path / "harness", Builder(target, stream=io.StringIO()))
    status, outcome, out = run_broken(target, exe, altered)
    assert status == 0, out
    assert out.startswith(f"# alternatives: applied as its kernel booted on a CPU with HAS_FPSIMD does "
                          f"(vdsogen/harness/alternatives.toml): HAS_FPSIMD at 0x{get:x} (__kernel_getrandom)\n"), out
    assert outcome.diagnostics[0] == out.splitlines()[0]

    monkeypatch.setattr(alternatives, "boot", lambda *a, **k: None)
    status, outcome, out = run_broken(target, exe, altered)
    assert status != 0
    assert any(name.startswith("getrandom") for name in outcome.failed), out


def test_run_maps_the_image_as_booted(image, tmp_path, capsys):
    """`vdsogen run --image` hands its loader the image as booted, in a sealed memory file of its own."""
    from vdsogen.run import booted_image, snapshot

    _, so, at = image
    get = at["__kernel_getrandom"]
    first = word(so.read_bytes()[get:get + 4])
    altered = with_records(so, tmp_path / "vdso.so", [(get, ("tail", 0), FPSIMD, 4, 4)], tail=[first],
                           edits=[(get, UDF)])
    mapped = booted_image(altered, snapshot(altered))
    with open(mapped, "rb") as f:
        assert word(f.read()[get:get + 4]) == first
    assert capsys.readouterr().err == (f"vdsogen run: {altered}: alternatives: applied as its kernel booted on a CPU "
                                       f"with HAS_FPSIMD does (vdsogen/harness/alternatives.toml): HAS_FPSIMD at "
                                       f"0x{get:x} (__kernel_getrandom)\n")
    assert booted_image(so, snapshot(so)).startswith("/proc/self/fd/")


def test_the_facts_are_checked(tmp_path, monkeypatch):
    """A misspelt ISA, or a present cap no row numbers, is an error naming alternatives.toml and the key."""
    from vdsogen.errors import VdsogenError

    facts = tmp_path / "alternatives.toml"
    monkeypatch.setattr(alternatives, "FACTS", facts)
    for text, want in (('[arm46]\nsection = ".altinstructions"\npresent = []\n[arm46.cpucaps]\n',
                        "arm46: no ISA of that name (did you mean 'arm64'?)"),
                       ('[arm64]\nsection = ".altinstructions"\npresent = ["HAS_FPSIMD"]\n'
                        '[arm64.cpucaps."6.1"]\nHAS_ECV = 18\n',
                        "arm64.present: HAS_FPSIMD: in no row of [arm64.cpucaps]")):
        facts.write_text(text)
        alternatives.facts.cache_clear()
        try:
            with pytest.raises(VdsogenError) as e:
                alternatives.facts()
        finally:
            alternatives.facts.cache_clear()
        assert str(facts) in str(e.value) and want in str(e.value), str(e.value)
