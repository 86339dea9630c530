"""Quirks of real kernel images, on small synthetic images built here
(tests/corpus.py QUIRKS): what a libc of the image's era handles is a
warning or information under the linux profile, and today's conventions
stay errors under strict.  The real images these stand for are audited by
scripts/audit-corpus.sh against tests/real-vdso-expect.toml."""

import pytest

import corpus as corpus_images
from elfmut import Mutant
from vdsogen.audit.era import version_of
from vdsogen.audit.run import audit_path
from vdsogen.elf.consts import NHDR, PT_NOTE


def judged(path, profile="linux", arch=None):
    report = audit_path(path, arch, profile)
    assert report.status == "audited", report.error
    return report


def got(report):
    return {(f.rule, f.severity) for f in report.findings}


# Quirks that stay errors: what breaks a consumer of the image's own era.
REAL_ERRORS = {"riscv64-7.2-cfi-notes"}


@pytest.mark.parametrize("name", [r.name for r in corpus_images.QUIRKS + corpus_images.UNPARSEABLE])
def test_quirk_is_judged_by_its_era(corpus, name):
    recipe = corpus_images.ALL[name]
    report = judged(corpus(name))
    assert got(report) == set(recipe.expect.items())
    assert bool(report.count("error")) == (name in REAL_ERRORS), [f.message for f in report.findings]
    assert {c.verdict for c in report.consumers} <= {"works", "n/a"}
    strict = recipe.strict if recipe.strict is not None else recipe.expect
    assert got(judged(corpus(name), "strict")) == set(strict.items())


def test_era_comes_from_the_version_note(corpus):
    from vdsogen.elf.reader import ElfImage
    assert version_of(ElfImage(corpus("x86_64-2.6-linked-high"))) == (2, 6, 32)
    assert version_of(ElfImage(corpus("x86_64-7.2-gnu-property"))) == (7, 2, 0)


def test_modern_fixed_address_and_data_stay_errors(corpus):
    """The same departures in an image of today's era are errors."""
    assert ("P003", "error") in got(judged(corpus("x86_64-linked-high")))
    assert ("C002", "error") in got(judged(corpus("x86_64-textrel")))


def test_undefined_arm_personality_routine_is_still_an_error(corpus):
    assert ("S005", "error") in got(judged(corpus("arm-unwind-tables")))


def _rt_sigreturn_offset(m):
    sym = m.dynsym("__kernel_rt_sigreturn")
    return m.word_at(sym.value)


def test_i386_trampoline_compares_only_what_unwinders_match(corpus, tmp_path):
    """Linux 7.x i386 rt_sigreturn is followed by other bytes than the nop
    landing pad; unwinders compare its first 7 bytes only."""
    m = Mutant(corpus("i386"))
    off = _rt_sigreturn_offset(m)
    assert m.data[off:off + 8] == bytes.fromhex("b8ad000000cd8090")
    m.data[off + 7] = 0x0F
    for profile in ("linux", "strict"):
        assert got(judged(m.save(tmp_path / "pad.so"), profile)) == set()
    m.data[off + 6] = 0x81                      # int $0x81: no longer the sequence
    report = judged(m.save(tmp_path / "broken.so"))
    assert got(report) == {("T001", "error")}
    assert "bytes b8 ad 00 00 00 cd 81" in report.findings[0].message


def _linux_note(m):
    return m.note("Linux", 0)


def test_note_walk_that_still_finds_the_version_note_is_a_warning(corpus, tmp_path):
    """A note after the Linux version note that runs past PT_NOTE: the walk
    stops, but a libc has read the version note by then."""
    m = Mutant(corpus("x86_64"))
    build_id = m.note("GNU", 3)
    assert build_id.offset > _linux_note(m).offset
    m.set_field(NHDR, build_id.offset, n_descsz=0x400)
    report = judged(m.save(tmp_path / "late.so"))
    n003 = [f for f in report.findings if f.rule == "N003"]
    assert [f.severity for f in n003] == ["warning"], report.findings
    assert "GNU" in n003[0].message and "Linux version note" in n003[0].message
    assert "still finds it" in n003[0].message
    assert ("N003", "error") in got(judged(m.save(tmp_path / "late.so"), "strict"))


def test_note_walk_that_stops_before_the_version_note_is_an_error(corpus, tmp_path):
    m = Mutant(corpus("x86_64"))
    first = min(n.offset for n in m.img.notes)
    seg = next(s for s in m.img.segments if s.type == PT_NOTE)
    assert first == seg.offset
    m.set_field(NHDR, first, n_descsz=0x400)
    report = judged(m.save(tmp_path / "early.so"))
    n003 = [f for f in report.findings if f.rule == "N003"]
    assert [f.severity for f in n003] == ["error"], report.findings
    assert "never reaches" in n003[0].message


def test_mixed_alignment_notes_get_a_precise_message(corpus):
    """The 7.2 riscv64 vdso-cfi layout: which note, why, what readelf reads, and
    that a libc's 4-byte walk never reaches the version note (yet the era is
    still read from it)."""
    report = judged(corpus("riscv64-7.2-cfi-notes"))
    n003 = next(f for f in report.findings if f.rule == "N003")
    for words in ("8-byte-aligned GNU property note", "reads the padding as a note header",
                  "readelf walks with p_align 8", "never reaches the Linux version note at 0x"):
        assert words in n003.message, n003.message
    from vdsogen.elf.reader import ElfImage
    assert version_of(ElfImage(corpus("riscv64-7.2-cfi-notes"))) == (7, 2, 13)


def test_gnu_hash_only_image_breaks_musl_and_dt_hash_parsers(corpus):
    """Several 7.2 images have only DT_GNU_HASH: a real finding, kept."""
    report = judged(corpus("arm64-gnu-hash-only"))
    verdicts = {c.consumer: c.verdict for c in report.consumers}
    assert verdicts["musl"] == "degraded" and verdicts["sysv"] == "degraded"
    assert verdicts["glibc"] == "works" and verdicts["go"] == "works"
    assert ("X001", "warning") in got(report)


def test_catalogue_knows_exports_up_to_7_2():
    from vdsogen.spec import abi
    x86 = abi.get("x86_64")
    assert x86.export("__vdso_futex_robust_list64_try_unlock").since == (7, 2, 0)
    assert x86.export("__vdso_getrandom").since == (6, 11, 0)
    for name in ("arm64", "riscv64", "loongarch64", "s390x"):
        assert abi.get(name).export({"arm64": "__kernel_getrandom", "s390x": "__kernel_getrandom"}
                                    .get(name, "__vdso_getrandom")) is not None, name
    assert abi.get("riscv64").export("__vdso_riscv_hwprobe") is not None
    # An era before 3.15 has no i386 LINUX_2.6 node and no time functions.
    i386 = abi.get("i386")
    assert i386.versions_for((3, 10, 0)) == ("LINUX_2.5",)
    assert "__vdso_clock_gettime" not in i386.core_for((3, 10, 0))
    assert i386.versions_for(None) == i386.versions


def test_unknown_export_is_information(corpus):
    report = judged(corpus("x86_64-two-pages"))
    s009 = [f for f in report.findings if f.rule == "S009"]
    assert [f.severity for f in s009] == ["info"] and "__vdso_far_entry" in s009[0].message
