"""ELF constants and structure layouts, written once.

The reader, the consumer models, the rules and the tests that build or edit
images all read and write the same structures.  Each number (elf.h: the
System V gABI, the GNU extensions and the few processor values vDSOs use)
and each structure's field order and sizes is stated here only, so that two
parts of the project cannot disagree about where p_flags sits.  A machine's
e_machine number and e_flags bits are its ISA module's (vdsogen/isa/NAME.py,
stated there once), named here too for the code that reads ELF structures.

A layout (`Layout`) names a structure's fields in file order per ELF class
and gives, for an ELF class and a byte order: its size, the fields at an
offset as a named tuple, the bytes of given field values, a field's offset.
Unpacking checks nothing: the caller checks bounds first (see reader.py).
"""

import struct
from collections import namedtuple
from typing import Any, Iterator

from elftools.elf.enums import ENUM_E_MACHINE

from vdsogen import isa
from vdsogen.isa import arm, arm64, loongarch, mips, powerpc, riscv, s390, x86

# -- e_ident and the ELF header ------------------------------------------------------

EI_NIDENT = 16                  # e_ident; the rest of the header (EHDR) follows it
EI_CLASS, EI_DATA, EI_OSABI = 4, 5, 7
ELFCLASS32, ELFCLASS64 = 1, 2
ELFDATA2LSB, ELFDATA2MSB = 1, 2
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3

EM_PARISC = 15
ELFOSABI_GNU = 3
# The machines vdsogen reads: their ISA modules' numbers and e_flags bits.  A
# new ISA needs no line here.
EM_386, EM_X86_64 = x86.EM_386, x86.EM_X86_64
EM_ARM, EF_ARM_ABI_FLOAT_SOFT = arm.EM_ARM, arm.EF_ARM_ABI_FLOAT_SOFT
EM_AARCH64, EM_LOONGARCH, EM_MIPS, EM_RISCV, EM_S390 = (arm64.EM_AARCH64, loongarch.EM_LOONGARCH, mips.EM_MIPS,
                                                       riscv.EM_RISCV, s390.EM_S390)
EM_PPC, EM_PPC64 = powerpc.EM_PPC, powerpc.EM_PPC64
# Names of e_machine values, as binutils spells them: pyelftools' table, and
# the ISA modules' for what its 0.29 lacks (EM_LOONGARCH).
MACHINE_NAMES = {**{value: name for name, value in ENUM_E_MACHINE.items() if isinstance(value, int)},
                 **isa.machine_names()}

# -- program headers -------------------------------------------------------------------

PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_SHLIB, PT_PHDR, PT_TLS = range(8)
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E551, 0x6474E552, 0x6474E553
# Processor program header types: their ISA modules' (vdsogen/isa/).
PT_ARM_EXIDX = arm.PT_ARM_EXIDX
PT_MIPS_REGINFO, PT_MIPS_RTPROC, PT_MIPS_OPTIONS, PT_MIPS_ABIFLAGS = (mips.PT_MIPS_REGINFO, mips.PT_MIPS_RTPROC,
                                                                      mips.PT_MIPS_OPTIONS, mips.PT_MIPS_ABIFLAGS)
PT_RISCV_ATTRIBUTES = riscv.PT_RISCV_ATTRIBUTES
PF_X, PF_W, PF_R = 1, 2, 4

# -- sections ----------------------------------------------------------------------------

SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOTE = range(8)
SHT_NOBITS, SHT_REL, SHT_DYNSYM = 8, 9, 11
SHT_RELR = 19
SHT_GNU_HASH, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFFF1, 0xFFF2, 0xFFFF

# -- symbols and versions ----------------------------------------------------------------

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STB_GNU_UNIQUE = 10
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS = range(7)
STT_GNU_IFUNC = 10
VER_FLG_BASE = 1
VERSYM_HIDDEN = 0x8000          # versym bit: the symbol is hidden from unversioned lookups
VERSYM_INDEX = 0x7FFF

# -- dynamic tags --------------------------------------------------------------------------

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
# Processor tags share the 0x70000000 range: their names depend on e_machine
# (each ISA module's dynamic_tags).
DT_MIPS = mips.DT_MIPS
DT_PPC_GOT, DT_PPC64_OPT = powerpc.DT_PPC_GOT, powerpc.DT_PPC64_OPT
DF_SYMBOLIC, DF_TEXTREL, DF_BIND_NOW = 0x2, 0x4, 0x8
DF_1_NOW = 0x1

# -- notes and the auxiliary vector -----------------------------------------------------------

NT_GNU_BUILD_ID, NT_GNU_PROPERTY_TYPE_0 = 3, 5
NT_LINUX_VERSION, NT_LINUX_BUILD_SALT = 0, 0x100
AT_SYSINFO_EHDR = 33


def elf_hash(name: str | bytes) -> int:
    """The SysV ELF hash (DT_HASH buckets, verdef vd_hash)."""
    h = 0
    for c in name.encode() if isinstance(name, str) else name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name: str | bytes) -> int:
    """The DT_GNU_HASH hash (Bernstein's, h * 33 + c)."""
    h = 5381
    for c in name.encode() if isinstance(name, str) else name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


# -- structure layouts --------------------------------------------------------------------------

_ORDER = {"little": "<", "big": ">"}
Buffer = bytes | bytearray | memoryview


class Layout:
    """One ELF structure.  `spec` is "field:code ..." in file order, with struct
    codes, W standing for the class's word (Elf32_Addr/Off/Word: 4 bytes,
    Elf64_Addr/Off/Xword: 8) and w for its signed form; a dict {32: spec,
    64: spec} when the two classes order the fields differently."""

    def __init__(self, name: str, spec: str | dict[int, str]) -> None:
        self.name = name
        self._fields: dict[int, tuple[str, ...]] = {}
        self._codes: dict[int, tuple[str, ...]] = {}
        self._offsets: dict[int, dict[str, int]] = {}
        self._types: dict[int, Any] = {}                  # ELF class -> its namedtuple type
        self._structs: dict[tuple[int, str], struct.Struct] = {}
        for cls, text in (spec if isinstance(spec, dict) else {32: spec, 64: spec}).items():
            word = {"W": "I", "w": "i"} if cls == 32 else {"W": "Q", "w": "q"}
            pairs = [(field, word.get(code, code)) for field, code in (item.split(":") for item in text.split())]
            self._fields[cls] = tuple(field for field, _ in pairs)
            self._codes[cls] = tuple(code for _, code in pairs)
            self._offsets[cls] = {field: struct.calcsize("<" + "".join(self._codes[cls][:i]))
                                  for i, field in enumerate(self._fields[cls])}
            self._types[cls] = namedtuple(f"Elf{cls}_{name}", self._fields[cls])

    def format(self, elf_class: int, endian: str) -> str:
        """The struct format string of the structure."""
        return _ORDER[endian] + "".join(self._codes[elf_class])

    def _struct(self, elf_class: int, endian: str) -> struct.Struct:
        key = (elf_class, endian)
        if key not in self._structs:
            self._structs[key] = struct.Struct(self.format(elf_class, endian))
        return self._structs[key]

    def size(self, elf_class: int) -> int:
        return self._struct(elf_class, "little").size

    def offset_of(self, field: str, elf_class: int) -> int:
        """Byte offset of a field inside the structure."""
        return self._offsets[elf_class][field]

    def field_size(self, field: str, elf_class: int) -> int:
        """Size in bytes of a field."""
        return struct.calcsize("<" + self._codes[elf_class][self._fields[elf_class].index(field)])

    def unpack(self, data: Buffer, offset: int, elf_class: int, endian: str) -> Any:
        """The structure at data[offset:] as a named tuple; the caller checks
        the bounds (struct.error if it did not)."""
        return self._types[elf_class]._make(self._struct(elf_class, endian).unpack_from(data, offset))

    def iter_unpack(self, data: Buffer, elf_class: int, endian: str) -> Iterator[Any]:
        """Every structure of an array that fills `data` exactly."""
        make = self._types[elf_class]._make
        return (make(row) for row in self._struct(elf_class, endian).iter_unpack(data))

    def pack(self, elf_class: int, endian: str, **values: Any) -> bytes:
        """The bytes of one structure; fields not given are 0 (b"" for strings)."""
        return self._struct(elf_class, endian).pack(*self._values(elf_class, values))

    def pack_into(self, buffer: bytearray | memoryview, offset: int, elf_class: int, endian: str,
                  **values: Any) -> None:
        self._struct(elf_class, endian).pack_into(buffer, offset, *self._values(elf_class, values))

    def update_into(self, buffer: bytearray | memoryview, offset: int, elf_class: int, endian: str,
                    **values: Any) -> None:
        """Rewrite some fields of the structure at buffer[offset:], keeping the others."""
        old = self.unpack(buffer, offset, elf_class, endian)
        self.pack_into(buffer, offset, elf_class, endian, **old._replace(**values)._asdict())

    def _values(self, elf_class: int, values: dict[str, Any]) -> list[Any]:
        unknown = set(values) - set(self._fields[elf_class])
        if unknown:
            raise TypeError(f"{self.name} has no field {', '.join(sorted(unknown))}")
        return [values.get(f, b"" if c.endswith("s") else 0)
                for f, c in zip(self._fields[elf_class], self._codes[elf_class])]


IDENT = Layout("Ident", "ei_mag:4s ei_class:B ei_data:B ei_version:B ei_osabi:B ei_abiversion:B ei_pad:7s")
EHDR = Layout("Ehdr", "e_type:H e_machine:H e_version:I e_entry:W e_phoff:W e_shoff:W e_flags:I e_ehsize:H "
                      "e_phentsize:H e_phnum:H e_shentsize:H e_shnum:H e_shstrndx:H")       # after e_ident
PHDR = Layout("Phdr", {
    32: "p_type:I p_offset:I p_vaddr:I p_paddr:I p_filesz:I p_memsz:I p_flags:I p_align:I",
    64: "p_type:I p_flags:I p_offset:Q p_vaddr:Q p_paddr:Q p_filesz:Q p_memsz:Q p_align:Q"})
SHDR = Layout("Shdr", "sh_name:I sh_type:I sh_flags:W sh_addr:W sh_offset:W sh_size:W sh_link:I sh_info:I "
                      "sh_addralign:W sh_entsize:W")
SYM = Layout("Sym", {
    32: "st_name:I st_value:I st_size:I st_info:B st_other:B st_shndx:H",
    64: "st_name:I st_info:B st_other:B st_shndx:H st_value:Q st_size:Q"})
DYN = Layout("Dyn", "d_tag:W d_val:W")
REL = Layout("Rel", "r_offset:W r_info:W")
RELA = Layout("Rela", "r_offset:W r_info:W r_addend:w")
VERDEF = Layout("Verdef", "vd_version:H vd_flags:H vd_ndx:H vd_cnt:H vd_hash:I vd_aux:I vd_next:I")
VERDAUX = Layout("Verdaux", "vda_name:I vda_next:I")
NHDR = Layout("Nhdr", "n_namesz:I n_descsz:I n_type:I")
GNU_HASH = Layout("GnuHash", "nbuckets:I symoffset:I bloom_size:I bloom_shift:I")      # then bloom, buckets, chains
# DT_HASH's header: nbucket and nchain, in words of 4 bytes (8 on s390x), then the buckets and chains.
SYSV_HASH = {4: Layout("Hash", "nbucket:I nchain:I"), 8: Layout("Hash64", "nbucket:Q nchain:Q")}
AUXV = Layout("Auxv", "a_type:W a_val:W")
