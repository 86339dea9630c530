"""What glibc, musl, the Go runtime and a DT_HASH-only parser make of an image.

Each consumer is modelled on how it finds the vDSO's entry points
(docs/audit.rst, "Consumers", sums up each model): which PT_LOAD gives the
base, where it reads the dynamic array, which hash table it walks and how,
which symbol types and bindings it accepts, how it checks versions.  The
model runs over the image as the kernel maps it (the file from offset 0,
whole pages): a read outside it is a crash, a chain that does not end is a
hang.

Per lookup the result is found (and the address the consumer would call),
absent (the image does not define symbol@version: the consumer makes the
syscall), missed (the image defines it but this consumer cannot find it,
with the ELF property that hides it) or bad (found, but the address is not
the symbol's code).  Per consumer the verdict is works, degraded (falls
back to syscalls for something the image offers, or for an entry point
every kernel of the ABI has), breaks (crashes, hangs or calls the wrong
address) or n/a (the consumer makes no vDSO calls on this ABI).  The Go
runtime is modelled per release where its lookup changed (GO_RELEASES):
its verdict is the newest release's, and its reason names the releases it
holds for and the older ones that get another verdict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vdsogen.audit.era import version_of
from vdsogen.spec.abi import CONSUMER_NAMES, CONSUMERS, Abi, Lookup
from vdsogen.elf import decode
from vdsogen.elf.consts import (DT, DYN, EHDR, EI_NIDENT, GNU_HASH, PHDR, PT_DYNAMIC, PT_LOAD, PT_TLS,
                                SHN_ABS, SHN_UNDEF, STB_GLOBAL, STB_GNU_UNIQUE, STB_WEAK, STT_COMMON, STT_FUNC,
                                STT_GNU_IFUNC, STT_NOTYPE, STT_OBJECT, STT_TLS, SYM, SYSV_HASH, VER_FLG_BASE, VERDAUX,
                                VERDEF, Layout, elf_hash, gnu_hash)
from vdsogen.elf.reader import ElfImage, Unreadable

PAGE = 4096
MAX_STEPS = 1 << 16          # dynamic entries, chain links, symbols scanned, verdefs
MAX_STRING = 4096            # longer strings are compared cut short
TYPE_NAMES = {STT_NOTYPE: "STT_NOTYPE", STT_OBJECT: "STT_OBJECT", STT_FUNC: "STT_FUNC",
              STT_COMMON: "STT_COMMON", STT_TLS: "STT_TLS", STT_GNU_IFUNC: "STT_GNU_IFUNC"}


class Fault(Exception):
    """The consumer reads outside the mapped image: SIGSEGV, or garbage."""


class Hang(Exception):
    """A walk the consumer makes never ends."""


class GiveUp(Exception):
    """The consumer decides the vDSO is unusable and makes syscalls instead."""


class Crash(Exception):
    """A documented crash or assertion of the consumer."""


class Memory:
    """The image as mapped: the file from offset 0, rounded up to whole pages."""

    def __init__(self, img: ElfImage) -> None:
        self.img = img
        self.data = img.data
        self.size = (len(img.data) + PAGE - 1) // PAGE * PAGE

    def _bytes(self, addr, size):
        if addr < 0 or addr + size > self.size:
            raise Fault(f"reads {size} bytes at 0x{addr:x}, outside the {self.size:#x}-byte mapping")
        chunk = self.data[addr:addr + size]
        if len(chunk) < size:
            chunk = chunk + bytes(size - len(chunk))
        return chunk

    def read(self, addr: int, layout: Layout) -> Any:
        """The structure `layout` (vdsogen.elf.consts) at addr, as a named tuple."""
        cls = self.img.elf_class
        return layout.unpack(self._bytes(addr, layout.size(cls)), 0, cls, self.img.endian)

    def one(self, addr: int, size: int) -> int:
        """The unsigned word of `size` bytes at addr."""
        return int.from_bytes(self._bytes(addr, size), self.img.endian)

    def cstring(self, addr: int) -> str:
        """The string at addr.  One longer than MAX_STRING is returned cut
        short: the consumers only compare it with a name, and strcmp stops
        at the first difference."""
        if addr < 0 or addr >= self.size:
            raise Fault(f"reads a string at 0x{addr:x}, outside the mapping")
        end = self.data.find(b"\0", addr, addr + MAX_STRING)
        if end < 0:
            if addr + MAX_STRING <= len(self.data):
                end = addr + MAX_STRING
            elif self.size > len(self.data) and addr < len(self.data):
                end = len(self.data)       # the page's zero padding ends it
            elif addr >= len(self.data):
                return ""
            else:
                raise Fault(f"the string at 0x{addr:x} runs off the end of the mapping")
        return self.data[addr:end].decode("utf-8", "replace")


@dataclass
class Sym:
    index: int
    name: str
    value: int
    type: int
    bind: int
    shndx: int


@dataclass
class View:
    """What one consumer has after reading the headers and the dynamic array."""
    base: int
    tags: dict                        # tag -> value (the last entry wins, as in a loop)
    verdefs: list = field(default_factory=list)   # (index, flags, hash, name)


@dataclass
class LookupResult:
    symbol: str
    version: str
    status: str                       # found, absent, missed, bad, skipped
    address: int | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "version": self.version, "status": self.status,
                "address": self.address, "detail": self.detail}


@dataclass
class Verdict:
    consumer: str
    verdict: str                      # works, degraded, breaks, n/a
    reason: str
    lookups: list

    @property
    def title(self) -> str:
        return CONSUMER_NAMES[self.consumer]

    def as_dict(self) -> dict[str, Any]:
        return {"consumer": self.consumer, "name": self.title, "verdict": self.verdict, "reason": self.reason,
                "lookups": [r.as_dict() for r in self.lookups]}


# -- shared reading --------------------------------------------------------

def _phdrs(mem):
    h = mem.read(EI_NIDENT, EHDR)
    out = []
    for i in range(h.e_phnum):
        p = mem.read(h.e_phoff + i * PHDR.size(mem.img.elf_class), PHDR)
        out.append((p.p_type, p.p_offset, p.p_vaddr, p.p_filesz, p.p_memsz, p.p_flags))
    return out


def _dynamic(mem, addr):
    tags: dict[int, int] = {}
    for i in range(MAX_STEPS):
        mem.img.charge()
        tag, val = mem.read(addr + i * DYN.size(mem.img.elf_class), DYN)
        if tag == 0:
            return tags
        tags[tag] = val
    raise Hang(f"no DT_NULL within {MAX_STEPS} dynamic entries")


def _setup(mem, last_load=False, dynamic_by_vaddr=False):
    """Base and dynamic tags, as a consumer finds them from the program headers."""
    loads, dyn = [], None
    for ptype, poff, vaddr, _fs, _ms, _fl in _phdrs(mem):
        if ptype == PT_LOAD:
            loads.append((poff, vaddr))
        elif ptype == PT_DYNAMIC and dyn is None:
            dyn = (poff, vaddr)
    if not loads:
        raise GiveUp("no PT_LOAD to compute the load base from")
    if dyn is None:
        raise GiveUp("no PT_DYNAMIC")
    poff, vaddr = loads[-1] if last_load else loads[0]
    base = poff - vaddr
    dyn_addr = base + dyn[1] if dynamic_by_vaddr else dyn[0]
    return View(base, _dynamic(mem, dyn_addr))


def _verdefs(mem, view):
    """(index, flags, vd_hash, name) of every verdef, walking vd_next."""
    addr = view.tags.get(DT["VERDEF"])
    if addr is None:
        return None
    strtab = view.base + view.tags[DT["STRTAB"]]
    addr += view.base
    out, seen = [], set()
    for _ in range(MAX_STEPS):
        mem.img.charge()
        if addr in seen:
            raise Hang("the verdef chain loops")
        seen.add(addr)
        v = mem.read(addr, VERDEF)
        name_off = mem.one(addr + v.vd_aux + VERDAUX.offset_of("vda_name", mem.img.elf_class), 4)
        out.append((v.vd_ndx, v.vd_flags, v.vd_hash, mem.cstring(strtab + name_off)))
        if v.vd_next == 0:
            return out
        addr += v.vd_next
    raise Hang("the verdef chain never ends")


def _sym(mem, view, index):
    syms = view.base + view.tags[DT["SYMTAB"]]
    strtab = view.base + view.tags[DT["STRTAB"]]
    s = mem.read(syms + SYM.size(mem.img.elf_class) * index, SYM)
    return Sym(index, mem.cstring(strtab + s.st_name), s.st_value, s.st_info & 0xF, s.st_info >> 4, s.st_shndx)


def _versym(mem, view, index):
    addr = view.tags.get(DT["VERSYM"])
    if addr is None:
        return None
    return mem.one(view.base + addr + 2 * index, 2)


def _require(view, *names):
    for name in names:
        if DT[name] not in view.tags:
            raise GiveUp(f"no DT_{name}")


# -- hash walks ------------------------------------------------------------------

def _sysv_walk(mem, view, name, word, hashed=None):
    """Indices along the DT_HASH chain for name (hashed as `hashed`, if given)."""
    table = view.base + view.tags[DT["HASH"]]
    nbucket, nchain = mem.read(table, SYSV_HASH[word])
    if nbucket == 0:
        raise Crash("DT_HASH has 0 buckets: the bucket index divides by zero")
    idx = mem.one(table + (2 + elf_hash(hashed or name) % nbucket) * word, word)
    seen: set[int] = set()
    while idx != 0:
        mem.img.charge()
        if idx in seen or len(seen) >= MAX_STEPS:
            raise Hang(f"the DT_HASH chain for {name} loops")
        seen.add(idx)
        yield idx
        idx = mem.one(table + (2 + nbucket + idx) * word, word)


def _gnu_walk(mem, view, name, bloom, hashed=None):
    """Indices along the DT_GNU_HASH chain whose hash matches name's (or
    that of `hashed`, the name a consumer computes the hash of)."""
    w = 4 if mem.img.elf_class == 32 else 8
    table = view.base + view.tags[DT["GNU_HASH"]]
    nbuckets, symoffset, bloom_size, shift = mem.read(table, GNU_HASH)
    header = GNU_HASH.size(mem.img.elf_class)
    if nbuckets == 0:
        raise Crash("DT_GNU_HASH has 0 buckets: the bucket index divides by zero")
    h = gnu_hash(hashed or name)
    bits = 8 * w
    if bloom:
        # glibc masks the bloom index with (size - 1): the size must be a power of two.
        word = mem.one(table + header + w * ((h // bits) & (bloom_size - 1) & 0xFFFFFFFF), w)
        if not (word >> (h % bits)) & (word >> ((h >> shift) % bits)) & 1:
            return
    buckets = table + header + w * bloom_size
    idx = mem.one(buckets + 4 * (h % nbuckets), 4)
    if idx == 0:
        return
    if idx < symoffset:
        raise Fault(f"the DT_GNU_HASH bucket for {name} points below symoffset: the chain index underflows")
    chain = buckets + 4 * nbuckets
    for _ in range(MAX_STEPS):
        mem.img.charge()
        ch = mem.one(chain + 4 * (idx - symoffset), 4)
        if (ch | 1) == (h | 1):
            yield idx
        if ch & 1:
            return
        idx += 1
    raise Hang(f"the DT_GNU_HASH chain for {name} has no end marker")


# -- the consumers ----------------------------------------------------------------

class Consumer:
    """One consumer's lookup algorithm.  Subclasses set the policy."""
    name = ""
    types: tuple[int, ...] = ()
    binds: tuple[int, ...] = (STB_GLOBAL, STB_WEAK)
    last_load = False
    dynamic_by_vaddr = False
    hash_kind = "gnu-or-sysv"      # "gnu-or-sysv", "sysv", "scan"
    bloom = False
    version_hash = False           # compares vd_hash as well as the name
    needs_verdef = "ignore"        # "crash", "miss", "ignore"

    def __init__(self, mem: Memory, abi: Abi | None) -> None:
        self.mem = mem
        self.abi = abi
        self.word = abi.hash_word if abi else mem.img.hash_word

    def setup(self) -> View:
        view = _setup(self.mem, self.last_load, self.dynamic_by_vaddr)
        _require(view, "STRTAB", "SYMTAB")
        if self.hash_kind == "gnu-or-sysv" and DT["GNU_HASH"] not in view.tags and DT["HASH"] not in view.tags:
            raise GiveUp("neither DT_GNU_HASH nor DT_HASH")
        if self.hash_kind in ("sysv", "scan") and DT["HASH"] not in view.tags:
            raise GiveUp("no DT_HASH (it reads no other hash table)")
        verdefs = _verdefs(self.mem, view)
        if verdefs is None:
            if self.needs_verdef == "crash":
                raise Crash("no DT_VERDEF: it dereferences the missing verdef table")
            view.verdefs = None
        else:
            view.verdefs = verdefs
        return view

    def hashed(self, name: str) -> str:
        """The name whose hash the consumer computes to look `name` up."""
        return name

    def candidates(self, view: View, name: str) -> Iterable[int]:
        if self.hash_kind == "scan":
            nchain = self.mem.one(view.base + view.tags[DT["HASH"]] + self.word, self.word)     # DT_HASH word 1
            return range(min(nchain, MAX_STEPS))
        if self.hash_kind == "gnu-or-sysv" and DT["GNU_HASH"] in view.tags:
            return _gnu_walk(self.mem, view, name, self.bloom, self.hashed(name))
        return _sysv_walk(self.mem, view, name, self.word, self.hashed(name))

    def version_index(self, view: View, version: str) -> int | None:
        """Index of the version node a lookup names, or None if none matches."""
        for ndx, flags, vhash, name in view.verdefs:
            if flags & VER_FLG_BASE:
                continue
            if name == version and (not self.version_hash or vhash == elf_hash(version)):
                return ndx & 0x7FFF
        return None

    def refuse(self, view: View, sym: Sym, lookup: Lookup) -> str | None:
        """Why this symbol (whose name matches) is not the one looked up, or None."""
        if sym.type not in self.types:
            return f"is {TYPE_NAMES.get(sym.type, f'type {sym.type}')}, which it does not accept"
        if sym.bind not in self.binds:
            return f"has binding {sym.bind}, which it does not accept"
        if sym.shndx == SHN_UNDEF:
            return "is undefined"
        if view.verdefs is None:
            return "has no version (no DT_VERDEF)" if self.needs_verdef == "miss" else None
        v = _versym(self.mem, view, sym.index)
        if v is None:
            return None
        want = self.version_index(view, lookup.version)
        if want is None:
            defined = [n for _i, f, _h, n in view.verdefs if n == lookup.version and not f & VER_FLG_BASE]
            if defined and self.version_hash:
                return f"version node {lookup.version} has a vd_hash that is not the ELF hash of its name"
            return f"version {lookup.version} is not defined"
        if v & 0x7FFF != want:
            return f"is bound to version index {v & 0x7FFF}, not {lookup.version}"
        return None

    def find(self, view: View, lookup: Lookup) -> tuple[Sym | None, str | None]:
        """(symbol, None) or (None, why it was refused)."""
        why = None
        for idx in self.candidates(view, lookup.symbol):
            self.mem.img.charge()
            sym = _sym(self.mem, view, idx)
            if sym.name != lookup.symbol:
                continue
            refused = self.refuse(view, sym, lookup)
            if refused is None:
                return sym, None
            why = why or refused
        return None, why


class Glibc(Consumer):
    name = "glibc"
    types = (STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_COMMON, STT_TLS, STT_GNU_IFUNC)
    binds = (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE)
    dynamic_by_vaddr = True
    bloom = True
    needs_verdef = "miss"

    def setup(self) -> View:
        for ptype, *_rest in _phdrs(self.mem):
            if ptype == PT_TLS:
                raise Crash("PT_TLS: glibc asserts that the vDSO has no TLS segment")
        return super().setup()

    def refuse(self, view: View, sym: Sym, lookup: Lookup) -> str | None:
        if sym.value == 0 and sym.type != STT_TLS:
            return "has value 0, which it skips"
        return super().refuse(view, sym, lookup)


class Musl(Consumer):
    name = "musl"
    types = (STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_COMMON)
    binds = (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE)
    last_load = True
    hash_kind = "scan"


@dataclass(frozen=True)
class GoRelease:
    """How the Go runtime's vDSO lookup behaves in the releases [since, until):
    its tables carry each symbol's ELF and GNU hashes precomputed, and
    `misnamed` maps (ABI, symbol) to the name whose hashes a release carries
    instead; `getrandom`: it looks up the vDSO getrandom (runtime/vdso_linux_*.go)."""
    since: str
    until: str | None
    misnamed: dict
    getrandom: bool

    @property
    def span(self) -> str:
        if self.until is None:
            return f"Go {self.since} and later"
        last = f"{self.until.split('.')[0]}.{int(self.until.split('.')[1]) - 1}"
        return f"Go {self.since}" if last == self.since else f"Go {self.since}-{last}"


# Go 1.19-1.21 look __kernel_clock_gettime up on arm64 with the hashes of
# __vdso_clock_gettime (0xd35ec75, 0x6e43a318), so a DT_GNU_HASH walk never
# matches it and a DT_HASH walk starts in another bucket (golang/go#62309,
# fixed for 1.22); 1.24 added the vDSO getrandom.  Newest last.
GO_RELEASES = (
    GoRelease("1.19", "1.22", {("arm64", "__kernel_clock_gettime"): "__vdso_clock_gettime"}, False),
    GoRelease("1.22", "1.24", {}, False),
    GoRelease("1.24", None, {}, True),
)


class Go(Consumer):
    name = "go"
    types = (STT_FUNC, STT_NOTYPE)
    version_hash = True
    needs_verdef = "crash"

    def __init__(self, mem: Memory, abi: Abi | None, release: GoRelease = GO_RELEASES[-1]) -> None:
        super().__init__(mem, abi)
        self.word = 4
        self.release = release

    def hashed(self, name: str) -> str:
        return self.release.misnamed.get((self.abi.name if self.abi else "", name), name)

    def find(self, view: View, lookup: Lookup) -> tuple[Sym | None, str | None]:
        sym, why = super().find(view, lookup)
        other = self.hashed(lookup.symbol)
        if sym is None and why is None and other != lookup.symbol:
            why = (f"is looked up with the hashes of {other} (golang/go#62309), so the "
                   f"{_table(self, view)} walk never reaches it")
        return sym, why


class SysvParser(Consumer):
    name = "sysv"
    types = (STT_FUNC,)
    hash_kind = "sysv"
    version_hash = True


MODELS = {"glibc": Glibc, "musl": Musl, "go": Go, "sysv": SysvParser}


# -- ground truth and verdicts -------------------------------------------------------

def defined_exports(img: ElfImage) -> set[tuple[str, str | None]]:
    """{(name, version or None)} the image defines, from .dynsym, versym and verdef."""
    syms = img.dynsym
    verdefs = img.verdefs() if img.dynamic is not None else None
    versym = img.versym(len(syms)) if syms and img.dynamic is not None else None
    names = {v.index & 0x7FFF: v.name for v in verdefs or ()}
    out = set()
    for s in syms[1:]:
        if s.shndx in (SHN_UNDEF, SHN_ABS) or s.bind not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
            continue
        version = names.get(versym[s.index] & 0x7FFF) if versym and verdefs else None
        out.add((s.name, version))
    return out


def _offers(exports, lookup):
    return (lookup.symbol, lookup.version) in exports or (lookup.symbol, None) in exports


def _address_problem(img, mem, view, sym):
    value, _ = decode.entry(img, sym.value)     # a Thumb symbol is odd
    addr = view.base + value
    if not 0 <= addr < mem.size:
        return addr, f"would call 0x{addr:x}, outside the {mem.size:#x}-byte mapping"
    try:
        true = img.offset_of(value)
    except Unreadable:                      # value outside every PT_LOAD: no better answer
        return addr, None
    if true != addr:
        return addr, f"would call mapping offset 0x{addr:x}, but the code of {sym.name} is at 0x{true:x}"
    return addr, None


def simulate(img: ElfImage, abi: Abi) -> list[Verdict]:
    """Verdict per consumer for an image of a catalogue ABI."""
    mem = Memory(img)
    exports = defined_exports(img)
    core = abi.core_for(version_of(img))
    return [_one(img, mem, abi, exports, c, core) for c in CONSUMERS]


def _one(img, mem, abi, exports, consumer, core):
    lookups = abi.lookups[consumer]
    if not lookups:
        return Verdict(consumer, "n/a", f"makes no vDSO calls on {abi.name}", [])
    if consumer == "go":
        return _go(img, mem, abi, exports, lookups, core)
    return _judge(img, mem, abi, exports, consumer, lookups, core, MODELS[consumer](mem, abi))


def _go(img, mem, abi, exports, lookups, core):
    """The newest Go release's verdict, saying which releases it is for, and
    the verdicts of older releases (GO_RELEASES) that differ."""
    newest = _judge(img, mem, abi, exports, "go", lookups, core, Go(mem, abi, GO_RELEASES[-1]))
    verdicts = []
    for release in GO_RELEASES[:-1]:
        asked = [lk for lk in lookups if release.getrandom or "getrandom" not in lk.symbol]
        if newest.verdict != "breaks" and not any(a == abi.name for a, _name in release.misnamed):
            # The newest release's walks, less the lookups this one does not make.
            kept = [r for r, lk in zip(newest.lookups, lookups) if lk in asked]
            verdicts.append((release, _verdict(abi, "go", kept, core)))
        else:
            verdicts.append((release, _judge(img, mem, abi, exports, "go", asked, core, Go(mem, abi, release))))
    verdicts.append((GO_RELEASES[-1], newest))
    first = len(verdicts) - 1
    while first and verdicts[first - 1][1].verdict == newest.verdict:
        first -= 1
    span = f"the verdict of Go {verdicts[first][0].since} and later"
    older = [f"{r.span}: {v.verdict}: {v.reason}" for r, v in verdicts[:-1] if v.verdict != newest.verdict]
    reason = f"{newest.reason} ({span})" + "".join(f"; {o}" for o in older)
    return Verdict("go", newest.verdict, reason, newest.lookups)


def _judge(img, mem, abi, exports, consumer, lookups, core, model):
    try:
        view = model.setup()
    except GiveUp as e:
        results = [LookupResult(lk.symbol, lk.version, "missed" if _offers(exports, lk) else "absent",
                                detail=str(e)) for lk in lookups]
        return Verdict(consumer, "degraded", f"uses no vDSO entry point: {e}", results)
    except (Crash, Fault, Hang) as e:
        return Verdict(consumer, "breaks", str(e), [])
    results, found = [], set()
    try:
        for lk in lookups:
            sym, why = model.find(view, lk)
            if sym is None:
                offered = _offers(exports, lk)
                status = "missed" if offered else "absent"
                detail = (f"{lk.symbol} {why}" if why else
                          f"not reached through its {_table(model, view)}") if offered else "not defined by the image"
                results.append(LookupResult(lk.symbol, lk.version, status, detail=detail))
                continue
            addr, problem = _address_problem(img, mem, view, sym)
            if problem:
                results.append(LookupResult(lk.symbol, lk.version, "bad", addr, problem))
            else:
                found.add(lk.symbol)
                results.append(LookupResult(lk.symbol, lk.version, "found", addr))
    except (Crash, Fault, Hang) as e:
        return Verdict(consumer, "breaks", f"looking up {lk}: {e}", results)
    for r, lk in zip(results, lookups):
        if lk.needs and r.status == "found" and lk.needs not in found:
            r.status, r.detail = "skipped", f"used only together with {lk.needs}"
    return _verdict(abi, consumer, results, core)


def _table(model, view):
    if model.hash_kind == "scan":
        return "DT_HASH nchain scan"
    if model.hash_kind == "gnu-or-sysv" and DT["GNU_HASH"] in view.tags:
        return "DT_GNU_HASH chain"
    return "DT_HASH chain"


def _verdict(abi, consumer, results, core):
    bad = [r for r in results if r.status == "bad"]
    if bad:
        return Verdict(consumer, "breaks", f"{bad[0].symbol} {bad[0].detail}", results)
    missed = [r for r in results if r.status == "missed"]
    if missed:
        return Verdict(consumer, "degraded", f"misses {missed[0].symbol}@{missed[0].version}: {missed[0].detail}",
                       results)
    lacking = [r for r in results if r.status == "absent" and r.symbol in core]
    if lacking:
        return Verdict(consumer, "degraded", f"the image lacks {lacking[0].symbol}, which every {abi.name} "
                       "kernel of its era exports: that call takes the syscall", results)
    absent = [r.symbol for r in results if r.status == "absent"]
    if absent:
        return Verdict(consumer, "works", f"not in this image, so a syscall: {', '.join(absent)}", results)
    return Verdict(consumer, "works", "every lookup found", results)
