"""Writes that never leave a half-written file behind."""

import os
import tempfile


def write_atomic(path, data, mode=0o644):
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-")
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
