"""Builds into one output directory take turns, and none loses another's outputs.

Before the lock, two `vdsogen build` into one --out shared fixed temporary
names: one read the other's half-written image ("no Linux version note"),
and a build that failed removed what the other had just published.  Now a
build holds the directory's lock (vdsogen/fsutil.py: locked_dir) from its
up-to-date check to its record, and names its temporaries after itself.
"""

import fcntl
import os
import subprocess
import sys
import time

from conftest import ROOT, vdsogen
from vdsogen.fsutil import LOCK_NAME


def start_build(out, *extra):
    return subprocess.Popen([sys.executable, "-m", "vdsogen", "build", "--arch=x86_64", f"--out={out}", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_build_waits_for_the_directory_lock(tmp_path):
    """While another holds out/.vdsogen.lock, a build publishes nothing and
    does not finish; it builds as soon as the lock is free."""
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = start_build(out)
    try:
        time.sleep(8)   # an x86_64 build takes 2-3 s on this machine when unlocked
        assert proc.poll() is None, proc.communicate()
        assert not (out / "vdso.so").exists() and not list(out.glob(".*.tmp"))
    finally:
        os.close(fd)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    assert (out / "vdso.so").is_file()


def test_concurrent_builds_keep_their_outputs(tmp_path):
    """Two builds of different requests into one directory, started
    together, again and again: both exit 0, and what is left is a whole
    image that `check` accepts."""
    for rnd in range(3):
        out = tmp_path / f"round{rnd}"
        procs = [start_build(out, "--emit=c"), start_build(out)]
        for p in procs:
            stdout, stderr = p.communicate(timeout=300)
            assert p.returncode == 0, f"round {rnd}: {stdout}{stderr}"
        assert (out / "vdso.so").is_file() and (out / "vdso.so.dbg").is_file(), f"round {rnd}"
        assert not list(out.glob(".*.tmp")), f"round {rnd}"
        check = vdsogen("check", "--arch=x86_64", str(out / "vdso.so"))
        assert check.returncode == 0, check.stdout + check.stderr


def test_a_killed_builds_temporaries_are_swept(tmp_path):
    """A build that SIGKILL stopped leaves .NAME.PID.tmp files; the next
    build into the directory removes those of dead processes only."""
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = out / f".vdso.so.dbg.{dead.pid}.tmp"
    stale_atomic = out / f".vdso.so.abcd1234.{dead.pid}.tmp"
    live = out / f".vdso.so.{os.getpid()}.tmp"      # this process is alive: not the build's to remove
    for p in (stale, stale_atomic, live):
        p.write_bytes(b"half an image")
    proc = start_build(out)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    assert not stale.exists() and not stale_atomic.exists() and live.exists()
