"""A vdsogen stopped from outside leaves nothing behind.

SIGTERM (or SIGHUP) unwinds it like ^C: exit 128+N, its temporary
directory removed, its harness gone with it.  SIGKILL cannot be caught: the
harness still dies with it (PR_SET_PDEATHSIG), and the next vdsogen of
that kind removes the directory the dead one left.
"""

import os
import signal
import subprocess
import sys
import time

from conftest import ROOT


def start_bench(tmpdir):
    env = dict(os.environ, TMPDIR=str(tmpdir))
    # Under qemu-user, 1001 rounds take minutes: it is stopped long before.
    return subprocess.Popen([sys.executable, "-m", "vdsogen", "bench", "--arch=arm64", "--rounds=1001"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_harness(tmpdir, proc, limit=240):
    """The harness's pid, once it runs from a scratch directory under tmpdir."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(str(tmpdir).encode()) and a.endswith(b"/harness") for a in cmd):
                return int(pid)
        time.sleep(0.2)
    raise AssertionError("the harness never started")


def gone(pid, limit=10):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def scratch(tmpdir):
    return [n for n in os.listdir(tmpdir) if n.startswith("vdsogen-")]


def test_sigterm_cleans_up(tmp_path):
    proc = start_bench(tmp_path)
    harness = wait_for_harness(tmp_path, proc)
    assert scratch(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in stderr, stderr
    assert "Traceback" not in stderr
    assert gone(harness), "the harness outlived vdsogen"
    assert scratch(tmp_path) == []


def test_sigkill_leaves_a_directory_the_next_run_removes(tmp_path):
    proc = start_bench(tmp_path)
    harness = wait_for_harness(tmp_path, proc)
    proc.kill()
    proc.wait()
    assert gone(harness), "the harness outlived vdsogen"
    left = scratch(tmp_path)
    assert len(left) == 1 and left[0].startswith("vdsogen-bench-arm64-")
    nxt = start_bench(tmp_path)
    wait_for_harness(tmp_path, nxt)
    try:
        assert left[0] not in scratch(tmp_path)
    finally:
        nxt.send_signal(signal.SIGTERM)
        nxt.communicate(timeout=60)
    assert scratch(tmp_path) == []
