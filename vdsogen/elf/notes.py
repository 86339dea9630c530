"""ElfImage, part 4 (see reader.py): the notes, walked through PT_NOTE."""

from vdsogen.elf.bounds import MAX_NAME, MAX_NOTES
from vdsogen.elf.consts import NHDR, PT_NOTE
from vdsogen.elf.records import Note


class Notes:
    """A part of ElfImage (reader.py): it reads self.data within self.budget."""

    # -- notes -------------------------------------------------------------

    def _read_notes(self):
        """Walk every PT_NOTE with 4-byte alignment, as vDSO consumers do.

        A note that does not parse ends the walk of its segment and is kept
        in `note_problems` for the rules."""
        notes, header = [], NHDR.size(self.elf_class)
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
                if off + header > end:
                    self.note_problems.append((off, f"{end - off} stray byte(s) at the end of PT_NOTE"))
                    break
                namesz, descsz, ntype = self.read(NHDR, off)
                name_off = off + header
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
