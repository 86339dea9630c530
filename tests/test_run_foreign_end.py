"""`vdsogen run` under qemu-user ends as the native supervisor does: the
program (and the timekeeper, another qemu) die with vdsogen however it
dies, and the signals sent to vdsogen go on to the program.  Before, a
SIGKILLed vdsogen left both running, the program's time page going stale.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void on_term(int sig) { _exit(100 + sig); }

int main(int argc, char **argv)
{
	char path[4096];
	FILE *f;

	(void)argc;
	signal(SIGTERM, on_term);
	snprintf(path, sizeof(path), "%s/pid", argv[1]);
	f = fopen(path, "w");
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	for (;;)
		pause();
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("foreign-end")
    (d / "prog.c").write_text(PROGRAM)
    subprocess.run(["aarch64-linux-gnu-gcc", "-static", "-O2", "-o", str(d / "prog"), str(d / "prog.c")],
                   check=True)
    return d / "prog"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start(program, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "vdsogen", "run", "--arch=arm64", "--", str(program),
                             str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text().strip():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the program never started"
        time.sleep(0.1)
    return proc, int((tmp_path / "pid").read_text())


def qemus_of(program):
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"qemu-aarch64-static") and (str(program).encode() in cmd or
                                                              b"--timekeeper" in cmd) and alive(int(pid)):
            out.append(int(pid))
    return out


def test_the_program_and_timekeeper_die_with_vdsogen(program, tmp_path):
    proc, pid = start(program, tmp_path)
    assert alive(pid)
    os.kill(proc.pid, signal.SIGKILL)
    try:
        deadline = time.monotonic() + 10
        while (alive(pid) or qemus_of(program)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), "the program outlived vdsogen run"
        assert not qemus_of(program), "a qemu outlived vdsogen run"
        proc.communicate(timeout=10)    # the pipes close once nothing of the run is left
    finally:
        for left in qemus_of(program):
            os.kill(left, signal.SIGKILL)


def test_sigterm_to_vdsogen_goes_to_the_program(program, tmp_path):
    proc, pid = start(program, tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 100 + signal.SIGTERM, (proc.returncode, err)   # the program's own handler
    assert not alive(pid)
