"""riscv's data-page layouts from v6.4 to v7.2, as `vdsogen test --image` plays them.

From v6.4 (hwprobe's first) until v6.14 the hwprobe answers sit in each
clock record (v6.12: arch_data at +240 of the time page's first record: a
page role that shares another page at one of its members, `same_as` with
`at`); from v6.15 on the arch page of the generic data store.  Their count
follows RISCV_HWPROBE_MAX_KEY (5 in v6.4-v6.6, 6 in v6.7-v6.10 (two layouts:
RISCV_HWPROBE_WHICH_CPUS came with v6.8, tests/test_riscv_which_cpus.py), 9 in v6.11
and v6.12, 10 in v6.13, 11 in v6.14, 12 in v6.15, 13 in v6.16 and v6.17,
14 in v6.18, 15 in v6.19, 16 from v7.0), and the ready byte came with
v6.18 (and v6.17.6).  No download: the images are vdsogen's own, built for
each layout, some of them broken the way a wrong layout would read the page.
"""

import io

import pytest

from conftest import ROOT, build_broken
from vdsogen.build.toolchain import Builder
from vdsogen.errors import VdsogenError
from vdsogen.harness import layouts
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

LAYOUTS = ROOT / "specs" / "layouts"

# layout: Linux's facts, worked out by hand from the headers (v6.12.117's source, the
# generic data store of v6.15+): the arch role's page and offset in it, the hwprobe keys,
# homogeneous_cpus's offset in the arch struct, whether it has the ready byte, the
# second clock record's offset (before v6.15).
FACTS = {
    "linux-6.4-riscv": dict(arch=(0, 240), keys=6, homogeneous=48, ready=False, record1=240 + 56),
    "linux-6.7-riscv": dict(arch=(0, 240), keys=7, homogeneous=56, ready=False, record1=240 + 64),
    "linux-6.8-riscv": dict(arch=(0, 240), keys=7, homogeneous=56, ready=False, record1=240 + 64),
    "linux-6.12-riscv": dict(arch=(0, 240), keys=10, homogeneous=80, ready=False, record1=240 + 88),
    "linux-6.13-riscv": dict(arch=(0, 240), keys=11, homogeneous=88, ready=False, record1=240 + 96),
    "linux-6.14-riscv": dict(arch=(0, 240), keys=12, homogeneous=96, ready=False, record1=240 + 104),
    "linux-6.15-riscv": dict(arch=(3, 0), keys=13, homogeneous=104, ready=False),
    "linux-6.16-riscv": dict(arch=(3, 0), keys=14, homogeneous=112, ready=False),
    "linux-6.17-riscv": dict(arch=(3, 0), keys=14, homogeneous=112, ready=True),
    "linux-6.18-riscv": dict(arch=(3, 0), keys=15, homogeneous=120, ready=True),
    "linux-6.19-riscv": dict(arch=(3, 0), keys=16, homogeneous=128, ready=True),
    "linux-7.2-riscv": dict(arch=(3, 0), keys=17, homogeneous=136, ready=True),
}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_offsets_are_linux(name):
    want = FACTS[name]
    layout = load_layout(name)
    arch = layout.page("arch")
    assert (arch.index, arch.offset) == want["arch"]
    ad = layout.struct(arch.struct)
    assert ad.field("all_cpu_hwprobe_values").count == want["keys"]
    assert ad.field("homogeneous_cpus").offset == want["homogeneous"]
    assert (ad.field("ready") is not None) == want["ready"]
    if "record1" in want:
        assert layout.field_offset(layout.time_struct, "vdso_data[1]") == want["record1"]
        assert layout.field_offset(layout.time_struct, "vdso_data[0].arch_data") == arch.offset


def test_every_riscv64_layout_has_its_facts():
    """A riscv layout added later gets its row above (or, without hwprobe, below)."""
    assert {lay.name for lay in layouts.for_abi(load_target("riscv64"))} == set(FACTS) | {"linux-6.1-riscv"}


# -- v6.1 to v6.3: no hwprobe in the vDSO, no arch data --------------------------------------------
#
# The generic vdso_data[2] (records of 240 bytes: no arch_data member yet),
# the data page and the time-namespace page; __vdso_riscv_hwprobe came with
# v6.4 (abi.toml's since), and with it the arch data.

def test_v6_1_has_no_arch_page():
    layout = load_layout("linux-6.1-riscv")
    assert layout.covers((6, 1)) and layout.covers((6, 3)) and not layout.covers((6, 4))
    assert layout.page("arch") is None and layout.page("rng") is None
    assert [(p.role, p.index) for p in layout.pages] == [("time", 0), ("timens", 1)]
    assert layout.field_offset(layout.time_struct, "vdso_data[1]") == 240


def test_a_layout_without_an_arch_page_drops_hwprobe():
    """Its kernels have no hwprobe in the vDSO: played with that layout, vdsogen's image has none."""
    target = layouts.with_layout(load_target("riscv64"), load_layout("linux-6.1-riscv"))
    names = {e.name for e in target.exports}
    assert "__vdso_riscv_hwprobe" not in names and "__vdso_clock_gettime" in names


def test_vdsogens_riscv64_passes_on_v6_1(tmp_path):
    """`vdsogen test --layout=linux-6.1-riscv`: every check passes, without hwprobe's."""
    status, outcome, text = run(load_target("riscv64"), layout="linux-6.1-riscv", tmp_path=tmp_path)
    assert status == 0, text
    assert "# layout: linux-6.1-riscv (Linux 6.1-6.3)" in text and "riscv_hwprobe" not in text, text


def test_a_v6_1_image_picks_its_layout_and_passes(tmp_path):
    """An image whose version note says 6.1 (as riscv64 kernels of 6.1 have it) is covered."""
    from test_layout_pick import with_note
    target, image = built_for("linux-6.1-riscv", tmp_path / "b", {})
    image = with_note(image, tmp_path / "vdso.so", (6, 1, 0))
    status, outcome, text = run(load_target("riscv64"), image, None, tmp_path / "r")
    assert status == 0, text
    assert "linux-6.1-riscv (Linux 6.1-6.3), the image's version note says Linux 6.1" in text, text


@pytest.mark.parametrize("version, name", [
    ((6, 12), "linux-6.12-riscv"), ((6, 14), "linux-6.14-riscv"), ((6, 15), "linux-6.15-riscv"),
    ((6, 16), "linux-6.16-riscv"), ((6, 17), "linux-6.17-riscv"), ((6, 18), "linux-6.18-riscv"),
    ((6, 19), "linux-6.19-riscv"), ((7, 0), "linux-7.2-riscv"), ((7, 1), "linux-7.2-riscv"),
    ((7, 2), "linux-7.2-riscv"), ((6, 13), "linux-6.13-riscv"), ((6, 11), "linux-6.12-riscv"),
    ((6, 4), "linux-6.4-riscv"), ((6, 6), "linux-6.4-riscv"), ((6, 7), "linux-6.7-riscv"), ((6, 8), "linux-6.8-riscv"),
    ((6, 10), "linux-6.8-riscv"),
])
def test_each_version_picks_its_layout(version, name):
    fits = [lay.name for lay in layouts.for_abi(load_target("riscv64")) if lay.covers(version)]
    assert fits == ([name] if name else [])


def test_the_offset_reaches_the_page_shape():
    """Two layouts that differ only in where the arch struct sits are two layouts (the
    image's data-pages note says which)."""
    layout = load_layout("linux-6.12-riscv")
    assert "page 0 arch arch_vdso_data _vdso_data at 240" in layout.shape()
    assert all(" at " not in line for line in load_layout("linux-6.17-riscv").shape() if line.startswith("page"))


def _variant(tmp_path, old, new):
    d = tmp_path / "layouts"
    d.mkdir(exist_ok=True)
    text = (LAYOUTS / "linux-6.12-riscv.toml").read_text()
    assert old in text
    (d / "bad.toml").write_text(text.replace(old, new))
    return lambda: load_layout("bad", [d, LAYOUTS])


AT = 'at = "vdso_data[0].arch_data"'


@pytest.mark.parametrize("old, new, message", [
    (AT, 'at = "vdso_data[0].arch_dta"', r"page\[1\]\.at: 'vdso_data\[0\]\.arch_dta': struct vdso_data has no "
                                         r"member 'arch_dta'"),
    (AT, 'at = "vdso_data[2].arch_data"', r"page\[1\]\.at: 'vdso_data\[2\]\.arch_data': bad index in "
                                          r"'vdso_data\[2\]'"),
    (AT, 'at = "vdso_data.arch_data"', r"page\[1\]\.at: 'vdso_data\.arch_data': vdso_data is an array: "
                                       r"say which element"),
    (AT, 'at = "vdso_data[0].hrtimer_res"', r"page\[1\]\.at: 'vdso_data\[0\]\.hrtimer_res' is a u32, not the "
                                            r"page's struct arch_vdso_data"),
    (AT, 'at = "vdso_data[0].arch_data.homogeneous_cpus.x"', r"page\[1\]\.at: .*: a u8 has no members"),
    ('role = "timens"\nsymbol = "_timens_data"', 'role = "timens"\nsymbol = "_timens_data"\nat = "x"',
     r"page\[2\]\.at: only a role that shares an earlier page \(same_as\) sits at a member of it"),
])
def test_at_errors_name_the_file_and_key(tmp_path, old, new, message):
    load = _variant(tmp_path, old, new)
    with pytest.raises(VdsogenError, match=r"bad\.toml: " + message):
        load()


# -- the harness on images built for each layout ---------------------------------------------------

def run(target, image=None, layout=None, tmp_path=None):
    out = io.StringIO()
    status, outcome = run_tests_full(target, image, workdir=tmp_path / "work", stream=out, layout=layout,
                                     builder=Builder(target, stream=out))
    return status, outcome, out.getvalue()


@pytest.mark.parametrize("layout", sorted(FACTS))
def test_vdsogens_riscv64_passes_on_each_layout_it_offers(layout, tmp_path):
    """Built for the layout (`vdsogen test --layout`), every check passes, hwprobe's among them."""
    status, outcome, text = run(load_target("riscv64"), layout=layout, tmp_path=tmp_path)
    assert status == 0, text
    assert f"# layout: {layout} (Linux " in text and "riscv_hwprobe" in outcome.passed, text


def built_for(layout, tmp_path, edits):
    target = layouts.with_layout(load_target("riscv64"), load_layout(layout))
    return target, build_broken(target, tmp_path / "image", edits)


def test_v6_12s_hwprobe_reads_inside_the_first_clock_record(tmp_path):
    """v6.12's answers are at +240 of the time page: an image that reads them at the page's
    start (the arch struct taken for a page of its own) answers from the clock record and
    fails; the image built from the layout passes."""
    target, good = built_for("linux-6.12-riscv", tmp_path / "good", {})
    status, outcome, text = run(target, good, "linux-6.12-riscv", tmp_path / "g")
    assert status == 0 and "riscv_hwprobe" in outcome.passed, text
    target, bad = built_for("linux-6.12-riscv", tmp_path / "bad", {"impl-riscv_hwprobe.S": [
        ("lla\tt0, _vdso_data + 240", "lla\tt0, _vdso_data")]})
    status, outcome, text = run(target, bad, "linux-6.12-riscv", tmp_path / "b")
    assert status == 1 and "riscv_hwprobe" in outcome.failed, text
    assert "the page says" in outcome.failed["riscv_hwprobe"]


def test_a_kernel_without_the_ready_byte_answers_from_the_page(tmp_path):
    """v6.16's kernels write no ready byte: an image that waits for one (v6.18's code on
    v6.16's page) sends every query to the syscall, which answers otherwise."""
    target, bad = built_for("linux-6.16-riscv", tmp_path / "bad", {"impl-riscv_hwprobe.S": [
        ("\tlla\tt0, vdso_u_arch_data\n\tor\t", "\tlla\tt0, vdso_u_arch_data\n\tlbu\tt1, 113(t0)\n"
                                               "\tbeqz\tt1, 4f\n\tor\t")]})
    status, outcome, text = run(target, bad, "linux-6.16-riscv", tmp_path / "b")
    assert status == 1 and "riscv_hwprobe" in outcome.failed, text


def test_v6_17_answers_keys_0_to_13(tmp_path):
    """v6.17's page holds 14 values (VENDOR_EXT_MIPS_0, key 14, is v6.18's): an image that
    answers key 14 from it reads homogeneous_cpus and ready as a value, and fails."""
    target, bad = built_for("linux-6.17-riscv", tmp_path / "bad", {"impl-riscv_hwprobe.S": [
        ("1:\tli\tt3, 13\t", "1:\tli\tt3, 14\t")]})
    status, outcome, text = run(target, bad, "linux-6.17-riscv", tmp_path / "b")
    assert status == 1 and "riscv_hwprobe" in outcome.failed, text


@pytest.mark.parametrize("target, version, name", [
    ("ppc64le", (6, 18), "linux-6.17-powerpc64"), ("ppc64le", (6, 19), "linux-6.19-powerpc64"),
    ("ppc32", (6, 18), "linux-6.17-powerpc32"), ("ppc32", (7, 1), "linux-7.2-powerpc32"),
    ("s390x", (6, 16), "linux-6.15-s390"), ("s390x", (6, 17), "linux-6.17-s390"), ("s390x", (7, 2), "linux-6.17-s390"),
])
def test_the_6_17_spans_end_where_they_were_checked(target, version, name):
    """powerpc's syscall maps count NR_syscalls: v6.18's is v6.17's, listns (470) came with
    v6.19, rseq_slice_yield (471) with v7.0; s390's tod_delta replaced the steering state in
    v6.17's merge window (linux-6.15-s390's steering ends with v6.16, linux-6.17-s390's
    tod_delta starts with v6.17)."""
    fits = [lay.name for lay in layouts.for_abi(load_target(target)) if lay.covers(version)]
    assert fits == ([name] if name else [])
