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

The kernel labels are the places a kernel links to by names of its own,
which are not exported (arm64's sigtramp; powerpc's sigtramp_rt64, the
bctrl before __kernel_sigtramp_rt64; i386's landing pads).  The ABI
catalogue names them and the fragments define them as local symbols of
vdso.so.dbg, where each is checked to be where the catalogue puts it; a
spec's [emit] labels name any symbol of vdso.so.dbg.  They are written as
NAME_offset_LABEL, after the exported symbols.
"""

import re
from dataclasses import dataclass

from vdsogen.errors import BuildError, SpecError, VdsogenError

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
    labels: tuple = ()     # of Symbol: the kernel labels, NAME_offset_LABEL like the symbols

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


def _labels(target, image, symtab, symbols):
    """The kernel labels: each trampoline's (abi.toml kernel_label), a local
    symbol its fragment defines, checked against where the catalogue puts
    it; the ABI's kernel_labels inside the entry points the image exports;
    then the spec's [emit] labels, each the offset of a symbol of
    vdso.so.dbg.  `symtab`: name -> offset of vdso.so.dbg's symbols."""
    from vdsogen.elf.decode import entry
    from vdsogen.spec.toml import did_you_mean

    abi = {t.name: t for t in target.abi.trampolines}
    out = []
    for t in target.trampolines:
        if not t.label:
            continue
        where = f"arch/{target.arch}/{t.fragment}.S.j2"
        if t.label not in symtab:
            raise BuildError(f"{where}: defines no local symbol {t.label!r}, the kernel label of {t.name} "
                             f"(vdsogen/spec/abi.toml [{target.abi.name}] trampolines)")
        start = entry(image, symtab[t.name])[0]          # ARM: a Thumb symbol is odd
        size = abi[t.name].match or 4 * len(t.words)
        at = {"lead": (start - 4 * len(t.lead), f"the lead of {t.name}"),
              "symbol": (start, t.name),
              "return": (start + size, f"after the syscall of {t.name}")}
        expect, what = at[t.label_at]
        if symtab[t.label] != expect:
            raise BuildError(f"{where}: {t.label} is at {symtab[t.label]:#x}, but vdsogen/spec/abi.toml puts "
                             f"the kernel label of {t.name} at {expect:#x} (label_at = {t.label_at!r})")
        out.append(Symbol(t.label, expect, f"kernel label: {what}"))
    sizes = {s.name: s.size for s in image.dynsym if s.defined}
    for k in target.abi.kernel_labels:
        if k.within not in sizes:
            continue
        where = f"vdsogen/spec/abi.toml [{target.abi.name}] kernel_labels"
        start = entry(image, symtab[k.within])[0]
        if not start < symtab.get(k.name, start) < start + sizes[k.within]:
            raise BuildError(f"the image has no local symbol {k.name!r} inside {k.within}, and the "
                             f"{target.abi.name} ABI's kernels link to it ({where})")
        out.append(Symbol(k.name, symtab[k.name], f"kernel label: inside {k.within}"))
    for name, symbol in target.labels:
        if symbol not in symtab:
            raise SpecError(target.path, f"emit.labels.{name}",
                            f"no symbol {symbol!r} in vdso.so.dbg{did_you_mean(symbol, symtab)}")
        out.append(Symbol(name, symtab[symbol], f"kernel label: {symbol} ([emit] labels)"))
    taken = {s.name for s in symbols}
    for s in out:
        if s.name in taken:
            raise BuildError(f"{target.path}: kernel label {s.name!r} is an exported symbol too")
        taken.add(s.name)
    return tuple(out)


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

    dp = target.datapage        # None: a target without time data (parisc's), no data pages below the text
    data_offset = -dp.pages * dp.page_size if dp else 0
    pages = tuple(Page(p.index, p.role, data_offset + p.index * dp.page_size, p.symbol)
                  for p in dp.layout.pages) if dp else ()
    hidden = {s.name: _signed(s.value, image.elf_class) - base for s in ElfImage(dbg).symtab if s.defined}
    labels = _labels(target, image, hidden, symbols)
    expect = {"vdso_u_data": data_offset, **{p.symbol: p.offset for p in pages if p.symbol}} if dp else {}
    for sym, offset in expect.items():
        if sym in hidden and hidden[sym] != offset:
            raise BuildError(f"{dbg}: {sym} is at {hidden[sym]:#x}, but the spec puts it at {offset:#x}")

    build_id = next((bytes(n.desc).hex() for n in image.notes if n.name == "GNU" and n.type == NT_GNU_BUILD_ID), "")
    alt = image.section(".altinstructions")
    size = -(-len(image.data) // target.page_size) * target.page_size
    return Embedding(name, target.name, target.path, image.data, target.page_size, size, data_offset,
                     -data_offset, pages, tuple(symbols), image.e_entry - base if image.e_entry else None,
                     build_id, (alt.offset, alt.size) if alt else None, labels)


def render(target, emb, kinds):
    """[(file name, bytes)] of the embedding outputs `kinds` for `emb`, each
    from templates/emit-<file>.j2 through the one Renderer (vdsogen/gen/render.py)."""
    from vdsogen.gen.render import Renderer

    r = Renderer(target)
    return [(fname, r.render(f"emit-{fname}.j2", emb=emb, n=emb.name).encode()) for fname in output_names(kinds)]
