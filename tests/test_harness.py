"""The C test harness and `vdsogen test`.

Every target's image must pass every check; and the harness must be able to
fail: images built from deliberately broken sources must draw the specific
FAIL line that names the breakage.
"""

import dataclasses
import io
import re

import pytest

from vdsogen import cli
from vdsogen.build import build_target
from vdsogen.errors import HarnessError
from vdsogen.harness import build_harness, run_harness, run_tests, run_tests_full
from vdsogen.model import load_target
from vdsogen.render import sources
from vdsogen.toolchain import Builder

TARGETS = ["x86_64", "arm64", "ppc64le"]

CLOCKS = ["REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI",
          "REALTIME_COARSE", "MONOTONIC_COARSE"]


def expected_checks(target):
    """Check names the harness must report for target, from its spec."""
    impls = {e.impl for e in target.exports}
    names = ["map", "image", "counter", "syscall_numbers"]
    names += [f"symbol.{name}" for name, _, _ in target.symbols()]
    names += [f"trampoline.{t.name}" for t in target.trampolines]
    if "clock_gettime" in impls:
        names += [f"clock_gettime.{c}" for c in CLOCKS]
        names += ["clock_gettime.PROCESS_CPUTIME_ID", "clock_gettime.invalid_12",
                  "clock_gettime.invalid_100"]
        names += [f"clock_mode.{m}" for m in target.counter.modes]
        names += [f"clock_mode.{max(target.counter.modes) + 1}.syscall"]
        names += [f"mode_none.{c}" for c in CLOCKS]
        names += ["seqcount.wait.MONOTONIC", "seqcount.wait.MONOTONIC_RAW",
                  "seqcount.wait.REALTIME_COARSE", "seqcount.concurrent"]
        if target.datapage.layout.has_timens:
            names += [f"timens.{c}" for c in CLOCKS]
            names += [f"timens.{i}" for i in ("gettimeofday", "time", "clock_getres") if i in impls]
        names += [f"mode_none.{i}" for i in ("gettimeofday", "time") if i in impls]
    if "clock_getres" in impls:
        names += [f"clock_getres.{c}" for c in CLOCKS]
        names += ["clock_getres.NULL", "clock_getres.invalid_12", "clock_getres.invalid_100"]
    if "gettimeofday" in impls:
        names += ["gettimeofday", "gettimeofday.tz", "gettimeofday.NULL"]
    if "time" in impls:
        names += ["time", "time.NULL"]
    for impl in ("getcpu", "get_tbfreq", "sync_dicache"):
        if impl in impls:
            names.append(impl)
    return names


@pytest.fixture(scope="session")
def good_runs(tmp_path_factory):
    """target name -> (status, Outcome, output, image path), built and run once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = load_target(name)
            work = tmp_path_factory.mktemp(f"good-{name}")
            out = io.StringIO()
            status, outcome = run_tests_full(target, workdir=work, stream=out,
                                             builder=Builder(target, stream=out))
            cache[name] = (status, outcome, out.getvalue(), work / "image" / "vdso.so")
        return cache[name]

    return get


@pytest.mark.parametrize("name", TARGETS)
def test_image_passes_every_check(name, good_runs):
    status, outcome, output, _ = good_runs(name)
    assert not outcome.failed, output
    assert status == 0, output
    assert outcome.summary == (len(outcome.passed), 0), output
    missing = [c for c in expected_checks(load_target(name)) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"


@pytest.mark.parametrize("name", TARGETS)
def test_one_check_line_per_symbol(name, good_runs):
    _, outcome, output, _ = good_runs(name)
    target = load_target(name)
    reported = sorted(c[len("symbol."):] for c in outcome.passed if c.startswith("symbol."))
    assert reported == sorted(n for n, _, _ in target.symbols()), output


# --- the harness can fail -------------------------------------------------

def build_broken(target, outdir, edits):
    """Build an image from the rendered sources with text replacements applied.

    edits: {file name: [(old, new)]}; each `old` must occur in the rendered
    file, so a change to the templates shows up here instead of silently
    testing nothing.  No validation: the image is meant to be wrong.
    """
    files = []
    for fname, text in sources(target):
        for old, new in edits.get(fname, []):
            assert old in text, f"{fname} no longer contains {old!r}: update this test's edit"
            text = text.replace(old, new)
        files.append((fname, text))
    so, _ = build_target(target, outdir, builder=Builder(target, stream=io.StringIO()), files=files)
    return so


# Each breakage: the edits, and the checks that must then FAIL.
BREAKAGES = {
    # BOOTTIME answers from MONOTONIC's base.
    "swapped-base": (
        {"vdso_core.h": [("ret = vdso_read_clock(&vc[cs], clock, counter, &sec, &ns);",
                          "ret = vdso_read_clock(&vc[cs], clock == CLOCK_BOOTTIME ? "
                          "CLOCK_MONOTONIC : clock, counter, &sec, &ns);")]},
        ["clock_gettime.BOOTTIME"]),
    # The invalid-id path of clock_gettime writes into the caller's buffer.
    "invalid-id-writes": (
        {"vdso_core.h": [("return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);",
                          "ts->tv_nsec = 0;\n\treturn vdso_syscall(VDSO_NR_clock_gettime, "
                          "clock, (long)ts, 0);")]},
        ["clock_gettime.invalid_12", "clock_gettime.invalid_100"]),
    # The reader no longer waits while an update is in progress.
    "seqcount-no-wait": (
        {"vdso_core.h": [("while ((*seq = READ_ONCE(vc->seq)) & 1) {",
                          "while ((*seq = READ_ONCE(vc->seq)) & 1 && "
                          "READ_ONCE(vc->clock_mode) == VDSO_CLOCKMODE_TIMENS) {")]},
        ["seqcount.wait.MONOTONIC", "seqcount.wait.MONOTONIC_RAW"]),
    # The raw clock is read with the hres record's mult and shift.
    "raw-uses-hres-record": (
        {"vdso_core.h": [("*ns = vdso_counter_ns(vc, vdso_read_counter(), *ns);",
                          "*ns = vdso_counter_ns(vc - (clk == CLOCK_MONOTONIC_RAW), "
                          "vdso_read_counter(), *ns);")]},
        ["clock_gettime.MONOTONIC_RAW"]),
    # Namespace offsets are ignored.
    "timens-no-offset": (
        {"vdso_core.h": [("sec += offs->sec;", "(void)offs;")]},
        ["timens.MONOTONIC", "timens.BOOTTIME"]),
}


@pytest.fixture(scope="session")
def harnesses(tmp_path_factory):
    """target name -> built harness, compiled once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = load_target(name)
            work = tmp_path_factory.mktemp(f"harness-{name}")
            cache[name] = build_harness(target, work, Builder(target, stream=io.StringIO()))
        return cache[name]

    return get


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
@pytest.mark.parametrize("name", TARGETS)
def test_harness_catches(name, breakage, harnesses, tmp_path):
    target = load_target(name)
    edits, must_fail = BREAKAGES[breakage]
    if breakage == "timens-no-offset" and not target.datapage.layout.has_timens:
        must_fail = []
    image = build_broken(target, tmp_path / "image", edits)
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses(name), image,
                                  Builder(target, stream=out), out)
    output = out.getvalue()
    assert status != 0, output
    for check in must_fail:
        assert check in outcome.failed, f"{check} did not fail:\n{output}"
    # Symbols and unrelated clocks still pass: the FAIL is specific.
    assert "symbol." + target.exports[0].name in outcome.passed, output
    assert "clock_gettime.REALTIME" in outcome.passed or breakage == "seqcount-no-wait", output


def test_failure_line_format(harnesses, tmp_path):
    target = load_target("x86_64")
    edits, _ = BREAKAGES["swapped-base"]
    image = build_broken(target, tmp_path / "image", edits)
    out = io.StringIO()
    status, _ = run_harness(target, harnesses("x86_64"), image, Builder(target, stream=out), out)
    lines = out.getvalue().splitlines()
    fail = [ln for ln in lines if ln.startswith("FAIL clock_gettime.BOOTTIME: ")]
    assert fail and re.search(r"got 2000\d+\.\d{9}, want \[3000\d+\.\d{9}, 3000\d+\.\d{9}\]", fail[0]), lines
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed", lines[-1]), lines
    assert status == 1


def test_crash_in_the_image_is_a_failure_not_the_end(harnesses, tmp_path):
    """A crash inside an entry fails that check; later groups still run."""
    target = load_target("x86_64")
    image = build_broken(target, tmp_path / "image", {"vdso_core.h": [
        ("if (tv) {\n\t\tstruct vdso_timespec ts;",
         "if (tv) {\n\t\tstruct vdso_timespec ts;\n\n\t\t*(volatile int *)0 = 0;")]})
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses("x86_64"), image, Builder(target, stream=out), out)
    output = out.getvalue()
    assert status == 1
    assert "killed by signal 11" in outcome.failed.get("gettimeofday", ""), output
    assert "time" in outcome.passed and "timens.MONOTONIC" in outcome.passed, output
    assert "killed by signal 11" in outcome.failed.get("timens.gettimeofday", ""), output


def test_cr0_so_error_flag_is_read(harnesses, tmp_path):
    """ppc64le: an entry that returns the errno without setting CR0.SO is caught."""
    target = load_target("ppc64le")
    image = build_broken(target, tmp_path / "image", {"entry.S": [("\tcrset\tso", "\tnop")]})
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses("ppc64le"), image, Builder(target, stream=out), out)
    output = out.getvalue()
    assert status == 1
    for check in ("clock_gettime.invalid_12", "clock_getres.invalid_100"):
        assert "r3=22 with CR0.SO clear" in outcome.failed.get(check, ""), output
    assert "clock_gettime.MONOTONIC" in outcome.passed, output


# --- errors ---------------------------------------------------------------

def with_toolchain(target, **changes):
    return dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, **changes))


def test_missing_compiler_is_an_error(tmp_path):
    target = with_toolchain(load_target("x86_64"), gnu_triple="no-such-triple-linux-gnu")
    with pytest.raises(HarnessError, match="no-such-triple-linux-gnu-gcc: not found"):
        build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))


def test_missing_qemu_is_an_error(tmp_path):
    target = with_toolchain(load_target("x86_64"), qemu="no-such-cpu")
    with pytest.raises(HarnessError, match="qemu-no-such-cpu-static: not found"):
        run_tests(target, workdir=tmp_path, stream=io.StringIO())


def test_missing_image_is_an_error(tmp_path):
    with pytest.raises(HarnessError, match="no such image"):
        run_tests(load_target("x86_64"), tmp_path / "nothing.so", workdir=tmp_path, stream=io.StringIO())


def test_cli_test_command(good_runs, tmp_path, capsys):
    _, _, _, image = good_runs("x86_64")
    assert cli.main(["test", "--arch", "x86_64", "--image", str(image), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  HOSTCC  " in out and re.search(r"^\d+ passed, 0 failed$", out, re.M), out


def test_cli_reports_harness_errors(tmp_path, capsys):
    assert cli.main(["test", "--arch", "x86_64", "--image", str(tmp_path / "missing.so")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vdsogen: ") and "no such image" in err and "Traceback" not in err
