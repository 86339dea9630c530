"""Auxiliary clocks (CLOCK_AUX + i, ids 16-23, Linux 6.17+).

Linux 6.17 adds MAX_AUX_CLOCKS = 8 clock records after the two of the time
data (aux_clock_data[]).  Its vDSO answers clock_getres of every aux id with
1 ns, and clock_gettime of an enabled one (clock mode valid) from its record,
basetime[0] advanced by the counter; a disabled one is the syscall's, and in
a time namespace the real page's record answers, unshifted.  A kernel built
without CONFIG_POSIX_AUX_CLOCKS never enables one, and its vDSO makes the
syscall for every aux id (Debian's 7.2 amd64 image is one: its
__vdso_clock_gettime has no aux path, its __vdso_clock_getres answers
mask 0xff0000 with 1 ns).

The harness plays a kernel with aux clocks on layouts that have them (AUX0,
AUX1 and AUX5 enabled, the others disabled) and holds the image to one of the
two answers: served (vdsogen's own images; `--aux-clocks=served`) or none
(`--aux-clocks=none`, or found from the image's answer for AUX0).  vdsogen's
own images serve them; every target's good run checks that (conftest's
expected_checks); here, images broken in each part of the path fail exactly
the checks of that part.
"""

import dataclasses
import io

import pytest

from vdsogen import paths
from vdsogen.errors import HarnessError, VdsogenError
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import run_harness, run_tests
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

from conftest import CLOCK_TARGETS, build_broken, expected_checks

AUX = [f"AUX{i}" for i in range(8)]
ENABLED = ["AUX0", "AUX1", "AUX5"]      # harness/internal.h: H_AUX_ENABLED


@pytest.mark.parametrize("name, count", [
    ("linux-6.17", 8), ("linux-6.17-x86", 8), ("linux-6.17-s390", 8), ("linux-6.17-riscv", 8),
    ("linux-6.17-loongarch", 8), ("linux-6.17-powerpc64", 8), ("linux-6.17-powerpc32", 8),
    ("linux-6.17-mips-gic", 8), ("linux-6.15", 0), ("linux-5.6", 0), ("linux-6.14-x86", 0),
])
def test_layouts_say_which_have_aux_clocks(name, count):
    assert load_layout(name).aux_clocks == count


def test_aux_records_where_linux_has_them():
    """x86 v6.17: the aux records follow the two clock records (232 bytes
    each); hrtimer_res after all ten, at 0x918, where Debian's 7.2 amd64
    __vdso_clock_getres reads it (mov 0x918(%rdx),%eax)."""
    x86 = load_layout("linux-6.17-x86")
    assert x86.field_offset("vdso_time_data", "aux_clock_data[0].seq") == 2 * 232
    assert x86.field_offset("vdso_time_data", "aux_clock_data[7].basetime[0].sec") == 9 * 232 + 40
    assert x86.field_offset("vdso_time_data", "hrtimer_res") == 0x918


def test_aux_clocks_must_name_clock_records(tmp_path):
    (tmp_path / "bad.toml").write_text('extends = "linux-6.17"\n[access]\nclocks = "clock_data"\n'
                                       'tz_minuteswest = "tz_minuteswest"\ntz_dsttime = "tz_dsttime"\n'
                                       'hrtimer_res = "hrtimer_res"\naux_clocks = "tz_minuteswest"\n')
    with pytest.raises(VdsogenError) as e:
        load_layout("bad", (tmp_path, paths.LAYOUTS))
    assert "bad.toml" in str(e.value) and "aux_clocks" in str(e.value)
    assert "must be an array of struct vdso_clock" in str(e.value)


@pytest.mark.parametrize("name", CLOCK_TARGETS)
def test_every_target_checks_its_aux_clocks(name):
    """Every target's layout is v6.17+: its good run (test_harness.py) must
    report each aux clock for each clock_gettime and clock_getres flavour
    (sparc32-compat has no clock_getres, as Linux's)."""
    target = load_target(name)
    assert target.datapage.layout.aux_clocks == 8
    names = expected_checks(target)
    getres = any(e.function.name.startswith("clock_getres") for e in target.exports)
    assert "clock_gettime.AUX7" in names and ("clock_getres.AUX0" in names) == getres
    assert "clock_gettime.id_16" not in names and "clock_gettime.id_15" in names


def fails(target, harness, image, aux=None):
    """Run harness on image, telling it how the image treats aux clocks; (status, Outcome, output)."""
    out = io.StringIO()
    status, outcome = run_harness(target, harness, image, Builder(target, stream=out), out, aux_clocks=aux)
    return status, outcome, out.getvalue()


CORE = "vdso_core.h"
# Breakages of the core's aux path: (edits, aux_clocks, the checks that must fail, and only those).
BREAKAGES = {
    # The hot path sends aux ids straight to the syscall: nothing served.
    "no-gettime-path": ({CORE: [("return vdso_is_aux(clock) ? VDSO_COLD : VDSO_SYSCALL;", "return VDSO_SYSCALL;")]},
                        "served", [f"clock_gettime.{c}" for c in ENABLED] + ["timens.AUX0"]),
    # basetime[1] instead of the clock's basetime[0].
    "wrong-base": ({CORE: [("\t\tbase = 0;\n", "\t\tbase = 1;\n")]},
                   "served", [f"clock_gettime.{c}" for c in ENABLED] + ["timens.AUX0"]),
    # The system clocks' record for every aux id: the disabled ones answer too.
    "wrong-record": ({CORE: [("at = (const char *)&VDSO_AUX_CLOCKS(vd)[clock - CLOCK_AUX] - (const char *)vdso_clocks(vd);",
                              "at = 0;")]},
                     "served", [f"clock_gettime.{c}" for c in AUX] + ["timens.AUX0"]),
    # On a namespace page an aux clock stays there instead of reading the real page's record.
    "timens-no-switch": ({CORE: [("vd = real = vdso_real_data(vd);", "vd = real = vdso_is_aux(clock) ? vd : vdso_real_data(vd);")]},
                         "served", ["timens.AUX0"]),
    # clock_getres sends aux ids to the syscall.
    "no-getres": ({CORE: [("return vdso_is_aux(clock) ? 1 : -1;", "return -1;")]},
                  None, [f"clock_getres.{c}" for c in AUX]),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_harness_catches_a_broken_aux_path(breakage, harnesses, tmp_path):
    target = load_target("x86_64")
    edits, aux, must_fail = BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = fails(target, harnesses("x86_64"), image, aux)
    assert status == 1, output
    assert sorted(outcome.failed) == sorted(must_fail), output


# A vdsogen image as a kernel without CONFIG_POSIX_AUX_CLOCKS builds Linux's:
# clock_gettime never reads an aux record, clock_getres still answers 1 ns.
LIKE_DEBIAN = {CORE: [("return vdso_is_aux(clock) ? VDSO_COLD : VDSO_SYSCALL;", "return VDSO_SYSCALL;"),
                      ("} else if (vdso_is_aux(clock)) {", "} else if (0) {")]}


@pytest.fixture(scope="module")
def like_debian(tmp_path_factory):
    return build_broken(load_target("x86_64"), tmp_path_factory.mktemp("like-debian"), LIKE_DEBIAN)


def test_an_image_that_serves_none_is_found_and_held_to_it(like_debian, harnesses):
    """Unsaid, the harness finds from AUX0 that the image serves none, says
    so, and expects the syscall's answer for every aux id (all pass, as
    Debian's 7.2 image does); told "none", the same."""
    target = load_target("x86_64")
    for aux in (None, "none"):
        status, outcome, output = fails(target, harnesses("x86_64"), like_debian, aux)
        assert status == 0, output
        assert all(f"clock_gettime.{c}" in outcome.passed for c in AUX), output
        assert "timens.AUX0" in outcome.passed, output
    assert "# aux clocks: AUX0, enabled, answered as the syscall does" in fails(
        target, harnesses("x86_64"), like_debian)[2]


def test_an_image_that_serves_none_fails_where_they_must_be_served(like_debian, harnesses):
    target = load_target("x86_64")
    status, outcome, output = fails(target, harnesses("x86_64"), like_debian, "served")
    assert status == 1, output
    assert sorted(outcome.failed) == sorted([f"clock_gettime.{c}" for c in ENABLED] + ["timens.AUX0"]), output


def test_a_served_image_fails_where_none_may_be(good_runs, harnesses):
    """vdsogen's image told "none": the enabled clocks answer from their records, not as the syscall does."""
    target = load_target("x86_64")
    _, _, _, image = good_runs("x86_64")
    status, outcome, output = fails(target, harnesses("x86_64"), image, "none")
    assert status == 1, output
    assert sorted(outcome.failed) == sorted([f"clock_gettime.{c}" for c in ENABLED] + ["timens.AUX0"]), output


def test_aux_clocks_option_needs_a_layout_with_them(tmp_path):
    target = load_target("x86_64")
    old = dataclasses.replace(target, datapage=dataclasses.replace(target.datapage, layout=load_layout("linux-6.15")))
    with pytest.raises(HarnessError, match=r"--aux-clocks=none: .*x86_64.toml has no aux clocks \(layout linux-6.15\)"):
        run_tests(old, workdir=tmp_path, stream=io.StringIO(), aux_clocks="none")
