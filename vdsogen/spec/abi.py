"""The catalogue of Linux vDSO ABIs (vdsogen/data/abi.toml) and ABI detection.

`vdsogen audit` judges images vdsogen did not build, for ABIs it may not
build yet.  What it needs to know about each ABI is data; this module loads
and checks it once and picks the ABI an image is for from its ELF identity
(class, e_machine, byte order, e_flags) and, where two ABIs share those,
from its version nodes and soname.
"""

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vdsogen.elf.reader import Unreadable
from vdsogen.errors import SpecError

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
    trampolines: tuple       # (name, lead words, words), as Expect wants them
    lookups: dict            # consumer -> tuple of Lookup
    hash_word: int
    notes: str


def _fail(key, message):
    raise SpecError(CATALOGUE, key, message)


def _want(table, key, kind, where, default=None):
    if key not in table:
        if default is not None:
            return default
        _fail(f"{where}.{key}", "missing")
    value = table[key]
    if not isinstance(value, kind):
        _fail(f"{where}.{key}", f"expected {kind.__name__ if isinstance(kind, type) else kind}")
    return value


KEYS = {"description", "class", "machine", "endian", "soname", "versions", "lookup_version", "page_size",
        "core", "flags", "entry", "trampolines", "lookups", "hash_word", "notes"}


def _abi(name, t):
    unknown = set(t) - KEYS
    if unknown:
        _fail(f"{name}.{sorted(unknown)[0]}", "unknown key")
    version = _want(t, "lookup_version", str, name)
    lookups = {}
    table = _want(t, "lookups", dict, name)
    for consumer in CONSUMERS:
        items = []
        for i, item in enumerate(_want(table, consumer, list, f"{name}.lookups")):
            where = f"{name}.lookups.{consumer}[{i}]"
            if isinstance(item, str):
                sym, _, ver = item.partition("@")
                items.append(Lookup(sym, ver or version))
            elif isinstance(item, dict):
                items.append(Lookup(_want(item, "symbol", str, where), item.get("version", version),
                                    item.get("needs")))
            else:
                _fail(where, "expected a name or a table")
        lookups[consumer] = tuple(items)
    flags = []
    for i, f in enumerate(t.get("flags", [])):
        where = f"{name}.flags[{i}]"
        flags.append(FlagRule(_want(f, "mask", int, where), tuple(_want(f, "values", list, where)),
                              _want(f, "what", str, where), bool(f.get("detect")), bool(f.get("warn"))))
    tramps = []
    for i, tr in enumerate(t.get("trampolines", [])):
        where = f"{name}.trampolines[{i}]"
        tramps.append((_want(tr, "name", str, where), (), tuple(_want(tr, "words", list, where))))
    endians = tuple(_want(t, "endian", list, name))
    if not endians or set(endians) - {"little", "big"}:
        _fail(f"{name}.endian", "expected a list of \"little\" and/or \"big\"")
    elf_class = _want(t, "class", int, name)
    if elf_class not in (32, 64):
        _fail(f"{name}.class", "expected 32 or 64")
    return Abi(name, _want(t, "description", str, name), elf_class, _want(t, "machine", int, name), endians,
               tuple(_want(t, "soname", list, name)), tuple(_want(t, "versions", list, name)), version,
               _want(t, "page_size", int, name), tuple(_want(t, "core", list, name)), tuple(flags),
               t.get("entry"), tuple(tramps), lookups, t.get("hash_word", 4), t.get("notes", ""))


@lru_cache(maxsize=None)
def catalogue():
    """name -> Abi, in the catalogue's order."""
    try:
        with open(CATALOGUE, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise SpecError(CATALOGUE, None, f"cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(CATALOGUE, None, str(e)) from None
    return {name: _abi(name, t) for name, t in data.items()}


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
