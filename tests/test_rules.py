"""Every validator rule: a compliant image passes it, an image that breaks
exactly that rule fails it (and, as far as one defect allows, nothing else).

Which rules have a test is derived, not listed: the MUTATIONS table, and
the tests marked @covers(ID...), which fail unless they see those rules
fire.  test_every_rule_has_a_test then requires every registered rule to be
covered here or in test_audit_rules.py."""

import dataclasses
import functools
import io

import pytest

from audit_mutations import rules_tested_in_audit
from elfmut import Mutant
from variants import build_variant
from vdsogen.audit import rules
from vdsogen.audit.check import check_image, expect_from_target
from vdsogen.audit.run import audit_path
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.elf.consts import (DT, PF_R, PF_W, PF_X, PT_GNU_EH_FRAME, PT_INTERP, PT_LOAD, PT_NOTE, PT_NULL,
                                STT_OBJECT)
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target

COVERED = {}        # rule ID -> the @covers tests that make it fire
OBSERVED = []       # rule IDs reported while a @covers test runs


def covers(*rule_ids):
    """Mark a test as the one that shows these rules fire; it fails if they do not."""
    def mark(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            OBSERVED.clear()
            test(*args, **kwargs)
            seen = set().union(*OBSERVED)
            assert set(rule_ids) <= seen, f"{test.__name__} never saw {sorted(set(rule_ids) - seen)} fire"
        for rule_id in rule_ids:
            COVERED.setdefault(rule_id, []).append(test.__name__)
        return run
    return mark


def checked(target, path, profile="linux"):
    findings = check_image(target, path, profile)
    OBSERVED.append({f.rule for f in findings})
    return findings


def fired(target, path, profile="linux"):
    return {f.rule for f in checked(target, path, profile) if f.severity == "error"}


@pytest.mark.parametrize("name", ["x86_64", "arm64", "ppc64le"])
def test_generated_images_are_clean(built, name):
    target, so, dbg = built(name)
    assert check_image(target, so) == []
    assert check_image(target, dbg) == []


def mutate(built, tmp_path, fn, name="x86_64", which="so"):
    target, so, dbg = built(name)
    m = Mutant(so if which == "so" else dbg)
    fn(m)
    return target, m.save(tmp_path / f"mutant-{which}")


# Each case: rule, a mutation of a good image, and exactly the rules it fires
# (the one under test first; the comments say why the others fire too).
def _mode_test_dropped(m):
    """The hot path's clock mode test (cmpl $1, disp(%rip); jne, 13 bytes) before its
    `lfence; rdtsc`, made nops: the counter is read with nothing tested."""
    i = m.data.index(b"\x0f\xae\xe8\x0f\x31")
    assert m.data[i - 13] == 0x83 and m.data[i - 6:i - 4] == b"\x0f\x85"
    m.data[i - 13:i] = b"\x90" * 13


MUTATIONS = {
    "K008": (_mode_test_dropped, {"K008"}),
    "H001": (lambda m: m.set_e_type(2), {"H001"}),
    "H005": (lambda m: m.put("H", 0x3E if m.img.elf_class == 64 else 0x32, 0), {"H005"}),
    "P001": (lambda m: m.set_phdr(m.phdr(PT_GNU_EH_FRAME), type=PT_LOAD, flags=PF_R | PF_X), {"P001"}),
    "P002": (lambda m: m.set_phdr(m.phdr(PT_LOAD), flags=PF_R), {"P002"}),
    "P004": (lambda m: m.set_phdr(m.phdr(PT_LOAD), memsz=m.phdr(PT_LOAD).memsz + 0x1000), {"P004"}),
    "P006": (lambda m: m.set_phdr(m.phdr(PT_GNU_EH_FRAME), type=PT_INTERP), {"P006"}),
    "P007": (lambda m: m.set_phdr(m.phdr(PT_NOTE), flags=PF_R | PF_W), {"P007"}),
    # Without PT_NOTE no note is found: the version, build-id and data-pages notes are all missing.
    "P008": (lambda m: m.set_phdr(m.phdr(PT_NOTE), type=PT_NULL), {"P008", "N001", "N002", "N008"}),
    # The data-pages note names another layout than the spec's.
    "N008": (lambda m: m.replace_bytes(b"linux-6.17-x86 ", b"linux-6.17-x87 "), {"N008"}),
    # The BASE verdef shares the soname string, and its vd_hash no longer matches.
    "D001": (lambda m: m.replace_bytes(b"linux-vdso.so.1\0", b"linux-vdsx.so.1\0"), {"D001", "V003"}),
    "D002": (lambda m: m.retag("SYMENT", DT["SYMBOLIC"]), {"D002"}),
    "X001": (lambda m: m.retag("HASH", DT["SYMBOLIC"]), {"X001"}),
    # DT_VERDEFNUM only cross-checks the verdef chain: nothing else misses it.
    "R001": (lambda m: m.retag("VERDEFNUM", DT["TEXTREL"]), {"R001"}),
    # The name no longer matches its hash either.
    "S002": (lambda m: m.replace_bytes(b"\0getcpu\0", b"\0getcpx\0"), {"S002", "X003"}),
    "S003": (lambda m: m.set_sym_info(m.dynsym("__vdso_time"), type_=STT_OBJECT), {"S003"}),
    # Without DT_VERDEF the Go runtime crashes (L001).
    "V001": (lambda m: m.retag("VERDEF", DT["SYMBOLIC"]), {"V001", "L001"}),
    "V002": (lambda m: m.set_versym(m.dynsym("__vdso_time"), 1), {"V002", "V005"}),
    "V003": (lambda m: m.set_verdef_hash(1, 0x1234), {"V003"}),
    "N001": (lambda m: m.replace_bytes(b"Linux\0", b"Lunix\0"), {"N001"}),
    "N002": (lambda m: m.set_note_type(m.note("GNU", 3), 0x99), {"N002"}),
}


@pytest.mark.parametrize("rule_id", sorted(MUTATIONS))
def test_rule_catches_its_defect(built, tmp_path, rule_id):
    fn, allowed = MUTATIONS[rule_id]
    target, path = mutate(built, tmp_path, fn)
    got = fired(target, path)
    assert got == allowed, f"{rule_id} mutation: missing {sorted(allowed - got)}, also fired {sorted(got - allowed)}"


@covers("H002", "H003", "H004")
def test_h002_h003_h004_compare_with_the_target(built):
    target, so, _ = built("x86_64")
    for rule_id, elf in (("H002", {"elf_class": 32}), ("H003", {"machine": 3}), ("H004", {"endian": "big"})):
        other = dataclasses.replace(target, elf=dataclasses.replace(target.elf, **elf))
        assert fired(other, so) == {rule_id}


@covers("P003")
def test_p003_image_linked_away_from_zero(built, tmp_path):
    """Linked at 0x10000, like the old prelinked vDSOs consumers tripped over."""
    target, _, _ = built("x86_64")

    def relink(name, text):
        return text.replace(". = SIZEOF_HEADERS;", ". = 0x10000 + SIZEOF_HEADERS;") if name == "vdso.lds" else text
    so = build_variant(target, tmp_path, edit=relink)
    assert ElfImage(so).loads[0].vaddr == 0x10000
    assert fired(target, so) == {"P003"}


@covers("S001")
def test_s001_undefined_symbol_in_symtab(built, tmp_path):
    def undefine(m):
        sym = next(s for s in m.img.symtab if s.name == "vdso_u_data")
        m.set_sym_shndx(sym, 0)
    target, path = mutate(built, tmp_path, undefine, which="dbg")
    assert fired(target, path) == {"S001"}


@covers("S001")
def test_s001_undefined_symbol_from_the_linker(built, tmp_path):
    """A real unresolved call, linked without -z defs, as a careless build would."""
    target, _, _ = built("x86_64")
    extra = [("probe.c", "void vdso_missing(void);\nvoid probe(void);\nvoid probe(void) { vdso_missing(); }\n")]
    so = build_variant(target, tmp_path, extra=extra, ldflags_drop=("-z,defs", "--no-undefined"))
    assert "S001" in fired(target, so)


@covers("R001")
def test_r001_real_relocation(built, tmp_path):
    """An absolute address in read-only data needs R_X86_64_RELATIVE."""
    target, _, _ = built("x86_64")
    probe = ('extern int __vdso_time;\n'
             'const void *const probe_ptr __attribute__((used, section(".rodata"))) = &__vdso_time;\n')
    so = build_variant(target, tmp_path, extra=[("probe.c", probe)])
    assert "R001" in fired(target, so)
    assert ElfImage(so).section(".rela.dyn") is not None


@covers("K001")
def test_k001_powerpc_bcl_form(built, tmp_path):
    target, so, _ = built("ppc64le")

    def break_bcl(m):
        text = m.img.section(".text")
        data = bytes(m.data[text.offset:text.offset + text.size])
        i = data.index((0x429F0005).to_bytes(4, m.img.endian))
        m.set_word(text.offset + i, 0x429F0009)    # bcl 20,31,.+8
    target, path = mutate(built, tmp_path, break_bcl, name="ppc64le")
    assert fired(target, path) == {"K001"}


@covers("K004")
def test_k004_powerpc_r30(built, tmp_path):
    """The gcc-built image keeps r30 free (test_generated_images_are_clean);
    one `mr r30,r3` at an entry point breaks it."""
    def write_r30(m):
        m.set_word(m.word_at(m.dynsym("__kernel_clock_gettime").value), 0x7C7E1B78)   # or r30,r3,r3
    target, path = mutate(built, tmp_path, write_r30, name="ppc64le")
    assert fired(target, path) == {"K004"}


@covers("K005")
@pytest.mark.parametrize("field,value", [(13, 7), (3, 0x40)], ids=["replacement-too-long", "original-outside"])
def test_k005_x86_alternatives(built, tmp_path, field, value):
    """The x86_64 image patches getcpu's lsl to rdpid (clean above); a
    replacement longer than its original, or an original 1 GiB away, breaks it."""
    def break_entry(m):
        m.data[m.img.section(".altinstructions").offset + field] = value
    target, path = mutate(built, tmp_path, break_entry)
    assert fired(target, path) == {"K005"}


@covers("K006")
@pytest.mark.parametrize("field,delta", [(3, -8), (2, -0x40000000), (5, 8)],
                         ids=["end-before-start", "body-outside", "alternative-too-long"])
def test_k006_powerpc_feature_fixups(built, tmp_path, field, delta):
    """The ppc64le image's sync_dicache entry (clean above); its end moved
    before its start, its body 1 GiB away, or an 8-byte alternative for its
    4-byte body breaks it."""
    def break_entry(m):
        at = m.img.section("__ftr_fixup").offset + field * 8
        value = int.from_bytes(m.data[at:at + 8], "little", signed=True) + delta
        m.data[at:at + 8] = value.to_bytes(8, "little", signed=True)
    target, path = mutate(built, tmp_path, break_entry, name="ppc64le")
    assert fired(target, path) == {"K006"}


@covers("K007")
@pytest.mark.parametrize("old,new", [("e310f0000024", "c00400000000"), ("e310f0000024", "e320f0000024"),
                                     ("d707f000f000", "c00400000000"), ("e3e0f0a00024", "c00400000000")],
                         ids=["c-frame-no-back-chain", "c-frame-back-chain-from-r2", "entry-back-chain-kept",
                              "entry-no-return-address"])
def test_k007_s390x_back_chain(built, tmp_path, old, new):
    """The s390x image chains every frame (clean: tests/test_targets.py).
    Its C code's first `stg %r1,0(%r15)` made a 6-byte nop (brcl 0,0) or
    a store of r2, or an entry frame's `xc 0(8,%r15),0(%r15)` or `stg
    %r14,160(%r15)` made a nop, breaks it."""
    target, path = mutate(built, tmp_path, lambda m: m.replace_bytes(bytes.fromhex(old), bytes.fromhex(new)),
                          name="s390x")
    assert fired(target, path) == {"K007"}


@pytest.mark.parametrize("name", ["arm64", "ppc64le"])
@covers("T001")
def test_t001_trampoline_words(built, tmp_path, name):
    target, so, _ = built(name)
    tramp = target.trampolines[0]

    def break_tramp(m):
        sym = m.dynsym(tramp.name)
        m.set_word(m.word_at(sym.value), 0x60000000 if name == "ppc64le" else 0xD503201F)
    target, path = mutate(built, tmp_path, break_tramp, name=name)
    assert fired(target, path) == {"T001"}


# arm's counter read, isb; mrrc p15, 1, r2, r3, c14, as Thumb-2 (first halfword first).
ARM_COUNTER_READ = bytes.fromhex("bff36f8f53ec1e2f")


@covers("T002")
def test_t002_counter_words(built, tmp_path):
    """Every counter read in the image, its mrrc changed to read c15: the
    spec's words are nowhere in the code, and nothing else is wrong."""
    target, so, _ = built("arm")
    assert check_image(target, so) == []

    def break_reads(m):
        at = 0
        while ARM_COUNTER_READ in m.data[at:]:
            at = m.replace_bytes(ARM_COUNTER_READ, ARM_COUNTER_READ[:-2] + b"\x1f\x2f", at) + 1
        assert at, "no counter read found"
    target, path = mutate(built, tmp_path, break_reads, name="arm")
    assert fired(target, path) == {"T002"}


# arm64's read barrier, dmb ishld, and nop.
DMB_ISHLD, NOP = (0xD50339BF).to_bytes(4, "little"), (0xD503201F).to_bytes(4, "little")


@covers("K009")
def test_k009_read_barriers_made_nops(built, tmp_path):
    """Every dmb ishld of an arm64 image made a nop: the seqcount's loads are
    no longer ordered, which qemu-user never shows (tests/test_ordering.py
    builds such images for every weakly ordered ISA)."""
    def drop_barriers(m):
        at = 0
        while DMB_ISHLD in m.data[at:]:
            at = m.replace_bytes(DMB_ISHLD, NOP, at) + 4
        assert at, "no dmb ishld found"
    target, path = mutate(built, tmp_path, drop_barriers, name="arm64")
    assert fired(target, path) == {"K009"}


@covers("N006")
def test_n006_test_build_note(tmp_path):
    """A test build says so, as information, in check and in audit."""
    target = load_target("arm").test_build()
    so, _ = build_target(target, tmp_path, builder=Builder(target, stream=io.StringIO()))
    got = {(f.rule, f.severity, f.message) for f in checked(target, so)}
    assert got == {("N006", "info", "test build: injected counter")}
    assert {(f.rule, f.message) for f in audit_path(str(so)).findings} == {("N006", "test build: injected counter")}


def rules_tested_in_check():
    """Rules a test here makes fire: the MUTATIONS cases and the @covers tests."""
    return set(MUTATIONS) | set(COVERED)


def test_every_rule_has_a_test():
    """Every registered rule fires in a test, here for `vdsogen check` or in
    test_audit_rules.py for `vdsogen audit`; a new rule without one fails."""
    registered = {r.id for r in rules.all_rules()}
    tested = rules_tested_in_check() | rules_tested_in_audit()
    assert not registered - tested, f"rules no test makes fire: {sorted(registered - tested)}"
    assert not tested - registered, f"tests for rules that do not exist: {sorted(tested - registered)}"
    for rule_id, tests in COVERED.items():
        assert all(name.startswith("test_") and name in globals() for name in tests), (rule_id, tests)


@covers("P005")
def test_p005_dynamic_missing_or_outside(built, tmp_path):
    from vdsogen.elf.consts import PT_DYNAMIC
    target, path = mutate(built, tmp_path, lambda m: m.set_phdr(m.phdr(PT_DYNAMIC), type=PT_NULL))
    assert fired(target, path) == {"P005"}
    # Outside the load: the file offset no longer matches the address.
    target, path = mutate(built, tmp_path, lambda m: m.set_phdr(m.phdr(PT_DYNAMIC), offset=m.phdr(PT_DYNAMIC).offset + 8))
    assert "P005" in fired(target, path)


@covers("S004")
def test_s004_notype_export_is_a_warning(built, tmp_path):
    target, path = mutate(built, tmp_path, lambda m: m.set_sym_info(m.dynsym("__vdso_time"), type_=0))
    findings = checked(target, path)
    assert {(f.rule, f.severity) for f in findings} == {("S004", "warning")}
    strict = checked(target, path, profile="strict")
    assert {(f.rule, f.severity) for f in strict} == {("S004", "error")}


def test_rules_have_ids_reasons_and_severities():
    for r in rules.all_rules():
        assert r.reason and "\n" not in r.reason
        assert set(r.severity) == set(rules.PROFILES)
        assert all(s in rules.SEVERITIES for s in r.severity.values())


def test_expectations_follow_the_spec(built):
    target, _, _ = built("x86_64")
    exp = expect_from_target(target)
    assert exp.exports["clock_gettime"] == ("LINUX_2.6", "weak")
    assert exp.exports["__vdso_clock_gettime"] == ("LINUX_2.6", "global")


@covers("K010")
def test_k010_chacha_spills_to_the_stack(built, tmp_path):
    """getrandom's ChaCha20 stores the key's second row to the stack (movdqu 16(%rsi),%xmm2 made
    movdqu %xmm1,(%rsp)): found by its symbol in vdso.so.dbg, as getrandom's leaf callee in vdso.so."""
    for which in ("dbg", "so"):
        target, path = mutate(built, tmp_path, lambda m: m.replace_bytes(b"\xf3\x0f\x6f\x56\x10",
                                                                         b"\xf3\x0f\x7f\x0c\x24"), which=which)
        findings = [f for f in checked(target, path) if f.rule == "K010"]
        assert [f.severity for f in findings] == ["error"], findings
        assert "stores to the stack" in findings[0].message
