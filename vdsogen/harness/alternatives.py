"""An image as its kernel maps it: with the boot-time patches ("alternatives")
applied that the kernel applies to its vDSO before mapping it, for the CPU
the harness plays (alternatives.toml says which ISAs, which caps that CPU
has, and how each Linux version numbers them).

arm64's kernel patches its vDSO at boot (apply_alternatives_vdso): the
image's .altinstructions section holds 12-byte records, each
    s32 orig_offset    the instructions to patch, from the field itself
    s32 alt_offset     their replacement, from the field itself (for a
                       callback record: the kernel function that patches)
    u16 cpucap         the cap; bit 15 (ARM64_CB_SHIFT) marks a callback
    u8  orig_len       bytes patched
    u8  alt_len        bytes of the replacement (0 for a callback)
in the image's byte order; the kernel reads them against the image's bytes,
so offsets here are file offsets.  A record of a cap the CPU has replaces
its instructions by the replacement's, word by word, re-aiming a branch
whose target is outside the replacement and an adrp at the new place; a
literal load (or adr) cannot move.  A cap the CPU lacks leaves them as
built.  A callback record names kernel code (alt_cb_patch_nops writes
nops), which a vDSO cannot reach: Linux builds its vDSO with the plain form
(alternative_has_cap_likely under BUILD_VDSO), so a callback record of a
present cap is an error here, and one of an absent cap is left, as the
kernel leaves it.  Debian's images carry HAS_ECV's counter read and, since
v6.12, HAS_FPSIMD's first word of __kernel_getrandom, which answers -ENOSYS
unpatched.

s390's kernel patches its vDSO at boot too (vdso_apply_alternatives, every
context): .altinstructions holds packed 13-byte big-endian records, each
    s32 instr_offset   the instructions to patch, from the field itself
    s32 repl_offset    their replacement, from the field itself
    u32 feature        ctx (4 bits), type (8), data (20): type 0 is a
                       facility (data: its number, as STFLE lists it),
                       1 the branch-prediction mitigation, 2 the
                       relocated lowcore
    u8  instrlen       bytes patched, as many as the replacement has
A record whose feature the machine has is copied over its instructions,
byte for byte (s390's replacements are position-independent); one it lacks
is left.  The record names its feature itself, so no version's numbering
is needed: "facility 129".  Debian's images test facility 129 (the vector
facility) at the start of __kernel_getrandom, which answers -ENOSYS
without it, and patch their ChaCha20 and counter reads for facilities 45
and 148.

`vdsogen test --image` (run_harness) and `vdsogen run --image`
(checked_image) map boot()'s bytes and print its line.  vdsogen's own images
have no such section, and run as they are.
"""

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, NoReturn

from vdsogen.errors import HarnessError, ImageError
from vdsogen.isa.base import sext

FACTS = Path(__file__).with_name("alternatives.toml")
CB_BIT = 1 << 15
PAGE = 4096         # adrp's granule


@dataclass(frozen=True)
class Record:
    index: int
    at: int             # file offset of the record
    orig: int           # file offset of the instructions it patches
    repl: int           # file offset of the replacement (a callback's: its code, outside the image)
    cap: int            # arm64: the cap without the callback bit; s390: the feature word
    callback: bool
    orig_len: int
    alt_len: int


@dataclass(frozen=True)
class Facts:
    """One ISA's table of alternatives.toml."""
    section: str
    present: frozenset[str]
    cpucaps: tuple[tuple[tuple[int, ...], dict[int, str]], ...]     # (since, number -> name), oldest first
    form: "Format"

    def names(self, version: tuple[int, ...] | None) -> tuple[str, dict[int, str]]:
        """(the row's version, number -> cap name) that holds at `version`; ("", {}) when none does."""
        from vdsogen.audit import era

        rows = [(since, names) for since, names in self.cpucaps if version is not None and since <= version]
        if not rows:
            return "", {}
        since, names = rows[-1]
        return era.show(since), names


@dataclass(frozen=True)
class Booted:
    """The image's bytes as the kernel maps them, and what was patched."""
    data: bytes
    applied: tuple[str, ...]        # "HAS_FPSIMD at 0x840 (__kernel_getrandom)"
    left: tuple[str, ...]           # "HAS_ECV at 0x354, 0x488 (the CPU lacks it)"
    present: frozenset[str]

    @property
    def line(self) -> str:
        cpu = ", ".join(sorted(self.present)) or "no cap"
        done = "; ".join(self.applied) or "none"
        left = f"; left as built: {'; '.join(self.left)}" if self.left else ""
        return (f"# alternatives: applied as its kernel booted on a CPU with {cpu} does "
                f"(vdsogen/harness/alternatives.toml): {done}{left}")


@lru_cache(maxsize=None)
def facts() -> dict[str, Facts]:
    """alternatives.toml, checked: ISA name -> Facts."""
    from vdsogen.audit import era
    from vdsogen.isa import registry
    from vdsogen.spec.toml import Table, did_you_mean, load_toml

    top = Table(FACTS, load_toml(FACTS))
    isas = {isa.name for isa in registry().values()}
    out = {}
    for isa in top.keys():
        if isa not in isas:
            top.error(isa, f"no ISA of that name{did_you_mean(isa, isas)}")
        t = top.table(isa)
        section = t.str("section")
        present = frozenset(t.list("present", str))
        form = FORMATS[isa] if isa in FORMATS else t.error(isa, f"vdsogen reads no {isa} patch records")
        cpucaps = []
        if form.numbered:
            rows = t.table("cpucaps")
            for since in rows.keys():
                row = rows.table(since)
                try:
                    key = era.parse(since)
                except ValueError:
                    rows.error(since, "not a Linux version (\"6.12\")")
                names = {row.int(name, lo=0, hi=CB_BIT - 1): name for name in row.keys()}
                if len(names) != len(row.keys()):
                    rows.error(since, "two caps of one number")
                row.done()
                cpucaps.append((key, names))
            rows.done()
            unknown = present - {n for _, names in cpucaps for n in names.values()}
            if unknown:
                t.error("present", f"{', '.join(sorted(unknown))}: in no row of [{isa}.cpucaps]")
        else:
            unnamed = sorted(n for n in present if form.named(n) is None)
            if unnamed:
                t.error("present", f"{', '.join(unnamed)}: not a feature its records name "
                                   f"(\"facility 129\")")
        t.done()
        out[isa] = Facts(section, present, tuple(sorted(cpucaps, key=lambda r: r[0])), form)
    top.done()
    return out


def records(img, section: str, form: "Format") -> list[Record]:
    """The patch records of `section` of `img` (an ElfImage) in `form`; [] without one."""
    sec = img.section(section)
    if sec is None:
        return []
    if sec.size % form.size or sec.offset + sec.size > len(img.data):
        raise HarnessError(f"{img.path}: {section} at 0x{sec.offset:x}: {sec.size} bytes, not whole "
                           f"{form.size}-byte records inside the file")
    order = "<" if img.endian == "little" else ">"
    return [form.unpack(order, img.data, i, at)
            for i, at in enumerate(range(sec.offset, sec.offset + sec.size, form.size))]


def _arm64_record(order: str, data: bytes, index: int, at: int) -> Record:
    orig, alt, cap, orig_len, alt_len = struct.unpack_from(order + "iiHBB", data, at)
    return Record(index, at, at + orig, at + 4 + alt, cap & ~CB_BIT, bool(cap & CB_BIT), orig_len, alt_len)


def _s390_record(order: str, data: bytes, index: int, at: int) -> Record:
    orig, repl, feature, length = struct.unpack_from(order + "iiIB", data, at)
    return Record(index, at, at + orig, at + 4 + repl, feature, False, length, length)


# s390's feature types (the record's 8 bits after its context).
S390_TYPES = {0: "facility", 1: "branch-prediction mitigation", 2: "relocated lowcore"}


def _s390_name(rec: Record) -> str:
    kind = S390_TYPES.get(rec.cap >> 20 & 0xFF, f"feature type {rec.cap >> 20 & 0xFF}")
    return f"{kind} {rec.cap & 0xFFFFF}" if kind == "facility" else kind


def _s390_named(name: str) -> str | None:
    """`name` if an s390 record can name it ("facility 129"), else None."""
    kind, _, number = name.rpartition(" ")
    if kind == "facility" and number.isdigit():
        return name
    return name if name in S390_TYPES.values() and name != "facility" else None


def boot(path, data: bytes | None = None) -> Booted | None:
    """The image at `path` (or its bytes `data`) patched as its kernel patches
    it at boot on the harness's CPU; None when its ISA's kernel patches
    nothing (no table in alternatives.toml), it has no records, or it is no
    readable ELF file."""
    from vdsogen.audit import era
    from vdsogen.elf.reader import ElfImage
    from vdsogen.isa import for_machine

    try:
        img = ElfImage(str(path), data)
    except ImageError:
        return None         # what reads it next says what is wrong with it
    isa = for_machine(img.e_machine)
    table = facts().get(isa.name) if isa is not None else None
    recs = records(img, table.section, table.form) if table is not None else []
    if table is None or not recs:
        return None
    version = era.version_of(img)
    row, names = table.names(version) if table.form.numbered else ("", {})
    out = bytearray(img.data)
    applied: list[str] = []
    left: dict[tuple[str, str], list[str]] = {}      # (cap, why) -> the places left
    for rec in recs:
        name = names.get(rec.cap) if table.form.numbered else table.form.name(rec)
        if name is None:
            why = ("no Linux version note, so no cap numbering" if version is None else
                   f"vdsogen names no cap {rec.cap} for Linux {era.show(version)}"
                   + (f" (alternatives.toml's row {row})" if row else ""))
            left.setdefault((f"cap {rec.cap}", why), []).append(f"0x{rec.orig:x}")
        elif name not in table.present:
            left.setdefault((name, "the CPU lacks it"), []).append(f"0x{rec.orig:x}")
        elif rec.callback:
            raise HarnessError(f"{path}: {table.section} record {rec.index} at 0x{rec.at:x}: a callback "
                               f"record of {name}, whose callback is kernel code outside the image; a kernel "
                               f"builds its vDSO's alternatives without one")
        else:
            table.form.patch(path, out, rec, table.section)
            applied.append(f"{name} at {_where(img, rec.orig)}")
    lines = tuple(f"{cap} at {', '.join(at)} ({why})" for (cap, why), at in left.items())
    return Booted(bytes(out), tuple(applied), lines, table.present)


def _where(img, offset: int) -> str:
    """"0x840 (__kernel_getrandom)": a file offset, and the export it is in."""
    for seg in img.loads:
        if seg.offset <= offset < seg.offset + seg.filesz:
            vaddr = seg.vaddr + offset - seg.offset
            inside = [s.name for s in img.dynsym if s.defined and s.value <= vaddr < s.value + s.size]
            return f"0x{offset:x} ({inside[0]})" if inside else f"0x{offset:x}"
    return f"0x{offset:x}"


def _arm64_patch(path, out: bytearray, rec: Record, section: str) -> None:
    """Write rec's replacement over its instructions in `out`, as the kernel does."""
    def bad(why: str) -> NoReturn:
        raise HarnessError(f"{path}: {section} record {rec.index} at 0x{rec.at:x}: {why}")

    if rec.alt_len != rec.orig_len or rec.orig_len % 4:
        bad(f"replaces {rec.orig_len} bytes by {rec.alt_len}: not the same whole instructions")
    for start in (rec.orig, rec.repl):
        if start < 0 or start + rec.orig_len > len(out):
            bad(f"0x{start:x}+{rec.orig_len} is outside the file")
    for i in range(0, rec.orig_len, 4):
        word = int.from_bytes(out[rec.repl + i:rec.repl + i + 4], "little")      # A64 code is little-endian
        moved = _moved(word, rec.repl + i, rec.orig + i, rec.repl, rec.repl + rec.alt_len)
        if moved is None:
            bad(f"its replacement word 0x{word:08x} at 0x{rec.repl + i:x} cannot move to 0x{rec.orig + i:x} "
                f"(a literal load, an adr, or a branch out of reach)")
        out[rec.orig + i:rec.orig + i + 4] = moved.to_bytes(4, "little")


# Immediate branches: (mask, match, shift of the offset field, its width in words).
BRANCHES = ((0x7C000000, 0x14000000, 0, 26),     # b, bl
            (0xFF000010, 0x54000000, 5, 19),     # b.cond
            (0x7E000000, 0x34000000, 5, 19),     # cbz, cbnz
            (0x7E000000, 0x36000000, 5, 14))     # tbz, tbnz


def _moved(word: int, src: int, dst: int, lo: int, hi: int) -> int | None:
    """An A64 instruction at `src` re-encoded for `dst`, so that it reaches
    what it reached (a branch to inside [lo, hi] keeps its offset); None
    for one that cannot move: a literal load, an adr, or an offset out of
    range."""
    for mask, match, shift, width in BRANCHES:
        if word & mask == match:
            field = (1 << width) - 1
            offset = sext((word >> shift) & field, width) * 4
            target = src + offset
            if lo <= target <= hi:
                return word
            offset = (target - dst) // 4
            if not -(1 << (width - 1)) <= offset < 1 << (width - 1):
                return None
            return word & ~(field << shift) | (offset & field) << shift
    if word & 0x9F000000 == 0x90000000:                 # adrp
        pages = sext((word >> 5 & 0x7FFFF) << 2 | (word >> 29 & 3), 21)
        pages += src // PAGE - dst // PAGE
        if not -(1 << 20) <= pages < 1 << 20:
            return None
        return word & ~(0x7FFFF << 5 | 3 << 29) | (pages >> 2 & 0x7FFFF) << 5 | (pages & 3) << 29
    if word & 0x9F000000 == 0x10000000 or word & 0x3B000000 == 0x18000000:   # adr; ldr/ldrsw/prfm literal
        return None
    return word


def _copy_patch(path, out: bytearray, rec: Record, section: str) -> None:
    """Copy rec's replacement over its instructions, as s390's kernel does."""
    for start in (rec.orig, rec.repl):
        if start < 0 or start + rec.orig_len > len(out):
            raise HarnessError(f"{path}: {section} record {rec.index} at 0x{rec.at:x}: "
                               f"0x{start:x}+{rec.orig_len} is outside the file")
    out[rec.orig:rec.orig + rec.orig_len] = out[rec.repl:rec.repl + rec.orig_len]


@dataclass(frozen=True)
class Format:
    """How one ISA's kernel records and applies its vDSO's patches."""
    size: int                                       # bytes of one record
    unpack: Callable[[str, bytes, int, int], Record]
    patch: Callable[[object, bytearray, Record, str], None]
    numbered: bool                                  # caps by number, numbered per version ([ISA.cpucaps])
    name: Callable[[Record], str] = lambda rec: str(rec.cap)        # the feature a record names itself
    named: Callable[[str], str | None] = lambda name: None          # a `present` name a record can name


FORMATS = {
    "arm64": Format(12, _arm64_record, _arm64_patch, numbered=True),
    "s390": Format(13, _s390_record, _copy_patch, numbered=False, name=_s390_name, named=_s390_named),
}


__all__ = ["Booted", "Record", "Facts", "Format", "FORMATS", "boot", "records", "facts"]
