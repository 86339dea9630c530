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

from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import SpecError
from vdsogen.spec import functions
from vdsogen.spec.toml import C_IDENT, Table, did_you_mean, load_toml

CATALOGUE = Path(__file__).resolve().parent / "abi.toml"
CONSUMERS = ("glibc", "musl", "go", "sysv")
# How a vDSO's result reports an error: -errno, or CR0.SO set and a positive errno (powerpc).
CONVENTIONS = ("negative-errno", "cr0-so")
# The syscalls a signal trampoline makes (beside those functions.toml's functions fall back to).
TRAMPOLINE_SYSCALLS = ("sigreturn", "rt_sigreturn", "restart_syscall")
# Where a trampoline's kernel label points: the first of its `lead` words,
# its symbol, or right after the bytes unwinders compare (`match`), which
# end with the syscall instruction: where the task is when the syscall returns.
LABEL_PLACES = ("lead", "symbol", "return")
SYSCALL_NR_MAX = 8191   # above every Linux ABI's table, MIPS's 4000/5000/6000 bases included
# The symbol hash tables an ABI's vDSO can carry (`hash_styles`), in this
# order: DT_HASH ("sysv") and DT_GNU_HASH ("gnu"), as ld's --hash-style names them.
HASH_STYLES = ("sysv", "gnu")
# The C types of __kernel_suseconds_t, the ABIs' timeval tv_usec (abi.toml suseconds).
SUSECONDS = ("long", "int")
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

    def ok(self, flags: int) -> bool:
        return flags & self.mask in self.values


@dataclass(frozen=True)
class Lookup:
    symbol: str
    version: str
    needs: str | None = None   # used only when this other symbol is found too

    def __str__(self):
        return f"{self.symbol}@{self.version}"


@dataclass(frozen=True)
class Export:
    """An entry point some Linux of the ABI exports, and from (until) which Linux."""
    name: str
    version: str             # its version node
    since: tuple             # (major, minor, sublevel) of the first Linux with it
    until: tuple | None      # the first Linux without it again, or None
    note: str                # when a kernel has it (a config option, a clocksource)

    def alive(self, era: tuple | None) -> bool:
        """Exported by a kernel of this era (None: any era, today's)."""
        if era is None:
            return self.until is None
        return self.since <= era and (self.until is None or era < self.until)


@dataclass(frozen=True)
class KernelLabel:
    """A local symbol inside an entry point that the ABI's kernels link to by
    its name (i386's int80_landing_pad, in __kernel_vsyscall)."""
    name: str
    within: str              # the entry point that holds it: images without it have no label


@dataclass(frozen=True)
class Syscalls:
    """How the ABI's vDSO makes a system call."""
    instruction: str         # as the asm writes it ("svc #0")
    convention: str          # of CONVENTIONS
    numbers: dict            # syscall name -> number, in the catalogue's order


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
    exports: tuple = ()      # of Export: every entry point a Linux of the ABI exports, up to 7.2
    hash_styles: tuple = HASH_STYLES  # the symbol hash tables its vDSO carries, of HASH_STYLES
    syscalls: Syscalls | None = None  # None: vdsogen builds no vDSO of the ABI (audit only)
    kernel_labels: tuple = ()  # of KernelLabel: the kernel's labels inside entry points
    suseconds: str = "long"  # the C type of __kernel_suseconds_t (timeval's tv_usec): "int" on sparc64
    one_node: bool = False   # each kernel defines one of `versions`, a later one renaming it (parisc's 6.11)

    @property
    def hash_style(self) -> str:
        """The linker's --hash-style for this ABI: "both", "sysv" or "gnu"."""
        return "both" if len(self.hash_styles) == 2 else self.hash_styles[0]

    def export(self, name: str) -> "Export | None":
        return next((e for e in self.exports if e.name == name), None)

    def core_for(self, era: tuple | None) -> tuple:
        """The core entry points a kernel of this era exports (all of them
        when the era is unknown or the catalogue does not date one)."""
        out = []
        for name in self.core:
            e = self.export(name)
            if e is None or era is None or e.alive(era):
                out.append(name)
        return tuple(out)

    def versions_for(self, era: tuple | None) -> tuple:
        """The version nodes a kernel of this era defines: those that hold one
        of its exports (every node when the era is unknown)."""
        if era is None or not self.exports:
            return self.versions
        used = {e.version for e in self.exports if e.alive(era)}
        return tuple(v for v in self.versions if v in used)


class Trampoline(NamedTuple):
    name: str
    lead: tuple              # words right before the symbol in vdsogen's images (audit ignores them)
    words: tuple             # words at the symbol
    match: int | None = None  # bytes of `words` unwinders compare (None: all of them)
    syscall: str = ""        # the syscall it makes, of TRAMPOLINE_SYSCALLS
    kernel_label: str = ""   # the kernel's name for its offset (arm64's sigtramp), or "": none
    label_at: str = ""       # of LABEL_PLACES: where that offset points ("" without a label)


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


def _hash_styles(t):
    styles = t.list("hash_styles", str, list(HASH_STYLES), "a string")
    for i, style in enumerate(styles):
        if style not in HASH_STYLES:
            t.error(f"hash_styles[{i}]", f"{style!r} is not one of {', '.join(HASH_STYLES)}")
        if style in styles[:i]:
            t.error(f"hash_styles[{i}]", f"{style!r} is listed twice")
    if not styles:
        t.error("hash_styles", f"empty: a vDSO needs at least one of {', '.join(HASH_STYLES)}")
    return tuple(s for s in HASH_STYLES if s in styles)


def _abi(name, t):
    version = t.str("lookup_version")
    flags = []
    for f in t.tables("flags", []):
        flags.append(FlagRule(f.int("mask"), tuple(f.list("values", int, kindname="an integer")), f.str("what"),
                              f.bool("detect", False), f.bool("warn", False)))
        f.done()
    tramps = []
    for tr in t.tables("trampolines", []):
        words = _words(tr, "words")
        match = tr.int("match", None)
        if match is not None and not 0 < match <= 4 * len(words):
            tr.error("match", f"{match} is not a byte count within the {4 * len(words)} bytes of `words`")
        lead = _words(tr, "lead", [])
        label = tr.str("kernel_label", "")
        if label and not C_IDENT.match(label):
            tr.error("kernel_label", f"{label!r} is not a C identifier")
        at = tr.str("label_at", "symbol" if label else "", choices=LABEL_PLACES)
        if at and not label:
            tr.error("label_at", "without a kernel_label")
        if at == "lead" and not lead:
            tr.error("label_at", "\"lead\", and the trampoline has no `lead` words")
        tramps.append(Trampoline(tr.str("name"), lead, words, match,
                                 tr.str("syscall", choices=TRAMPOLINE_SYSCALLS), label, at))
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
              t.str("notes", ""), _exports(t, version, t.raw("versions")), _hash_styles(t),
              _syscalls(t.table("syscalls", None)), _kernel_labels(t), t.str("suseconds", "long", choices=SUSECONDS),
              t.bool("one_node", False))
    t.done()
    return abi


def _kernel_labels(t):
    out = []
    for k in t.tables("kernel_labels", []):
        name, within = k.str("name"), k.str("within")
        for key, value in (("name", name), ("within", within)):
            if not C_IDENT.match(value):
                k.error(key, f"{value!r} is not a C identifier")
        out.append(KernelLabel(name, within))
        k.done()
    return tuple(out)


def syscall_names() -> tuple:
    """Every syscall a vDSO of vdsogen's can make: the fallbacks of
    functions.toml's functions and the trampolines' syscalls."""
    fallbacks = (f.syscall for f in functions.catalogue().values() if f.syscall)
    return tuple(dict.fromkeys((*fallbacks, *TRAMPOLINE_SYSCALLS)))


def _syscalls(t: Table | None) -> Syscalls | None:
    if t is None:
        return None
    known = syscall_names()
    nt = t.table("numbers")
    numbers = {}
    for name in nt.keys():
        if name not in known:
            nt.error(name, f"no function of functions.toml nor trampoline makes this syscall"
                           f"{did_you_mean(name, known)}")
        numbers[name] = nt.int(name, lo=0, hi=SYSCALL_NR_MAX)
    nt.done()
    out = Syscalls(t.str("instruction"), t.str("convention", choices=CONVENTIONS), numbers)
    t.done()
    return out


def _release(t, key, text):
    try:
        parts = tuple(int(p) for p in text.split("."))
    except ValueError:
        parts = ()
    if not 2 <= len(parts) <= 3:
        t.error(key, f"{text!r} is not a Linux version (\"6.11\", \"2.6.23\")")
    return parts + (0,) * (3 - len(parts))


def _exports(t, version, versions):
    out, seen = [], set()
    for e in t.tables("exports", []):
        name = e.str("name")
        if name in seen:
            e.error("name", f"{name} is listed twice")
        seen.add(name)
        node = e.str("version", version)
        if node not in versions:
            e.error("version", f"{node!r} is none of the ABI's version nodes ({', '.join(versions)})")
        until = e.str("until", None)
        out.append(Export(name, node, _release(e, "since", e.str("since")),
                          _release(e, "until", until) if until else None, e.str("note", "")))
        e.done()
    return tuple(out)


@lru_cache(maxsize=None)
def catalogue() -> dict[str, Abi]:
    """name -> Abi, in the catalogue's order."""
    top = Table(CATALOGUE, load_toml(CATALOGUE))
    out = {name: _abi(name, top.table(name)) for name in top.keys()}
    top.done()
    return out


def names() -> list[str]:
    return list(catalogue())


def get(name: str) -> Abi | None:
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


def _export_names(img):
    try:
        return {s.name for s in img.dynsym if s.defined}
    except Unreadable:
        return set()


def _soname(img):
    try:
        value = img.dyn("SONAME")
        return img.dynstr(value) if value is not None else None
    except Unreadable:
        return None


def detect(img: "ElfImage") -> "Detection":
    """The catalogue ABI an image is for, from its ELF identity."""
    fits = [a for a in catalogue().values()
            if a.elf_class == img.elf_class and a.machine == img.e_machine and img.endian in a.endians
            and all(f.ok(img.e_flags) for f in a.flags if f.detect)]
    if not fits:
        return Detection(None, "unknown", reason=(
            f"ELF{img.elf_class} {img.endian}-endian {img.machine_name} (e_flags 0x{img.e_flags:x}) "
            "is none of the ABIs in the catalogue"))
    if len(fits) > 1:
        nodes, soname, names = _node_names(img), _soname(img), _export_names(img)

        # Version nodes, then the soname, then the exports the ABI knows
        # (arm64-compat's sigreturn trampolines tell it from arm).
        def score(a):
            return (len(nodes & set(a.versions)) - len(nodes - set(a.versions)), soname in a.sonames,
                    sum(a.export(n) is not None for n in names))
        best = max(score(a) for a in fits)
        fits = [a for a in fits if score(a) == best] + [a for a in fits if score(a) != best]
    return Detection(fits[0], "detected", tuple(a.name for a in fits[1:]))


def chosen(img: "ElfImage", name: str | None = None) -> Detection:
    """Detection for `--arch=name`, or detect()."""
    if name is None:
        return detect(img)
    abi = get(name)
    if abi is None:
        raise SpecError(CATALOGUE, name, f"no such ABI (known: {', '.join(names())})")
    return Detection(abi, "--arch")
