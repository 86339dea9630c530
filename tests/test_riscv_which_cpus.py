"""riscv_hwprobe's flag RISCV_HWPROBE_WHICH_CPUS, per layout version.

Before v6.8 the riscv_hwprobe syscall refuses every flag (-EINVAL) and the
vDSO passes any flag to it; from v6.8 ("RISC-V: hwprobe: Introduce
which-cpus flag", e178bf146e4b) the syscall takes WHICH_CPUS and the vDSO
answers it from the arch data (riscv_vdso_get_cpus, as in v6.12's and v7.2's
arch/riscv/kernel/vdso/hwprobe.c).  The layouts say which with `[behaviour]
hwprobe_which_cpus` ("refused" in linux-6.4-riscv and linux-6.7-riscv, the
default "vdso" from linux-6.8-riscv on); vdsogen's image and the harness's
riscv_hwprobe check follow it, so that an image of either kind played with
the other kind's layout fails.  No download: vdsogen's own images.
"""

import io
from dataclasses import replace

import pytest

from conftest import ROOT, build_broken
from vdsogen.build.toolchain import Builder
from vdsogen.errors import VdsogenError
from vdsogen.harness import layouts
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

LAYOUTS_DIR = ROOT / "specs" / "layouts"
KEY = "hwprobe_which_cpus"


def riscv_layouts():
    """riscv64's layouts that have hwprobe's arch data (v6.4+)."""
    return [lay for lay in layouts.for_abi(load_target("riscv64")) if lay.page("arch") is not None]


def test_each_layout_says_what_its_kernels_do():
    """Refused where the layout's last version is before v6.8, answered by the vDSO from v6.8."""
    got = {lay.name: lay.behaviour(KEY) for lay in riscv_layouts()}
    assert got["linux-6.4-riscv"] == got["linux-6.7-riscv"] == "refused"
    assert got["linux-6.8-riscv"] == got["linux-6.12-riscv"] == got["linux-7.2-riscv"] == "vdso"
    for lay in riscv_layouts():
        assert got[lay.name] == ("refused" if lay.linux[-1] < (6, 8) else "vdso"), lay.name
        assert lay.linux[0] >= (6, 8) or lay.linux[-1] < (6, 8), f"{lay.name} spans v6.8"


@pytest.mark.parametrize("version, name", [((6, 6), "linux-6.4-riscv"), ((6, 7), "linux-6.7-riscv"),
                                           ((6, 8), "linux-6.8-riscv"), ((6, 10), "linux-6.8-riscv")])
def test_v6_8_starts_a_layout(version, name):
    assert [lay.name for lay in riscv_layouts() if lay.covers(version)] == [name]


def test_the_behaviour_is_part_of_the_shape_and_inherited():
    """linux-6.7-riscv lays out linux-6.8-riscv's data, extends it and differs only in the flag:
    two layouts, two digests (the image's data-pages note says which)."""
    old, new = load_layout("linux-6.7-riscv"), load_layout("linux-6.8-riscv")
    assert [line for line in old.shape() if line not in new.shape()] == [f"behaviour {KEY} refused"]
    assert old.digest() != new.digest()
    assert all(not line.startswith("behaviour") for line in load_layout("linux-7.2-riscv").shape())


def _variant(tmp_path, text):
    d = tmp_path / "layouts"
    d.mkdir(exist_ok=True)
    (d / "bad.toml").write_text('extends = "linux-6.12-riscv"\n' + text)
    return lambda: load_layout("bad", [d, LAYOUTS_DIR])


@pytest.mark.parametrize("text, message", [
    ('[behaviour]\nhwprobe_which_cpus = "maybe"\n',
     r"bad\.toml: behaviour\.hwprobe_which_cpus: 'maybe' is not one of refused, vdso"),
    ('[behaviour]\nhwprobe_which_cpu = "vdso"\n',
     r"bad\.toml: behaviour\.hwprobe_which_cpu: unknown key \(did you mean 'hwprobe_which_cpus'"),
])
def test_errors_name_the_file_and_key(tmp_path, text, message):
    with pytest.raises(VdsogenError, match=message):
        _variant(tmp_path, text)()


def test_extends_inherits_and_overrides(tmp_path):
    d = tmp_path / "layouts"
    d.mkdir()
    (d / "inherits.toml").write_text('extends = "linux-6.7-riscv"\n')
    (d / "overrides.toml").write_text('extends = "linux-6.7-riscv"\n[behaviour]\nhwprobe_which_cpus = "vdso"\n')
    assert load_layout("inherits", [d, LAYOUTS_DIR]).behaviour(KEY) == "refused"
    assert load_layout("overrides", [d, LAYOUTS_DIR]).behaviour(KEY) == "vdso"


# -- the harness on images of one kind played with the other kind's layout ------------------------

def run(target, image, layout, tmp_path):
    out = io.StringIO()
    status, outcome = run_tests_full(target, image, workdir=tmp_path / "work", stream=out, layout=layout,
                                     builder=Builder(target, stream=out))
    return status, outcome, out.getvalue()


def built_as(name, behaviours, tmp_path):
    """vdsogen's riscv64 image for layout `name`'s data, built as if it said `behaviours`."""
    layout = replace(load_layout(name), behaviours=behaviours)
    target = layouts.with_layout(load_target("riscv64"), layout)
    return target, build_broken(target, tmp_path / "image", {})


@pytest.mark.parametrize("name", ["linux-6.4-riscv", "linux-6.7-riscv", "linux-6.8-riscv"])
def test_vdsogens_image_passes_as_built_for_the_layout(name, tmp_path):
    status, outcome, text = run(load_target("riscv64"), None, name, tmp_path)
    assert status == 0 and "riscv_hwprobe" in outcome.passed, text


def test_a_v6_4_image_answering_which_cpus_fails(tmp_path):
    """The vDSO of v6.4 leaves WHICH_CPUS to the syscall: an image on v6.4's page that answers it
    itself (v6.8's code) answers what the syscall does not."""
    target, image = built_as("linux-6.4-riscv", (), tmp_path / "b")
    status, outcome, text = run(target, image, "linux-6.4-riscv", tmp_path / "r")
    assert status == 1, text
    assert outcome.failed["riscv_hwprobe"].startswith("WHICH_CPUS, the page's values: returned 0, the syscall "), \
        outcome.failed


def test_a_v6_12_image_refusing_which_cpus_fails(tmp_path):
    """The vDSO of v6.12 answers WHICH_CPUS from the page: an image that leaves it to the syscall
    (v6.7's code on v6.12's page) does not answer the page's values."""
    target, image = built_as("linux-6.12-riscv", ((KEY, "refused"),), tmp_path / "b")
    status, outcome, text = run(target, image, "linux-6.12-riscv", tmp_path / "r")
    assert status == 1, text
    assert outcome.failed["riscv_hwprobe"].startswith("WHICH_CPUS"), outcome.failed
