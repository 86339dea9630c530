"""A harness run always ends: a fatal failure stops it.

A spec whose clock_gettime syscall number is clock_getres's made the
harness print the failing syscall_numbers check and then wait for ever in
the counter's calibration (clock_getres answers the same resolution every
time, so 15 ms of MONOTONIC_RAW never pass), outside any group's watchdog,
until the driver's 10-minute backstop.  Now syscall_numbers, like the image
and counter steps, is fatal: what follows is reported "not run"; and the
calibration gives up on a clock that does not advance.
"""

import io
import re
import time

from vdsogen import cli
from vdsogen.build.toolchain import Builder
from vdsogen.harness import driver
from vdsogen.harness.driver import build_harness, run_harness


def wrong_number(catalogue, abi, syscall, number):
    """Give syscall `number` in the catalogue copy's [ABI.syscalls.numbers]."""
    text = catalogue.read_text()
    start = text.index(f"[{abi}.syscalls.numbers]")
    section, n = re.subn(rf"(?m)^{syscall} = \d+$", f"{syscall} = {number}", text[start:], count=1)
    assert n == 1, f"no {syscall} in [{abi}.syscalls.numbers]"
    catalogue.write_text(text[:start] + section)


def test_wrong_syscall_number_stops_at_once(catalogue_copy, tmp_path, capsys):
    """x86_64's clock_gettime given clock_getres's number (229): `vdsogen
    test`, as a new user runs it, fails syscall_numbers and reports the rest
    as not run, in seconds (it hung for 10 minutes)."""
    wrong_number(catalogue_copy, "x86_64", "clock_gettime", 229)
    t0 = time.monotonic()
    status = cli.main(["test", "--arch=x86_64", f"--workdir={tmp_path}"])
    secs = time.monotonic() - t0
    out = capsys.readouterr().out
    assert status == 1, out
    assert secs < 60, f"{secs:.0f} s\n{out}"
    fails = [ln for ln in out.splitlines() if ln.startswith("FAIL ")]
    assert fails == ["FAIL syscall_numbers: clock_gettime is 229 in the spec, 228 in the C library's headers"], out
    assert "# syscall_numbers failed: no later check could mean anything, so none runs" in out, out
    not_run = re.findall(r"^not run (.*): syscall_numbers failed$", out, re.M)
    assert not_run[0] == "counter" and {"clock_gettime clocks", "seqcount", "unwind"} <= set(not_run), out
    assert re.search(rf"^\d+ passed, 1 failed, {len(not_run)} not run$", out, re.M), out
    assert "ok symbol.__vdso_clock_gettime" in out, out


def test_calibration_gives_up_on_a_clock_that_does_not_advance(built, tmp_path, monkeypatch):
    """Where the headers cannot tell (or agree with) a wrong number, the
    counter's calibration must not wait for ever: a harness whose
    clock_gettime syscall is clock_getres's fails `counter`, which is fatal,
    within a second."""
    real = driver.harness_sources

    def clock_getres_for_gettime(target):
        edit = ("#define NR_CLOCK_GETTIME\tVDSO_NR_clock_gettime\n", "#define NR_CLOCK_GETTIME\tVDSO_NR_clock_getres\n")
        out = []
        for name, text in real(target):
            if name == "harness_functions.h":
                assert edit[0] in text, "harness_functions.h no longer defines NR_CLOCK_GETTIME so: update this test"
                text = text.replace(*edit)
            out.append((name, text))
        return out

    monkeypatch.setattr(driver, "harness_sources", clock_getres_for_gettime)
    target, image, _ = built("x86_64")
    exe = build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))
    out = io.StringIO()
    t0 = time.monotonic()
    status, outcome = run_harness(target, exe, image, Builder(target, stream=out), out, timeout=60)
    secs = time.monotonic() - t0
    output = out.getvalue()
    assert status == 1 and secs < 30, f"{secs:.0f} s\n{output}"
    assert "syscall_numbers" in outcome.passed, output
    assert re.fullmatch(r"clock_gettime\(MONOTONIC_RAW\) syscall \(nr 229\) advanced 0 ns in 100 sleeps of 2 ms: "
                        r"is 229 the ABI's clock_gettime\?", outcome.failed.get("counter", "")), output
    assert list(outcome.failed) == ["counter"] and "unwind" in outcome.not_run and outcome.consistent, output
