"""Rules on the code patches a kernel applies to the image before it maps it."""

import struct

from vdsogen.elf.consts import EM_386, EM_PPC, EM_PPC64, EM_X86_64, SHF_EXECINSTR, SHT_NOBITS
from vdsogen.audit.rules import Context, Findings, rule

# struct alt_instr: s32 instr_offset, s32 repl_offset, the feature (u16 up
# to Linux 6.1, u32 feature and flags from 6.2), u8 instrlen, u8 replacementlen.
ALT_FORMATS = {12: "<iiHBB", 14: "<iiIBB"}


class _Code:
    """The image's executable sections, as address ranges (vDSOs link at 0:
    a section's address is its file offset)."""

    def __init__(self, img):
        self.ranges = [(s.addr, s.addr + s.size) for s in img.sections
                       if s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS]

    def holds(self, addr, n):
        return any(lo <= addr and addr + n <= hi for lo, hi in self.ranges)


def _table_findings(name, sec, data, sizes, faults_of):
    """Findings on the patch table `data` of section `sec`, read with the entry
    size of `sizes` that reads it most soundly; faults_of(data, size) yields
    (entry index, why) for each entry a kernel could not apply safely."""
    best = None
    for size in sizes:
        faults = list(faults_of(data, size))
        if len(data) % size:
            faults.insert(0, (None, f"{len(data)} bytes are not a whole number of {size}-byte entries"))
        if best is None or len(faults) < len(best[1]):
            best = (size, faults)
    size, faults = best
    for i, why in faults:
        where = f"@0x{sec.offset:x}" if i is None else f"@0x{sec.offset + i * size:x}"
        yield where, (f"{name}: {why}" if i is None else f"{name} entry {i}: {why}")


def _patch_sections(img, names):
    """(name, section, its bytes) of each non-empty section in names."""
    for name in names:
        sec = img.section(name)
        if sec is not None and sec.type != SHT_NOBITS and sec.size:
            yield name, sec, bytes(img.section_bytes(sec))


def _alt_faults(data, base, size, code):
    fmt = ALT_FORMATS[size]
    for i in range(0, len(data) - len(data) % size, size):
        rel_instr, rel_repl, _feature, ilen, rlen = struct.unpack_from(fmt, data, i)
        instr, repl = base + i + rel_instr, base + i + 4 + rel_repl
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
      refuse at boot).  Entries are 12 bytes up to Linux 6.1 and 14 from 6.2:
      the image's version note says which; without one, the form that reads
      the table whole and sound.""")
def alternatives_fit(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_386, EM_X86_64):
        return
    code = _Code(img)
    for name, sec, data in _patch_sections(img, (".altinstructions",)):
        if ctx.era is not None:
            sizes = [14 if ctx.era >= (6, 2, 0) else 12]
        else:
            sizes = [n for n in (14, 12) if len(data) % n == 0] or [14]
        yield from _table_findings(name, sec, data, sizes,
                                   lambda data, size, sec=sec: _alt_faults(data, sec.addr, size, code))


# struct fixup_entry (powerpc): unsigned long mask and value, then long
# start, end, alt_start and alt_end, each relative to the entry.  24 bytes
# from a 32-bit kernel; 48 from a 64-bit one, its vdso32's too (the offsets
# sign-extended by a 0xffffffff high word, big-endian).
FTR_SECTIONS = ("__ftr_fixup", "__mmu_ftr_fixup", "__fw_ftr_fixup")
FTR_FORMATS = {24: "IIiiii", 48: "QQqqqq"}


def _ftr_faults(data, base, size, order, code):
    fmt = order + FTR_FORMATS[size]
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
      left unpatched).  Entries are 24 bytes from a 32-bit kernel and 48
      from a 64-bit one (its 32-bit vDSO's too): the form that reads the
      table whole and sound.""")
def feature_fixups_fit(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_PPC, EM_PPC64):
        return
    code = _Code(img)
    order = "<" if img.little else ">"
    sizes = [48] if img.elf_class == 64 else [24, 48]
    for name, sec, data in _patch_sections(img, FTR_SECTIONS):
        yield from _table_findings(name, sec, data, sizes,
                                   lambda data, size, sec=sec: _ftr_faults(data, sec.addr, size, order, code))
