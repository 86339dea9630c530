"""Every rule as `vdsogen audit` runs it: the good corpus image of every ABI
passes every rule; each defect image (built here with the flags or toolchain
that cause the defect, or a mutation of a good image) makes its rule fire,
with the severity the profile gives, and as little else as the defect allows."""

import pytest

import corpus as corpus_images
from audit_mutations import MUTATIONS, rules_tested_in_audit, rela_none
from elfmut import Mutant
from vdsogen.audit import rules
from vdsogen.audit.run import audit_path
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


def test_every_rule_tested_here_exists():
    """The rules this module makes fire are registered ones (test_rules.py
    requires every registered rule to fire here or there)."""
    registered = {r.id for r in rules.all_rules()}
    assert rules_tested_in_audit() <= registered, sorted(rules_tested_in_audit() - registered)


def test_check_only_rules_do_not_run_in_audit(corpus):
    ids = {f.rule for name in ("x86_64-unversioned", "x86_64-stack-protector") for f in findings(corpus(name))}
    check_only = {r.id for r in rules.all_rules() if not r.in_audit}
    assert check_only == {"N008", "S002", "S003", "V002", "T002"}
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
    path = mutant(corpus, tmp_path, "x86_64", rela_none)
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
    m.set_e_machine(252)    # EM_CSKY: none of the catalogue's ABIs
    report = audit_path(m.save(tmp_path / "csky.so"))
    assert report.detection.abi is None
    assert "X002" in {f.rule for f in report.findings}
