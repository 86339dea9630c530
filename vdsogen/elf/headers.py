"""ElfImage, part 1 (see reader.py): bounded reads, the ELF header, the
program headers and the section headers."""

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from vdsogen.elf.bounds import MAX_NAME, MAX_PHDRS, MAX_SECTIONS, Budget, Unreadable
from vdsogen.elf.consts import EHDR, EI_NIDENT, MACHINE_NAMES, PHDR, PT_LOAD, SHDR, SHN_XINDEX, SHT_NOBITS
from vdsogen.elf.consts import Layout
from vdsogen.elf.records import Note, Section, Segment, Symbol
from vdsogen.isa import for_machine
from vdsogen.isa.base import ByteOrder

T = TypeVar("T")


class Headers:
    """A part of ElfImage (reader.py): it reads self.data within self.budget.

    The other parts (Dynamic, Hashes, Notes) build on it: what ElfImage sets
    and what one part calls of another are declared here."""

    path: str
    budget: Budget
    charge: Callable[..., None]          # budget.charge(units=1)
    data: bytes
    view: memoryview
    elf_class: int                       # 32 or 64
    little: bool
    endian: ByteOrder
    osabi: int
    word: str                            # struct code of the class's word
    wsize: int
    symsize: int
    _e: str                              # struct byte-order prefix
    _cache: dict[Any, Any]            # _cached()'s (ok, value) pairs, and the hash parts' memos
    e_type: int
    e_machine: int
    e_entry: int
    e_phoff: int
    e_shoff: int
    e_flags: int
    e_phentsize: int
    e_phnum: int
    e_shentsize: int
    e_shnum: int
    e_shstrndx: int
    machine_name: str
    segments: list[Segment]
    loads: list[Segment]
    sections: list[Section]
    dynamic: list[tuple[int, int, int]] | None
    note_problems: list[tuple[int, str]]
    notes: list[Note]
    symtab: list[Symbol]
    dynsym: list[Symbol]
    dynsym_from_sections: bool

    if TYPE_CHECKING:                    # the other parts' methods that one part calls
        def dyn(self, name: str) -> int | None: ...
        def at_tag(self, name: str, size: int = 1, addr: int | None = None) -> int: ...
        def sysv_hash(self, word: int | None = None) -> tuple[int, int, tuple[int, ...], tuple[int, ...]] | None: ...
        def gnu_hash_table(self) -> dict[str, Any] | None: ...

    # -- low level -----------------------------------------------------

    def read(self, layout: Layout, offset: int) -> Any:
        """The structure `layout` at a file offset, as a named tuple; Unreadable past the end."""
        size = layout.size(self.elf_class)
        if offset < 0 or offset + size > len(self.data):
            raise Unreadable(f"read of {size} bytes at 0x{offset:x} is past the end of the file", offset)
        return layout.unpack(self.data, offset, self.elf_class, self.endian)

    def u32(self, offset: int) -> int:
        if offset < 0 or offset + 4 > len(self.data):
            raise Unreadable(f"read of 4 bytes at 0x{offset:x} is past the end of the file", offset)
        return int.from_bytes(self.data[offset:offset + 4], self.endian)

    def cstring(self, offset: int, limit: int = MAX_NAME) -> str:
        if offset < 0 or offset >= len(self.data):
            raise Unreadable(f"string at 0x{offset:x} is outside the file", offset)
        end = self.data.find(b"\0", offset, offset + limit)
        if end < 0:
            raise Unreadable(f"unterminated string at 0x{offset:x}", offset)
        return self.data[offset:end].decode("utf-8", "replace")

    def _table_string(self, offset: int) -> str:
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

    def offset_of(self, vaddr: int, size: int = 1) -> int:
        """File offset of a virtual address, through the PT_LOAD that maps it."""
        for seg in self.loads:
            if seg.contains(vaddr, size) and seg.offset + (vaddr - seg.vaddr) + size <= len(self.data):
                return seg.offset + (vaddr - seg.vaddr)
        raise Unreadable(f"address 0x{vaddr:x} is not inside a PT_LOAD", None)

    def bytes_at(self, vaddr: int, size: int) -> bytes:
        off = self.offset_of(vaddr, size)
        return self.data[off:off + size]

    @property
    def code_endian(self) -> ByteOrder:
        """Byte order of instructions, the ISA's (AArch64 code and ARM BE-8 code
        are little-endian); the data's for a machine no ISA module knows."""
        isa = for_machine(self.e_machine)
        return self.endian if isa is None else isa.code_endian(self.e_flags, self.endian)

    @property
    def image_end(self) -> int:
        """End of the mapped image: the end of the furthest PT_LOAD, or the file size."""
        if not self.loads:
            return len(self.data)
        return max(s.vaddr + s.memsz for s in self.loads)

    def _cached(self, key: Any, compute: Callable[[], T]) -> T:
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

    def _ehdr_field(self, name: str) -> int:
        """File offset of an ELF header field (for error locations)."""
        return EI_NIDENT + EHDR.offset_of(name, self.elf_class)

    def _read_headers(self) -> None:
        h = self.read(EHDR, EI_NIDENT)
        (self.e_type, self.e_machine, self.e_entry, self.e_phoff, self.e_shoff, self.e_flags, self.e_phentsize,
         self.e_phnum, self.e_shentsize, self.e_shnum, self.e_shstrndx) = (
            h.e_type, h.e_machine, h.e_entry, h.e_phoff, h.e_shoff, h.e_flags, h.e_phentsize, h.e_phnum,
            h.e_shentsize, h.e_shnum, h.e_shstrndx)
        if self.e_phnum > MAX_PHDRS:
            raise Unreadable(f"e_phnum {self.e_phnum}: absurd for a vDSO (at most {MAX_PHDRS} read)",
                             self._ehdr_field("e_phnum"))
        if self.e_shnum > MAX_SECTIONS:
            raise Unreadable(f"e_shnum {self.e_shnum}: absurd for a vDSO (at most {MAX_SECTIONS} read)",
                             self._ehdr_field("e_shnum"))
        self.machine_name = MACHINE_NAMES.get(self.e_machine, f"EM_{self.e_machine}")
        phsize = PHDR.size(self.elf_class)
        if self.e_phnum and self.e_phentsize != phsize:
            raise Unreadable(f"e_phentsize {self.e_phentsize}, expected {phsize}", self._ehdr_field("e_phentsize"))
        if self.e_phnum * phsize + self.e_phoff > len(self.data):
            raise Unreadable(f"{self.e_phnum} program headers at 0x{self.e_phoff:x} run past the end of the "
                             f"file (0x{len(self.data):x} bytes)", self._ehdr_field("e_phoff"))
        self.charge(self.e_phnum + self.e_shnum)
        self.segments = []
        for i in range(self.e_phnum):
            off = self.e_phoff + i * phsize
            p = self.read(PHDR, off)
            self.segments.append(Segment(i, p.p_type, p.p_flags, p.p_offset, p.p_vaddr, p.p_filesz, p.p_memsz,
                                         p.p_align, off))
        self.loads = [s for s in self.segments if s.type == PT_LOAD]

        self.sections = []
        if self.e_shoff and self.e_shnum:
            shsize = SHDR.size(self.elf_class)
            if self.e_shentsize != shsize:
                raise Unreadable(f"e_shentsize {self.e_shentsize}, expected {shsize}",
                                 self._ehdr_field("e_shentsize"))
            if self.e_shoff + self.e_shnum * shsize > len(self.data):
                raise Unreadable(f"{self.e_shnum} section headers at 0x{self.e_shoff:x} run past the end of "
                                 f"the file (0x{len(self.data):x} bytes)", self._ehdr_field("e_shoff"))
            raw = [self.read(SHDR, self.e_shoff + i * shsize) for i in range(self.e_shnum)]
            index = raw[0].sh_link if self.e_shstrndx == SHN_XINDEX else self.e_shstrndx
            if index >= self.e_shnum:
                # Every name would read as "": a damaged .altinstructions would pass unseen.
                raise Unreadable(f"e_shstrndx {self.e_shstrndx} is not one of the {self.e_shnum} sections: "
                                 f"no section name can be read", self._ehdr_field("e_shstrndx"))
            # SHN_UNDEF: the file says it has no names (rule H005 refuses that).
            names = raw[index].sh_offset if index else None
            for i, sh in enumerate(raw):
                try:
                    name = self._table_string(names + sh.sh_name) if names is not None else ""
                except Unreadable as err:
                    raise Unreadable(f"section header {i}: {err}", self.e_shoff + i * shsize) from None
                self.sections.append(Section(i, name, sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_offset, sh.sh_size,
                                             sh.sh_link, sh.sh_info, sh.sh_entsize, self.e_shoff + i * shsize))

    def section(self, name: str) -> Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def sections_of_type(self, sh_type: int) -> list[Section]:
        return [s for s in self.sections if s.type == sh_type]

    def segments_of_type(self, p_type: int) -> list[Segment]:
        return [s for s in self.segments if s.type == p_type]

    def section_bytes(self, sec: Section) -> memoryview:
        """A read-only view of a section's bytes in the file (empty for SHT_NOBITS)."""
        if sec.type == SHT_NOBITS or sec.offset >= len(self.data):
            return self.view[0:0]
        return self.view[sec.offset:sec.offset + sec.size]
