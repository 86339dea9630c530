"""The era of an image: the Linux version its version note names.

Severity follows harm to the consumers of the image's own era: a loader or
libc that would run with that kernel.  An image whose note predates a
convention of today's kernels (vDSOs linked at 0, the i386 LINUX_2.6 node,
the `bcl 20,31,.+4` idiom) is judged by what consumers of its time needed.
An image without a version note is judged by today's conventions.
"""

from vdsogen.elf.consts import NT_LINUX_VERSION
from vdsogen.elf.reader import ElfImage

Version = tuple[int, ...]      # (major, minor, sublevel)


def version_of(img: ElfImage) -> Version | None:
    """(major, minor, sublevel) from the "Linux" type-0 note, or None.  A
    version note that the 4-byte note walk does not reach (a PT_NOTE that
    mixes alignments) still dates the image."""
    for n in img.notes:
        if n.name == "Linux" and n.type == NT_LINUX_VERSION and len(n.desc) == 4:
            return _decode(int.from_bytes(n.desc, img.endian))
    if img.note_problems:
        for _off, name, ntype, desc in img.scan_notes():
            if name == "Linux" and ntype == NT_LINUX_VERSION:
                return _decode(int.from_bytes(desc, img.endian))
    return None


def _decode(code: int) -> Version:
    return (code >> 16, (code >> 8) & 0xFF, code & 0xFF)


def parse(text: str) -> Version:
    """"3.15" or "2.6.23" as a comparable tuple."""
    parts = tuple(int(p) for p in str(text).split("."))
    return parts + (0,) * (3 - len(parts))


def show(version: Version) -> str:
    return ".".join(str(p) for p in version[:2]) + (f".{version[2]}" if version[2:] and version[2] else "")


def before(img: ElfImage, since: str | Version) -> bool:
    """True when the image's note names a Linux older than `since` (text or
    tuple); False for a newer one or an image without a note."""
    v = version_of(img)
    return v is not None and v < (parse(since) if isinstance(since, str) else since)
