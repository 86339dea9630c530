"""A reader that does not retry is caught every time (issue 26).

The racing writer of seqcount.concurrent finds a missing retry only when an
update lands inside a read, which a 100 ms window missed 1 or 2 times in 7.
seqcount.inside.* makes it land there (harness/seqcount.c): natively on x86
an update before each instruction of the call in turn (the trap flag finds
them, a breakpoint strikes each), in a test build at the counter read.  Each
image below lacks one retry, and a check that does not depend on timing
fails on it; the good image passes.
"""

import io

import pytest

from conftest import build_broken, run_broken
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness
from vdsogen.spec.model import load_target

# The cold path's loop: read, and again while the sequence moved.
NO_COLD_RETRY = ("\t} while (vdso_read_retry(vc, seq));\n\treturn VDSO_OK;",
                 "\t} while (0 && vdso_read_retry(vc, seq));\n\treturn VDSO_OK;")
# The hot paths' one check at their end.
NO_HOT_RETRY = ("\tvdso_rmb();\n\treturn READ_ONCE(vc->seq) == (seq & ~1U);",
                "\tvdso_rmb();\n\treturn READ_ONCE(vc->seq) == (seq & ~1U) || 1;")


def inside(checks):
    """The seqcount.inside checks of an outcome's passed (a list) or failed (a dict) checks."""
    return {c for c in checks if c.startswith("seqcount.inside.")}


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cache = {}

    def get(target):
        if target.name not in cache or cache[target.name][0] is not target:
            work = tmp_path_factory.mktemp(f"inside-{target.name}")
            cache[target.name] = (target, build_harness(target, work, Builder(target, stream=io.StringIO())))
        return cache[target.name][1]
    return get


@pytest.mark.parametrize("name", ["x86_64", "i386", "arm64"])
@pytest.mark.parametrize("edit", ["good", "no_cold_retry", "no_hot_retry"])
def test_a_missing_retry_is_caught(tmp_path, harness, name, edit):
    target = load_target(name)
    if name not in ("x86_64", "i386"):
        target = target.test_build()    # the injected counter, which can trap
    edits = {"good": {}, "no_cold_retry": {"vdso_core.h": [NO_COLD_RETRY]},
             "no_hot_retry": {"vdso_core.h": [NO_HOT_RETRY]}}[edit]
    so = build_broken(target, tmp_path / "img", edits)
    _status, outcome, out = run_broken(target, harness(target), so)
    passed, failed = inside(outcome.passed), inside(outcome.failed)
    assert passed or failed, out
    if edit == "good":
        assert not failed and "seqcount.inside.MONOTONIC_RAW" in passed, out
        return
    # Natively every path is struck before each of its instructions: the
    # inside checks catch either mistake.  A test build is struck at its
    # first counter read, before the hot path's data loads: there the
    # cold path's missing retry is caught inside, the hot path's by
    # seqcount.wait (a call made during an update returns its garbage).
    # Neither depends on timing: both fail on every run.
    if name in ("x86_64", "i386") or edit == "no_cold_retry":
        assert failed, out
    else:
        assert any(c.startswith("seqcount.wait.") for c in outcome.failed), out


def test_soak_runs_the_racing_writers_longer():
    """`test --soak=SECONDS`: each racing writer runs that long (the
    watchdog and the timeout grow to match); bad values are refused."""
    from conftest import vdsogen

    proc = vdsogen("test", "--arch=x86_64", "--soak=2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# soak: each racing writer runs 2 s" in proc.stdout
    rounds = [ln for ln in proc.stdout.splitlines() if ln.startswith("# seqcount.concurrent: ")]
    assert rounds and "0 bad reads" in rounds[0]
    for bad in ("-1", "x", "86401"):
        proc = vdsogen("test", "--arch=x86_64", f"--soak={bad}")
        assert proc.returncode == 2 and "--soak" in proc.stderr and "Traceback" not in proc.stderr
