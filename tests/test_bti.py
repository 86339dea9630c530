"""arm64 BTI: every export begins with a `bti c` landing pad and the
sigreturn trampoline with none, as Linux builds its vDSO for a kernel with
CONFIG_ARM64_BTI_KERNEL; the harness maps the text with PROT_BTI (guarded
pages, qemu -cpu max) and its "bti" check calls each export through a
pointer there; N007 flags an image built for BTI whose exports are not all
landing pads, and in check any arm64 image without them."""

import dataclasses
import io
import types

import pytest

from conftest import harness_target, run_broken
from elfmut import Mutant
from vdsogen.audit.check import check_image
from vdsogen.audit.rules.notes import aarch64_features
from vdsogen.audit.run import audit_path
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import SpecError
from vdsogen.harness.driver import build_harness, qemu_options
from vdsogen.spec.model import load_target

BTI_C = 0xD503245F
NOP = 0xD503201F


def _first_word(path, name):
    img = ElfImage(path)
    sym = next(s for s in img.dynsym if s.name == name)
    return int.from_bytes(img.bytes_at(sym.value, 4), "little")


def test_every_export_begins_with_bti_c_and_the_trampoline_with_none(built):
    target, so, dbg = built("arm64")
    for export in target.exports:
        assert _first_word(so, export.name) == BTI_C, export.name
    for tramp in target.trampolines:
        assert _first_word(so, tramp.name) != BTI_C, tramp.name
    # The compiler's property note is discarded, as Linux's is (N004).
    assert aarch64_features(ElfImage(dbg)) == 0
    assert check_image(target, so) == []


def _without_pads(built, tmp_path, names=None):
    target, so, _ = built("arm64")
    m = Mutant(so)
    for export in target.exports:
        if names is None or export.name in names:
            at = m.word_at(m.dynsym(export.name).value)
            assert m.img.data[at:at + 4] == BTI_C.to_bytes(4, "little")
            m.set_word(at, NOP)
    return target, m.save(tmp_path / "nopads.so")


def test_check_requires_a_landing_pad_at_every_export(built, tmp_path):
    target, path = _without_pads(built, tmp_path)
    findings = check_image(target, path)
    assert {(f.rule, f.severity) for f in findings} == {("N007", "error")}
    assert sorted(f.where.split()[0] for f in findings) == sorted(e.name for e in target.exports)
    assert "SIGILL" in findings[0].message


def test_audit_leaves_an_image_built_without_bti_alone(built, tmp_path):
    """An image with no pads at all is what a kernel without BTI builds and
    maps unguarded (Debian's): audit does not flag it, only an image some
    of whose exports have a pad (tests/audit_mutations.py)."""
    _target, path = _without_pads(built, tmp_path)
    assert "N007" not in {f.rule for f in audit_path(str(path)).findings}


def test_a_partly_padded_image_names_the_exports_without(built, tmp_path):
    _target, path = _without_pads(built, tmp_path, {"__kernel_gettimeofday"})
    found = [f for f in audit_path(str(path)).findings if f.rule == "N007"]
    assert [f.where.split()[0] for f in found] == ["__kernel_gettimeofday"]
    assert "__kernel_clock_gettime, __kernel_clock_getres, __kernel_getrandom begin with a bti" in found[0].message


def _property_desc(bits, pr_type=0xC0000000):
    return (pr_type.to_bytes(4, "little") + (4).to_bytes(4, "little") + bits.to_bytes(4, "little") +
            bytes(4))


@pytest.mark.parametrize("desc, bits", [
    (_property_desc(1), 1),                                    # BTI
    (_property_desc(3), 3),                                    # BTI and PAC
    (_property_desc(1, pr_type=0xC0000002) + _property_desc(2), 2),   # another property first
    (b"", 0),
])
def test_the_property_note_is_read(desc, bits):
    note = types.SimpleNamespace(name="GNU", type=5, desc=desc)
    img = types.SimpleNamespace(notes=[note], note_problems=[], segments_of_type=lambda _t: [],
                                endian="little", elf_class=64)
    assert aarch64_features(img) == bits


def test_the_harness_maps_guarded_pages_under_a_cpu_with_bti(built, tmp_path):
    target = harness_target("arm64")
    assert target.harness.bti and "bti" in target.harness.checks
    assert qemu_options(target) == ["-cpu", "max"]
    exe = build_harness(target, tmp_path / "harness", Builder(target, stream=io.StringIO()))
    _t, good, _ = built("arm64")
    _status, outcome, out = run_broken(target, exe, good)
    assert "(guarded: PROT_BTI)" in out
    assert "bti" in outcome.passed and not outcome.failed, out
    # Today's image before the fix: no landing pads.  As a kernel without BTI,
    # the harness maps it unguarded (Linux's own images run as they would),
    # and the bti check finds the pads the spec builds missing.
    _t, bad = _without_pads(built, tmp_path)
    status, outcome, out = run_broken(target, exe, bad)
    assert status != 0 and "not built for BTI: mapped unguarded" in out, out
    assert set(outcome.failed) == {"bti"}, out
    assert outcome.failed["bti"].startswith("the clock_gettime export's first instruction is no BTI landing pad")


def test_without_bti_in_the_cpu_the_harness_reads_the_pads(built, tmp_path):
    """A CPU without BTI (qemu -cpu cortex-a57; most arm64 hardware today)
    refuses PROT_BTI: the text is mapped unguarded and the check reads each
    export's first instruction."""
    target = harness_target("arm64")
    target = dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, qemu_cpu="cortex-a57"))
    exe = build_harness(target, tmp_path / "harness", Builder(target, stream=io.StringIO()))
    _t, good, _ = built("arm64")
    status, outcome, out = run_broken(target, exe, good)
    assert status == 0 and "bti" in outcome.passed, out
    assert "(PROT_BTI refused: no BTI here)" in out
    _t, bad = _without_pads(built, tmp_path)
    _status, outcome, out = run_broken(target, exe, bad)
    assert set(outcome.failed) == {"bti"}, out
    assert outcome.failed["bti"].startswith("the clock_gettime export's first instruction is no BTI landing pad")


@pytest.mark.parametrize("table, line, message", [
    ("[harness]", "bti = true", "harness.bti: PROT_BTI (guarded pages) is arm64's"),
    ("[toolchain]", 'qemu_cpu = "max"', "toolchain.qemu_cpu: only with qemu"),
])
def test_bti_and_qemu_cpu_are_checked(tmp_path, table, line, message):
    """x86_64 runs natively and has no guarded pages: each key names its error."""
    text = open(load_target("x86_64").path).read()
    text = text.replace(f"{table}\n", f"{table}\n{line}\n", 1) if table in text else text + f"\n{table}\n{line}\n"
    (tmp_path / "x86_64.toml").write_text(text)
    with pytest.raises(SpecError) as e:
        load_target("x86_64", tmp_path)
    assert message in str(e.value)
