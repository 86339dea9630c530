"""Every validator rule: a compliant image passes it, an image that breaks
exactly that rule fails it (and, as far as one defect allows, nothing else)."""

import dataclasses

import pytest

from elfmut import Mutant
from variants import build_variant
from vdsogen import rules
from vdsogen.check import check_image, expect_from_target
from vdsogen.elf import (DT, PF_R, PF_W, PF_X, PT_GNU_EH_FRAME, PT_INTERP, PT_LOAD, PT_NOTE,
                         PT_NULL, STB_GLOBAL, STT_OBJECT, ElfImage)


def fired(target, path, profile="linux"):
    return {f.rule for f in check_image(target, path, profile) if f.severity == "error"}


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


# Each case: rule, a mutation of a good image, and every rule it may fire
# (the one under test first).
MUTATIONS = {
    "H001": (lambda m: m.set_e_type(2), {"H001"}),
    "H005": (lambda m: m.put("H", 0x3E if m.img.elf_class == 64 else 0x32, 0), {"H005"}),
    "P001": (lambda m: m.set_phdr(m.phdr(PT_GNU_EH_FRAME), type=PT_LOAD, flags=PF_R | PF_X), {"P001"}),
    "P002": (lambda m: m.set_phdr(m.phdr(PT_LOAD), flags=PF_R), {"P002"}),
    "P004": (lambda m: m.set_phdr(m.phdr(PT_LOAD), memsz=m.phdr(PT_LOAD).memsz + 0x1000), {"P004"}),
    "P006": (lambda m: m.set_phdr(m.phdr(PT_GNU_EH_FRAME), type=PT_INTERP), {"P006"}),
    "P007": (lambda m: m.set_phdr(m.phdr(PT_NOTE), flags=PF_R | PF_W), {"P007"}),
    "P008": (lambda m: m.set_phdr(m.phdr(PT_NOTE), type=PT_NULL), {"P008", "N001", "N002"}),
    # The BASE verdef shares the soname string, and its vd_hash no longer matches.
    "D001": (lambda m: m.replace_bytes(b"linux-vdso.so.1\0", b"linux-vdsx.so.1\0"), {"D001", "V003"}),
    "D002": (lambda m: m.retag("SYMENT", DT["SYMBOLIC"]), {"D002"}),
    "X001": (lambda m: m.retag("HASH", DT["SYMBOLIC"]), {"X001"}),
    "R001": (lambda m: m.retag("SYMBOLIC", DT["TEXTREL"]) if m.img.dyn("SYMBOLIC") is not None
             else m.retag("VERDEFNUM", DT["TEXTREL"]), {"R001", "V001"}),
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
    assert rule_id in got
    assert got <= allowed, f"{rule_id} mutation also fired {got - allowed}"


def test_h002_h003_h004_compare_with_the_target(built):
    target, so, _ = built("x86_64")
    for rule_id, elf in (("H002", {"elf_class": 32}), ("H003", {"machine": 3}), ("H004", {"endian": "big"})):
        other = dataclasses.replace(target, elf=dataclasses.replace(target.elf, **elf))
        assert fired(other, so) == {rule_id}


def test_p003_image_linked_away_from_zero(built, tmp_path):
    """Linked at 0x10000, like the old prelinked vDSOs consumers tripped over."""
    target, _, _ = built("x86_64")

    def relink(name, text):
        return text.replace(". = SIZEOF_HEADERS;", ". = 0x10000 + SIZEOF_HEADERS;") if name == "vdso.lds" else text
    so = build_variant(target, tmp_path, edit=relink)
    assert ElfImage(so).loads[0].vaddr == 0x10000
    assert fired(target, so) == {"P003"}


def test_s001_undefined_symbol_in_symtab(built, tmp_path):
    def undefine(m):
        sym = next(s for s in m.img.symtab if s.name == "vdso_u_data")
        m.set_sym_shndx(sym, 0)
    target, path = mutate(built, tmp_path, undefine, which="dbg")
    assert fired(target, path) == {"S001"}


def test_s001_undefined_symbol_from_the_linker(built, tmp_path):
    """A real unresolved call, linked without -z defs, as a careless build would."""
    target, _, _ = built("x86_64")
    extra = [("probe.c", "void vdso_missing(void);\nvoid probe(void);\nvoid probe(void) { vdso_missing(); }\n")]
    so = build_variant(target, tmp_path, extra=extra, ldflags_drop=("-z,defs", "--no-undefined"))
    assert "S001" in fired(target, so)


def test_r001_real_relocation(built, tmp_path):
    """An absolute address in read-only data needs R_X86_64_RELATIVE."""
    target, _, _ = built("x86_64")
    probe = ('extern int __vdso_time;\n'
             'const void *const probe_ptr __attribute__((used, section(".rodata"))) = &__vdso_time;\n')
    so = build_variant(target, tmp_path, extra=[("probe.c", probe)])
    assert "R001" in fired(target, so)
    assert ElfImage(so).section(".rela.dyn") is not None


def test_k001_powerpc_bcl_form(built, tmp_path):
    target, so, _ = built("ppc64le")

    def break_bcl(m):
        text = m.img.section(".text")
        data = bytes(m.data[text.offset:text.offset + text.size])
        i = data.index((0x429F0005).to_bytes(4, m.img.endian))
        m.set_word(text.offset + i, 0x429F0009)    # bcl 20,31,.+8
    target, path = mutate(built, tmp_path, break_bcl, name="ppc64le")
    assert fired(target, path) == {"K001"}


@pytest.mark.parametrize("name", ["arm64", "ppc64le"])
def test_t001_trampoline_words(built, tmp_path, name):
    target, so, _ = built(name)
    tramp = target.trampolines[0]

    def break_tramp(m):
        sym = m.dynsym(tramp.name)
        m.set_word(m.word_at(sym.value), 0x60000000 if name == "ppc64le" else 0xD503201F)
    target, path = mutate(built, tmp_path, break_tramp, name=name)
    assert fired(target, path) == {"T001"}


def rules_tested_in_check():
    return set(MUTATIONS) | {"H002", "H003", "H004", "P003", "P005", "S001", "R001", "K001", "T001", "S004"}


def test_every_rule_has_a_test():
    """Here for `vdsogen check`, the rest in test_audit_rules.py."""
    from test_audit_rules import rules_tested_in_audit
    assert {r.id for r in rules.all_rules()} <= rules_tested_in_check() | rules_tested_in_audit()


def test_p005_dynamic_missing_or_outside(built, tmp_path):
    from vdsogen.elf import PT_DYNAMIC
    target, path = mutate(built, tmp_path, lambda m: m.set_phdr(m.phdr(PT_DYNAMIC), type=PT_NULL))
    assert fired(target, path) == {"P005"}
    # Outside the load: the file offset no longer matches the address.
    target, path = mutate(built, tmp_path, lambda m: m.set_phdr(m.phdr(PT_DYNAMIC), offset=m.phdr(PT_DYNAMIC).offset + 8))
    assert "P005" in fired(target, path)


def test_s004_notype_export_is_a_warning(built, tmp_path):
    target, path = mutate(built, tmp_path, lambda m: m.set_sym_info(m.dynsym("__vdso_time"), type_=0))
    findings = check_image(target, path)
    assert {(f.rule, f.severity) for f in findings} == {("S004", "warning")}
    strict = check_image(target, path, profile="strict")
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
    _ = STB_GLOBAL, PF_X
