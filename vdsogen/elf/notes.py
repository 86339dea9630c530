"""ElfImage, part 4 (see reader.py): the notes, walked through PT_NOTE."""

from vdsogen.elf.bounds import MAX_NAME, MAX_NOTES
from vdsogen.elf.consts import NHDR, NT_GNU_PROPERTY_TYPE_0, PT_NOTE
from vdsogen.elf.headers import Headers
from vdsogen.elf.records import Note, Segment


class Notes(Headers):
    """A part of ElfImage (reader.py): it reads self.data within self.budget."""

    # -- notes -------------------------------------------------------------

    def _read_notes(self) -> list[Note]:
        """Walk every PT_NOTE with 4-byte alignment, as vDSO consumers do.

        A note that does not parse ends the walk of its segment and is kept
        in `note_problems` for the rules."""
        notes: list[Note] = []
        header = NHDR.size(self.elf_class)
        for seg in self.segments_of_type(PT_NOTE):
            off, end = seg.offset, seg.offset + seg.filesz
            if end > len(self.data):
                self.note_problems.append((seg.hdr_offset, f"PT_NOTE 0x{seg.offset:x}+0x{seg.filesz:x} "
                                                           "runs past the end of the file"))
                continue
            if off % 4:
                self.note_problems.append((seg.hdr_offset, f"PT_NOTE at 0x{off:x} is not 4-byte aligned"))
            index = 0
            while off < end and len(notes) < MAX_NOTES:
                self.charge()
                if off + header > end:
                    self.note_problems.append((off, f"{end - off} stray byte(s) at the end of PT_NOTE, "
                                                    f"after note {index}: too few for a note header"))
                    break
                namesz, descsz, ntype = self.read(NHDR, off)
                name_off = off + header
                desc_off = name_off + _align4(namesz)
                nxt = desc_off + _align4(descsz)
                if nxt > end:
                    self.note_problems.append((off, f"note {index} at 0x{off:x} ({self._note_label(name_off, namesz, end)}"
                                                    f"type 0x{ntype:x}, namesz {namesz}, descsz {descsz}) runs "
                                                    f"0x{nxt - end:x} bytes past its PT_NOTE, which ends at 0x{end:x}"))
                    break
                # Names longer than MAX_NAME are kept cut short: no reader knows one.
                raw = bytes(self.view[name_off:name_off + min(namesz, MAX_NAME)]).rstrip(b"\0")
                name = raw.decode("utf-8", "replace")
                if namesz and self.data[name_off + namesz - 1] != 0:
                    self.note_problems.append((off, f"note {index} at 0x{off:x}: name {name[:64]!r} is not "
                                                    "NUL-terminated"))
                notes.append(Note(name, ntype, self.view[desc_off:desc_off + descsz], off, off % 4 == 0,
                                  namesz))
                off = nxt
                index += 1
        return notes


    def scan_notes(self) -> list[tuple[int, str, int, bytes]]:
        """Notes found by looking at every 4-byte-aligned offset of each PT_NOTE
        rather than walking: (offset, name, type, desc) of each Linux version
        note ("Linux", 0, 4 bytes) and GNU property note ("GNU", 5).  They tell
        what a walk that stopped early did not reach, and why it stopped."""
        out: list[tuple[int, str, int, bytes]] = []
        want = {(6, b"Linux\0", 0), (4, b"GNU\0", NT_GNU_PROPERTY_TYPE_0)}
        header = NHDR.size(self.elf_class)
        for seg in self.segments_of_type(PT_NOTE):
            end = min(seg.offset + seg.filesz, len(self.data))
            for off in range(seg.offset + (-seg.offset % 4), end - header + 1, 4):
                self.charge()
                namesz, descsz, ntype = self.read(NHDR, off)
                name = bytes(self.view[off + header:off + header + namesz]) if namesz <= 8 else b""
                if (namesz, name, ntype) in want and off + header + _align4(namesz) + descsz <= end:
                    desc_off = off + header + _align4(namesz)
                    if ntype == 0 and descsz != 4:
                        continue
                    out.append((off, name.rstrip(b"\0").decode(), ntype, bytes(self.view[desc_off:desc_off + descsz])))
        return out

    def walk_aligned(self, seg: Segment, align: int) -> tuple[list[tuple[int, str, int]], int | None]:
        """The notes a walk with `align`-byte padding reads in one PT_NOTE, as
        readelf walks a segment by its p_align: ([(offset, name, type)], the
        offset where it stops, or None when it reads to the end)."""
        header = NHDR.size(self.elf_class)
        off, end = seg.offset, min(seg.offset + seg.filesz, len(self.data))
        out: list[tuple[int, str, int]] = []
        while off < end and len(out) < MAX_NOTES:
            self.charge()
            if off + header > end:
                return out, off
            namesz, descsz, ntype = self.read(NHDR, off)
            # Header and name together are padded to the alignment, then the description.
            desc_off = off + _align(header + namesz, align)
            nxt = off + _align(desc_off - off + descsz, align)
            if desc_off + descsz > end or namesz > MAX_NAME:
                return out, off
            raw = bytes(self.view[off + header:off + header + namesz]).rstrip(b"\0")
            name = raw.decode("ascii") if raw.isascii() and raw.decode("ascii").isprintable() else "?"
            out.append((off, name, ntype))
            off = nxt
        return out, None

    def _note_label(self, name_off: int, namesz: int, end: int) -> str:
        """"name 'GNU', " when the name lies inside the segment, else ""."""
        if 0 < namesz <= 64 and name_off + namesz <= end:
            name = bytes(self.view[name_off:name_off + namesz]).rstrip(b"\0").decode("utf-8", "replace")
            return f"name {name!r}, "
        return ""


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _align(n: int, align: int) -> int:
    return (n + align - 1) // align * align
