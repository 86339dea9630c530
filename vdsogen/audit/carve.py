"""Carve vDSO images out of kernel images, QEMU binaries and Debian packages.

A kernel embeds its vDSO images as plain ELF shared objects (x86: vdso64,
vdso32 and vdsox32; arm64: the 64-bit image and the compat one), inside
whatever its boot image is: an uncompressed ELF vmlinux (ppc64el), a
self-decompressing image with an xz, gzip, zstd, lzma or bzip2 payload
(x86 bzImage, armhf zImage, s390x), a gzip'd Image (arm64, riscv64), or an
EFI zboot PE whose payload is gzip or zstd (arm64, riscv64 and loong64
kernels that use it).  QEMU's user-mode emulators carry the vDSO they map
for the guest the same way, as bytes in the binary.

`carve(data)` finds them all: the ELF shared objects in the bytes
themselves, then in every compressed stream the bytes hold (found by its
magic and decompressed with a bound on the output); each object is sized by
its section headers (and program headers) and kept when its soname is a
vDSO's (linux-vdso*, linux-gate*).  Nothing is guessed from file names.

Run as a module it is the back end of scripts/fetch-real-vdso.sh: it takes
one downloaded .deb apart (`dpkg-deb --fsys-tarfile`), carves what it
holds into the cache's images/ and records each image in manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import bz2
import io
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any
from pathlib import Path

from vdsogen.elf.consts import (EHDR, EI_CLASS, EI_DATA, EI_NIDENT, ELFCLASS32, ELFCLASS64, ELFDATA2LSB,
                                ELFDATA2MSB, ET_DYN, NT_GNU_PROPERTY_TYPE_0, PHDR, SHDR, SHT_NOBITS)
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import ImageError

MAX_VDSO = 1 << 22            # a vDSO, unstripped, is tens of KiB
MAX_OUTPUT = 1 << 30          # decompressed kernel images are under 100 MiB
CHUNK = 1 << 16
VDSO_SONAMES = ("linux-vdso", "linux-gate")

# Magic numbers of the compressed streams kernels embed.  lzma's "alone"
# header (properties 0x5d, then a dictionary size) is short and common, so it
# is tried only with a plausible dictionary size and only when nothing else
# in the file decompressed.
MAGIC = {
    "gzip": b"\x1f\x8b\x08",
    "xz": b"\xfd7zXZ\x00",
    "zstd": b"\x28\xb5\x2f\xfd",
    "bzip2": b"BZh",
    "lzma": b"\x5d\x00\x00",
}


@dataclass(frozen=True)
class Found:
    """One vDSO image: its bytes and where they were."""
    data: bytes
    offset: int               # in the stream it was carved from
    stream: str               # "raw", or "gzip@0x1234" (compression at its offset)
    soname: str


# -- compressed streams ----------------------------------------------------------------

def _inflate(obj, data, start, limit):
    """Feed data[start:] to a zlib/lzma/bz2 decompressor object, at most
    `limit` bytes of output (a small input can expand a thousandfold); what
    it produced (b"" when the start is no stream)."""
    out = io.BytesIO()
    pos = start
    zlib_like = hasattr(obj, "unconsumed_tail")
    try:
        while pos < len(data) and out.tell() < limit and not obj.eof:
            chunk = data[pos:pos + CHUNK]
            pos += len(chunk)
            while out.tell() < limit:
                out.write(obj.decompress(chunk, limit - out.tell()))
                if zlib_like:
                    chunk = obj.unconsumed_tail
                    if not chunk:
                        break
                else:
                    chunk = b""
                    if obj.needs_input or obj.eof:
                        break
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError):
        pass                  # garbage after a good prefix, or no stream at all
    return out.getvalue()[:limit]


def _zstd(data, start, limit):
    """zstd through the `zstd` command (python has no zstd module before 3.14);
    trailing bytes after the frame are an error it reports after the output."""
    exe = shutil.which("zstd")
    if exe is None:
        raise RuntimeError("zstd: not found (apt-get install zstd); this image has a zstd payload")
    proc = subprocess.Popen([exe, "-dcq", "--no-progress"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out = io.BytesIO()

    def feed():
        try:
            proc.stdin.write(data[start:])
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    while out.tell() < limit:
        chunk = proc.stdout.read(CHUNK)
        if not chunk:
            break
        out.write(chunk)
    proc.stdout.close()
    proc.kill()
    proc.wait()
    writer.join()
    return out.getvalue()


def decompress(kind: str, data: bytes, start: int, limit: int = MAX_OUTPUT) -> bytes:
    """The stream of `kind` that starts at data[start], decompressed (at most
    `limit` bytes); b"" when there is none there."""
    if kind == "gzip":
        return _inflate(zlib.decompressobj(31), data, start, limit)
    if kind == "xz":
        return _inflate(lzma.LZMADecompressor(lzma.FORMAT_XZ), data, start, limit)
    if kind == "lzma":
        return _inflate(lzma.LZMADecompressor(lzma.FORMAT_ALONE), data, start, limit)
    if kind == "bzip2":
        return _inflate(bz2.BZ2Decompressor(), data, start, limit)
    if kind == "zstd":
        return _zstd(data, start, limit)
    raise ValueError(kind)


def _occurrences(data, needle):
    i = data.find(needle)
    while i >= 0:
        yield i
        i = data.find(needle, i + 1)


def _plausible(kind, data, i):
    if kind == "bzip2":
        return data[i + 3:i + 4] in b"123456789" and data[i + 4:i + 10] == b"1AY&SY"
    if kind == "lzma":
        # properties byte 0x5d, then a little-endian power-of-two dictionary size
        (dict_size,) = struct.unpack_from("<I", data, i + 1) if i + 5 <= len(data) else (0,)
        return dict_size in {1 << n for n in range(16, 28)}
    if kind == "zstd":
        return i + 5 <= len(data) and not data[i + 4] & 0x08     # frame header's reserved bit is clear
    return True


def streams(data: bytes, min_size: int = 1 << 12) -> list[tuple[str, int, bytes]]:
    """(kind, offset, bytes) of every compressed stream in data that
    decompresses to at least min_size bytes; lzma only when nothing else is."""
    out = []
    for kind in ("xz", "zstd", "gzip", "bzip2"):
        for i in _occurrences(data, MAGIC[kind]):
            if not _plausible(kind, data, i):
                continue
            # A quick look first: most magic hits in a kernel are not streams.
            if kind != "zstd" and len(decompress(kind, data, i, 1 << 12)) < 1 << 12:
                continue
            blob = decompress(kind, data, i)
            if len(blob) >= min_size:
                out.append((kind, i, blob))
    if not out:
        for i in _occurrences(data, MAGIC["lzma"]):
            if _plausible("lzma", data, i) and len(decompress("lzma", data, i, 1 << 12)) == 1 << 12:
                blob = decompress("lzma", data, i)
                if len(blob) >= min_size:
                    out.append(("lzma", i, blob))
    return out


# -- ELF objects ------------------------------------------------------------------------

def elf_extent(data: bytes, start: int) -> int | None:
    """The size of the ELF object at data[start] from its own headers (the
    section header table and every section and segment), or None when it is
    no ELF shared object."""
    if data[start:start + 4] != b"\x7fELF" or start + EI_NIDENT + 4 > len(data):
        return None
    ident = data[start:start + EI_NIDENT]
    if ident[EI_CLASS] not in (ELFCLASS32, ELFCLASS64) or ident[EI_DATA] not in (ELFDATA2LSB, ELFDATA2MSB):
        return None
    cls = 32 if ident[EI_CLASS] == ELFCLASS32 else 64
    endian = "little" if ident[EI_DATA] == ELFDATA2LSB else "big"
    if start + EHDR.size(cls) + EI_NIDENT > len(data):
        return None
    h = EHDR.unpack(data, start + EI_NIDENT, cls, endian)
    if h.e_type != ET_DYN:
        return None
    ends = [EI_NIDENT + EHDR.size(cls)]
    if h.e_phnum:
        ends.append(_table_extent(data, start, cls, endian, PHDR, h.e_phoff, h.e_phnum, h.e_phentsize, 64,
                                  lambda p: p.p_offset + p.p_filesz))
    if h.e_shnum:
        ends.append(_table_extent(data, start, cls, endian, SHDR, h.e_shoff, h.e_shnum, h.e_shentsize, 256,
                                  lambda sh: 0 if sh.sh_type == SHT_NOBITS else sh.sh_offset + sh.sh_size))
    if None in ends:
        return None
    end = max(ends)
    if end > MAX_VDSO or start + end > len(data):
        return None
    return end


def _table_extent(data, start, cls, endian, layout, table, count, entsize, cap, entry_end):
    """The end, from the object's start, of a header table and of what its
    entries cover; None when the table is not one a vDSO could have."""
    size = layout.size(cls)
    if entsize != size or count > cap:
        return None
    end = table + count * size
    for i in range(count):
        off = start + table + i * size
        if off + size > len(data):
            return None
        end = max(end, entry_end(layout.unpack(data, off, cls, endian)))
    return end


def vdso_soname(blob: bytes) -> str | None:
    """The soname when blob is a readable vDSO image, else None."""
    try:
        img = ElfImage("<carved>", blob)
        value = img.dyn("SONAME")
        name = img.dynstr(value) if value is not None else None
    except (ImageError, Unreadable):     # a damaged candidate is just not one
        return None
    return name if name and name.startswith(VDSO_SONAMES) else None


def carve_elves(data: bytes, stream: str = "raw") -> list[Found]:
    """Every vDSO image in data, in file order."""
    out = []
    for i in _occurrences(data, b"\x7fELF"):
        size = elf_extent(data, i)
        if size is None:
            continue
        blob = bytes(data[i:i + size])
        soname = vdso_soname(blob)
        if soname:
            out.append(Found(blob, i, stream, soname))
    return out


def carve(data: bytes) -> list[Found]:
    """Every distinct vDSO image in data or, when it holds none as it is (a
    compressed kernel), in the compressed streams it holds."""
    found = carve_elves(data)
    if not found:
        for kind, off, blob in streams(data):
            found += carve_elves(blob, f"{kind}@0x{off:x}")
    seen, out = set(), []
    for f in found:
        digest = hashlib.sha256(f.data).digest()
        if digest not in seen:
            seen.add(digest)
            out.append(f)
    return out


# -- Debian packages --------------------------------------------------------------------

def deb_members(deb: str | os.PathLike, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each regular file of a .deb whose name `wanted(name)`
    accepts, streamed through dpkg-deb without unpacking the rest."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                if member.isfile() and wanted(member.name):
                    yield member.name, tar.extractfile(member).read()
    finally:
        proc.stdout.close()
        if proc.wait() not in (0, -13, 2):
            raise RuntimeError(f"dpkg-deb --fsys-tarfile {deb} failed")


def _kernel_member(name):
    """/boot/vmlinuz-VERSION, or /usr/lib/modules/VERSION/vmlinuz (unstable's linux-binary-*)."""
    path, base = "/" + name.lstrip("./"), os.path.basename(name)
    return (path.startswith("/boot/") and base.startswith(("vmlinuz-", "vmlinux-"))) or \
        (path.startswith(("/usr/lib/modules/", "/lib/modules/")) and base in ("vmlinuz", "vmlinux"))


def _dbg_member(name):
    return "/vdso/" in name and name.endswith(".so")


def _qemu_member(name):
    return "/usr/bin/qemu-" in "/" + name.lstrip("./")


def abi_name(blob: bytes, debarch: str) -> str | None:
    """The catalogue ABI an image is for; a 32-bit ARM image from an arm64
    kernel is arm64-compat, which its ELF identity cannot tell."""
    from vdsogen.spec import abi
    img = ElfImage("<carved>", blob)
    d = abi.detect(img)
    name = d.abi.name if d.abi else None
    if name == "arm" and debarch == "arm64":
        return "arm64-compat"
    return name


def linux_version(blob: bytes) -> str | None:
    from vdsogen.audit.era import version_of
    v = version_of(ElfImage("<carved>", blob))
    return ".".join(map(str, v)) if v else None


@dataclass
class Entry:
    path: str                 # relative to the cache's images/
    suite: str
    arch: str                 # Debian architecture of the package
    flavour: str
    kind: str                 # kernel, dbg, qemu
    package: str
    version: str
    member: str               # the file in the package
    stream: str               # raw, or the compressed stream it was in
    abi: str | None           # catalogue ABI (what audit-corpus passes as --arch)
    linux: str | None         # from the Linux version note
    soname: str
    sha256: str
    size: int


def images_of(deb: str | os.PathLike, kind: str, debarch: str) -> Iterator[tuple[str, str, Found]]:
    """(member, base name, Found) of every vDSO in a package of this kind."""
    if kind == "dbg":
        for name, blob in deb_members(deb, _dbg_member):
            if vdso_soname(blob):
                yield name, Path(name).stem, Found(blob, 0, "raw", vdso_soname(blob))
        return
    wanted = _kernel_member if kind == "kernel" else _qemu_member
    for name, data in deb_members(deb, wanted):
        found = carve(data)
        if kind == "qemu":
            base = os.path.basename(name)
            for n, f in enumerate(found):
                yield name, base if n == 0 else f"{base}-{n + 1}", f
        else:
            for f in found:
                base = abi_name(f.data, debarch) or f"unknown-{f.soname}"
                yield name, base + ("-cfi" if marked_cfi(f.data) else ""), f


def marked_cfi(blob: bytes) -> bool:
    """True when the image carries a GNU property note (IBT/SHSTK, BTI, Zicfilp/
    Zicfiss marking): the control-flow-protected variant a kernel may build
    beside the plain one."""
    img = ElfImage("<carved>", blob)
    return any(n.name == "GNU" and n.type == NT_GNU_PROPERTY_TYPE_0 for n in img.notes) or \
        any(name == "GNU" and t == NT_GNU_PROPERTY_TYPE_0 for _o, name, t, _d in img.scan_notes())


def carve_package(cache: str | os.PathLike, deb: str | os.PathLike, suite: str, debarch: str, package: str,
                  version: str, kind: str, flavour: str) -> list[Entry]:
    """Carve one downloaded package into cache/images and the manifest."""
    cache = Path(cache)
    group = f"{flavour}-dbg" if kind == "dbg" else flavour
    outdir = cache / "images" / suite / group
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    entries, names = [], set()
    for member, base, f in images_of(deb, kind, debarch):
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.add(name)
        (outdir / f"{name}.so").write_bytes(f.data)
        abi = None
        try:
            abi = abi_name(f.data, debarch)
        except ImageError:
            pass
        entries.append(Entry(f"{suite}/{group}/{name}.so", suite, debarch, flavour, kind, package, version,
                             member.lstrip("./"), f.stream, abi, linux_version(f.data), f.soname,
                             hashlib.sha256(f.data).hexdigest(), len(f.data)))
    manifest = load_manifest(cache)
    prefix = f"{suite}/{group}/"
    manifest = [e for e in manifest if not e["path"].startswith(prefix)] + [asdict(e) for e in entries]
    save_manifest(cache, manifest)
    for e in entries:
        print(f"  CARVE   {e.path}: {e.abi or 'unknown ABI'}, Linux {e.linux or '?'}, {e.size} bytes "
              f"({os.path.basename(e.member)}, {e.stream})")
    if not entries:
        print(f"  CARVE   {package} {version}: no vDSO image found", file=sys.stderr)
    return entries


def load_manifest(cache: str | os.PathLike) -> list[dict[str, Any]]:
    path = Path(cache) / "manifest.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())


def save_manifest(cache: str | os.PathLike, entries: list[dict[str, Any]]) -> None:
    path = Path(cache) / "manifest.json"
    entries = sorted(entries, key=lambda e: e["path"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=1) + "\n")
    tmp.replace(path)


def summary(cache: str | os.PathLike) -> None:
    entries = load_manifest(cache)
    by: dict[tuple[str, str], list[dict]] = {}
    for e in entries:
        by.setdefault((e["suite"], e["kind"]), []).append(e)
    for (suite, kind), es in sorted(by.items()):
        print(f"  IMAGES  {suite} {kind}: {len(es)}")
    print(f"  IMAGES  {len(entries)} in all")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdsogen.audit.carve",
                                description="carve vDSO images out of a Debian package into a cache")
    p.add_argument("--cache", required=True)
    p.add_argument("--suite")
    p.add_argument("--arch")
    p.add_argument("--package")
    p.add_argument("--version")
    p.add_argument("--kind", choices=("kernel", "dbg", "qemu"))
    p.add_argument("--flavour")
    p.add_argument("--summary", action="store_true", help="count the images in the manifest")
    p.add_argument("--out", help="with FILE...: carve files (any binary) into this directory instead")
    p.add_argument("deb", nargs="*")
    args = p.parse_args(argv)
    if args.summary:
        summary(args.cache)
        return 0
    if args.out:
        for path in args.deb:
            for n, f in enumerate(carve(Path(path).read_bytes())):
                out = Path(args.out) / f"{Path(path).name}.{n}.so"
                out.write_bytes(f.data)
                print(f"{out}: {f.soname}, {len(f.data)} bytes at 0x{f.offset:x} ({f.stream})")
        return 0
    found = 0
    for deb in args.deb:
        found += len(carve_package(args.cache, deb, args.suite, args.arch, args.package, args.version, args.kind,
                                   args.flavour))
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
