"""Writes that never leave a half-written file behind, and a lock per output directory."""

import contextlib
import fcntl
import os
import shutil
import tempfile

LOCK_NAME = ".vdsogen.lock"


def write_atomic(path, data, mode=0o644):
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    path = os.fspath(path)
    head, tail = os.path.split(path)
    # .NAME.XXXX.PID.tmp: sweep_temps knows whose it is.
    fd, tmp = tempfile.mkstemp(dir=head or ".", prefix=f".{tail}.", suffix=f".{os.getpid()}.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def remove_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@contextlib.contextmanager
def locked_dir(path):
    """Hold the lock of output directory `path` (created if missing): a
    second vdsogen writing there waits until the first is done.  The lock
    file stays (an empty .vdsogen.lock); the kernel drops the lock when its
    holder exits, however it exits."""
    os.makedirs(path, exist_ok=True)
    fd = os.open(os.path.join(path, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def temp_name(path):
    """A name beside `path` no other process uses: .NAME.PID.tmp."""
    path = os.fspath(path)
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.{os.getpid()}.tmp")


def sweep_temps(directory):
    """Remove the temp_name files in `directory` of processes that are gone
    (a build SIGKILL stopped); call it holding the directory's lock."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if name.startswith(".") and name.endswith(".tmp") and len(parts) >= 4 and parts[-2].isdigit() \
                and not _alive(int(parts[-2])):
            remove_quietly(os.path.join(directory, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def scratch_dir(kind: str):
    """A temporary directory vdsogen-KIND-PID-XXXX, removed afterwards.

    A vdsogen that SIGKILL stopped cannot remove its own: so each new one
    first removes those of its kind whose process is gone (its PID no longer
    runs, and the directory is this user's)."""
    base = tempfile.gettempdir()
    prefix = f"vdsogen-{kind}-"
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        pid = name[len(prefix):].partition("-")[0]
        path = os.path.join(base, name)
        if not (name.startswith(prefix) and pid.isdigit()) or _alive(int(pid)):
            continue
        try:
            if os.stat(path).st_uid == os.getuid():
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as tmp:
        yield tmp
