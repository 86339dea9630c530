"""getrandom in the kernel end to end (scripts/kernel-e2e.sh, issues 21 and 22).

The v6.12 specs a kernel tree copies in (docs/kernel/linux-6.12) export
what v6.12's vDSO linker scripts export, getrandom's included now that the
layouts describe its state; the guest runs the kernel's vdso_test_getrandom
on every family whose spec exports it; powerpc's glibc program
(scripts/e2e/ppc-exports.c) has a check for each export of the image.  The
boots themselves are by hand (they download and build a kernel).
"""

import re

import pytest

from conftest import ROOT
from vdsogen.harness.layouts import with_layout
from vdsogen.spec import abi
from vdsogen.spec.model import load_target

SPECS = ROOT / "docs" / "kernel" / "linux-6.12"
SCRIPT = ROOT / "scripts" / "kernel-e2e.sh"
V6_12 = (6, 12, 0)


def _names(target):
    """Every symbol the spec's image exports: entry points, their aliases, trampolines."""
    names = {e.name for e in target.exports} | {str(a) for e in target.exports for a in e.aliases}
    return names | {t.name for t in target.trampolines}


@pytest.mark.parametrize("spec", ["ppc64", "ppc64le"])
def test_the_powerpc_kernel_tree_specs_export_what_v6_12_does(spec):
    """vdso64.lds.S of v6.12 (the ABI catalogue's exports alive then):
    __kernel_getrandom among them, and kept on the spec's layout."""
    target = load_target(spec, SPECS)
    linux = {e.name for e in abi.get(target.abi.name).exports if e.alive(V6_12)}
    assert "__kernel_getrandom" in linux
    assert _names(target) == linux
    kept = with_layout(target, target.datapage.layout)
    assert "__kernel_getrandom" in {e.name for e in kept.exports}


def _family_branches():
    """kernel-e2e.sh's `case $FAMILY` branches: family -> the branch's text."""
    text = SCRIPT.read_text()
    section = text[text.index("case $FAMILY in"):text.index("# -- packages")]
    out = {}
    for m in re.finditer(r"^([a-z0-9_|]+)\)\n(.*?)^\t;;", section, re.S | re.M):
        for family in m.group(1).split("|"):
            out[family] = m.group(2)
    return out


@pytest.mark.parametrize("family", ["x86_64", "arm64", "ppc64", "ppc64le", "s390x"])
def test_the_guest_runs_vdso_test_getrandom_where_the_spec_exports_it(family):
    target = load_target(family, SPECS)
    assert any(e.function.name == "getrandom" for e in target.exports)
    assert "SELFTEST_GETRANDOM=1" in _family_branches()[family]


@pytest.mark.parametrize("spec", ["ppc64", "ppc64le"])
def test_ppc_exports_checks_every_export(spec):
    """ppc-exports.c fails an export it has no check for: each one of the image has its entry."""
    checked = set(re.findall(r'\{ "(__kernel_\w+)", check_\w+ \}', (ROOT / "scripts/e2e/ppc-exports.c").read_text()))
    assert _names(load_target(spec, SPECS)) <= checked
