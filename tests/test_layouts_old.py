"""The data pages of Linux 5.6 to 6.14 (struct vdso_data[2] in the vvar page),
as layouts: offsets against the numbers of Linux's own headers, and the
harness passing on x86_64 and arm64 images built for them.

The x86_64 spec is the one docs/kernel.rst tells a maintainer to keep in a
v5.6-v6.9 kernel tree (docs/kernel/x86_64.toml), which scripts/kernel-e2e.sh
boots in Linux 6.1."""

import io
import re

import pytest

from conftest import ROOT
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import run_tests_full
from vdsogen.harness.layouts import with_layout
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

KERNEL_SPECS = ROOT / "docs" / "kernel"

# struct vdso_data (include/vdso/datapage.h, v5.3-v6.14): offsets of the
# members the core reads, without and with max_cycles (x86, ~v6.10+), and
# where the array starts in the page (x86: DECLARE_VVAR(128, ...) until
# v6.12, then 0; elsewhere 0).  Pages from the linker scripts:
# x86 vdso-layout.lds.S and arm64 vdso.lds.S of each version; "rng" is
# getrandom's state inside the time page (tests/test_rng_layouts.py).
LINUX = {
    "linux-5.6": dict(start=0, size=240, pages=["time", "rng", "timens"], max_cycles=False),
    "linux-5.6-x86": dict(start=128, size=240, pages=["time", "pvclock", "hvclock", "timens"], max_cycles=False),
    "linux-6.12-x86": dict(start=128, size=248, pages=["time", "rng", "pvclock", "hvclock", "timens"],
                           max_cycles=True),
    "linux-6.14-x86": dict(start=0, size=248, pages=["time", "rng", "timens", "pvclock", "hvclock"],
                           max_cycles=True),
}
OFFSETS = {  # member: (offset, offset with max_cycles)
    "seq": (0, 0), "clock_mode": (4, 4), "cycle_last": (8, 8), "mask": (16, 24), "mult": (24, 32),
    "shift": (28, 36), "basetime": (32, 40), "tz_minuteswest": (224, 232), "tz_dsttime": (228, 236),
    "hrtimer_res": (232, 240),
}


@pytest.mark.parametrize("name", sorted(LINUX))
def test_offsets_are_linux(name):
    want = LINUX[name]
    layout = load_layout(name)
    mc = 1 if want["max_cycles"] else 0
    assert layout.has_max_cycles == want["max_cycles"] and layout.has_timens
    assert [p.role for p in layout.pages] == want["pages"]
    assert layout.struct("vdso_data").size == want["size"]
    for member, offsets in OFFSETS.items():
        assert layout.field_offset("vdso_data", member) == offsets[mc], member
    page = layout.time_struct
    assert layout.field_offset(page, "vdso_data[0]") == want["start"]
    assert layout.field_offset(page, "vdso_data[1].basetime[4].sec") == want["start"] + want["size"] + 32 + 8 * mc + 4 * 16
    assert layout.field_offset(page, layout.access["hrtimer_res"]) == want["start"] + OFFSETS["hrtimer_res"][mc]


def old_spec(tmp_path, base, layout, pages):
    """vdsogen's spec for `base` with the data pages of an older kernel."""
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    text = (ROOT / "specs" / f"{base}.toml").read_text()
    for key, value in (("layout", f'"{layout}"'), ("pages", str(pages))):
        lines = [line for line in text.splitlines() if line.split("=")[0].strip() == key]
        assert len(lines) == 1
        text = text.replace(lines[0], f"{key} = {value}")
    # The kernels of an older layout have no export that reads a page it lacks
    # (getrandom's rng page): drop those, as with_layout does a variant's.
    kept = {e.name for e in with_layout(load_target(base), load_layout(layout)).exports}
    for export in load_target(base).exports:
        if export.name not in kept:
            block = re.compile(r'(?m)^\[\[export\]\]\nname = "' + re.escape(export.name) + r'"\n(?:[^\[\n].*\n)*\n?')
            assert len(block.findall(text)) == 1, export.name
            text = block.sub("", text)
    name = f"{base}-{layout}"
    (specs / f"{name}.toml").write_text(text)
    return specs, name


def run_harness(target, tmp_path):
    out = io.StringIO()
    status, outcome = run_tests_full(target, workdir=tmp_path / "work", builder=Builder(target, stream=out),
                                     stream=out)
    assert status == 0, out.getvalue()
    return outcome


def test_kernel_tree_spec_passes_the_harness(tmp_path):
    target = load_target("x86_64", KERNEL_SPECS)
    assert target.datapage.layout.name == "linux-5.6-x86" and target.datapage.pages == 4
    outcome = run_harness(target, tmp_path)
    for check in ("timens.MONOTONIC", "clock_mode.2", "clock_mode.3", "seqcount.concurrent",
                  "clock_getres.REALTIME_COARSE", "mode_none.REALTIME_COARSE"):
        assert any(p == check or p.startswith(check + ".") for p in outcome.passed), check


@pytest.mark.parametrize("base, layout, pages", [
    ("x86_64", "linux-6.12-x86", 4),
    ("x86_64", "linux-6.14-x86", 4),
    ("arm64", "linux-5.6", 2),
])
def test_old_layouts_pass_the_harness(tmp_path, base, layout, pages):
    specs, name = old_spec(tmp_path, base, layout, pages)
    outcome = run_harness(load_target(name, specs), tmp_path)
    assert any(p.startswith("timens.") for p in outcome.passed)
    if load_layout(layout).has_max_cycles:
        assert any("max_cycles" in p for p in outcome.passed)
