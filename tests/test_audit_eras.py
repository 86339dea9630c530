"""Formats that changed over time (issue 24), on synthetic images of each
old format (tests/corpus.py ERAS): patch tables read with the entry layout
of the image's era.  The real images these stand for are audited by
scripts/audit-corpus.sh against tests/real-vdso-expect.toml."""

import pytest

import corpus as corpus_images
from elfmut import Mutant
from vdsogen.audit.run import audit_path
from vdsogen.elf.reader import ElfImage


def judged(path, profile="linux"):
    report = audit_path(path, None, profile)
    assert report.status == "audited", report.error
    return report


def got(report):
    return {(f.rule, f.severity) for f in report.findings}


def messages(report, rule):
    return [f.message for f in report.findings if f.rule == rule]


@pytest.mark.parametrize("name", [r.name for r in corpus_images.ERAS])
def test_old_format_is_judged_by_its_era(corpus, name):
    recipe = corpus_images.RECIPES[name]
    report = judged(corpus(name))
    assert got(report) == set(recipe.expect.items()), [f.message for f in report.findings]
    strict = recipe.strict if recipe.strict is not None else recipe.expect
    assert got(judged(corpus(name), "strict")) == set(strict.items())


# -- K005: struct alt_instr through the eras ----------------------------------------------

def test_alternatives_of_linux_5_4_are_read_as_13_byte_entries(corpus):
    """Three entries of a 4.1-5.12 kernel: 39 bytes, each with a pad length."""
    img = ElfImage(corpus("x86_64-5.4-alternatives"))
    assert img.section(".altinstructions").size == 39
    assert not messages(judged(corpus("x86_64-5.4-alternatives"), "strict"), "K005")


def test_alternatives_that_do_not_fit_the_era_name_the_layout(corpus):
    """The same table in a 6.1 image: a 5.13-6.1 kernel reads 12-byte
    entries; the finding says so, and that the 13-byte layout fits."""
    found = messages(judged(corpus("x86_64-6.1-padlen-alternatives")), "K005")
    assert found and "39 bytes are not a whole number of 12-byte entries" in found[0]
    assert all("the 12-byte relative, u16 cpuid layout of Linux 3.1-4.0 and 5.13-6.1" in m for m in found), found
    assert "the image's era" in found[0] and "pad length layout of Linux 4.1-5.12 reads it whole" in found[0]


def _without_version_note(path, tmp_path):
    m = Mutant(path)
    note = m.note("Linux", 0)
    m.set_note_type(note, 0x7F)            # no longer the version note: the era is unknown
    return m.save(tmp_path / "no-note.so")


def test_alternatives_without_an_era_take_the_layout_that_fits(corpus, tmp_path):
    path = _without_version_note(corpus("x86_64-5.4-alternatives"), tmp_path)
    assert not messages(judged(path, "strict"), "K005")


def test_alternatives_that_no_layout_reads_say_so(corpus, tmp_path):
    """An original moved out of the code in an image without a note: no
    layout reads the table sound, and the finding says it cannot tell."""
    path = _without_version_note(corpus("x86_64-5.4-alternatives"), tmp_path)
    m = Mutant(path)
    sec = m.img.section(".altinstructions")
    m.put("i", sec.offset + 13, 0x40000000)
    found = messages(judged(m.save(tmp_path / "bad.so")), "K005")
    assert len(found) == 1 and "cannot tell its entry layout" in found[0], found
    assert "closest, the 13-byte relative, u16 cpuid, pad length layout" in found[0]
