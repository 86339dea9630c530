"""Formats and consumers that changed over time (issue 24), on synthetic
images of each old format (tests/corpus.py ERAS): patch tables read with
the entry layout of the image's era, signal trampolines that signal-frame
CFI covers, .data the code never writes, and the Go runtime's lookup per
release.  The real images these stand for are audited by
scripts/audit-corpus.sh against tests/real-vdso-expect.toml."""

import pytest

import corpus as corpus_images
from elfmut import Mutant
from vdsogen.audit.consumers import GO_RELEASES, Go, Memory, simulate
from vdsogen.audit.run import audit_path
from vdsogen.elf.reader import ElfImage
from vdsogen.spec import abi as catalogue


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


# -- T001: trampolines with signal-frame CFI ----------------------------------------------

def test_trampoline_covered_by_signal_frame_cfi_is_a_warning(corpus):
    report = judged(corpus("ppc64le-sigtramp-cfi"))
    [message] = messages(report, "T001")
    assert "__kernel_sigtramp_rt64 is 8 bytes, shorter than the 12 unwinders compare" in message
    assert "signal-frame CFI at 0x" in message and "outside the image" not in message


def test_trampoline_without_cfi_stays_an_error(corpus, tmp_path):
    """The CIE's "S" gone: nothing but the bytes identifies the frame."""
    m = Mutant(corpus("ppc64le-sigtramp-cfi"))
    m.replace_bytes(b"zRS\0", b"zR\0\0", m.img.section(".eh_frame").offset)
    report = judged(m.save(tmp_path / "no-s.so"))
    assert ("T001", "error") in got(report)
    assert "signal-frame CFI" not in messages(report, "T001")[0]


def test_trampoline_running_off_the_image_says_how_short_it_is(corpus, tmp_path):
    """A trampoline whose compared window runs past the end of the image."""
    m = Mutant(corpus("ppc64le"))
    sym = m.dynsym("__kernel_sigtramp_rt64")
    m.set_sym_value(sym, m.img.image_end - 8)
    found = messages(judged(m.save(tmp_path / "short.so")), "T001")
    assert any("only 8 bytes from 0x" in f and "to the end of the image, 12 compared" in f for f in found), found


# -- C002: .data the code never writes ------------------------------------------------------

def test_read_only_data_says_why_it_is_a_warning(corpus):
    [message] = messages(judged(corpus("riscv64-5.4-read-only-data")), "C002")
    assert ".data holds" in message and "read-only once mapped" in message


def test_data_the_code_writes_names_the_store(corpus):
    [message] = messages(judged(corpus("riscv64-data-store")), "C002")
    assert "the code writes it" in message and "stores to 0x" in message
    [message] = messages(judged(corpus("x86_64-textrel")), "C002")
    assert "the code writes it" in message


def test_store_targets_follow_pc_relative_addresses():
    """What C002 asks each decoder: stores with the target it resolves, None
    through a register it cannot follow, nothing for the stack."""
    from types import SimpleNamespace
    from vdsogen.isa import arm64, module_function, riscv, x86
    words = [0x90000000, 0x91004000, 0xB9000401, 0xA9010801, 0xF90007E3, 0xF90000A4]
    code = b"".join(w.to_bytes(4, "little") for w in words)   # adrp x0; add x0,#16; str w1,[x0,#4];
    img = SimpleNamespace(e_machine=arm64.EM_AARCH64)           # stp x1,x2,[x0,#16]; str x3,[sp,#8]; str x4,[x5]
    assert arm64.store_targets(img, code, 0x1000) == [(0x1008, 0x1014), (0x100C, 0x1020), (0x1014, None)]
    code = bytes.fromhex("890500010000" "c70510000000" "01000000" "89442408" "8907" "8b0510000000")
    img = SimpleNamespace(e_machine=x86.EM_X86_64)              # mov %eax,0x100(%rip); movl $1,0x10(%rip);
    assert x86.store_targets(img, code, 0x2000) == [(0x2000, 0x2106), (0x2006, 0x2020), (0x2014, None)]
    code = b"".join(w.to_bytes(4, "little") for w in (0x00000597, 0x00C5AE23, 0x00112423))
    img = SimpleNamespace(e_machine=riscv.EM_RISCV)             # auipc a1,0; sw a2,0x1c(a1); sd ra,8(sp)
    assert riscv.store_targets(img, code, 0x4A8) == [(0x4A8 + 4, 0x4C4)]
    assert module_function(riscv.EM_RISCV, "store_targets") is riscv.store_targets
    assert module_function(0x7FFF, "store_targets") is None


# -- the Go runtime, per release ------------------------------------------------------------

def test_go_before_1_22_misses_arm64_clock_gettime_through_gnu_hash(corpus):
    """Go 1.19-1.21 look __kernel_clock_gettime up with the hashes of
    __vdso_clock_gettime: through DT_GNU_HASH they never find it."""
    img = ElfImage(corpus("arm64"))
    arm64 = catalogue.get("arm64")
    old = Go(Memory(img), arm64, GO_RELEASES[0])
    view = old.setup()
    lookup = next(lk for lk in arm64.lookups["go"] if lk.symbol == "__kernel_clock_gettime")
    sym, why = old.find(view, lookup)
    assert sym is None and "hashes of __vdso_clock_gettime" in why
    sym, _why = Go(Memory(img), arm64, GO_RELEASES[-1]).find(view, lookup)
    assert sym is not None and sym.name == "__kernel_clock_gettime"


def test_go_verdict_names_the_releases_it_is_for(corpus):
    go = next(v for v in simulate(ElfImage(corpus("arm64")), catalogue.get("arm64")) if v.consumer == "go")
    assert go.verdict == "works"
    assert "(the verdict of Go 1.22 and later)" in go.reason
    assert "Go 1.19-1.21: degraded: misses __kernel_clock_gettime@" in go.reason
    x86 = next(v for v in simulate(ElfImage(corpus("x86_64")), catalogue.get("x86_64")) if v.consumer == "go")
    assert x86.verdict == "works" and "(the verdict of Go 1.19 and later)" in x86.reason
