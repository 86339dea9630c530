"""getrandom's rng state in the layouts of Linux 6.11-6.16 (issue 21), and
s390's vector facility check.

Before the generic data store kept it in a page of its own (v6.15 for most,
v6.17's layouts here), each arch kept struct vdso_rng_data (generation,
is_ready) in a page it already had.  The offsets below are Linux's, written
out by hand from Debian's v6.12 source: x86's vvar.h
(DECLARE_VVAR_SINGLE(640, ...)), arm64's and s390's vsyscall.h
(__VDSO_RND_DATA_OFFSET 480 and 768), powerpc's vdso_datapage.h (after the
syscall maps of struct vdso_arch_data), loongarch's vdso.h (after the 256
per-CPU lines of struct loongarch_vdso_data, so at the start of its second
16 KiB page).  Linux's own trixie x86_64 image (6.12) passes the harness's
getrandom checks on linux-6.12-x86 (by hand: the image is not in CI).
"""

import io
import re

import pytest

from conftest import ROOT, build_broken
from vdsogen.harness.driver import run_tests_full
from vdsogen.harness.layouts import with_layout
from vdsogen.spec import abi
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

# layout: (the page holding the rng state, by its index; the offset of generation in it)
LINUX = {
    "linux-6.12-x86": (0, 640),         # the vvar page
    "linux-6.14-x86": (0, 640),
    "linux-5.6": (0, 480),              # arm64's data page
    "linux-5.6-s390": (0, 768),
    "linux-6.12-powerpc64": (0, 0xf8),  # the arch page (_vdso_datapage)
    "linux-6.12-powerpc32": (0, 0x48),
    "linux-6.12-loongarch": (3, 0),     # the second arch page
}


@pytest.mark.parametrize("name", sorted(LINUX))
def test_the_rng_state_is_where_linux_keeps_it(name):
    index, offset = LINUX[name]
    layout = load_layout(name)
    page = layout.page("rng")
    assert page is not None and page.index == index and page.symbol
    rng = layout.struct(page.struct)
    assert rng.field("generation").offset == offset and rng.field("generation").type == "u64"
    assert rng.field("is_ready").offset == offset + 8 and rng.field("is_ready").type == "u8"


def _getrandom_since(abi_name):
    """The first Linux version whose vDSO of the ABI exports getrandom, or None."""
    a = abi.get(abi_name)
    since = [x.since[:2] for x in a.exports if "getrandom" in x.name] if a is not None else []
    return min(since, default=None)


def test_every_layout_of_a_kernel_with_getrandom_has_its_state():
    """A layout's kernels that serve getrandom from the vDSO: every ABI it lists
    whose catalogue export is as old as the layout's last version."""
    missing = []
    for path in sorted((ROOT / "specs" / "layouts").glob("*.toml")):
        layout = load_layout(path.stem)
        last = layout.linux[-1] if len(layout.linux) == 2 else (99, 0)
        for name in layout.abis:
            since = _getrandom_since(name)
            if since is not None and since <= last and layout.page("rng") is None:
                missing.append(f"{layout.name} ({name}, getrandom since {since})")
    assert not missing, missing


@pytest.mark.parametrize("spec, export", [("x86_64", "__vdso_getrandom"), ("arm64", "__kernel_getrandom")])
def test_the_kernel_tree_specs_export_getrandom(spec, export):
    """docs/kernel/linux-6.12: v6.12's exports, getrandom's included, and kept on their layout."""
    target = load_target(spec, ROOT / "docs" / "kernel" / "linux-6.12")
    kept = with_layout(target, target.datapage.layout)
    assert export in {e.name for e in kept.exports}


def _run(target, tmp_path, **kw):
    out = io.StringIO()
    status, outcome = run_tests_full(target, workdir=tmp_path, stream=out, **kw)
    return status, outcome, out.getvalue()


GETRANDOM = ("query", "keystream", "lengths", "rekey", "fallback", "race", "fork", "states", "timens")


def test_an_x86_64_image_on_the_6_12_pages(tmp_path):
    """vdsogen's x86_64 image built for the pages of 6.12 serves getrandom from
    +640 of the vvar page, in a time namespace too; the harness playing a
    layout with the state 8 bytes on fails it."""
    target = load_target("x86_64")
    status, outcome, output = _run(target, tmp_path / "good", layout="linux-6.12-x86")
    assert status == 0, output
    for c in GETRANDOM:
        assert f"getrandom.{c}" in outcome.passed, output
    image = tmp_path / "good" / "image" / "vdso.so"
    specs = tmp_path / "specs"
    (specs / "layouts").mkdir(parents=True)
    (specs / "x86_64.toml").write_text('extends = "x86_64"\n')
    text = (ROOT / "specs" / "layouts" / "linux-6.12-x86.toml").read_text()
    assert text.count("count = 640") == 1
    (specs / "layouts" / "linux-6.12-x86.toml").write_text(text.replace("count = 640", "count = 648"))
    status, outcome, output = _run(load_target("x86_64", specs), tmp_path / "off", image=image,
                                   layout="linux-6.12-x86")
    assert status != 0 and "getrandom.lengths" in outcome.failed, output


# qemu's CPU without the vector facility (facility 129) or its extensions.
NO_VECTOR = "max,vx=off,vxeh=off,vxeh2=off"
# Where the getrandom entry tests the facility (arch/s390/entry.S.j2).
CHECK = "\t.ifc\t\\cfunc, vdso_c_getrandom\n\tvector_or_syscall\n"


def test_s390x_without_the_vector_facility_takes_the_syscall(tmp_path):
    """As Linux: the query answers -ENOSYS and every call is the syscall's,
    where a vector instruction would raise an exception; with the facility
    check taken out of the entry, the ChaCha20 kills the harness."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "s390x.toml").write_text(f'extends = "s390x"\n\n[toolchain]\nqemu_cpu = "{NO_VECTOR}"\n')
    target = load_target("s390x", specs)
    status, outcome, output = _run(target, tmp_path / "w")
    assert "returned -38, want 0" in outcome.failed.get("getrandom.query", ""), output
    assert "killed by signal" not in output, output
    # Every other check passes; getrandom's own fail only as the syscall's random answers do.
    assert all(name.startswith("getrandom.") for name in outcome.failed), outcome.failed
    assert "getrandom.fork" in outcome.passed and "getrandom.map" in outcome.passed, output

    unchecked = CHECK.replace("\tvector_or_syscall\n", "")
    broken = build_broken(target, tmp_path / "broken", {"entry.S": [(CHECK, unchecked)]})
    status, outcome, output = _run(target, tmp_path / "b", image=broken)
    assert status != 0 and re.search(r"FAIL getrandom\.\w+: killed by signal", output), output


def test_readmes_getrandom_figures_are_the_measured_ones():
    """README.rst's getrandom figures are those scripts/measure.py wrote into
    docs/measurements.rst (sh scripts/measure.sh getrandom writes both), not typed in."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("vdsogen_measure", ROOT / "scripts" / "measure.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    readme = (ROOT / "README.rst").read_text()
    assert m.ALSO_IN["getrandom"] == (ROOT / "README.rst",)
    assert readme.splitlines().count(m.begin("getrandom")) == 1
    ours, doc = m.section(readme, "getrandom"), m.section(m.DOC.read_text(), "getrandom")
    assert ours == doc and any(line.startswith("*Generated by*") for line in ours)
    assert any(line.startswith("arm64 ") for line in m.body_of(ours))
