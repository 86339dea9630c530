"""What the reader makes of an image's structures (see reader.py)."""

from dataclasses import dataclass

from vdsogen.elf.consts import SHN_UNDEF


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

    def contains(self, vaddr: int, size: int = 1) -> bool:
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
    def defined(self) -> bool:
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
