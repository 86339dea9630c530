"""The bounds of the reader (see reader.py): caps, the work budget, the
errors, and reading a file that is only ever a regular file."""

import os
import stat
import struct

from vdsogen.errors import ImageError

MAX_IMAGE = 64 << 20          # far above any vDSO, .dbg included
MAX_ENTRIES = 1 << 16         # dynamic entries, hash buckets and chains, relocations per table
MAX_SYMBOLS = 1 << 12         # per symbol table: a .dbg vDSO has a few hundred
MAX_PHDRS = 64                # a vDSO has 4 to 8 program headers
MAX_SECTIONS = 256            # a .dbg vDSO has 20 to 40 sections
MAX_NOTES = 1024
MAX_NAME = 4096               # longest symbol or section name read (note names are cut)
# Units of work per file (see Budget).  The image of the test corpus that needs
# the most is vdsogen's own ppc64le .so, about 3100 since it has getrandom (its
# C and the ChaCha20 routine are walked for the code rules), x86_64's about
# 2100, the live x86_64 vDSO about 1100: this is more than 50 times any, and at
# a few microseconds a unit, a second or two at most.
WORK_BUDGET = 200_000

# A damaged file can trip the struct arithmetic in many ways.
PARSE_ERRORS = (struct.error, ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError,
                ZeroDivisionError, UnicodeDecodeError, AssertionError, RecursionError)


class Unreadable(Exception):
    """A part of the image cannot be read; rules report it, others go on."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class TooComplex(ImageError):
    """The file needs more work than any vDSO: it is reported as unusable."""


class Budget:
    """The units of work one file may take (see reader.py's docstring).

    Deterministic: the same bytes always take the same number of units."""

    def __init__(self, path: str | os.PathLike, limit: float = WORK_BUDGET) -> None:
        self.path = str(path)
        self.limit = limit
        self.used = 0

    def charge(self, units: int = 1) -> None:
        """Account for work about to be done; TooComplex (and the work is not
        done) when it would go over the limit."""
        if self.used + units > self.limit:
            raise TooComplex(self.path, f"too complex for a vDSO: it needs more than {self.limit} units of work "
                                        "(symbols, hash chain steps, instructions) to audit")
        self.used += units

    def disarm(self) -> None:
        """Lift the limit once the audit is over (reports may read a little more)."""
        self.limit = float("inf")


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def read_image_file(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file, at most MAX_IMAGE + 1 of them.

    Anything but a regular file (a FIFO, a device, a directory) is refused
    before it is opened, so that nothing blocks or reads forever; the file
    is opened non-blocking and its type checked again on the descriptor."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ImageError(path, f"cannot read: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ImageError(path, f"not a regular file ({_file_kind(st.st_mode)}): cannot be a vDSO image")
    if st.st_size > MAX_IMAGE:
        raise ImageError(path, f"larger than {MAX_IMAGE >> 20} MiB: not a vDSO")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ImageError(path, f"cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ImageError(path, f"not a regular file ({_file_kind(st.st_mode)}): cannot be a vDSO image")
        chunks, total = [], 0
        while total <= MAX_IMAGE:
            chunk = os.read(fd, min(1 << 20, MAX_IMAGE + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as e:
        raise ImageError(path, f"cannot read: {e.strerror}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)
