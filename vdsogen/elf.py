"""A bounded, read-only view of one ELF image, built for untrusted files.

pyelftools reads the ELF header, program and section headers and symbol
tables.  The structures a loader reads through the dynamic segment (tags,
hash tables, version definitions, strings) and the notes are read here from
the bytes, the way glibc, musl or Go read them, with every offset, count and
chain walk bounded, so that a damaged file yields an ImageError (or a
finding), never a hang or a traceback.  s390x's 8-byte .hash words are read
right, which pyelftools 0.29 does not.
"""

import io
import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from vdsogen.errors import ImageError

MAX_IMAGE = 64 << 20          # far above any vDSO, .dbg included
MAX_ENTRIES = 1 << 16         # symbols, tags, versions, hash buckets

# Values the rules compare against (elf.h).
ET_DYN = 3
PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_SHLIB, PT_PHDR, PT_TLS = range(8)
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E551, 0x6474E552, 0x6474E553
PF_X, PF_W, PF_R = 1, 2, 4
SHT_SYMTAB, SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOTE, SHT_REL, SHT_DYNSYM = 2, 4, 5, 6, 7, 9, 11
SHT_RELR = 19
SHT_GNU_HASH, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS = range(7)
STT_GNU_IFUNC = 10
SHN_UNDEF, SHN_ABS = 0, 0xFFF1
VER_FLG_BASE = 1

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

EM_S390 = 22


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
    desc: bytes
    offset: int
    aligned: bool


# pyelftools signals a damaged file through many exception types.
PARSE_ERRORS = (ELFError, struct.error, ValueError, KeyError, TypeError, AttributeError,
                IndexError, OverflowError, ZeroDivisionError, UnicodeDecodeError, AssertionError)


class Unreadable(Exception):
    """A part of the image cannot be read; rules report it, others go on."""

    def __init__(self, message, offset=None):
        super().__init__(message)
        self.offset = offset


class ElfImage:
    """Everything the rules look at, read once, eagerly and within bounds."""

    def __init__(self, path, data=None):
        self.path = str(path)
        if data is None:
            try:
                with open(path, "rb") as f:
                    data = f.read(MAX_IMAGE + 1)
            except OSError as e:
                raise ImageError(path, f"cannot read: {e.strerror}") from None
        if len(data) > MAX_IMAGE:
            raise ImageError(path, f"larger than {MAX_IMAGE >> 20} MiB: not a vDSO")
        if data[:4] != b"\x7fELF":
            raise ImageError(path, "not an ELF file (bad magic)", 0)
        if len(data) < 16 or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise ImageError(path, "bad ELF class or data encoding in e_ident", 4)
        self.data = data
        self.elf_class = 32 if data[4] == 1 else 64
        self.little = data[5] == 1
        self.endian = "little" if self.little else "big"
        self.osabi = data[7]
        e = "<" if self.little else ">"
        self._e = e
        self.word = "I" if self.elf_class == 32 else "Q"
        self.wsize = 4 if self.elf_class == 32 else 8
        try:
            self._read_headers()
        except PARSE_ERRORS as err:
            raise ImageError(path, f"malformed ELF headers: {err or type(err).__name__}") from None
        try:
            self.dynamic = self._read_dynamic()
            self.dynsym = self._read_symbols(".dynsym", SHT_DYNSYM)
            self.symtab = self._read_symbols(".symtab", SHT_SYMTAB)
            self.notes = self._read_notes()
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

    def cstring(self, offset, limit=4096):
        if offset < 0 or offset >= len(self.data):
            raise Unreadable(f"string at 0x{offset:x} is outside the file", offset)
        end = self.data.find(b"\0", offset, offset + limit)
        if end < 0:
            raise Unreadable(f"unterminated string at 0x{offset:x}", offset)
        return self.data[offset:end].decode("utf-8", "replace")

    def offset_of(self, vaddr, size=1):
        """File offset of a virtual address, through the PT_LOAD that maps it."""
        for seg in self.loads:
            if seg.contains(vaddr, size):
                return seg.offset + (vaddr - seg.vaddr)
        raise Unreadable(f"address 0x{vaddr:x} is not inside a PT_LOAD", None)

    def bytes_at(self, vaddr, size):
        off = self.offset_of(vaddr, size)
        return self.data[off:off + size]

    # -- headers (pyelftools) --------------------------------------------

    def _read_headers(self):
        elf = ELFFile(io.BytesIO(self.data))
        self._elf = elf
        (self.e_type, self.e_machine, _version, self.e_entry, self.e_phoff, self.e_shoff,
         self.e_flags, _ehsize, self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = self.unpack("HHIWWWIHHHHHH", 16)
        self.machine_name = elf["e_machine"] if isinstance(elf["e_machine"], str) else f"EM_{self.e_machine}"
        phsize = 32 if self.elf_class == 32 else 56
        if self.e_phnum and self.e_phentsize != phsize:
            raise ValueError(f"e_phentsize {self.e_phentsize}, expected {phsize}")
        if self.e_phnum * phsize + self.e_phoff > len(self.data):
            raise ValueError("program headers run past the end of the file")
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
            if self.e_shentsize != shsize:
                raise ValueError(f"e_shentsize {self.e_shentsize}, expected {shsize}")
            if self.e_shoff + self.e_shnum * shsize > len(self.data):
                raise ValueError("section headers run past the end of the file")
            for i, sec in enumerate(elf.iter_sections()):
                hdr = sec.header
                name = sec.name if 0 < self.e_shstrndx < self.e_shnum else ""
                self.sections.append(Section(
                    i, name, self._raw_sh_type(i), hdr["sh_flags"], hdr["sh_addr"], hdr["sh_offset"],
                    hdr["sh_size"], hdr["sh_link"], hdr["sh_info"], hdr["sh_entsize"],
                    self.e_shoff + i * shsize))

    def _raw_sh_type(self, index):
        shsize = 40 if self.elf_class == 32 else 64
        return self.unpack("I", self.e_shoff + index * shsize + 4)[0]

    def section(self, name):
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def sections_of_type(self, sh_type):
        return [s for s in self.sections if s.type == sh_type]

    def segments_of_type(self, p_type):
        return [s for s in self.segments if s.type == p_type]

    # -- dynamic segment (as a loader reads it) -------------------------------

    def _read_dynamic(self):
        dyns = self.segments_of_type(PT_DYNAMIC)
        if not dyns:
            return None
        seg = dyns[0]
        esize = 2 * self.wsize
        count = min(seg.filesz // esize, MAX_ENTRIES)
        tags = []
        for i in range(count):
            tag, val = self.unpack("WW", seg.offset + i * esize)
            if self.elf_class == 64 and tag >= 1 << 63:
                tag -= 1 << 64
            tags.append((tag, val, seg.offset + i * esize))
            if tag == DT["NULL"]:
                break
        return tags

    def dyn(self, name):
        """First value of a dynamic tag, or None."""
        for tag, val, _ in self.dynamic or ():
            if tag == DT[name]:
                return val
        return None

    def dyn_all(self, name):
        return [val for tag, val, _ in self.dynamic or () if tag == DT[name]]

    def dynstr(self, offset):
        strtab, strsz = self.dyn("STRTAB"), self.dyn("STRSZ")
        if strtab is None:
            raise Unreadable("no DT_STRTAB")
        if strsz is not None and offset >= strsz:
            raise Unreadable(f"string offset {offset} is past DT_STRSZ {strsz}")
        return self.cstring(self.offset_of(strtab) + offset)

    # -- symbols (pyelftools) -----------------------------------------------

    def _read_symbols(self, name, sh_type):
        secs = [s for s in self.sections if s.type == sh_type]
        if not secs:
            return []
        sec = secs[0]
        entsize = 16 if self.elf_class == 32 else 24
        if sec.entsize != entsize:
            raise Unreadable(f"{sec.name}: sh_entsize {sec.entsize}, expected {entsize}", sec.hdr_offset)
        if sec.offset + sec.size > len(self.data) or sec.size // entsize > MAX_ENTRIES:
            raise Unreadable(f"{sec.name}: runs past the end of the file", sec.hdr_offset)
        if not 0 < sec.link < len(self.sections):
            raise Unreadable(f"{sec.name}: sh_link {sec.link} is not a string table", sec.hdr_offset)
        table = self._elf.get_section(sec.index)
        out = []
        for i, sym in enumerate(table.iter_symbols()):
            st_info = self.data[sec.offset + i * entsize + (12 if self.elf_class == 32 else 4)]
            shndx = sym["st_shndx"]
            if isinstance(shndx, str):
                shndx = {"SHN_UNDEF": 0, "SHN_ABS": SHN_ABS, "SHN_COMMON": 0xFFF2}.get(shndx, 0xFFFF)
            out.append(Symbol(i, sym.name, sym["st_value"], sym["st_size"], st_info & 0xF, st_info >> 4,
                              self.data[sec.offset + i * entsize + (13 if self.elf_class == 32 else 5)] & 3,
                              shndx, name))
        return out

    # -- versions (as a loader reads them) --------------------------------------

    def versym(self, count):
        addr = self.dyn("VERSYM")
        if addr is None:
            return None
        off = self.offset_of(addr, 2 * count)
        return [self.unpack("H", off + 2 * i)[0] for i in range(count)]

    def verdefs(self):
        addr = self.dyn("VERDEF")
        if addr is None:
            return None
        declared = self.dyn("VERDEFNUM")
        off = self.offset_of(addr, 20)
        out, seen = [], set()
        limit = min(declared if declared is not None else MAX_ENTRIES, 1024)
        for _ in range(limit):
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

    @property
    def hash_word(self):
        """.hash word size: 8 on s390x (64-bit s390), 4 everywhere else."""
        return 8 if self.e_machine == EM_S390 and self.elf_class == 64 else 4

    def sysv_hash(self):
        """(nbucket, nchain, buckets, chains) of DT_HASH, or None."""
        addr = self.dyn("HASH")
        if addr is None:
            return None
        w = "I" if self.hash_word == 4 else "Q"
        off = self.offset_of(addr, 2 * self.hash_word)
        nbucket, nchain = self.unpack(w + w, off)
        if nbucket > MAX_ENTRIES or nchain > MAX_ENTRIES:
            raise Unreadable(f"DT_HASH claims {nbucket} buckets and {nchain} chains", off)
        size = (2 + nbucket + nchain) * self.hash_word
        self.offset_of(addr, size)
        words = self.unpack(w * (nbucket + nchain), off + 2 * self.hash_word)
        return nbucket, nchain, words[:nbucket], words[nbucket:]

    def sysv_lookup(self, name, symbols):
        table = self.sysv_hash()
        if table is None:
            return None
        nbucket, nchain, buckets, chains = table
        if nbucket == 0:
            return None
        idx = buckets[elf_hash(name) % nbucket]
        for _ in range(nchain + 1):           # a chain can visit each entry once
            if idx == 0 or idx >= nchain:
                return None
            if idx < len(symbols) and symbols[idx].name == name:
                return idx
            idx = chains[idx]
        raise Unreadable(f"DT_HASH chain for {name!r} loops")

    def gnu_hash_table(self):
        addr = self.dyn("GNU_HASH")
        if addr is None:
            return None
        off = self.offset_of(addr, 16)
        nbuckets, symoffset, bloom_size, bloom_shift = self.unpack("IIII", off)
        if nbuckets > MAX_ENTRIES or bloom_size > MAX_ENTRIES:
            raise Unreadable(f"DT_GNU_HASH claims {nbuckets} buckets, {bloom_size} bloom words", off)
        bloom_off = off + 16
        buckets_off = bloom_off + bloom_size * self.wsize
        self.offset_of(addr, 16 + bloom_size * self.wsize + 4 * nbuckets)
        bloom = self.unpack("W" * bloom_size, bloom_off) if bloom_size else ()
        buckets = self.unpack("I" * nbuckets, buckets_off) if nbuckets else ()
        return {"nbuckets": nbuckets, "symoffset": symoffset, "bloom_shift": bloom_shift,
                "bloom": bloom, "buckets": buckets, "chain_off": buckets_off + 4 * nbuckets}

    def gnu_lookup(self, name, symbols):
        t = self.gnu_hash_table()
        if t is None or t["nbuckets"] == 0:
            return None
        h = gnu_hash(name)
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
            raise Unreadable(f"DT_GNU_HASH bucket points below symoffset for {name!r}")
        for _ in range(MAX_ENTRIES):
            ch = self.u32(t["chain_off"] + 4 * (idx - t["symoffset"]))
            if (ch | 1) == (h | 1) and idx < len(symbols) and symbols[idx].name == name:
                return idx
            if ch & 1:
                return None
            idx += 1
        raise Unreadable(f"DT_GNU_HASH chain for {name!r} never ends")

    # -- notes -------------------------------------------------------------

    def _read_notes(self):
        notes = []
        for seg in self.segments_of_type(PT_NOTE):
            off, end = seg.offset, seg.offset + seg.filesz
            if end > len(self.data):
                raise Unreadable(f"PT_NOTE at 0x{seg.offset:x} runs past the end of the file", seg.hdr_offset)
            while off + 12 <= end and len(notes) < 1024:
                namesz, descsz, ntype = self.unpack("III", off)
                name_off = off + 12
                desc_off = name_off + _align4(namesz)
                nxt = desc_off + _align4(descsz)
                if nxt > end:
                    raise Unreadable(f"note at 0x{off:x} runs past its PT_NOTE", off)
                name = self.data[name_off:name_off + namesz].rstrip(b"\0").decode("utf-8", "replace")
                notes.append(Note(name, ntype, self.data[desc_off:desc_off + descsz], off, off % 4 == 0))
                off = nxt
        return notes

    def text_section(self):
        return self.section(".text")


def _align4(n):
    return (n + 3) & ~3
