"""The image's call-frame information: where .eh_frame's FDEs say code is,
and which of them mark a signal frame (augmentation "S"), which unwinders
follow whatever the code's bytes.  Used by audit rule T001 and `vdsogen diff`."""

from __future__ import annotations

from vdsogen.elf.consts import PT_GNU_EH_FRAME
from vdsogen.elf.reader import ElfImage, Unreadable


def fde_ranges(img: ElfImage) -> list[tuple[int, int, bool]]:
    """[(start, end, signal frame)] of every FDE of the image's .eh_frame
    (found by its section, or through PT_GNU_EH_FRAME); [] without one.
    Computed once per image; a damaged table gives the FDEs before the damage."""
    return img._cached("fde_ranges", lambda: _fde_ranges(img))


def _fde_ranges(img: ElfImage) -> list[tuple[int, int, bool]]:
    sec = img.section(".eh_frame")
    if sec is not None and sec.offset + sec.size <= len(img.data):
        start, vaddr, end = sec.offset, sec.addr, sec.offset + sec.size
    else:
        hdrs = img.segments_of_type(PT_GNU_EH_FRAME)
        if not hdrs:
            return []
        h = hdrs[0]
        try:
            vaddr, _ = _encoded(img, h.offset + 4, img.data[h.offset + 1], h.vaddr + 4)
            start = img.offset_of(vaddr)
        except (Unreadable, IndexError, ValueError):
            return []
        end = next((s.offset + s.filesz for s in img.loads if s.offset <= start < s.offset + s.filesz), start)
    out: list[tuple[int, int, bool]] = []
    cies: dict[int, tuple[int, bool]] = {}
    data, pos = img.data, start
    try:
        while pos + 4 <= end:
            img.charge()
            length = int.from_bytes(data[pos:pos + 4], img.endian)
            if length == 0:
                break
            body = pos + 4
            if length == 0xFFFFFFFF:
                length = int.from_bytes(data[body:body + 8], img.endian)
                body += 8
            cie_id = int.from_bytes(data[body:body + 4], img.endian)
            if cie_id == 0:
                cies[pos] = _cie(data, body + 4)
            elif body - cie_id in cies:
                enc, signal = cies[body - cie_id]
                at = body + 4
                begin, at = _encoded(img, at, enc, vaddr + at - start)
                size, _ = _encoded(img, at, enc & 0x0F, vaddr + at - start)
                out.append((begin, begin + size, signal))
            pos = body + length
    except (IndexError, ValueError):
        pass                             # a damaged table: the FDEs before the damage
    return out


def _leb(data: bytes, p: int, signed: bool = False) -> tuple[int, int]:
    """(value, position after it) of the LEB128 number at data[p]."""
    value = shift = 0
    while True:
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            if signed and b & 0x40:
                value -= 1 << shift
            return value, p


def _cie(data: bytes, p: int) -> tuple[int, bool]:
    """(FDE pointer encoding, signal frame) of the CIE whose version byte is at p."""
    version = data[p]
    aug_end = data.index(b"\0", p + 1)
    aug = data[p + 1:aug_end].decode("ascii", "replace")
    p = aug_end + 1
    if "eh" in aug:
        raise ValueError("an \"eh\" augmentation")
    _, p = _leb(data, p)                        # code alignment
    _, p = _leb(data, p, signed=True)           # data alignment
    p = p + 1 if version == 1 else _leb(data, p)[1]
    enc = 0
    if aug.startswith("z"):
        _, p = _leb(data, p)
        for ch in aug[1:]:
            if ch == "R":
                enc = data[p]
                p += 1
            elif ch == "L":
                p += 1
            elif ch == "P":
                p += 1 + _SIZES.get(data[p] & 0x0F, 8)
    return enc, "S" in aug


_SIZES = {0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}


def _encoded(img: ElfImage, at: int, enc: int, field_vaddr: int) -> tuple[int, int]:
    """(value, file offset after it) of the DW_EH_PE-encoded pointer at file
    offset `at`, whose own address is field_vaddr (for pc-relative ones)."""
    fmt = enc & 0x0F
    if fmt in (0x01, 0x09):
        value, after = _leb(img.data, at, signed=fmt == 0x09)
    else:
        size = img.wsize if fmt == 0 else _SIZES.get(fmt)
        if size is None or at + size > len(img.data):
            raise ValueError(f"pointer encoding 0x{enc:x}")
        value = int.from_bytes(img.data[at:at + size], img.endian, signed=fmt >= 0x09)
        after = at + size
    if enc & 0x70 == 0x10:                      # pc-relative
        value += field_vaddr
    elif enc & 0x70 or enc & 0x80:
        raise ValueError(f"pointer encoding 0x{enc:x}")
    return value & ((1 << (8 * img.wsize)) - 1), after


__all__ = ["fde_ranges"]
