"""Just enough instruction decoding to follow a vDSO's direct branches.

For each ABI a decoder tells, for the instruction at an address, its length
and whether it is a direct call, jump or conditional jump (with its target),
an end of flow (return, indirect jump, trap) or anything else.  The code
walk starts at the function symbols and follows the flow, so data placed
between functions is never taken for code.  Encodings come from the
architecture manuals; nothing here runs or interprets what it decodes.

The decoders are the ISA modules' (vdsogen/isa/NAME.py), found through
vdsogen.isa by the image's e_machine; this module is the machine-independent
walk.
"""

from bisect import bisect_right
from typing import Iterable, Iterator, Protocol

from vdsogen.isa import for_machine
from vdsogen.isa.base import CALL, CJUMP, JUMP, SEQ, STOP, Code, Decode, Image, Insn

__all__ = ["SEQ", "CALL", "JUMP", "CJUMP", "STOP", "Insn", "decoder_for", "entry", "Regions", "walk"]

Region = tuple[int, Code]           # (start address, bytes)


class WalkedImage(Image, Protocol):
    """What walk() reads of an image: its machine, and the work budget it charges."""
    def charge(self, units: int = 1) -> None: ...


def decoder_for(img: Image) -> Decode | None:
    """decode(code, i, addr, mode) -> Insn or None, for the image's machine; None if unsupported."""
    isa = for_machine(img.e_machine)
    return None if isa is None else isa.decoder(img)


def entry(img: Image, value: int) -> tuple[int, str | None]:
    """(code address, decoder mode) of a function symbol's value: on ARM an odd
    value is a Thumb entry, elsewhere the value is the address (mode None)."""
    isa = for_machine(img.e_machine)
    return (value, None) if isa is None else isa.entry(value)


class Regions:
    """The code regions, for finding the one an address is in by bisection.

    regions: [(start address, bytes)].  Where regions overlap, the one that
    starts first owns the overlap."""

    def __init__(self, regions: Iterable[Region]) -> None:
        pieces: list[tuple[int, int, int, Code]] = []
        covered: int | None = None
        for start, code in sorted(regions, key=lambda r: (r[0], -len(r[1]))):
            end = start + len(code)
            lo = start if covered is None else max(start, covered)
            if lo < end:
                pieces.append((lo, end, start, code))
                covered = end
        self.starts = [p[0] for p in pieces]
        self.pieces = pieces

    def find(self, addr: int) -> Region | None:
        """(region start, bytes) of the region holding addr, or None."""
        i = bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        _lo, end, start, code = self.pieces[i]
        return (start, code) if addr < end else None

    def __contains__(self, addr: int) -> bool:
        return self.find(addr) is not None


def walk(img: WalkedImage, regions: Regions | Iterable[Region],
         entries: Iterable[tuple[int, str | None]],
         decoded: dict[tuple[int, str | None], tuple[Insn, bytes]] | None = None
         ) -> Iterator[tuple[int, Insn, bytes]]:
    """Follow the flow from entries; yield (address, Insn, raw bytes) of every
    instruction reached, each once.  Each instruction decoded is one unit of
    the image's work budget.

    regions: [(start address, bytes)] of executable code, or a Regions;
    entries: [(address, mode)]; decoded: where to keep (address, mode) ->
    (Insn, raw bytes), for a later walk of other flows through the same code."""
    decode = decoder_for(img)
    if decode is None:
        return
    if not isinstance(regions, Regions):
        regions = Regions(regions)
    charge = img.charge
    seen: set[tuple[int, str | None]] = set()
    work = list(entries)
    while work:
        addr, mode = work.pop()
        region: Region | None = None
        while True:
            if (addr, mode) in seen:
                break
            if region is None or not region[0] <= addr < region[0] + len(region[1]):
                region = regions.find(addr)
                if region is None:
                    break
            seen.add((addr, mode))
            charge()
            start, code = region
            insn = decode(code, addr - start, addr, mode)
            if insn is None or insn.length <= 0:
                break
            raw = bytes(code[addr - start:addr - start + insn.length])
            if decoded is not None:
                decoded[addr, mode] = insn, raw
            yield addr, insn, raw
            if insn.target is not None:
                work.append((insn.target, insn.mode or mode))
            if insn.kind in (JUMP, STOP):
                break
            addr += insn.length
