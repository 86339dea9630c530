"""`vdsogen run`'s supervisor behaves: job control, its death, the image it loads, the live check, tracers.

A program under `vdsogen run` stops on SIGSTOP and SIGTSTP and continues on
SIGCONT, as a shell's Ctrl-Z and `fg` expect; it dies with the supervisor
(kill -9), it gets the signals sent to the supervisor (kill, Ctrl-C), and
whatever it leaves running when it ends goes with it, said in one line.  The
image loaded is the bytes `check` passed, whatever happens to the file after.
The live-layout check reads the kernel's data pages without dying of SIGBUS
where a page is not there.  strace and gdb inside `run` fail with EPERM, as
the docs and --help say.

Every wait is for a state (a file written, a process stopped or gone) with a
deadline that only a broken supervisor reaches; a program that must stand
still is seen to stand still while it is stopped, which no timing can fake.
"""

import ctypes
import faulthandler
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import isolated_run_cache, program_stderr
from vdsogen.elf.reader import ElfImage

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 30

# The program: its pid in DIR/pid, then a counter in DIR/count moving on until DIR/done exists.
COUNTER = r"""
import os, sys
d = sys.argv[1]
fd = os.open(os.path.join(d, "count"), os.O_RDWR | os.O_CREAT)
n = 0
with open(os.path.join(d, "pid.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.rename(os.path.join(d, "pid.tmp"), os.path.join(d, "pid"))
while not os.path.exists(os.path.join(d, "done")):
    n += 1
    os.pwrite(fd, b"%20d" % n, 0)
"""


# The supervisor, probes and images are built once, into a cache of the module's own.
run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)


def vdsogen(*args, **kw):
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


def until(what, cond, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"not {what} within {timeout} s")
        time.sleep(0.02)


def state(pid):
    """The process's state letter (R, S, t, T, Z...), or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rpartition(")")[2].split()[0]


def gone(pid):
    return state(pid) in (None, "Z")


def stopped(pid):
    return state(pid) in ("t", "T")


class Counter:
    """COUNTER under `vdsogen run` in a process group of its own, as a shell's job is (not a session of its
    own: the kernel drops SIGTSTP to an orphaned process group)."""

    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.proc = subprocess.Popen([sys.executable, "-m", "vdsogen", "run", "--arch=x86_64", "--",
                                      sys.executable, "-c", COUNTER, str(tmp_path)], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     process_group=0)
        until("started", lambda: (tmp_path / "pid").exists() or self.proc.poll() is not None)
        assert self.proc.poll() is None, self.proc.communicate()
        self.pid = int((tmp_path / "pid").read_text())
        until("counting", lambda: self.count() > 0)

    def count(self):
        text = (self.dir / "count").read_bytes().strip()
        return int(text) if text else 0

    def moves(self):
        first = self.count()
        until("counting on", lambda: self.count() > first)

    def stands_still(self):
        """Stopped, and seen not to count while stopped (0.3 s: a running one counts thousands)."""
        until("stopped", lambda: stopped(self.pid))
        first = self.count()
        time.sleep(0.3)
        assert stopped(self.pid) and self.count() == first, (state(self.pid), first, self.count())

    def finish(self):
        (self.dir / "done").touch()
        out, err = self.proc.communicate(timeout=DEADLINE)
        return self.proc.returncode, program_stderr(err)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if not gone(self.pid):
            os.kill(self.pid, signal.SIGKILL)
        self.proc.communicate(timeout=DEADLINE)


@pytest.fixture
def counter(tmp_path):
    c = Counter(tmp_path)
    yield c
    c.kill()


# ---- job control ---------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGTSTP])
def test_a_stop_signal_stops_the_program_and_sigcont_continues_it(counter, sig):
    for _ in range(2):
        os.kill(counter.pid, sig)
        counter.stands_still()
        os.kill(counter.pid, signal.SIGCONT)
        counter.moves()
    assert counter.finish() == (0, "")


def test_ctrl_z_and_fg(counter):
    """A shell's Ctrl-Z: SIGTSTP to the job's process group, the shell sees its child stop; fg: SIGCONT."""
    os.killpg(counter.proc.pid, signal.SIGTSTP)
    status = []
    until("seen stopped by its shell", lambda: status.append(os.waitpid(counter.proc.pid, os.WUNTRACED | os.WNOHANG))
          or status[-1][0] == counter.proc.pid)
    assert os.WIFSTOPPED(status[-1][1]) and os.WSTOPSIG(status[-1][1]) == signal.SIGTSTP
    counter.stands_still()
    os.killpg(counter.proc.pid, signal.SIGCONT)
    counter.moves()
    assert counter.finish() == (0, "")


# ---- the supervisor's end ------------------------------------------------------------------

def test_the_program_dies_with_the_supervisor(counter):
    os.kill(counter.proc.pid, signal.SIGKILL)     # `vdsogen run` is the supervisor (it execs it)
    counter.proc.wait(timeout=DEADLINE)
    until("gone with the supervisor", lambda: gone(counter.pid), timeout=10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_supervisor_goes_to_the_program(counter, sig):
    """`kill PID-of-vdsogen-run` ends the program as it would end it outside `run`."""
    os.kill(counter.proc.pid, sig)
    out, err = counter.proc.communicate(timeout=DEADLINE)
    assert counter.proc.returncode == 128 + sig, (counter.proc.returncode, err)
    assert f"killed by {signal.Signals(sig).name}" in err
    until("gone", lambda: gone(counter.pid), timeout=10)


def test_what_the_program_leaves_running_ends_with_it(tmp_path):
    """Outside the supervisor a process would exec with the kernel's vDSO: it goes, and one line says so."""
    pidfile = tmp_path / "pid"
    proc = vdsogen("run", "--arch=x86_64", "--", "sh", "-c", f'sleep 600 >/dev/null 2>&1 & echo $! > {pidfile}; exit 3')
    pid = int(pidfile.read_text())
    try:
        assert proc.returncode == 3, proc.stderr
        lines = program_stderr(proc.stderr).strip().splitlines()
        assert len(lines) == 1 and "left running" in lines[0] and "killed" in lines[0], proc.stderr
        until("gone with the supervisor", lambda: gone(pid), timeout=10)
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


# ---- the image loaded is the image checked -------------------------------------------------

SWAP_AFTER_CHECK = r"""
import shutil, sys
import vdsogen.audit.check as check
real = check.check_report
image, other = sys.argv[1], sys.argv[2]

def check_then_swap(*args, **kw):
    report = real(*args, **kw)
    shutil.copyfile(other, image)       # the file changes right after it was checked
    return report

check.check_report = check_then_swap
from vdsogen.cli import main
sys.exit(main(["run", "--arch=x86_64", "--image=" + image, "--", "vdsogen-probe"]))
"""


def build_id(data):
    img = ElfImage("image", data)
    return next(bytes(n.desc).hex() for n in img.notes if n.name == "GNU" and n.type == 3)


def failing_copy(data):
    """The image with an export renamed (fails check: S002) and another build-id."""
    bid = bytes.fromhex(build_id(data))
    out = data.replace(b"__vdso_getcpu\0", b"__vdso_getcpX\0").replace(bid, bytes(b ^ 0xff for b in bid))
    assert out.count(bytes(b ^ 0xff for b in bid)) == 1
    return out


def test_the_image_loaded_is_the_image_checked(built, tmp_path):
    good = Path(built("x86_64")[1]).read_bytes()
    bad = tmp_path / "bad.so"
    bad.write_bytes(failing_copy(good))
    assert vdsogen("check", "--arch=x86_64", str(bad)).returncode == 1
    for _ in range(3):
        image = tmp_path / "vdso.so"
        image.write_bytes(good)
        proc = subprocess.run([sys.executable, "-c", SWAP_AFTER_CHECK, str(image), str(bad)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert image.read_bytes() != good         # swapped indeed
        seen = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith("probe."))
        assert seen["probe.build-id"] == build_id(good), "the probe ran on another image than the one checked"


# ---- the live-layout check -----------------------------------------------------------------

def data_pages():
    """The addresses of this process's [vvar...] pages, and those a direct read kills with SIGBUS."""
    from vdsogen.run.live import kernel_data

    lo, vdso = kernel_data()
    pages = list(range(lo, vdso, 4096))
    faulting = []
    for addr in pages:
        pid = os.fork()
        if pid == 0:
            faulthandler.disable()      # the SIGBUS is expected: no traceback from the child
            ctypes.string_at(addr, 4096)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            assert os.WTERMSIG(status) == signal.SIGBUS
            faulting.append(addr)
    return lo, pages, faulting


def test_unbacked_data_pages_are_read_without_dying():
    """The kernel backs some data pages only where they are used (the time-namespace page outside
    a time namespace, pvclock and hvclock pages without those clocks): a read says so, not SIGBUS."""
    from vdsogen.run.live import Unreadable, read_memory

    lo, pages, faulting = data_pages()
    assert faulting, "every data page of this kernel is backed: nothing to test SIGBUS with"
    for addr in faulting:
        with pytest.raises(Unreadable):
            read_memory(addr, 4096)
    assert len(read_memory(lo, 4096)) == 4096     # the time page


def test_a_layout_whose_time_page_is_not_backed_is_refused_in_one_line(tmp_path):
    """A layout with its time page where this kernel has a page it does not back: exit 2, one line."""
    lo, pages, faulting = data_pages()
    index = (faulting[0] - lo) // 4096
    specs = tmp_path / "specs"
    (specs / "layouts").mkdir(parents=True)
    (specs / "x86_64.toml").write_text((ROOT / "specs" / "x86_64.toml").read_text()
                                       .replace('layout = "linux-6.17-x86"', 'layout = "moved-x86"'))
    text = (ROOT / "specs" / "layouts" / "linux-6.17-x86.toml").read_text()
    head, sep, rest = text.partition("[[page]]")
    blocks = [sep + b for b in rest.split(sep) if b]
    assert len(blocks) == len(pages) and 'role = "time"' in blocks[0]
    blocks[0], blocks[index] = blocks[index], blocks[0]
    (specs / "layouts" / "moved-x86.toml").write_text(head + "".join(b if b.endswith("\n\n") else b + "\n"
                                                                      for b in blocks))
    proc = vdsogen("run", "--arch=x86_64", f"--specs={specs}", "--", "true")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = program_stderr(proc.stderr).strip().splitlines()
    assert len(lines) == 1 and "moved-x86" in lines[0] and f"page {index}" in lines[0], proc.stderr


# ---- tracers inside `run` ------------------------------------------------------------------

STRACE_EPERM = "ptrace(PTRACE_TRACEME, ...): Operation not permitted"


def test_strace_inside_run_fails_as_documented():
    proc = vdsogen("run", "--arch=x86_64", "--", "strace", "-o", "/dev/null", "true")
    assert proc.returncode == 1 and STRACE_EPERM in proc.stderr, proc.stderr
    help_text = " ".join(vdsogen("run", "--help").stdout.split())
    readme = " ".join((ROOT / "README.rst").read_text().split())
    for where in (help_text, readme):
        assert STRACE_EPERM in where and "perf trace" in where
