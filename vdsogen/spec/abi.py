"""The catalogue of Linux vDSO ABIs (vdsogen/spec/abi.toml) and ABI detection.

`vdsogen audit` judges images vdsogen did not build, for ABIs it may not
build yet.  What it needs to know about each ABI is data; this module loads
and checks it once and picks the ABI an image is for from its ELF identity
(class, e_machine, byte order, e_flags) and, where two ABIs share those,
from its version nodes and soname.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple
from pathlib import Path

from vdsogen.elf.reader import Unreadable
from vdsogen.errors import SpecError
from vdsogen.spec.toml import Table, load_toml

CATALOGUE = Path(__file__).resolve().parent / "abi.toml"
CONSUMERS = ("glibc", "musl", "go", "sysv")
CONSUMER_NAMES = {
    "glibc": "glibc",
    "musl": "musl",
    "go": "Go runtime",
    "sysv": "DT_HASH-only parser",
}


@dataclass(frozen=True)
class FlagRule:
    mask: int
    values: tuple
    what: str
    detect: bool = False     # also selects the ABI
    warn: bool = False       # a mismatch is a warning (H007), not an error (H006)

    def ok(self, flags):
        return flags & self.mask in self.values


@dataclass(frozen=True)
class Lookup:
    symbol: str
    version: str
    needs: str | None = None   # used only when this other symbol is found too

    def __str__(self):
        return f"{self.symbol}@{self.version}"


@dataclass(frozen=True)
class Abi:
    name: str
    description: str
    elf_class: int
    machine: int
    endians: tuple
    sonames: tuple
    versions: tuple
    lookup_version: str
    page_size: int
    core: tuple
    flags: tuple
    entry: str | None
    trampolines: tuple       # of Trampoline
    lookups: dict            # consumer -> tuple of Lookup
    hash_word: int
    notes: str


class Trampoline(NamedTuple):
    name: str
    lead: tuple              # words right before the symbol in vdsogen's images (audit ignores them)
    words: tuple             # words at the symbol: what unwinders match


def _lookups(t, version):
    out = {}
    for consumer in CONSUMERS:
        items = []
        for i, item in enumerate(t.raw(consumer)):
            if isinstance(item, str):
                sym, _, ver = item.partition("@")
                items.append(Lookup(sym, ver or version))
            elif isinstance(item, dict):
                it = Table(t.path, item, f"{t.key}.{consumer}[{i}]")
                items.append(Lookup(it.str("symbol"), it.str("version", version), it.str("needs", None)))
                it.done()
            else:
                t.error(f"{consumer}[{i}]", "expected a name or a table")
        out[consumer] = tuple(items)
    t.done()
    return out


def _words(t, key, default=None):
    words = t.list(key, int, default, "an integer")
    for i, w in enumerate(words or ()):
        if not 0 <= w <= 0xFFFFFFFF:
            t.error(f"{key}[{i}]", f"{w:#x} is not a 32-bit instruction word")
    return tuple(words or ())


def _abi(name, t):
    version = t.str("lookup_version")
    flags = []
    for f in t.tables("flags", []):
        flags.append(FlagRule(f.int("mask"), tuple(f.list("values", int, kindname="an integer")), f.str("what"),
                              f.bool("detect", False), f.bool("warn", False)))
        f.done()
    tramps = []
    for tr in t.tables("trampolines", []):
        tramps.append(Trampoline(tr.str("name"), _words(tr, "lead", []), _words(tr, "words")))
        tr.done()
    endians = tuple(t.list("endian", str, kindname="a string"))
    if not endians or set(endians) - {"little", "big"}:
        t.error("endian", "expected a list of \"little\" and/or \"big\"")
    elf_class = t.int("class")
    if elf_class not in (32, 64):
        t.error("class", "expected 32 or 64")
    abi = Abi(name, t.str("description"), elf_class, t.int("machine"), endians,
              tuple(t.list("soname", str, kindname="a string")), tuple(t.list("versions", str, kindname="a string")),
              version, t.int("page_size"), tuple(t.list("core", str, kindname="a string")), tuple(flags),
              t.str("entry", None), tuple(tramps), _lookups(t.table("lookups"), version), t.int("hash_word", 4),
              t.str("notes", ""))
    t.done()
    return abi


@lru_cache(maxsize=None)
def catalogue():
    """name -> Abi, in the catalogue's order."""
    top = Table(CATALOGUE, load_toml(CATALOGUE))
    out = {name: _abi(name, top.table(name)) for name in top.keys()}
    top.done()
    return out


def names():
    return list(catalogue())


def get(name):
    return catalogue().get(name)


@dataclass(frozen=True)
class Detection:
    abi: Abi | None
    source: str              # "detected", "--arch" or "unknown"
    also: tuple = ()         # other ABIs the ELF identity fits
    reason: str = ""         # why none fits


def _node_names(img):
    try:
        return {v.name for v in img.verdefs() or () if not v.flags & 1}
    except Unreadable:
        return set()


def _soname(img):
    try:
        value = img.dyn("SONAME")
        return img.dynstr(value) if value is not None else None
    except Unreadable:
        return None


def detect(img):
    """The catalogue ABI an image is for, from its ELF identity."""
    fits = [a for a in catalogue().values()
            if a.elf_class == img.elf_class and a.machine == img.e_machine and img.endian in a.endians
            and all(f.ok(img.e_flags) for f in a.flags if f.detect)]
    if not fits:
        return Detection(None, "unknown", reason=(
            f"ELF{img.elf_class} {img.endian}-endian {img.machine_name} (e_flags 0x{img.e_flags:x}) "
            "is none of the ABIs in the catalogue"))
    if len(fits) > 1:
        nodes, soname = _node_names(img), _soname(img)

        def score(a):
            return (len(nodes & set(a.versions)) - len(nodes - set(a.versions)), soname in a.sonames)
        best = max(score(a) for a in fits)
        fits = [a for a in fits if score(a) == best] + [a for a in fits if score(a) != best]
    return Detection(fits[0], "detected", tuple(a.name for a in fits[1:]))


def chosen(img, name=None):
    """Detection for `--arch=name`, or detect()."""
    if name is None:
        return detect(img)
    abi = get(name)
    if abi is None:
        raise SpecError(CATALOGUE, name, f"no such ABI (known: {', '.join(names())})")
    return Detection(abi, "--arch")
