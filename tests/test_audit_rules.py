"""Every rule as `vdsogen audit` runs it: the good corpus image of every ABI
passes every rule; each defect image (built here with the flags or toolchain
that cause the defect, or a mutation of a good image) makes its rule fire,
with the severity the profile gives, and as little else as the defect allows."""

import pytest

import corpus as corpus_images
from elfmut import Mutant
from vdsogen.audit import rules
from vdsogen.audit.run import audit_path
from vdsogen.elf.consts import DT, PF_R, PF_W, PF_X, PT_GNU_EH_FRAME, PT_GNU_STACK, PT_TLS, STB_LOCAL, elf_hash
from vdsogen.elf.reader import ElfImage


# arm64-compat images are ARM EABI images like arm's: the ELF cannot tell them apart.
ARCH = {"arm64-compat": "arm64-compat"}


def findings(path, arch=None, profile="linux"):
    report = audit_path(path, arch, profile)
    assert report.status == "audited", report.error
    return report.findings


def test_corpus_builds_every_good_image(corpus):
    corpus.many([r.name for r in corpus_images.GOOD] + [r.name for r in corpus_images.DEFECTS])


@pytest.mark.parametrize("name", [r.name for r in corpus_images.GOOD])
def test_good_image_is_clean(corpus, name):
    recipe = corpus_images.RECIPES[name]
    report = audit_path(corpus(name), ARCH.get(recipe.abi))
    assert report.detection.abi.name == recipe.abi
    assert report.findings == []
    assert {c.verdict for c in report.consumers} <= {"works", "n/a"}


@pytest.mark.parametrize("name", [r.name for r in corpus_images.DEFECTS])
def test_defect_image_fires_its_rules(corpus, name):
    """Exactly the rules the recipe names fire, each with its severity: a rule
    firing where it should not fails as much as one missing."""
    recipe = corpus_images.RECIPES[name]
    got = {(f.rule, f.severity) for f in findings(corpus(name), ARCH.get(recipe.abi))}
    want = set(recipe.expect.items())
    assert got == want, f"{name}: missing {sorted(want - got)}, also fired {sorted(got - want)}"


def _eh(m):
    return m.phdr(PT_GNU_EH_FRAME)


def _rela_none(m):
    # One all-zero RELA entry (the null symbol), through tags the image can spare.
    m.set_dyn("VERDEFNUM", tag=DT["RELA"], value=m.img.dyn("SYMTAB"))
    m.set_dyn("GNU_HASH", tag=DT["RELASZ"], value=24)


def _drop_bucket(m):
    nbucket = m.img.sysv_hash()[0]
    buckets = m.img.sysv_hash()[2]
    k = next(i for i, b in enumerate(buckets) if b)
    m.set_sysv_word(2 + k, 0)
    assert nbucket


def _rename_node(m):
    m.replace_bytes(b"LINUX_2.6\0", b"LINUX_2.7\0")
    m.set_verdef_hash(1, elf_hash("LINUX_2.7"))


def _long_note(m):
    note = m.note("Linux", 0)
    m.put("I", note.offset + 4, 0x1000)


def _move_section(name, delta, with_offset=False):
    def fn(m):
        sec = m.section(name)
        m.set_section(sec, addr=sec.addr + delta, offset=sec.offset + delta if with_offset else None)
    return fn


def _break_trampoline(m):
    sym = m.dynsym("__kernel_rt_sigreturn")
    m.set_word(m.word_at(sym.value), 0xD503201F)


# rule -> (good corpus image, mutation, exactly the rules it fires (its own first))
MUTATIONS = {
    "H007": ("ppc64le", lambda m: m.set_e_flags(1), {"H007"}),
    "H008": ("x86_64", lambda m: m.set_e_entry(0x500), {"H008"}),
    "H009": ("x86_64", lambda m: m.set_osabi(3), {"H009"}),
    "H010": ("x86_64", lambda m: m.set_e_machine(2), {"H010"}),
    "P009": ("x86_64", lambda m: m.move_phdrs_to_end(), {"P009"}),
    "P010": ("x86_64", lambda m: m.set_phdr(_eh(m), offset=_eh(m).offset + 4), {"P010"}),
    "P011": ("x86_64", lambda m: m.set_phdr(_eh(m), type=PT_GNU_STACK, flags=PF_R | PF_W | PF_X), {"P011", "P012"}),
    "D005": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=0x6FFF0000), {"D005"}),
    "D006": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=DT["FLAGS_1"], value=0x8), {"D006"}),
    "D007": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=DT["RELA"]), {"D007"}),
    "R003": ("x86_64", _rela_none, {"R003", "X002"}),
    # The emptied bucket holds no name the DT_HASH readers look up: no consumer misses one.
    "X003": ("x86_64", _drop_bucket, {"X003"}),
    "S008": ("x86_64", lambda m: m.set_sym_bind(m.dynsym("__vdso_time"), STB_LOCAL), {"S008"}),
    "V004": ("x86_64", _rename_node, {"V004"}),
    "V005": ("x86_64", lambda m: m.set_versym(m.dynsym("__vdso_time"), 1), {"V005"}),
    "N003": ("x86_64", _long_note, {"N003", "N001", "N002"}),
    "C001": ("x86_64", _move_section(".text", 0x100000), {"C001"}),
    "C003": ("x86_64", _move_section(".gnu.version", 2, with_offset=True), {"C003"}),
    "T001": ("arm64", _break_trampoline, {"T001"}),
    "L001": ("x86_64", lambda m: m.set_phdr(_eh(m), type=PT_TLS), {"L001", "P006", "P012"}),
    "L002": ("x86_64", lambda m: m.set_verdef_hash(1, 0x1234), {"L002", "V003"}),
}


def mutant(corpus, tmp_path, base, fn):
    m = Mutant(corpus(base))
    fn(m)
    return m.save(tmp_path / f"{base}-mutant.so")


@pytest.mark.parametrize("rule_id", sorted(MUTATIONS))
def test_mutation_fires_its_rule(corpus, tmp_path, rule_id):
    base, fn, allowed = MUTATIONS[rule_id]
    path = mutant(corpus, tmp_path, base, fn)
    got = {f.rule for f in findings(path, ARCH.get(corpus_images.RECIPES[base].abi))}
    assert got == allowed, f"{rule_id} mutation: missing {sorted(allowed - got)}, also fired {sorted(got - allowed)}"
    # The severity is the rule's, as the profile gives it.
    sev = {f.rule: f.severity for f in findings(path, profile="strict")}
    assert sev[rule_id] == rules.get_rule(rule_id).severity["strict"]


def rules_tested_in_audit():
    return set(MUTATIONS) | {r for recipe in corpus_images.DEFECTS + corpus_images.QUIRKS +
                            corpus_images.UNPARSEABLE for r in recipe.expect}


def test_every_rule_is_tested():
    """Each rule has a defect image here or in test_rules.py (check)."""
    from test_rules import rules_tested_in_check
    registered = {r.id for r in rules.all_rules()}
    missing = registered - rules_tested_in_audit() - rules_tested_in_check()
    assert not missing, f"rules without a defect image: {sorted(missing)}"
    assert rules_tested_in_audit() <= registered, sorted(rules_tested_in_audit() - registered)


def test_check_only_rules_do_not_run_in_audit(corpus):
    ids = {f.rule for name in ("x86_64-unversioned", "x86_64-stack-protector") for f in findings(corpus(name))}
    check_only = {r.id for r in rules.all_rules() if not r.in_audit}
    assert check_only == {"S002", "S003", "V002", "T002"}
    assert not ids & check_only


def test_severities_follow_the_profile(corpus):
    path = corpus("x86_64-writable")
    assert {(f.rule, f.severity) for f in findings(path)} == {("P007", "error")}
    assert {(f.rule, f.severity) for f in findings(path, profile="qemu-user")} == {("P007", "info")}
    warn = corpus("x86_64-runpath")
    assert {(f.rule, f.severity) for f in findings(warn)} == {("D004", "warning")}
    assert {(f.rule, f.severity) for f in findings(warn, profile="strict")} == {("D004", "error")}


def test_audit_warns_where_check_errs(corpus):
    """DT_HASH is a warning for an audited image (arm64 v6.11+ has none), an
    error for vdsogen's own images (check)."""
    got = {(f.rule, f.severity) for f in findings(corpus("arm64-gnu-hash-only"))}
    assert ("X001", "warning") in got
    assert rules.get_rule("X001").severity_for("linux", generated=True) == "error"


def test_arm64_compat_is_told_apart_only_by_arch(corpus):
    """arm and arm64-compat images are alike in ELF terms: only --arch, or the
    compat sigreturn trampolines of 5.3-5.7 kernels, tell them apart."""
    report = audit_path(corpus("arm"))
    assert report.detection.abi.name == "arm" and "arm64-compat" in report.detection.also
    assert audit_path(corpus("arm"), "arm64-compat").detection.abi.name == "arm64-compat"
    assert {"__kernel_sigreturn_arm", "__kernel_rt_sigreturn_thumb"} <= {s.name for s in ElfImage(
        str(corpus("arm64-compat"))).dynsym}
    assert audit_path(corpus("arm64-compat")).detection.abi.name == "arm64-compat"


def test_quirks_of_real_images_are_not_errors(corpus, tmp_path):
    """MIPS local GOT reserved entries and sysv-only hash, R_*_NONE, RISC-V
    attributes, the build salt, .rodata writable inside the R+X load: no error."""
    for name in ("mips-o32", "mips-n64-be", "riscv64", "x86_64-salt", "ppc64"):
        assert not [f for f in findings(corpus(name)) if f.severity != "info"], name
    path = mutant(corpus, tmp_path, "x86_64", _rela_none)
    assert {f.severity for f in findings(path) if f.rule == "R003"} == {"info"}
    # .rodata and .dynamic flagged writable, as x86 kernel images have them.
    m = Mutant(corpus("x86_64"))
    sec = m.section(".dynamic")
    m.put("W", sec.hdr_offset + 8, sec.flags | 1)          # sh_flags |= SHF_WRITE
    assert findings(m.save(tmp_path / "wa.so")) == []


def x002(path, expect):
    return [f.message for f in rules.run(rules.Context(ElfImage(str(path)), expect), only={"X002"})]


def test_x002_follows_the_catalogue(corpus):
    """X002 asks for DT_GNU_HASH where the detected ABI's hash_styles has
    "gnu": an x86_64 image without one is a warning, a MIPS image (sysv only,
    as Linux links it) is not; an x86_64 entry saying sysv only would not ask."""
    import dataclasses
    from vdsogen.spec import abi

    sysv_only = corpus("x86_64-sysv-hash-only")
    assert {(f.rule, f.severity) for f in findings(sysv_only)} == {("X002", "warning")}
    assert {(f.rule, f.severity) for f in findings(sysv_only, profile="strict")} == {("X002", "error")}
    for name in ("mips-o32", "mips-n32-be", "mips-n64"):
        path = corpus(name)
        assert ElfImage(str(path)).dyn("GNU_HASH") is None
        assert audit_path(path).detection.abi.hash_styles == ("sysv",)
        assert "X002" not in {f.rule for f in findings(path, profile="strict")}, name
    x86 = abi.get("x86_64")
    assert x002(sysv_only, rules.Expect(abi_info=x86)) == ["no DT_GNU_HASH"]
    assert x002(sysv_only, rules.Expect(abi_info=dataclasses.replace(x86, hash_styles=("sysv",)))) == []
    mips = abi.get("mips-n64")
    assert x002(corpus("mips-n64"), rules.Expect(abi_info=dataclasses.replace(mips, hash_styles=("sysv", "gnu")))) \
        == ["no DT_GNU_HASH"]


def test_x002_without_a_catalogue_abi(corpus, tmp_path):
    """An image of no catalogue ABI: DT_GNU_HASH is asked for except on MIPS, as before the catalogue said it."""
    assert x002(corpus("x86_64-sysv-hash-only"), rules.Expect()) == ["no DT_GNU_HASH"]
    assert x002(corpus("mips-n64"), rules.Expect()) == []
    m = Mutant(corpus("x86_64-sysv-hash-only"))
    m.set_e_machine(43)     # EM_SPARCV9: none of the catalogue's ABIs
    report = audit_path(m.save(tmp_path / "sparc.so"))
    assert report.detection.abi is None
    assert "X002" in {f.rule for f in report.findings}
