"""A harness run always ends: a fatal failure stops it, and `--timeout` kills it.

A spec whose clock_gettime syscall number is clock_getres's made the
harness print the failing syscall_numbers check and then wait for ever in
the counter's calibration (clock_getres answers the same resolution every
time, so 15 ms of MONOTONIC_RAW never pass), outside any group's watchdog,
until the driver's 10-minute backstop.  Now syscall_numbers, like the image
and counter steps, is fatal: what follows is reported "not run"; the
calibration gives up on a clock that does not advance; and `vdsogen test
--timeout=SECONDS` (and `vdsogen bench --timeout`) kills the harness's
process group, naming the check it was running.
"""

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vdsogen import cli
from vdsogen.bench import run as bench_run
from vdsogen.build.toolchain import Builder
from vdsogen.errors import HarnessError
from vdsogen.harness import driver
from vdsogen.harness.driver import build_harness, run_harness
from vdsogen.spec.model import load_target

from conftest import ROOT, build_broken


def wrong_number(catalogue, abi, syscall, number):
    """Give syscall `number` in the catalogue copy's [ABI.syscalls.numbers]."""
    text = catalogue.read_text()
    start = text.index(f"[{abi}.syscalls.numbers]")
    section, n = re.subn(rf"(?m)^{syscall} = \d+$", f"{syscall} = {number}", text[start:], count=1)
    assert n == 1, f"no {syscall} in [{abi}.syscalls.numbers]"
    catalogue.write_text(text[:start] + section)


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    # A zombie is dead too (its parent, a killed shell, may not have reaped it yet).
    return state != "Z"


def gone(pid, within=5.0):
    """pid dies within a few seconds (a killed process closes its files, and
    so ends the harness's output, a moment before it is dead)."""
    end = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


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


# The image's seqcount reader never sees its read as done: every clock_gettime
# of a counter clock spins for ever.
SPIN = {"vdso_core.h": [("return READ_ONCE(vc->seq) != seq;", "return READ_ONCE(vc->seq) != seq + 1;")]}


def test_timeout_stops_a_hung_harness(tmp_path, capsys):
    """An image whose clock_gettime spins for ever: `vdsogen test
    --timeout=2` stops the harness at 2 s (its own watchdog would wait 30),
    names the check it was in, and exits 1, with no harness process left."""
    target = load_target("x86_64")
    image = build_broken(target, tmp_path / "image", SPIN)
    work = tmp_path / "work"
    t0 = time.monotonic()
    status = cli.main(["test", "--arch=x86_64", f"--image={image}", f"--workdir={work}", "--timeout=2"])
    secs = time.monotonic() - t0
    out = capsys.readouterr().out
    assert status == 1, out
    assert secs < 30, f"{secs:.0f} s\n{out}"       # the harness build, then 2 s
    lines = out.splitlines()
    running = re.fullmatch(r"# stopped by SIGTERM in (clock_gettime\.[A-Z_]+)", lines[-2])
    assert running, out
    assert lines[-1] == (f"FAIL {running[1]}: no answer within 2 s (--timeout=2); "
                         f"the x86_64 harness was stopped"), out
    harness = str(work / "harness" / "harness")
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _exe(p) == harness]
    assert not left, f"harness processes left: {left}"


def _exe(proc):
    try:
        return os.readlink(proc / "exe")
    except OSError:
        return None


HANGS = """#!/bin/sh
# A harness that hangs, with a child that ignores SIGTERM and keeps stdout open.
(trap '' TERM; exec sleep 1000) &
echo $! > "$0.child"
echo "ok first"
exec sleep 1000
"""


def test_timeout_kills_the_process_group(built, tmp_path):
    """SIGTERM, then SIGKILL to the harness's whole process group: a child
    that ignores SIGTERM and holds the output pipe goes too.  Without a
    harness's own word on what it was running, the line names the last check
    that reported."""
    target, image, _ = built("x86_64")
    exe = tmp_path / "harness"
    exe.write_text(HANGS)
    exe.chmod(0o755)
    out = io.StringIO()
    t0 = time.monotonic()
    status, outcome = run_harness(target, exe, image, Builder(target, stream=out), out, timeout=1)
    secs = time.monotonic() - t0
    output = out.getvalue()
    assert secs < 1 + driver.TERM_GRACE + 5, f"{secs:.1f} s\n{output}"
    assert status == -signal.SIGTERM and outcome.timed_out, output
    assert output.splitlines()[-1] == ("FAIL harness: after first, no answer within 1 s (--timeout=1); "
                                       "the x86_64 harness was stopped"), output
    assert gone(int(Path(f"{exe}.child").read_text())), output


def test_bench_timeout_kills_the_process_group(tmp_path):
    exe = tmp_path / "harness"
    exe.write_text(HANGS)
    exe.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(HarnessError, match=r"^the benchmark did not finish within 1 s \(--timeout=1\); it was killed$"):
        bench_run._run([str(exe)], 1)
    assert time.monotonic() - t0 < 10
    assert gone(int(Path(f"{exe}.child").read_text()))


@pytest.mark.parametrize("command", ["test", "bench"])
@pytest.mark.parametrize("value, why", [
    ("0", "must be a number of seconds above 0: '0'"),
    ("-5", "must be a number of seconds above 0: '-5'"),
    ("inf", "must be a number of seconds above 0: 'inf'"),
    ("nan", "must be a number of seconds above 0: 'nan'"),
    ("ten", "not a number of seconds: 'ten'"),
    ("", "not a number of seconds: ''"),
])
def test_bad_timeout_is_a_clear_error(command, value, why, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--arch=x86_64", f"--timeout={value}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.splitlines()[-1] == f"vdsogen {command}: error: argument --timeout: {why}", err
    assert "Traceback" not in err


def test_timeout_default_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["test", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"(default {driver.RUN_TIMEOUT:g}; the build is not counted)" in out, out


ORPHAN = """#!/bin/sh
# A harness that hangs, and says who it is.
echo $$ > "$0.pid"
echo "ok first"
exec sleep 1000
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_harness_dies_with_vdsogen(built, tmp_path, sig):
    """vdsogen killed while a harness runs (by `timeout`, by a CI runner)
    leaves no harness behind: a harness spinning under qemu would hold a
    CPU until the machine stops."""
    _target, image, _ = built("x86_64")
    exe = tmp_path / "harness"
    exe.write_text(ORPHAN)
    exe.chmod(0o755)
    script = ("import sys\n"
              "from vdsogen.harness import driver\n"
              "from vdsogen.spec.model import load_target\n"
              "driver.run_harness(load_target('x86_64'), sys.argv[1], __import__('pathlib').Path(sys.argv[2]))\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(exe), str(image)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfile = Path(f"{exe}.pid")
    end = time.monotonic() + 30
    while not pidfile.is_file() or not pidfile.read_text().strip():
        assert time.monotonic() < end and proc.poll() is None, "the harness never started"
        time.sleep(0.05)
    harness = int(pidfile.read_text())
    proc.send_signal(sig)
    proc.wait(timeout=10)
    try:
        assert gone(harness), f"harness {harness} outlived vdsogen ({signal.Signals(sig).name})"
    finally:
        if alive(harness):
            os.kill(harness, signal.SIGKILL)
