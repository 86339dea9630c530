"""Rules on the code patches a kernel applies to the image before it maps it.

Each table is read with the entry layout of the image's era (its Linux
version note); an image without a note is read with each layout a Linux
ever used, and the one that reads the table whole with every entry in
the image's code is taken.  Every finding names the layout it assumed."""

import struct
from dataclasses import dataclass

from vdsogen.elf.consts import EM_386, EM_PPC, EM_PPC64, EM_X86_64, SHF_EXECINSTR, SHT_NOBITS
from vdsogen.audit.era import parse
from vdsogen.audit.rules import Context, Findings, rule


@dataclass(frozen=True)
class Layout:
    """One form of a patch-table entry: its struct format per ELF class (the
    fields: original, replacement, feature, then the lengths), whether the
    first two are offsets from the field (else addresses), and the first and
    last Linux releases that wrote it (last None: today's)."""
    name: str
    since: str
    last: str | None
    formats: dict                  # ELF class -> struct format (little-endian)
    relative: bool = True

    def size(self, elf_class: int) -> int:
        return struct.calcsize(self.formats[elf_class])

    def span(self) -> tuple[tuple, tuple | None]:
        """[first, end) as comparable versions: a last release of two parts
        ("4.0") covers its every sublevel."""
        if self.last is None:
            return parse(self.since), None
        last = parse(self.last)
        return parse(self.since), (last[0], last[1], last[2] + 1) if self.last.count(".") == 2 else \
            (last[0], last[1] + 1, 0)


# struct alt_instr through the eras.  Up to 3.0 the original and replacement
# are pointers (the cpuid a u8 and a pad byte before 2.6.36, a u16 after;
# 24 bytes with the 64-bit padding); from 3.1 32-bit offsets from the field;
# 4.1 added a pad length byte after the two lengths (13 bytes, packed),
# 5.13 removed it; 6.2 widened the feature to a u32 of feature and flags.
ALT_LAYOUTS = (
    Layout("pointer, u8 cpuid", "2.6.0", "2.6.35", {32: "<IIBBBx", 64: "<QQBBBxxxxx"}, relative=False),
    Layout("pointer, u16 cpuid", "2.6.36", "3.0", {32: "<IIHBB", 64: "<QQHBBxxxx"}, relative=False),
    Layout("relative, u16 cpuid", "3.1", "4.0", {32: "<iiHBB", 64: "<iiHBB"}),
    Layout("relative, u16 cpuid, pad length", "4.1", "5.12", {32: "<iiHBBx", 64: "<iiHBBx"}),
    Layout("relative, u16 cpuid", "5.13", "6.1", {32: "<iiHBB", 64: "<iiHBB"}),
    Layout("relative, u32 feature and flags", "6.2", None, {32: "<iiIBB", 64: "<iiIBB"}),
)

class _Code:
    """The image's executable sections, as address ranges (vDSOs link at 0:
    a section's address is its file offset)."""

    def __init__(self, img):
        self.ranges = [(s.addr, s.addr + s.size) for s in img.sections
                       if s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS]

    def holds(self, addr, n):
        return any(lo <= addr and addr + n <= hi for lo, hi in self.ranges)


def _read(img, data, form, faults_of):
    """The faults of the table read with the layout `form` (each entry read
    is charged to the image's work budget)."""
    size = form[1]
    img.charge(len(data) // size + 1)
    faults = list(faults_of(form[2]))
    if len(data) % size:
        faults.insert(0, (None, f"{len(data)} bytes are not a whole number of {size}-byte entries"))
    return faults


def _table_findings(img, name, sec, data, forms, era, faults_of, chosen_by="the image's era"):
    """Findings on the patch table `data` of section `sec`.  `forms` are
    (description, size, key, spans) of each entry layout, spans the Linux
    releases that wrote it; faults_of(key) yields (entry index, why) for each
    entry a kernel could not apply safely read with that layout.  The era's
    layout is assumed; without an era, the layout that reads the table whole
    and sound, or a finding that none does."""
    mine = [f for f in forms if era is not None and any(lo <= era and (hi is None or era < hi)
                                                           for lo, hi in f[3])]
    if mine:
        form = mine[0]
        faults = _read(img, data, form, faults_of)
        if faults:
            clean = [f[0] for f in forms if f is not form and not _read(img, data, f, faults_of)]
            also = f"; {clean[0]} reads it whole and sound (a backport?)" if clean else ""
            for i, why in faults:
                where = f"@0x{sec.offset:x}" if i is None else f"@0x{sec.offset + i * form[1]:x}"
                head = f"{name}: " if i is None else f"{name} entry {i}: "
                yield where, f"{head}{why} (read as {form[0]}, {chosen_by}{also})"
        return
    tried = [(form, _read(img, data, form, faults_of)) for form in forms]
    sound = [form for form, faults in tried if not faults]
    if sound:
        return
    form, faults = min(tried, key=lambda t: len(t[1]))
    _i, why = faults[0]
    yield f"@0x{sec.offset:x}", (f"{name}: cannot tell its entry layout: no layout a Linux used reads these "
                                 f"{len(data)} bytes whole with every entry in the image's code (closest, "
                                 f"{form[0]}: {why}{f' and {len(faults) - 1} more' if len(faults) > 1 else ''})")


def _patch_sections(img, names):
    """(name, section, its bytes) of each non-empty section in names."""
    for name in names:
        sec = img.section(name)
        if sec is not None and sec.type != SHT_NOBITS and sec.size:
            yield name, sec, bytes(img.section_bytes(sec))


def _alt_forms(elf_class):
    """(description, size, (format, relative), spans) of each alternatives
    entry layout for an image of this ELF class, layouts of equal form merged."""
    merged: dict = {}
    for lay in ALT_LAYOUTS:
        key = (lay.formats[elf_class], lay.relative)
        merged.setdefault(key, (lay, []))[1].append(lay)
    out = []
    for key, (lay, same) in merged.items():
        spans = [x.span() for x in same]
        text = " and ".join(f"{x.since}-{x.last}" if x.last else f"{x.since} and later" for x in same)
        out.append((f"the {lay.size(elf_class)}-byte {lay.name} layout of Linux {text}", lay.size(elf_class), key,
                    spans))
    return out


def _alt_faults(data, base, key, code):
    fmt, relative = key
    size = struct.calcsize(fmt)
    for i in range(0, len(data) - len(data) % size, size):
        rel_instr, rel_repl, _feature, ilen, rlen = struct.unpack_from(fmt, data, i)
        if relative:
            instr, repl = base + i + rel_instr, base + i + 4 + rel_repl
        else:
            instr, repl = rel_instr, rel_repl
        if not code.holds(instr, ilen):
            yield i // size, f"original 0x{instr:x}+{ilen} is not in the image's code"
        elif not code.holds(repl, rlen):
            yield i // size, f"replacement 0x{repl:x}+{rlen} is not in the image's code"
        elif rlen > ilen:
            yield i // size, f"replacement of {rlen} bytes is longer than its original ({ilen})"


@rule("K005", "error", "x86: every alternatives entry must patch the image's own code with a replacement that fits",
      """x86 kernels patch their vDSO before mapping it: apply_alternatives()
      walks .altinstructions and copies each replacement over its original
      where the CPU has the feature.  An entry whose original or replacement
      lies outside the image's code, or whose replacement is longer than its
      original, makes the kernel write outside the instruction it patches (or
      refuse at boot).  The entry (struct alt_instr) changed with the
      kernel: pointers up to Linux 3.0 (24 bytes in a 64-bit image, 12 in a
      32-bit one), 12 bytes of offsets from 3.1, 13 with a pad length byte
      from 4.1 to 5.12, 12 again from 5.13, 14 with a 32-bit feature from
      6.2.  The image's version note says which; without one, the layout
      that reads the table whole with every entry in the image's code, or a
      finding that none does.  Every finding names the layout it assumed.""")
def alternatives_fit(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_386, EM_X86_64):
        return
    code = _Code(img)
    forms = _alt_forms(img.elf_class)
    for name, sec, data in _patch_sections(img, (".altinstructions",)):
        yield from _table_findings(img, name, sec, data, forms, ctx.era,
                                   lambda key, sec=sec, data=data: _alt_faults(data, sec.addr, key, code))


# struct fixup_entry (powerpc): unsigned long mask and value, then long
# start, end, alt_start and alt_end, each relative to the entry (since
# 2.6.27).  24 bytes from a 32-bit kernel; 48 from a 64-bit one, its
# vdso32's too (the offsets sign-extended by a 0xffffffff high word).
FTR_SECTIONS = ("__ftr_fixup", "__mmu_ftr_fixup", "__fw_ftr_fixup")
FTR_FORMS = {24: ("the 24-byte layout of a 32-bit kernel", "IIiiii"),
             48: ("the 48-byte layout of a 64-bit kernel", "QQqqqq")}


def _ftr_faults(data, base, size, order, code):
    fmt = order + FTR_FORMS[size][1]
    for i in range(0, len(data) - len(data) % size, size):
        _mask, _value, *rel = struct.unpack_from(fmt, data, i)
        start, end, alt, alt_end = (base + i + r for r in rel)
        ranges = f"body 0x{start:x}-0x{end:x}, alternative 0x{alt:x}-0x{alt_end:x}"
        if end < start or alt_end < alt:
            yield i // size, f"a range runs backwards ({ranges})"
        elif (start | end | alt | alt_end) & 3:
            yield i // size, f"a range is not word-aligned ({ranges})"
        elif not code.holds(start, end - start):
            yield i // size, f"body 0x{start:x}-0x{end:x} is not in the image's code"
        elif alt_end > alt and not code.holds(alt, alt_end - alt):
            yield i // size, f"alternative 0x{alt:x}-0x{alt_end:x} is not in the image's code"
        elif alt_end - alt > end - start:
            yield i // size, f"alternative of {alt_end - alt} bytes is longer than its body ({end - start})"


@rule("K006", "error",
      "powerpc: every feature-fixup entry must patch the image's own code with an alternative that fits",
      """powerpc kernels patch their vDSO before mapping it: do_feature_fixups()
      walks __ftr_fixup (and __mmu_ftr_fixup, __fw_ftr_fixup) and, where the
      CPU's features do not match an entry, copies its alternative over its
      body and fills the rest with nops.  An entry whose body or alternative
      lies outside the image's code, runs backwards or is not word-aligned
      makes the kernel write outside the code it patches; an alternative
      longer than its body the kernel refuses (a warning at boot, the code
      left unpatched).  Entries (struct fixup_entry, offsets from the entry
      since Linux 2.6.27) are 24 bytes from a 32-bit kernel and 48 from a
      64-bit one (its 32-bit vDSO's too): the kernel's word size, not its
      era, decides, so a 64-bit image is read with 48 and a 32-bit one with
      the layout that reads the table whole and sound.  Every finding names
      the layout it assumed.""")
def feature_fixups_fit(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_PPC, EM_PPC64):
        return
    code = _Code(img)
    order = "<" if img.little else ">"
    sizes = [48] if img.elf_class == 64 else [24, 48]
    forms = [(FTR_FORMS[n][0], n, n, [(parse("2.6.27"), None)] if img.elf_class == 64 else []) for n in sizes]
    # A 64-bit image's layout is known whatever its era; a 32-bit one's is chosen.
    era = parse("2.6.27") if img.elf_class == 64 else None
    for name, sec, data in _patch_sections(img, FTR_SECTIONS):
        yield from _table_findings(img, name, sec, data, forms, era,
                                   lambda n, sec=sec, data=data: _ftr_faults(data, sec.addr, n, order, code),
                                   "a 64-bit image's")
