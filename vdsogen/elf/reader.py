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

ElfImage is put together from one part per kind of structure: headers.py
(headers, segments, sections), dynamic.py (dynamic tags, symbols, versions,
relocations), hashes.py and notes.py; bounds.py holds the caps and the
budget, records.py what is read, consts.py the ELF numbers and layouts.
"""

import os

from vdsogen.elf.bounds import (MAX_IMAGE, PARSE_ERRORS, WORK_BUDGET, Budget, TooComplex, Unreadable,
                                read_image_file)
from vdsogen.elf.consts import (EI_CLASS, EI_DATA, EI_NIDENT, EI_OSABI, ELFCLASS32, ELFCLASS64, ELFDATA2LSB,
                                ELFDATA2MSB, SHT_DYNSYM, SHT_SYMTAB, SYM)
from vdsogen.elf.dynamic import Dynamic
from vdsogen.elf.hashes import Hashes
from vdsogen.elf.notes import Notes
from vdsogen.errors import ImageError

# The reader's interface; ELF numbers and structure layouts are vdsogen.elf.consts's.
__all__ = ["ElfImage", "Unreadable", "TooComplex", "Budget", "WORK_BUDGET", "read_image_file"]


class ElfImage(Dynamic, Hashes, Notes):
    """Everything the rules look at, read once, eagerly and within bounds."""

    def __init__(self, path: str | os.PathLike, data: bytes | bytearray | memoryview | None = None,
                 budget: Budget | None = None) -> None:
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
        if len(data) < EI_NIDENT or data[EI_CLASS] not in (ELFCLASS32, ELFCLASS64) or \
                data[EI_DATA] not in (ELFDATA2LSB, ELFDATA2MSB):
            raise ImageError(path, "bad ELF class or data encoding in e_ident", EI_CLASS)
        self.data = data
        self.view = memoryview(data)
        self.elf_class = 32 if data[EI_CLASS] == ELFCLASS32 else 64
        self.little = data[EI_DATA] == ELFDATA2LSB
        self.endian = "little" if self.little else "big"
        self.osabi = data[EI_OSABI]
        e = "<" if self.little else ">"
        self._e = e
        self.word = "I" if self.elf_class == 32 else "Q"
        self.wsize = 4 if self.elf_class == 32 else 8
        self.symsize = SYM.size(self.elf_class)
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
