"""The shipped layouts against Linux's own numbers (its vdso/datapage.h), written
out here by hand so that the tool's offset arithmetic is checked against
facts, not against itself."""

import pytest

from conftest import ROOT
from vdsogen.spec.layout import load_layout

CLOCK = {"seq": 0, "clock_mode": 4, "cycle_last": 8, "mask": 16, "mult": 24, "shift": 28, "basetime": 32}
CLOCK_MAX_CYCLES = {"seq": 0, "clock_mode": 4, "cycle_last": 8, "max_cycles": 16, "mask": 24, "mult": 32,
                    "shift": 36, "basetime": 40}


@pytest.mark.parametrize("name, clock, clock_size, tz", [
    ("linux-6.17", CLOCK, 224, 2240),              # tz after clock_data[2] and aux_clock_data[8]: 10 * 224
    ("linux-6.17-powerpc64", CLOCK, 224, 2240),
    ("linux-6.17-x86", CLOCK_MAX_CYCLES, 232, 2320),
    ("linux-6.15", CLOCK, 224, 448),               # no aux clocks: 2 * 224
])
def test_time_page_offsets(name, clock, clock_size, tz):
    layout = load_layout(name)
    vc = layout.struct("vdso_clock")
    assert vc.size == clock_size
    assert {f.name: f.offset for f in vc.fields} == clock
    assert layout.struct("vdso_timestamp").size == 16
    assert layout.field_offset("vdso_time_data", "tz_minuteswest") == tz
    assert layout.field_offset("vdso_time_data", "tz_dsttime") == tz + 4
    assert layout.field_offset("vdso_time_data", "hrtimer_res") == tz + 8
    assert layout.field_offset("vdso_time_data", "clock_data[1].basetime[4].sec") == clock_size + clock["basetime"] + 64
    assert layout.struct("vdso_time_data").min_align == 64


@pytest.mark.parametrize("name, roles", [
    ("linux-6.17", ["time", "timens", "rng", "arch"]),
    ("linux-6.15", ["time", "timens", "rng", "arch"]),
    ("linux-6.17-x86", ["time", "timens", "rng", "arch", "pvclock", "hvclock"]),
    ("linux-6.17-powerpc64", ["time", "timens", "rng", "arch"]),
])
def test_page_order(name, roles):
    layout = load_layout(name)
    assert [p.role for p in layout.pages] == roles
    assert layout.page("time").symbol == "vdso_u_time_data"


def test_rng_and_powerpc_arch_data():
    rng = load_layout("linux-6.17").struct("vdso_rng_data")
    assert [(f.name, f.offset) for f in rng.fields] == [("generation", 0), ("is_ready", 8)]
    arch = load_layout("linux-6.17-powerpc64").struct("vdso_arch_data")
    assert [(f.name, f.offset) for f in arch.fields][:5] == [
        ("tb_ticks_per_sec", 0), ("dcache_block_size", 8), ("icache_block_size", 12),
        ("dcache_log_block_size", 16), ("icache_log_block_size", 20)]


def test_overriding_a_struct_moves_its_users():
    base, x86 = load_layout("linux-6.17"), load_layout("linux-6.17-x86")
    assert not base.has_max_cycles and x86.has_max_cycles
    assert base.struct("vdso_time_data").size == 2304 and x86.struct("vdso_time_data").size == 2368


def test_no_struct_takes_a_name_vdso_offsets_h_defines(tmp_path):
    """vdso-offsets.h defines vdso_page_ROLE for each data page; a struct of
    that name breaks every C file that includes both it and datapage.h
    (as the x86_64 kernel e2e's vdsotest.c does)."""
    from vdsogen.errors import SpecError
    from vdsogen.spec.layout import EMITTED_PREFIX

    shipped = [load_layout(p.stem) for p in (ROOT / "specs" / "layouts").glob("*.toml")]
    assert not [(lay.name, s.name) for lay in shipped for s in lay.structs if s.name.startswith(EMITTED_PREFIX)]
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "specs" / "layouts" / "linux-6.12-x86.toml").read_text()
                   .replace('"vdso_rng_page"', '"vdso_page_rng"'))
    with pytest.raises(SpecError, match=r"bad\.toml: struct\[\d+\]\.name: 'vdso_page_rng': a name of the form "
                                        r"vdso_page_ROLE is vdso-offsets.h's macro"):
        load_layout("bad", [tmp_path, ROOT / "specs" / "layouts"])
