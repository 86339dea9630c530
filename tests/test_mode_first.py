"""The clock mode is tested before the counter is read (issue 19, point 1).

In clock mode NONE Linux's vDSO makes the syscall without touching the
counter, which may trap there (a TSC disabled by prctl(PR_SET_TSC), a timer
the kernel keeps from user mode).  Every target's hot path must do the same:

  - the harness's mode_none.trap.CLOCK checks call the counter clocks in
    mode NONE with a counter that traps (natively on x86 the TSC under
    PR_SET_TSC; in a test build the injected counter's page made
    inaccessible), so every target's test build runs them;
  - audit rule K008 finds, from the code alone, a counter read that runs
    after a load with no test in between.

Each is shown to fail on the old core, rebuilt here by one edit of its
rendered vdso_core.h: the counter read first, the mode tested after it.
"""

import io

import pytest

from conftest import CLOCK_TARGETS, build_broken, run_broken
from vdsogen.audit.check import check_image
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness
from vdsogen.isa import for_machine
from vdsogen.spec.model import load_target

# The hot path's mode test, and the old order: the counter read, then the mode.
MODE_FIRST = ("\tif (unlikely(!vdso_cycles_mode(vc->clock_mode)))\n\t\treturn VDSO_COLD;\n"
              "\tif (unlikely(!vdso_hot_delta(vc, &delta)))\n\t\treturn VDSO_COLD;\n")
COUNTER_FIRST = ("\tbool ok = vdso_hot_delta(vc, &delta);\n\n"
                 "\tif (unlikely(!vdso_cycles_mode(vc->clock_mode) || !ok))\n\t\treturn VDSO_COLD;\n")
OLD_CORE = {"vdso_core.h": [(MODE_FIRST, COUNTER_FIRST)]}

TRAPS = [f"mode_none.trap.{c}" for c in ("REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI")]
NATIVE_X86 = ("i386", "x32", "x86_64")


# The targets whose code K008 reads: those whose ISA module knows its data loads (all of them),
# of those with a clock to read.
READ_BY_K008 = [n for n in CLOCK_TARGETS if for_machine(load_target(n).elf.machine).data_load is not None]


def k008(target, image):
    return [f for f in check_image(target, image) if f.rule == "K008"]


def harness_of(target, work):
    return build_harness(target, work / "harness", Builder(target, stream=io.StringIO()))


# Every foreign target's test build runs in the harness.
@pytest.mark.parametrize("name", [n for n in CLOCK_TARGETS if n not in NATIVE_X86])
def test_trap_checks_pass_and_fail_on_the_old_core(name, tmp_path):
    """A foreign target's test build answers mode NONE as the syscall, its
    counter untouched; built from the old core it reads the counter, and
    every mode_none.trap check says so.  (x86's real image runs natively,
    its TSC disabled: below.)"""
    test = load_target(name).test_build()
    harness = harness_of(test, tmp_path / "h")
    good = build_broken(test, tmp_path / "good", {})
    status, outcome, out = run_broken(test, harness, good)
    assert status == 0 and set(TRAPS) <= set(outcome.passed), out
    old = build_broken(test, tmp_path / "old", OLD_CORE)
    _status, outcome, out = run_broken(test, harness, old)
    assert set(TRAPS) <= set(outcome.failed), out
    assert all("read the counter in clock mode NONE" in outcome.failed[c] for c in TRAPS), out


@pytest.mark.parametrize("name", NATIVE_X86)
def test_tsc_disabled_in_mode_none(name, tmp_path):
    """The real image, natively: the TSC disabled by PR_SET_TSC in mode NONE."""
    target = load_target(name)
    harness = harness_of(target, tmp_path / "h")
    good = build_broken(target, tmp_path / "good", {})
    status, outcome, out = run_broken(target, harness, good)
    assert status == 0 and set(TRAPS) <= set(outcome.passed), out
    old = build_broken(target, tmp_path / "old", OLD_CORE)
    _status, outcome, out = run_broken(target, harness, old)
    assert set(TRAPS) <= set(outcome.failed), out
    assert "signal 11" in outcome.failed["mode_none.trap.MONOTONIC"], out


@pytest.mark.parametrize("name", READ_BY_K008)
def test_k008_on_the_old_core(name, tmp_path):
    """K008 passes the image and finds the old core's counter read, an error in check."""
    target = load_target(name)
    good = build_broken(target, tmp_path / "good", {})
    assert k008(target, good) == []
    old = build_broken(target, tmp_path / "old", OLD_CORE)
    found = k008(target, old)
    assert found and all(f.severity == "error" for f in found), found
