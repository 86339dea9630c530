"""ElfImage, part 2 (see reader.py): what a loader reaches through the
dynamic segment: the tags, the dynamic symbols, the version definitions and
the relocations; and the section symbol tables."""

import struct

from vdsogen.elf.bounds import MAX_ENTRIES, MAX_SYMBOLS, Unreadable
from vdsogen.elf.consts import DT, DYN, PT_DYNAMIC, REL, RELA, SHT_STRTAB, SYM, VERDAUX, VERDEF
from vdsogen.elf.headers import Headers
from vdsogen.elf.records import Reloc, Symbol, Verdef
from vdsogen.isa import for_machine
from vdsogen.isa.base import gabi_r_info


class Dynamic(Headers):
    """A part of ElfImage (reader.py): it reads self.data within self.budget."""

    _dyn_first: dict[int, tuple[int, int]]

    # -- dynamic segment (as a loader reads it) -------------------------------

    def _read_dynamic(self) -> list[tuple[int, int, int]] | None:
        self._dyn_first = {}
        dyns = self.segments_of_type(PT_DYNAMIC)
        if not dyns:
            return None
        seg = dyns[0]
        esize = DYN.size(self.elf_class)
        count = min(seg.filesz // esize, MAX_ENTRIES)
        tags = []
        for i in range(count):
            self.charge()
            tag, val = self.read(DYN, seg.offset + i * esize)
            if self.elf_class == 64 and tag >= 1 << 63:
                tag -= 1 << 64
            tags.append((tag, val, seg.offset + i * esize))
            self._dyn_first.setdefault(tag, (val, seg.offset + i * esize))
            if tag == DT["NULL"]:
                break
        return tags

    def dyn(self, name: str) -> int | None:
        """First value of a dynamic tag, or None."""
        first = self._dyn_first.get(DT[name])
        return None if first is None else first[0]

    def dyn_all(self, name: str) -> list[int]:
        return [val for tag, val, _ in self.dynamic or () if tag == DT[name]]

    def dyn_offset(self, name: str) -> int | None:
        """File offset of the first entry with this tag (for `where`)."""
        first = self._dyn_first.get(DT[name])
        return None if first is None else first[1]

    def at_tag(self, name: str, size: int = 1, addr: int | None = None) -> int:
        """File offset of what dynamic tag `name` points at; Unreadable naming the tag if outside."""
        addr = self.dyn(name) if addr is None else addr
        if addr is None:
            raise Unreadable(f"no DT_{name}")
        try:
            return self.offset_of(addr, size)
        except Unreadable:
            raise Unreadable(f"DT_{name} 0x{addr:x} (+0x{size:x} bytes) is not inside a PT_LOAD",
                             self.dyn_offset(name)) from None

    def dynstr(self, offset: int) -> str:
        strtab, strsz = self.dyn("STRTAB"), self.dyn("STRSZ")
        if strtab is None:
            raise Unreadable("no DT_STRTAB")
        if strsz is not None and offset >= strsz:
            raise Unreadable(f"string offset {offset} is past DT_STRSZ {strsz}", self.dyn_offset("STRSZ"))
        return self.cstring(self._cached("strtab", lambda: self.at_tag("STRTAB")) + offset)

    # -- symbols -------------------------------------------------------------

    def _read_symbols(self, name: str, sh_type: int) -> list[Symbol]:
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
        out = []
        rows = SYM.iter_unpack(self.view[sec.offset:sec.offset + count * entsize], self.elf_class, self.endian)
        for i, s in enumerate(rows):
            out.append(Symbol(i, self._table_string(strsec.offset + s.st_name), s.st_value, s.st_size,
                              s.st_info & 0xF, s.st_info >> 4, s.st_other & 3, s.st_shndx, name,
                              sec.offset + i * entsize))
        return out

    def loader_symbol_count(self) -> int | None:
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

    def loader_dynsym(self) -> list[Symbol]:
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
            s = self.read(SYM, off)
            out.append(Symbol(i, self.dynstr(s.st_name), s.st_value, s.st_size, s.st_info & 0xF, s.st_info >> 4,
                              s.st_other & 3, s.st_shndx, ".dynsym", off))
        return out

    def _loader_dynsym_or_empty(self) -> list[Symbol]:
        if self.dynamic is None:
            return []
        try:
            return self.loader_dynsym()
        except Unreadable:
            return []

    # -- versions (as a loader reads them) --------------------------------------

    def versym(self, count: int) -> list[int] | None:
        addr = self.dyn("VERSYM")
        if addr is None:
            return None

        def read() -> list[int]:
            off = self.at_tag("VERSYM", 2 * max(count, 1))
            self.charge(count)
            return list(struct.unpack_from(f"{self._e}{count}H", self.data, off))
        return self._cached(("versym", count), read)

    def verdefs(self) -> list[Verdef] | None:
        if self.dyn("VERDEF") is None:
            return None
        return list(self._cached("verdefs", self._read_verdefs))

    def _read_verdefs(self) -> list[Verdef]:
        declared = self.dyn("VERDEFNUM")
        off = self.at_tag("VERDEF", VERDEF.size(self.elf_class))
        out, seen = [], set()
        limit = min(declared if declared is not None else MAX_ENTRIES, 1024)
        for _ in range(limit):
            self.charge()
            if off in seen:
                raise Unreadable("verdef chain loops", off)
            seen.add(off)
            v = self.read(VERDEF, off)
            if v.vd_version != 1:
                raise Unreadable(f"verdef vd_version {v.vd_version}, expected 1", off)
            if v.vd_cnt < 1:
                raise Unreadable("verdef with no name (vd_cnt 0)", off)
            name_off = self.u32(off + v.vd_aux + VERDAUX.offset_of("vda_name", self.elf_class))
            out.append(Verdef(v.vd_ndx, v.vd_flags, v.vd_cnt, v.vd_hash, self.dynstr(name_off), off))
            if v.vd_next == 0:
                break
            off += v.vd_next
        return out

    # -- relocations (as a loader would find them) ---------------------------------

    def dynamic_relocs(self) -> list[Reloc]:
        """Every entry of DT_REL, DT_RELA and DT_JMPREL."""
        return list(self._cached("relocs", self._read_dynamic_relocs))

    def _read_dynamic_relocs(self) -> list[Reloc]:
        out = []
        pltrel = self.dyn("PLTREL")
        for table, addr_tag, size_tag, rela in (("DT_REL", "REL", "RELSZ", False),
                                                ("DT_RELA", "RELA", "RELASZ", True),
                                                ("DT_JMPREL", "JMPREL", "PLTRELSZ", pltrel == DT["RELA"])):
            addr, size = self.dyn(addr_tag), self.dyn(size_tag)
            if addr is None or not size:
                continue
            entsize = (RELA if rela else REL).size(self.elf_class)
            count = size // entsize
            if count > MAX_ENTRIES:
                raise Unreadable(f"{table}: {count} relocations", self.dyn_offset(size_tag))
            base = self.at_tag(addr_tag, count * entsize)
            self.charge(count)
            for i in range(count):
                out.append(self._reloc(table, base + i * entsize))
        return out

    def _reloc(self, table: str, off: int) -> Reloc:
        info = self.read(REL, off).r_info
        isa = for_machine(self.e_machine)
        split = gabi_r_info if isa is None else isa.r_info       # MIPS64 splits it its own way
        rtype, sym = split(info, self.elf_class, self.endian)
        return Reloc(table, off, rtype, sym)
