"""A bounded, read-only view of one ELF image, built for untrusted files.

Everything is read here from the bytes, the way glibc, musl or Go read it:
the headers, the section and symbol tables, and the structures a loader
reaches through the dynamic segment (tags, hash tables, version
definitions, strings, relocations) and the notes.  Every offset, count and
chain walk is bounded, so that a damaged file yields an ImageError (or a
finding), never a hang or a traceback.  s390x's 8-byte .hash words are
read right.

Only regular files are read (read_image_file): a FIFO or a device would
block or never end.  Caps (MAX_*) refuse what no vDSO has: thousands of
sections or symbols.  Within them, time is bounded by one work budget per
file (`Budget`): the reader, the rules, the code walk and the consumer
simulation charge it one unit per symbol, hash-chain step, dynamic entry,
relocation, version definition, note, lookup candidate or decoded
instruction (four code words scanned, 32 bytes of a name hashed).  A vDSO
needs about a thousand units; a file that needs more than WORK_BUDGET is
"too complex for a vDSO" (exit 2).  Hash tables are read once and each
chain walked once, so that lookups cost no more than their chain.

The symbols are read twice: `dynsym` is the .dynsym section as binutils
shows it (or, when the image has no section headers, the loader's view),
`loader_dynsym()` is what a loader reaches from DT_SYMTAB, counting the
entries from DT_HASH's nchain or from DT_GNU_HASH.
"""

import os
import stat
import struct
from dataclasses import dataclass

from elftools.elf.enums import ENUM_E_MACHINE

from vdsogen.errors import ImageError

MAX_IMAGE = 64 << 20          # far above any vDSO, .dbg included
MAX_ENTRIES = 1 << 16         # dynamic entries, hash buckets and chains, relocations per table
MAX_SYMBOLS = 1 << 12         # per symbol table: a .dbg vDSO has a few hundred
MAX_PHDRS = 64                # a vDSO has 4 to 8 program headers
MAX_SECTIONS = 256            # a .dbg vDSO has 20 to 40 sections
MAX_NOTES = 1024
MAX_NAME = 4096               # longest symbol or section name read (note names are cut)
# Units of work per file (see Budget).  The biggest image of the test corpus
# (vdsogen's own ppc64le .so.dbg) needs about 770, the live x86_64 vDSO about
# 1100: this is more than 50 times either, and at a few microseconds a unit,
# a few tenths of a second.
WORK_BUDGET = 60_000

# Values the rules compare against (elf.h).
ET_DYN = 3
PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_SHLIB, PT_PHDR, PT_TLS = range(8)
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E551, 0x6474E552, 0x6474E553
PF_X, PF_W, PF_R = 1, 2, 4
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOTE = range(8)
SHT_NOBITS, SHT_REL, SHT_DYNSYM = 8, 9, 11
SHT_RELR = 19
SHT_GNU_HASH, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STB_GNU_UNIQUE = 10
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS = range(7)
STT_GNU_IFUNC = 10
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
VER_FLG_BASE = 1

EM_386, EM_MIPS, EM_PPC, EM_PPC64, EM_S390, EM_ARM = 3, 8, 20, 21, 22, 40
EM_X86_64, EM_AARCH64, EM_RISCV, EM_LOONGARCH = 62, 183, 243, 258
EF_ARM_BE8 = 0x00800000

DT = {
    "NULL": 0, "NEEDED": 1, "PLTRELSZ": 2, "PLTGOT": 3, "HASH": 4, "STRTAB": 5, "SYMTAB": 6,
    "RELA": 7, "RELASZ": 8, "RELAENT": 9, "STRSZ": 10, "SYMENT": 11, "INIT": 12, "FINI": 13,
    "SONAME": 14, "RPATH": 15, "SYMBOLIC": 16, "REL": 17, "RELSZ": 18, "RELENT": 19,
    "PLTREL": 20, "DEBUG": 21, "TEXTREL": 22, "JMPREL": 23, "BIND_NOW": 24, "INIT_ARRAY": 25,
    "FINI_ARRAY": 26, "INIT_ARRAYSZ": 27, "FINI_ARRAYSZ": 28, "RUNPATH": 29, "FLAGS": 30,
    "PREINIT_ARRAY": 32, "PREINIT_ARRAYSZ": 33, "SYMTAB_SHNDX": 34, "RELRSZ": 35, "RELR": 36,
    "RELRENT": 37, "GNU_HASH": 0x6FFFFEF5, "VERSYM": 0x6FFFFFF0, "RELACOUNT": 0x6FFFFFF9,
    "RELCOUNT": 0x6FFFFFFA, "FLAGS_1": 0x6FFFFFFB, "VERDEF": 0x6FFFFFFC, "VERDEFNUM": 0x6FFFFFFD,
    "VERNEED": 0x6FFFFFFE, "VERNEEDNUM": 0x6FFFFFFF,
}
DT_NAMES = {v: k for k, v in DT.items()}


def elf_hash(name):
    """The SysV ELF hash (DT_HASH buckets, verdef vd_hash)."""
    h = 0
    for c in name.encode() if isinstance(name, str) else name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name):
    h = 5381
    for c in name.encode() if isinstance(name, str) else name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class Segment:
    index: int
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    align: int
    hdr_offset: int    # where this phdr sits in the file

    def contains(self, vaddr, size=1):
        return self.vaddr <= vaddr and vaddr + size <= self.vaddr + self.filesz


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int
    hdr_offset: int


@dataclass(frozen=True)
class Symbol:
    index: int
    name: str
    value: int
    size: int
    type: int
    bind: int
    visibility: int
    shndx: int
    table: str         # ".dynsym" or ".symtab"
    offset: int = 0    # file offset of the entry

    @property
    def defined(self):
        return self.shndx != SHN_UNDEF


@dataclass(frozen=True)
class Verdef:
    index: int
    flags: int
    count: int
    hash: int
    name: str
    offset: int        # file offset of the Verdef record


@dataclass(frozen=True)
class Note:
    name: str
    type: int
    desc: bytes        # a read-only view of the description bytes
    offset: int
    aligned: bool
    namesz: int = 0


@dataclass(frozen=True)
class Reloc:
    table: str         # "DT_REL", "DT_RELA", "DT_JMPREL"
    offset: int        # file offset of the entry
    type: int          # r_type (first type on MIPS64)
    sym: int


# A damaged file can trip the struct arithmetic in many ways.
PARSE_ERRORS = (struct.error, ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError,
                ZeroDivisionError, UnicodeDecodeError, AssertionError, RecursionError)

MACHINE_NAMES = {value: name for name, value in ENUM_E_MACHINE.items() if isinstance(value, int)}


class Unreadable(Exception):
    """A part of the image cannot be read; rules report it, others go on."""

    def __init__(self, message, offset=None):
        super().__init__(message)
        self.offset = offset


class TooComplex(ImageError):
    """The file needs more work than any vDSO: it is reported as unusable."""


class Budget:
    """The units of work one file may take (see the module docstring).

    Deterministic: the same bytes always take the same number of units."""

    def __init__(self, path, limit=WORK_BUDGET):
        self.path = str(path)
        self.limit = limit
        self.used = 0

    def charge(self, units=1):
        """Account for work about to be done; TooComplex (and the work is not
        done) when it would go over the limit."""
        if self.used + units > self.limit:
            raise TooComplex(self.path, f"too complex for a vDSO: it needs more than {self.limit} units of work "
                                        "(symbols, hash chain steps, instructions) to audit")
        self.used += units

    def disarm(self):
        """Lift the limit once the audit is over (reports may read a little more)."""
        self.limit = float("inf")


def _file_kind(mode):
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def read_image_file(path):
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


class ElfImage:
    """Everything the rules look at, read once, eagerly and within bounds."""

    def __init__(self, path, data=None, budget=None):
        self.path = str(path)
        self.budget = budget or Budget(path)
        self.charge = self.budget.charge
        self._cache = {}
        if data is None:
            data = read_image_file(path)
        data = bytes(data)
        if len(data) > MAX_IMAGE:
            raise ImageError(path, f"larger than {MAX_IMAGE >> 20} MiB: not a vDSO")
        if data[:4] != b"\x7fELF":
            raise ImageError(path, "not an ELF file (bad magic)", 0)
        if len(data) < 16 or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise ImageError(path, "bad ELF class or data encoding in e_ident", 4)
        self.data = data
        self.view = memoryview(data)
        self.elf_class = 32 if data[4] == 1 else 64
        self.little = data[5] == 1
        self.endian = "little" if self.little else "big"
        self.osabi = data[7]
        e = "<" if self.little else ">"
        self._e = e
        self.word = "I" if self.elf_class == 32 else "Q"
        self.wsize = 4 if self.elf_class == 32 else 8
        self.symsize = 16 if self.elf_class == 32 else 24
        try:
            self._read_headers()
        except Unreadable as err:
            raise ImageError(path, f"malformed ELF headers: {err}", err.offset) from None
        except PARSE_ERRORS as err:
            raise ImageError(path, f"malformed ELF headers: {err or type(err).__name__}") from None
        try:
            self.dynamic = self._read_dynamic()
            self.note_problems = []
            self.notes = self._read_notes()
            self.symtab = self._read_symbols(".symtab", SHT_SYMTAB)
            section_dynsym = self._read_symbols(".dynsym", SHT_DYNSYM)
            self.dynsym_from_sections = bool(self.sections_of_type(SHT_DYNSYM))
            self.dynsym = section_dynsym if self.dynsym_from_sections else self._loader_dynsym_or_empty()
        except Unreadable as err:
            raise ImageError(path, str(err), err.offset) from None
        except PARSE_ERRORS as err:
            raise ImageError(path, f"malformed ELF: {err or type(err).__name__}") from None

    # -- low level -----------------------------------------------------

    def unpack(self, fmt, offset):
        fmt = self._e + fmt.replace("W", self.word)
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > len(self.data):
            raise Unreadable(f"read of {size} bytes at 0x{offset:x} is past the end of the file", offset)
        return struct.unpack_from(fmt, self.data, offset)

    def u32(self, offset):
        return self.unpack("I", offset)[0]

    def cstring(self, offset, limit=MAX_NAME):
        if offset < 0 or offset >= len(self.data):
            raise Unreadable(f"string at 0x{offset:x} is outside the file", offset)
        end = self.data.find(b"\0", offset, offset + limit)
        if end < 0:
            raise Unreadable(f"unterminated string at 0x{offset:x}", offset)
        return self.data[offset:end].decode("utf-8", "replace")

    def _table_string(self, offset):
        """A name from a string table, as binutils reads it: "" when it runs
        off the end of the file or lies outside it."""
        if offset < 0 or offset >= len(self.data):
            return ""
        end = self.data.find(b"\0", offset, offset + MAX_NAME)
        if end < 0:
            if offset + MAX_NAME < len(self.data):
                raise Unreadable(f"name at 0x{offset:x} is longer than {MAX_NAME} bytes", offset)
            return ""
        return self.data[offset:end].decode("utf-8", "replace")

    def offset_of(self, vaddr, size=1):
        """File offset of a virtual address, through the PT_LOAD that maps it."""
        for seg in self.loads:
            if seg.contains(vaddr, size) and seg.offset + (vaddr - seg.vaddr) + size <= len(self.data):
                return seg.offset + (vaddr - seg.vaddr)
        raise Unreadable(f"address 0x{vaddr:x} is not inside a PT_LOAD", None)

    def bytes_at(self, vaddr, size):
        off = self.offset_of(vaddr, size)
        return self.data[off:off + size]

    @property
    def code_endian(self):
        """Byte order of instructions: AArch64 code and ARM BE-8 code are little-endian."""
        if self.e_machine == EM_AARCH64:
            return "little"
        if self.e_machine == EM_ARM and self.e_flags & EF_ARM_BE8:
            return "little"
        return self.endian

    @property
    def image_end(self):
        """End of the mapped image: the end of the furthest PT_LOAD, or the file size."""
        if not self.loads:
            return len(self.data)
        return max(s.vaddr + s.memsz for s in self.loads)

    def _cached(self, key, compute):
        """compute() once per image; an Unreadable is raised again on every call."""
        if key not in self._cache:
            try:
                self._cache[key] = (True, compute())
            except Unreadable as err:
                self._cache[key] = (False, err)
        ok, value = self._cache[key]
        if not ok:
            raise Unreadable(str(value), value.offset)
        return value

    # -- headers ----------------------------------------------------------

    def _read_headers(self):
        (self.e_type, self.e_machine, _version, self.e_entry, self.e_phoff, self.e_shoff,
         self.e_flags, _ehsize, self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = self.unpack("HHIWWWIHHHHHH", 16)
        if self.e_phnum > MAX_PHDRS:
            raise Unreadable(f"e_phnum {self.e_phnum}: absurd for a vDSO (at most {MAX_PHDRS} read)",
                             0x2C if self.elf_class == 32 else 0x38)
        if self.e_shnum > MAX_SECTIONS:
            raise Unreadable(f"e_shnum {self.e_shnum}: absurd for a vDSO (at most {MAX_SECTIONS} read)",
                             0x30 if self.elf_class == 32 else 0x3C)
        self.machine_name = MACHINE_NAMES.get(self.e_machine, f"EM_{self.e_machine}")
        phsize = 32 if self.elf_class == 32 else 56
        field = 0x1C if self.elf_class == 32 else 0x20      # e_phoff
        if self.e_phnum and self.e_phentsize != phsize:
            raise Unreadable(f"e_phentsize {self.e_phentsize}, expected {phsize}",
                             0x2A if self.elf_class == 32 else 0x36)
        if self.e_phnum * phsize + self.e_phoff > len(self.data):
            raise Unreadable(f"{self.e_phnum} program headers at 0x{self.e_phoff:x} run past the end of the "
                             f"file (0x{len(self.data):x} bytes)", field)
        self.charge(self.e_phnum + self.e_shnum)
        self.segments = []
        for i in range(self.e_phnum):
            off = self.e_phoff + i * phsize
            if self.elf_class == 32:
                ptype, poff, vaddr, _pa, filesz, memsz, flags, align = self.unpack("IIIIIIII", off)
            else:
                ptype, flags, poff, vaddr, _pa, filesz, memsz, align = self.unpack("IIQQQQQQ", off)
            self.segments.append(Segment(i, ptype, flags, poff, vaddr, filesz, memsz, align, off))
        self.loads = [s for s in self.segments if s.type == PT_LOAD]

        self.sections = []
        if self.e_shoff and self.e_shnum:
            shsize = 40 if self.elf_class == 32 else 64
            field = 0x20 if self.elf_class == 32 else 0x28    # e_shoff
            if self.e_shentsize != shsize:
                raise Unreadable(f"e_shentsize {self.e_shentsize}, expected {shsize}",
                                 0x2E if self.elf_class == 32 else 0x3A)
            if self.e_shoff + self.e_shnum * shsize > len(self.data):
                raise Unreadable(f"{self.e_shnum} section headers at 0x{self.e_shoff:x} run past the end of "
                                 f"the file (0x{len(self.data):x} bytes)", field)
            fmt = "IIIIIIIIII" if self.elf_class == 32 else "IIQQQQIIQQ"
            raw = [self.unpack(fmt, self.e_shoff + i * shsize) for i in range(self.e_shnum)]
            names = raw[self.e_shstrndx][4] if 0 < self.e_shstrndx < self.e_shnum else None
            for i, (sh_name, sh_type, flags, addr, offset, size, link, info, _align, entsize) in enumerate(raw):
                try:
                    name = self._table_string(names + sh_name) if names is not None else ""
                except Unreadable as err:
                    raise Unreadable(f"section header {i}: {err}", self.e_shoff + i * shsize) from None
                self.sections.append(Section(i, name, sh_type, flags, addr, offset, size, link, info, entsize,
                                             self.e_shoff + i * shsize))

    def section(self, name):
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def sections_of_type(self, sh_type):
        return [s for s in self.sections if s.type == sh_type]

    def segments_of_type(self, p_type):
        return [s for s in self.segments if s.type == p_type]

    def section_bytes(self, sec):
        """A read-only view of a section's bytes in the file (empty for SHT_NOBITS)."""
        if sec.type == SHT_NOBITS or sec.offset >= len(self.data):
            return self.view[0:0]
        return self.view[sec.offset:sec.offset + sec.size]

    # -- dynamic segment (as a loader reads it) -------------------------------

    def _read_dynamic(self):
        self._dyn_first = {}
        dyns = self.segments_of_type(PT_DYNAMIC)
        if not dyns:
            return None
        seg = dyns[0]
        esize = 2 * self.wsize
        count = min(seg.filesz // esize, MAX_ENTRIES)
        tags = []
        for i in range(count):
            self.charge()
            tag, val = self.unpack("WW", seg.offset + i * esize)
            if self.elf_class == 64 and tag >= 1 << 63:
                tag -= 1 << 64
            tags.append((tag, val, seg.offset + i * esize))
            self._dyn_first.setdefault(tag, (val, seg.offset + i * esize))
            if tag == DT["NULL"]:
                break
        return tags

    def dyn(self, name):
        """First value of a dynamic tag, or None."""
        first = self._dyn_first.get(DT[name])
        return None if first is None else first[0]

    def dyn_all(self, name):
        return [val for tag, val, _ in self.dynamic or () if tag == DT[name]]

    def dyn_offset(self, name):
        """File offset of the first entry with this tag (for `where`)."""
        first = self._dyn_first.get(DT[name])
        return None if first is None else first[1]

    def at_tag(self, name, size=1, addr=None):
        """File offset of what dynamic tag `name` points at; Unreadable naming the tag if outside."""
        addr = self.dyn(name) if addr is None else addr
        try:
            return self.offset_of(addr, size)
        except Unreadable:
            raise Unreadable(f"DT_{name} 0x{addr:x} (+0x{size:x} bytes) is not inside a PT_LOAD",
                             self.dyn_offset(name)) from None

    def dynstr(self, offset):
        strtab, strsz = self.dyn("STRTAB"), self.dyn("STRSZ")
        if strtab is None:
            raise Unreadable("no DT_STRTAB")
        if strsz is not None and offset >= strsz:
            raise Unreadable(f"string offset {offset} is past DT_STRSZ {strsz}", self.dyn_offset("STRSZ"))
        return self.cstring(self._cached("strtab", lambda: self.at_tag("STRTAB")) + offset)

    # -- symbols -------------------------------------------------------------

    def _read_symbols(self, name, sh_type):
        secs = [s for s in self.sections if s.type == sh_type]
        if not secs:
            return []
        sec = secs[0]
        entsize = self.symsize
        if sec.entsize != entsize:
            raise Unreadable(f"{sec.name or name}: sh_entsize {sec.entsize}, expected {entsize}", sec.hdr_offset)
        count = sec.size // entsize
        if count > MAX_SYMBOLS:
            raise Unreadable(f"{sec.name or name}: {count} symbols, absurd for a vDSO (at most {MAX_SYMBOLS} read)",
                             sec.hdr_offset)
        if sec.offset + sec.size > len(self.data):
            raise Unreadable(f"{sec.name or name}: 0x{sec.offset:x}+0x{sec.size:x} runs past the end of the file",
                             sec.hdr_offset)
        if not 0 < sec.link < len(self.sections):
            raise Unreadable(f"{sec.name or name}: sh_link {sec.link} is not a string table", sec.hdr_offset)
        strsec = self.sections[sec.link]
        if strsec.type != SHT_STRTAB or strsec.offset + strsec.size > len(self.data):
            raise Unreadable(f"{sec.name or name}: its string table (section {sec.link}) is unusable",
                             strsec.hdr_offset)
        self.charge(count)
        fmt = self._e + ("IIIBBH" if self.elf_class == 32 else "IBBHQQ")
        out = []
        rows = struct.iter_unpack(fmt, self.view[sec.offset:sec.offset + count * entsize])
        for i, row in enumerate(rows):
            if self.elf_class == 32:
                st_name, value, size, info, other, shndx = row
            else:
                st_name, info, other, shndx, value, size = row
            out.append(Symbol(i, self._table_string(strsec.offset + st_name), value, size, info & 0xF, info >> 4,
                              other & 3, shndx, name, sec.offset + i * entsize))
        return out

    def loader_symbol_count(self):
        """How many .dynsym entries a loader assumes: DT_HASH nchain, else the
        highest index DT_GNU_HASH reaches, plus one."""
        table = self.sysv_hash()
        if table is not None:
            return table[1]
        t = self.gnu_hash_table()
        if t is None:
            return None
        top = max(t["buckets"], default=0)
        if top < t["symoffset"]:
            return t["symoffset"]
        idx = top
        for _ in range(MAX_SYMBOLS + 1):
            self.charge()
            if self.u32(t["chain_off"] + 4 * (idx - t["symoffset"])) & 1:
                return idx + 1
            idx += 1
        raise Unreadable(f"DT_GNU_HASH: the last chain runs past {MAX_SYMBOLS} symbols", t["chain_off"])

    def loader_dynsym(self):
        """The dynamic symbols as a loader reaches them: DT_SYMTAB, DT_STRTAB,
        with the count from the hash tables."""
        symtab = self.dyn("SYMTAB")
        if symtab is None:
            raise Unreadable("no DT_SYMTAB")
        count = self.loader_symbol_count()
        if count is None:
            raise Unreadable("no DT_HASH or DT_GNU_HASH to count the symbols")
        if count > MAX_SYMBOLS:
            raise Unreadable(f"the hash tables claim {count} symbols")
        base = self.at_tag("SYMTAB", max(count, 1) * self.symsize)
        self.charge(count)
        out = []
        for i in range(count):
            off = base + i * self.symsize
            if self.elf_class == 32:
                st_name, value, size, info, other, shndx = self.unpack("IIIBBH", off)
            else:
                st_name, info, other, shndx, value, size = self.unpack("IBBHQQ", off)
            out.append(Symbol(i, self.dynstr(st_name), value, size, info & 0xF, info >> 4, other & 3,
                              shndx, ".dynsym", off))
        return out

    def _loader_dynsym_or_empty(self):
        if self.dynamic is None:
            return []
        try:
            return self.loader_dynsym()
        except Unreadable:
            return []

    # -- versions (as a loader reads them) --------------------------------------

    def versym(self, count):
        addr = self.dyn("VERSYM")
        if addr is None:
            return None

        def read():
            off = self.at_tag("VERSYM", 2 * max(count, 1))
            self.charge(count)
            return list(struct.unpack_from(f"{self._e}{count}H", self.data, off))
        return self._cached(("versym", count), read)

    def verdefs(self):
        if self.dyn("VERDEF") is None:
            return None
        return list(self._cached("verdefs", self._read_verdefs))

    def _read_verdefs(self):
        declared = self.dyn("VERDEFNUM")
        off = self.at_tag("VERDEF", 20)
        out, seen = [], set()
        limit = min(declared if declared is not None else MAX_ENTRIES, 1024)
        for _ in range(limit):
            self.charge()
            if off in seen:
                raise Unreadable("verdef chain loops", off)
            seen.add(off)
            version, flags, ndx, cnt, vhash, aux, nxt = self.unpack("HHHHIII", off)
            if version != 1:
                raise Unreadable(f"verdef vd_version {version}, expected 1", off)
            if cnt < 1:
                raise Unreadable("verdef with no name (vd_cnt 0)", off)
            name_off = self.unpack("I", off + aux)[0]
            out.append(Verdef(ndx, flags, cnt, vhash, self.dynstr(name_off), off))
            if nxt == 0:
                break
            off += nxt
        return out

    # -- hash tables -------------------------------------------------------

    def elf_hash(self, name):
        """elf_hash(name), charged by its length: a name can be 4 KiB long."""
        self.charge(len(name) >> 5)
        return elf_hash(name)

    def gnu_hash(self, name):
        self.charge(len(name) >> 5)
        return gnu_hash(name)

    @property
    def hash_word(self):
        """.hash word size consumers use: 8 on s390x (64-bit s390), 4 everywhere else."""
        return 8 if self.e_machine == EM_S390 and self.elf_class == 64 else 4

    def sysv_hash(self, word=None):
        """(nbucket, nchain, buckets, chains) of DT_HASH, or None."""
        if self.dyn("HASH") is None:
            return None
        word = word or self.hash_word
        return self._cached(("sysv", word), lambda: self._read_sysv_hash(word))

    def _read_sysv_hash(self, word):
        w = "I" if word == 4 else "Q"
        off = self.at_tag("HASH", 2 * word)
        nbucket, nchain = self.unpack(w + w, off)
        if nbucket > MAX_ENTRIES or nchain > MAX_ENTRIES:
            raise Unreadable(f"DT_HASH claims {nbucket} buckets and {nchain} chains", off)
        self.at_tag("HASH", (2 + nbucket + nchain) * word)
        self.charge((nbucket + nchain) // 16)        # one C-speed read of the words
        words = struct.unpack_from(f"{self._e}{nbucket + nchain}{w}", self.data, off + 2 * word)
        return nbucket, nchain, words[:nbucket], words[nbucket:]

    def sysv_hash_word_in_file(self):
        """The .hash word size the file was written with (4 or 8), or None.

        The section's sh_entsize says it when there is one; otherwise the
        layout that gives a plausible header wins."""
        if self.dyn("HASH") is None:
            return None
        for sec in self.sections_of_type(SHT_HASH):
            if sec.entsize in (4, 8):
                return sec.entsize
        plausible = []
        for word in (4, 8):
            try:
                nbucket, nchain, _b, _c = self.sysv_hash(word)
            except Unreadable:
                continue
            if nbucket and (not self.dynsym or nchain == len(self.dynsym)):
                plausible.append(word)
        if len(plausible) == 1:
            return plausible[0]
        return self.hash_word

    def _sysv_index(self, word):
        """Walk every DT_HASH chain once, against .dynsym: (problems, found,
        merged).  found maps each name to the index a lookup of it returns
        when no chains merge; a loop makes the image unusable."""
        nbucket, nchain, buckets, chains = self.sysv_hash(word)
        names = [s.name for s in self.dynsym]
        problems, seen, found, merged = [], set(), {}, False
        self.charge(nbucket // 16)                  # an empty bucket costs little
        for b, idx in enumerate(buckets):
            walk = set()
            while idx:
                self.charge()
                if idx >= nchain:
                    problems.append((b, f"the chain of bucket {b} reaches index {idx}, past nchain {nchain}"))
                    break
                if idx in walk:
                    raise Unreadable(f"DT_HASH: the chain of bucket {b} loops at index {idx}",
                                     self.offset_of(self.dyn("HASH")))
                if idx in seen:
                    problems.append((b, f"the chain of bucket {b} joins another chain at index {idx}"))
                    merged = True
                    break
                walk.add(idx)
                seen.add(idx)
                if idx < len(names) and names[idx] not in found and self.elf_hash(names[idx]) % nbucket == b:
                    found[names[idx]] = idx
                idx = chains[idx]
        return problems, found, merged

    def sysv_chain_problems(self, word=None):
        """Walk every DT_HASH chain once: a loop makes the image unusable
        (Unreadable); an index past nchain or chains that merge are returned
        as (bucket, message)."""
        if self.sysv_hash(word) is None:
            return []
        word = word or self.hash_word
        return list(self._cached(("sysv-index", word), lambda: self._sysv_index(word))[0])

    def sysv_lookup(self, name, symbols, word=None):
        table = self.sysv_hash(word)
        if table is None:
            return None
        nbucket, nchain, buckets, chains = table
        if nbucket == 0:
            return None
        word = word or self.hash_word
        if symbols is self.dynsym:
            _problems, found, merged = self._cached(("sysv-index", word), lambda: self._sysv_index(word))
            if not merged:
                return found.get(name)
        idx = buckets[self.elf_hash(name) % nbucket]
        for _ in range(nchain + 1):           # a chain can visit each entry once
            self.charge()
            if idx == 0 or idx >= nchain:
                return None
            if idx < len(symbols) and symbols[idx].name == name:
                return idx
            idx = chains[idx]
        raise Unreadable(f"DT_HASH chain for {name!r} loops")

    def gnu_hash_table(self):
        if self.dyn("GNU_HASH") is None:
            return None
        return self._cached("gnu", self._read_gnu_hash)

    def _read_gnu_hash(self):
        off = self.at_tag("GNU_HASH", 16)
        nbuckets, symoffset, bloom_size, bloom_shift = self.unpack("IIII", off)
        if nbuckets > MAX_ENTRIES or bloom_size > MAX_ENTRIES or symoffset > MAX_SYMBOLS:
            raise Unreadable(f"DT_GNU_HASH claims {nbuckets} buckets, {bloom_size} bloom words, "
                             f"symoffset {symoffset}", off)
        bloom_off = off + 16
        buckets_off = bloom_off + bloom_size * self.wsize
        self.at_tag("GNU_HASH", 16 + bloom_size * self.wsize + 4 * nbuckets)
        self.charge((nbuckets + bloom_size) // 16)
        bloom = struct.unpack_from(f"{self._e}{bloom_size}{self.word}", self.data, bloom_off)
        buckets = struct.unpack_from(f"{self._e}{nbuckets}I", self.data, buckets_off)
        return {"nbuckets": nbuckets, "symoffset": symoffset, "bloom_shift": bloom_shift,
                "bloom_size": bloom_size, "bloom": bloom, "buckets": buckets, "offset": off,
                "chain_off": buckets_off + 4 * nbuckets}

    def _gnu_chain(self, start):
        """Walk the DT_GNU_HASH chain from index `start` once, against .dynsym:
        {name: first index whose chain hash and name match}, and what ended
        the walk if not its end marker (an Unreadable, or "never ends")."""
        t = self.gnu_hash_table()
        found = {}
        idx = start
        try:
            for _ in range(MAX_SYMBOLS + 1):
                self.charge()
                ch = self.u32(t["chain_off"] + 4 * (idx - t["symoffset"]))
                if idx < len(self.dynsym):
                    name = self.dynsym[idx].name
                    if name not in found and (ch | 1) == (self._gnu_hash_of(idx) | 1):
                        found[name] = idx
                if ch & 1:
                    return found, None
                idx += 1
            return found, "never ends"
        except Unreadable as err:
            return found, err

    def _gnu_hash_of(self, index):
        hashes = self._cache.setdefault("gnu-hashes", {})
        if index not in hashes:
            hashes[index] = self.gnu_hash(self.dynsym[index].name)
        return hashes[index]

    def gnu_lookup(self, name, symbols):
        t = self.gnu_hash_table()
        if t is None or t["nbuckets"] == 0:
            return None
        h = self.gnu_hash(name)
        bits = self.wsize * 8
        if t["bloom"]:
            word = t["bloom"][(h // bits) % len(t["bloom"])]
            mask = (1 << (h % bits)) | (1 << ((h >> t["bloom_shift"]) % bits))
            if word & mask != mask:
                return None
        idx = t["buckets"][h % t["nbuckets"]]
        if idx == 0:
            return None
        if idx < t["symoffset"]:
            raise Unreadable(f"DT_GNU_HASH bucket points below symoffset for {name!r}", t["offset"])
        if symbols is self.dynsym:
            chains = self._cache.setdefault("gnu-chains", {})
            if idx not in chains:
                chains[idx] = self._gnu_chain(idx)
            found, err = chains[idx]
            if name in found:
                return found[name]
            if err == "never ends":
                raise Unreadable(f"DT_GNU_HASH chain for {name!r} never ends", t["offset"])
            if err is not None:
                raise Unreadable(str(err), err.offset)
            return None
        for _ in range(MAX_SYMBOLS + 1):
            self.charge()
            ch = self.u32(t["chain_off"] + 4 * (idx - t["symoffset"]))
            if (ch | 1) == (h | 1) and idx < len(symbols) and symbols[idx].name == name:
                return idx
            if ch & 1:
                return None
            idx += 1
        raise Unreadable(f"DT_GNU_HASH chain for {name!r} never ends", t["offset"])

    # -- relocations (as a loader would find them) ---------------------------------

    def dynamic_relocs(self):
        """Every entry of DT_REL, DT_RELA and DT_JMPREL."""
        return list(self._cached("relocs", self._read_dynamic_relocs))

    def _read_dynamic_relocs(self):
        out = []
        w = self.wsize
        pltrel = self.dyn("PLTREL")
        for table, addr_tag, size_tag, rela in (("DT_REL", "REL", "RELSZ", False),
                                                ("DT_RELA", "RELA", "RELASZ", True),
                                                ("DT_JMPREL", "JMPREL", "PLTRELSZ", pltrel == DT["RELA"])):
            addr, size = self.dyn(addr_tag), self.dyn(size_tag)
            if addr is None or not size:
                continue
            entsize = (3 if rela else 2) * w
            count = size // entsize
            if count > MAX_ENTRIES:
                raise Unreadable(f"{table}: {count} relocations", self.dyn_offset(size_tag))
            base = self.at_tag(addr_tag, count * entsize)
            self.charge(count)
            for i in range(count):
                out.append(self._reloc(table, base + i * entsize))
        return out

    def _reloc(self, table, off):
        w = self.wsize
        raw = self.data[off + w:off + 2 * w]
        if self.e_machine == EM_MIPS and self.elf_class == 64:
            # r_sym (4 bytes), r_ssym, r_type3, r_type2, r_type (1 byte each)
            sym = int.from_bytes(raw[0:4], self.endian)
            rtype = raw[7] | raw[6] << 8 | raw[5] << 16
            return Reloc(table, off, rtype, sym)
        info = int.from_bytes(raw, self.endian)
        if self.elf_class == 32:
            return Reloc(table, off, info & 0xFF, info >> 8)
        return Reloc(table, off, info & 0xFFFFFFFF, info >> 32)

    # -- notes -------------------------------------------------------------

    def _read_notes(self):
        """Walk every PT_NOTE with 4-byte alignment, as vDSO consumers do.

        A note that does not parse ends the walk of its segment and is kept
        in `note_problems` for the rules."""
        notes = []
        for seg in self.segments_of_type(PT_NOTE):
            off, end = seg.offset, seg.offset + seg.filesz
            if end > len(self.data):
                self.note_problems.append((seg.hdr_offset, f"PT_NOTE 0x{seg.offset:x}+0x{seg.filesz:x} "
                                                           "runs past the end of the file"))
                continue
            if off % 4:
                self.note_problems.append((seg.hdr_offset, f"PT_NOTE at 0x{off:x} is not 4-byte aligned"))
            while off < end and len(notes) < MAX_NOTES:
                self.charge()
                if off + 12 > end:
                    self.note_problems.append((off, f"{end - off} stray byte(s) at the end of PT_NOTE"))
                    break
                namesz, descsz, ntype = self.unpack("III", off)
                name_off = off + 12
                desc_off = name_off + _align4(namesz)
                nxt = desc_off + _align4(descsz)
                if nxt > end:
                    self.note_problems.append((off, f"note (namesz {namesz}, descsz {descsz}) runs past "
                                                    f"its PT_NOTE, which ends at 0x{end:x}"))
                    break
                # Names longer than MAX_NAME are kept cut short: no reader knows one.
                name = bytes(self.view[name_off:name_off + min(namesz, MAX_NAME)]).rstrip(b"\0")
                name = name.decode("utf-8", "replace")
                if namesz and self.data[name_off + namesz - 1] != 0:
                    self.note_problems.append((off, f"note name {name[:64]!r} is not NUL-terminated"))
                notes.append(Note(name, ntype, self.view[desc_off:desc_off + descsz], off, off % 4 == 0,
                                  namesz))
                off = nxt
        return notes


def _align4(n):
    return (n + 3) & ~3
