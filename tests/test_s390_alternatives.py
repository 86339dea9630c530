"""s390's boot-time alternatives (vdsogen/harness/alternatives.py), on images made here.

Linux's s390 kernel patches its vDSO's .altinstructions records at boot
(vdso_apply_alternatives): Debian's 6.12 and 7.2 images test facility 129,
the vector facility, at the start of __kernel_getrandom, which answers
-ENOSYS without it.  Here vdsogen's own s390x image gets such a section
(llvm-objcopy): a facility the CPU has is copied in, one it lacks and the
other feature types are left, and the harness fails getrandom when the
patching is skipped.
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

FMT = ">iiIB"           # instr_offset, repl_offset, feature, instrlen: 13 bytes, packed
ILLEGAL = b"\x00\x00"   # opcode 0x00: an operation exception (SIGILL)


def facility(n: int) -> int:
    return 1 << 28 | n          # early context, type 0 (a facility), its number


SPEC = 2 << 28 | 1 << 20        # late context, type 1: the branch-prediction mitigation


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(target, vdsogen's s390x image, {export: file offset of its first byte})."""
    target = harness_target("s390x")
    out = tmp_path_factory.mktemp("s390-alt")
    so, _ = build_target(target, out, builder=Builder(target, stream=io.StringIO()), validate=build_validator)
    img = ElfImage(str(so))
    load = img.loads[0]
    return target, so, {s.name: s.value - load.vaddr + load.offset for s in img.dynsym if s.defined and s.size}


def broken_getrandom(so, dest, get, records):
    """`so` with the first two bytes of __kernel_getrandom (at file offset
    `get`) made illegal, their original bytes as the replacement, and
    `records` (orig, repl, feature, length)."""
    return with_alt_records(so, dest, records, so.read_bytes()[get:get + 2], [(get, ILLEGAL)], FMT, 2)


def test_a_facility_the_cpu_has_is_copied_in_and_the_rest_left(image, tmp_path):
    _, so, at = image
    get, clock = at["__kernel_getrandom"], at["__kernel_clock_gettime"]
    plain = so.read_bytes()
    altered = broken_getrandom(so, tmp_path / "vdso.so", get, [
        (get, ("tail", 0), facility(129), 2),       # the vector facility: the CPU has it
        (clock, ("tail", 0), facility(999), 2),     # a facility it lacks: left
        (clock, ("tail", 0), SPEC, 2),              # no branch-prediction mitigation in user space: left
    ])
    booted = alternatives.boot(altered)
    assert booted is not None
    assert booted.data[get:get + 2] == plain[get:get + 2]
    assert booted.data[clock:clock + 2] == plain[clock:clock + 2]
    changed = [i for i, (a, b) in enumerate(zip(altered.read_bytes(), booted.data)) if a != b]
    assert changed and all(get <= i < get + 2 for i in changed)
    assert booted.applied == (f"facility 129 at 0x{get:x} (__kernel_getrandom)",)
    assert booted.left == (f"facility 999 at 0x{clock:x} (the CPU lacks it)",
                           f"branch-prediction mitigation at 0x{clock:x} (the CPU lacks it)")


def test_a_record_outside_the_file_is_an_error(image, tmp_path):
    _, so, at = image
    get = at["__kernel_getrandom"]
    altered = broken_getrandom(so, tmp_path / "vdso.so", get, [(get, ("tail", 0), facility(129), 2)])
    data = bytearray(altered.read_bytes())
    sec = ElfImage(str(altered)).section(".altinstructions")
    assert sec is not None
    struct.pack_into(">i", data, sec.offset, 1 << 30)
    altered.write_bytes(bytes(data))
    with pytest.raises(HarnessError, match=r"\.altinstructions record 0 at 0x[0-9a-f]+: .* outside the file"):
        alternatives.boot(altered)


def test_the_harness_maps_the_image_as_booted(image, tmp_path, monkeypatch):
    """getrandom's first bytes are illegal unless the facility-129 record puts
    them back: the harness passes with it applied, and fails getrandom's
    checks when it is not."""
    target, so, at = image
    get = at["__kernel_getrandom"]
    altered = broken_getrandom(so, tmp_path / "vdso.so", get, [(get, ("tail", 0), facility(129), 2)])
    exe = build_harness(target, tmp_path / "harness", Builder(target, stream=io.StringIO()))
    status, outcome, out = run_broken(target, exe, altered)
    assert status == 0, out
    assert out.startswith("# alternatives: applied as its kernel booted on a CPU with facility 129, facility 148, "
                          "facility 45 does (vdsogen/harness/alternatives.toml): facility 129 at "
                          f"0x{get:x} (__kernel_getrandom)\n"), out

    monkeypatch.setattr(alternatives, "boot", lambda *a, **k: None)
    status, outcome, out = run_broken(target, exe, altered)
    assert status != 0
    assert any(name.startswith("getrandom") for name in outcome.failed), out


def test_a_present_name_no_record_can_name_is_an_error(tmp_path, monkeypatch):
    from vdsogen.errors import SpecError

    bad = tmp_path / "alternatives.toml"
    bad.write_text(alternatives.FACTS.read_text().replace('"facility 148"]', '"facilty 148"]'))
    monkeypatch.setattr(alternatives, "FACTS", bad)
    alternatives.facts.cache_clear()
    try:
        with pytest.raises(SpecError, match=rf"{bad}: s390\.present: facilty 148: not a feature its records name"):
            alternatives.facts()
    finally:
        alternatives.facts.cache_clear()
