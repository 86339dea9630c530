"""Embedding outputs: what a kernel links into itself to map a built image.

Linux turns its vDSO into a C array and a table of symbol offsets (x86's
vdso2c: vdso-image-64.c), or assembles it in with .incbin and takes the
offsets from a generated header (arm64's vdso.S and vdso-offsets.h).
vdsogen writes the same from the image it built:

  --emit=c            vdso-image.c   the image as a page-aligned C array padded
                                     to whole pages, and a struct of offsets
  --emit=incbin       vdso-wrap.S    .incbin of vdso.so between page-aligned
                                     labels
  --emit=lds-offsets  vdso-offsets.lds  the offsets as linker-script symbols

and with each of them vdso-offsets.h, the offsets as #define lines (usable
from C, assembler and preprocessed linker scripts) and, for C, the struct
and the array's declarations.  Identifiers start with the emit name
(`vdso` unless --emit-name says otherwise: vdso_start, vdso_image_size,
vdso_offset___vdso_clock_gettime).

Every offset is read from the built image (ElfImage): the exported
symbols from .dynsym, e_entry, the build-id note; the data pages' offset,
the negative distance of the data pages below the text (page_size *
pages), comes from the spec and is checked against the hidden symbols the
linker script placed in vdso.so.dbg.  Templates only format (templates/emit-*.j2).
"""

import re
from dataclasses import dataclass

from vdsogen.errors import BuildError, VdsogenError

# Output kind -> the files it writes, each from templates/emit-<file>.j2.
KINDS = {
    "c": ("vdso-image.c", "vdso-offsets.h"),
    "incbin": ("vdso-wrap.S", "vdso-offsets.h"),
    "lds-offsets": ("vdso-offsets.lds", "vdso-offsets.h"),
}
DEFAULT_NAME = "vdso"
C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
BYTES_PER_LINE = 12


def check_kinds(kinds, name):
    """The --emit kinds and --emit-name, or a one-line usage error (exit 2)."""
    for k in kinds:
        if k not in KINDS:
            raise VdsogenError(f"--emit: unknown output {k!r} (known: {', '.join(KINDS)})")
    if not C_IDENT.match(name):
        raise VdsogenError(f"--emit-name: {name!r} is not a C identifier")


def output_names(kinds):
    """The files the kinds write, each once, in a stable order."""
    return tuple(dict.fromkeys(f for k in kinds for f in KINDS[k]))


@dataclass(frozen=True)
class Symbol:
    name: str
    offset: int        # from the start of the image
    what: str          # "entry point", "alias of X", "trampoline"


@dataclass(frozen=True)
class Page:
    index: int
    role: str
    offset: int        # negative: below the text
    symbol: str | None


@dataclass(frozen=True)
class Embedding:
    """The facts every embedding output states, read from one built image."""
    name: str              # identifier prefix
    target: str
    spec: str
    data: bytes            # vdso.so
    page_size: int
    image_size: int        # vdso.so padded to whole pages: what a kernel maps
    data_offset: int       # start of the data pages, relative to the text (negative)
    data_size: int
    pages: tuple
    symbols: tuple
    entry: int | None      # e_entry, where the ABI has one
    build_id: str
    alt: tuple | None      # (offset, size) of .altinstructions, the patches a kernel applies

    @property
    def file_size(self):
        return len(self.data)

    def byte_lines(self):
        """The image as lines of C byte literals."""
        d = self.data
        return [", ".join(f"0x{b:02x}" for b in d[i:i + BYTES_PER_LINE]) + ","
                for i in range(0, len(d), BYTES_PER_LINE)]


def _signed(value, elf_class):
    """A symbol value as the linker meant it: data-page symbols are negative."""
    bits = elf_class
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def read_embedding(target, so, dbg, name=DEFAULT_NAME):
    """Read the offsets from the stripped image `so` and check the data
    pages against the hidden symbols in `dbg`."""
    from vdsogen.elf.consts import NT_GNU_BUILD_ID, SHN_ABS, STT_FUNC, STT_NOTYPE, STT_OBJECT
    from vdsogen.elf.reader import ElfImage

    image = ElfImage(so)
    base = min((s.vaddr for s in image.loads), default=0)
    what = {}
    for e in target.exports:
        what[e.name] = "entry point"
        for a in e.aliases:
            what[a.name] = f"alias of {e.name}"
    for t in target.trampolines:
        what[t.name] = "trampoline"
    symbols = []
    for s in image.dynsym:
        if not s.defined or s.shndx == SHN_ABS or not s.name or s.type not in (STT_FUNC, STT_OBJECT, STT_NOTYPE):
            continue
        symbols.append(Symbol(s.name, s.value - base, what.get(s.name, "exported")))
    symbols.sort(key=lambda s: (s.offset, s.name))

    dp = target.datapage
    data_offset = -dp.pages * dp.page_size
    pages = tuple(Page(p.index, p.role, data_offset + p.index * dp.page_size, p.symbol)
                  for p in dp.layout.pages)
    hidden = {s.name: _signed(s.value, image.elf_class) - base for s in ElfImage(dbg).symtab if s.defined}
    expect = {"vdso_u_data": data_offset, **{p.symbol: p.offset for p in pages if p.symbol}}
    for sym, offset in expect.items():
        if sym in hidden and hidden[sym] != offset:
            raise BuildError(f"{dbg}: {sym} is at {hidden[sym]:#x}, but the spec puts it at {offset:#x}")

    build_id = next((bytes(n.desc).hex() for n in image.notes if n.name == "GNU" and n.type == NT_GNU_BUILD_ID), "")
    alt = image.section(".altinstructions")
    size = -(-len(image.data) // dp.page_size) * dp.page_size
    return Embedding(name, target.name, target.path, image.data, dp.page_size, size, data_offset,
                     -data_offset, pages, tuple(symbols), image.e_entry - base if image.e_entry else None,
                     build_id, (alt.offset, alt.size) if alt else None)


def render(target, emb, kinds):
    """[(file name, bytes)] of the embedding outputs `kinds` for `emb`, each
    from templates/emit-<file>.j2 through the one Renderer (vdsogen/gen/render.py)."""
    from vdsogen.gen.render import Renderer

    r = Renderer(target)
    return [(fname, r.render(f"emit-{fname}.j2", emb=emb, n=emb.name).encode()) for fname in output_names(kinds)]
