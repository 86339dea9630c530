"""Which Linux's export set an image has, and what it lacks against the newest.

The ABI catalogue (vdsogen/spec/abi.toml, `exports`) dates every entry point
Linux exports for an ABI: the release that added it (`since`), the first
without it again (`until`), and when a kernel has it at all (`note`: a
config option, a clocksource).  Between two such dates the export set does
not change, so the dates cut Linux's history into spans, each with one set:
the entry points without a note, which every kernel of the span exports,
and those with one, which a kernel may lack.  An image has the set of a
span when it exports all of the first and nothing the span did not have.

A distribution reads from this how far its vDSO is behind: Debian's
bookworm x86_64 image has the set of Linux 5.11 up to 6.11 and lacks
getrandom and the robust-futex unlock of the newest set.  Exports the
catalogue does not know are listed apart (S009 reports them too) and do
not decide the match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vdsogen.audit.era import show
from vdsogen.audit.rules.symbols import exported
from vdsogen.elf.consts import STT_FUNC, STT_NOTYPE
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.abi import Abi

Version = tuple[int, ...]


@dataclass(frozen=True)
class Span:
    """Linux `first` up to, not including, `until` (None: to the newest)."""
    first: Version
    until: Version | None

    def __str__(self) -> str:
        return f"Linux {show(self.first)}" + (f" up to {show(self.until)}" if self.until else " and later")

    def as_dict(self) -> dict[str, Any]:
        return {"from": show(self.first), "until": show(self.until) if self.until else None}


@dataclass(frozen=True)
class ExportSet:
    abi: str
    matches: tuple          # of Span: the spans whose export set the image has (adjacent ones merged)
    newest: Version         # the first Linux of the newest span the catalogue knows
    lacks: tuple            # of (name, note): the newest set's exports the image does not have
    unknown: tuple          # the image's exports the catalogue does not know for the ABI

    def line(self) -> str:
        """The text report's line."""
        have = ("the set of " + ", ".join(map(str, self.matches)) if self.matches
                else "the set of no Linux the catalogue knows")
        lacks = ", ".join(f"{n} ({note})" if note else n for n, note in self.lacks)
        out = f"{have}; of the newest set (Linux {show(self.newest)} and later) it lacks: {lacks or 'nothing'}"
        return out + (f"; not in the catalogue: {', '.join(self.unknown)}" if self.unknown else "")

    def as_dict(self) -> dict[str, Any]:
        return {"abi": self.abi, "matches": [s.as_dict() for s in self.matches], "newest": show(self.newest),
                "lacks": [{"name": n, "note": note} for n, note in self.lacks], "unknown": list(self.unknown)}


def spans(a: Abi) -> list[Span]:
    """Linux's history for the ABI cut where its export set changes."""
    cuts = sorted({e.since for e in a.exports} | {e.until for e in a.exports if e.until})
    return [Span(v, cuts[i + 1] if i + 1 < len(cuts) else None) for i, v in enumerate(cuts)]


def has_set_of(names: set[str], a: Abi, at: Version) -> bool:
    """The image's exports `names` are the set of Linux `at`: every entry
    point of that Linux without a note, none it did not have."""
    alive = [e for e in a.exports if e.alive(at)]
    known = {e.name for e in a.exports}
    return {e.name for e in alive if not e.note} <= names and \
        names & known <= {e.name for e in alive}


def export_set(img: ElfImage, a: Abi) -> ExportSet | None:
    """The image's export set against the catalogue's for ABI `a`; None when
    the catalogue dates no export of it."""
    if not a.exports:
        return None
    names = {s.name for s in exported(img) if s.type in (STT_FUNC, STT_NOTYPE)}
    matches: list[Span] = []
    for span in spans(a):
        if not has_set_of(names, a, span.first):
            continue
        if matches and matches[-1].until == span.first:
            matches[-1] = Span(matches[-1].first, span.until)
        else:
            matches.append(span)
    newest = spans(a)[-1].first
    lacks = tuple((e.name, e.note) for e in a.exports if e.alive(newest) and e.name not in names)
    unknown = tuple(sorted(names - {e.name for e in a.exports}))
    return ExportSet(a.name, tuple(matches), newest, lacks, unknown)
