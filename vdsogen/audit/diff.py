"""`vdsogen diff OLD NEW`: what changed between two vDSO images for their users.

Both images are read as `vdsogen audit` reads them (the ABI detected from
the ELF, the consumers' lookups simulated, vdsogen.audit.consumers) and
compared fact by fact: exports and version nodes, soname, e_flags, notes,
the data offsets each export's code reads, the signal trampolines (their
words and the CFI that covers them), hot-path instruction counts and
sizes.  A change breaks a consumer when that consumer fares worse with NEW
than with OLD: glibc, musl, the Go runtime and the DT_HASH-only parser
find fewer of their lookups or get a worse verdict; the unwinders (libgcc,
gdb, libunwind: audit rule T001) no longer find a trampoline's words at
its symbol, with no CFI to fall back on; a caller that looks up by name an
export that is gone.  docs/audit.rst ("Comparing two images") documents
each kind of change and the JSON schema.

Exit 1 when a change breaks a consumer, 0 otherwise; 2 for an unusable
input or two images of different ABIs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from vdsogen import __version__
from vdsogen.audit.consumers import Verdict, defined_exports, simulate
from vdsogen.audit.era import show, version_of
from vdsogen.audit.report import size_of
from vdsogen.bench import hotpath
from vdsogen.elf import decode
from vdsogen.elf.cfi import fde_ranges
from vdsogen.audit.rules.code import ppc_gprs_written
from vdsogen.elf.consts import (EM_386, EM_AARCH64, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64, EM_RISCV,
                                EM_X86_64, STT_FUNC)
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import ImageError, VdsogenError
from vdsogen.isa import mips
from vdsogen.isa.base import ByteOrder
from vdsogen.isa.x86 import X86_0F_NO_MODRM, X86_MODRM
from vdsogen.spec import abi as abi_catalogue
from vdsogen.spec import functions
from vdsogen.spec.model import name_means

SCHEMA = "vdsogen-diff/1"
# Kinds of change, in the order a report lists them.
KINDS = ("export", "version", "soname", "flags", "note", "consumer", "trampoline", "cfi", "data", "hotpath", "size")
# How bad a consumer's verdict is: a higher rank is worse.
RANK = {"n/a": 0, "works": 0, "degraded": 1, "breaks": 2}
UNWINDERS = "unwinders"          # libgcc, gdb, libunwind: they match trampolines by their words (T001)
CALLERS = "callers"              # a program that looks an export up by its name (dlsym, vdso_sym)
OUTSIDE = "past the end of the image"   # a trampoline's compared bytes that the image does not hold
NOTE_BUILD_ID = ("GNU", 3)       # differs between any two builds: compared for presence only


class AbiMismatch(VdsogenError):
    """The two images are not of one ABI (exit 2)."""


@dataclass
class Change:
    kind: str                    # of KINDS
    what: str                    # the export, note, consumer... that changed
    old: Any                     # None: absent in OLD
    new: Any                     # None: absent in NEW
    breaks: list[str] = field(default_factory=list)   # consumers this change breaks
    why: str = ""                # one line for the text report

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": self.what, "old": self.old, "new": self.new, "breaks": list(self.breaks)}


@dataclass
class Trampoline:
    address: int | None          # the symbol's value; None: not exported
    matches: bool                # the catalogue's words (the bytes unwinders compare) are at the symbol
    words: str | None            # the bytes unwinders compare, as the catalogue writes them; None: unreadable
    cfi: str                     # "signal frame", "yes" (an FDE covers it) or "no"


@dataclass
class Facts:
    """What diff compares of one image."""
    path: str
    abi: abi_catalogue.Abi
    linux: str | None
    exports: set
    versions: list
    soname: str | None
    flags: int
    notes: dict                  # "name type" -> description (hex), or "present" for a build-id
    consumers: list              # of Verdict
    trampolines: dict            # name -> Trampoline
    data: dict | None            # export -> sorted data offsets; None: not decoded for the ISA
    hotpaths: dict               # "function (class)" label -> instructions, or None where no path is found
    size: dict


# -- reading one image --------------------------------------------------------------

def read(path: str) -> Facts:
    """The facts of the image at `path`; ImageError when it cannot be used."""
    img = ElfImage(path)
    detection = abi_catalogue.detect(img)
    if detection.abi is None:
        raise ImageError(path, f"no ABI of the catalogue: {detection.reason}")
    a = detection.abi
    try:
        consumers = simulate(img, a)
        exports = defined_exports(img)
        verdefs = img.verdefs() or ()
        soname = img.dynstr(img.dyn("SONAME")) if img.dyn("SONAME") is not None else None
        era = version_of(img)
        versions = [v.name for v in verdefs if not v.flags & 1]
        # The code walks charge the image's work budget too: a real image needs
        # a few thousand units of its 200000 (ppc64le's .so, the most: about 3100).
        data = data_offsets(img, tuple(t.name for t in a.trampolines))
        return Facts(path, a, show(era) if era else None, exports, versions, soname, img.e_flags, _notes(img),
                     consumers, _trampolines(img, a), data, _hotpaths(img), size_of(img, a))
    except Unreadable as err:
        raise ImageError(path, str(err), err.offset) from None


NOTE_NAMES = {("Linux", 0): "Linux version", ("Linux", 0x100): "Linux build salt", ("GNU", 3): "build-id",
              ("GNU", 5): "GNU property", ("vdsogen", 2): "vdsogen layout"}


def _notes(img: ElfImage) -> dict[str, str]:
    """name -> what it says, of every note: a known note by its name, another
    as its owner and type; strings as text, else hex."""
    out = {}
    for n in img.notes:
        key = NOTE_NAMES.get((n.name, n.type), f"{n.name} note type 0x{n.type:x}")
        desc = bytes(n.desc)
        text = desc.rstrip(b"\0")
        if (n.name, n.type) == NOTE_BUILD_ID:
            out[key] = "present"
        elif (n.name, n.type) == ("Linux", 0) and len(desc) == 4:
            era = version_of(img)
            out[key] = show(era) if era else desc.hex()
        elif text and all(32 <= b < 127 for b in text):
            out[key] = text.decode()
        else:
            out[key] = desc.hex()
    return out


def _trampolines(img: ElfImage, a: abi_catalogue.Abi) -> dict[str, Trampoline]:
    syms = {s.name: s for s in img.dynsym if s.defined}
    fdes = fde_ranges(img)
    out = {}
    for t in a.trampolines:
        sym = syms.get(t.name)
        if sym is None:
            out[t.name] = Trampoline(None, False, None, "no")
            continue
        addr, _mode = decode.entry(img, sym.value)
        match = t.match or 4 * len(t.words)
        want = b"".join(w.to_bytes(4, img.code_endian) for w in t.words)[:match]
        try:
            have: bytes | None = img.bytes_at(addr, match)
        except Unreadable:
            have = None
        cover = [signal for lo, hi, signal in fdes if lo <= addr < hi]
        out[t.name] = Trampoline(sym.value, have == want, _words(have, img.code_endian),
                                 "signal frame" if any(cover) else "yes" if cover else "no")
    return out


def _words(raw: bytes | None, order: ByteOrder) -> str | None:
    """32-bit words in code order as the catalogue writes them (bytes where
    the compared window is not whole words)."""
    if raw is None:
        return None
    if len(raw) % 4:
        return raw.hex(" ")
    return " ".join(f"{int.from_bytes(raw[i:i + 4], order):08x}" for i in range(0, len(raw), 4))


def functions_of(img: ElfImage) -> dict[str, int]:
    """The exported functions, one name per entry point -> its symbol value:
    of aliases (__vdso_time and time) the one with a __vdso_ or __kernel_
    prefix, else the first by name."""
    at: dict[int, str] = {}
    for s in img.dynsym:
        if s.defined and s.type == STT_FUNC:
            at[s.value] = min(at.get(s.value, s.name), s.name, key=lambda n: (not n.startswith("__"), n))
    return {name: value for value, name in at.items()}


def _hotpaths(img: ElfImage) -> dict[str, int | None]:
    """Hot-path instruction counts of the exports whose names say which
    function of functions.toml they are, per class of call (as `bench`)."""
    cold = hotpath.cold_ranges(img)
    out: dict[str, int | None] = {}
    catalogue = functions.catalogue()
    for name in sorted(functions_of(img)):
        fn = catalogue.get(name_means(name) or "")
        bench = fn.harness.bench if fn is not None and fn.harness else None
        if bench is None:
            continue
        for cls, reads in bench.hot_paths:
            found = [hotpath.export_hot_path(img, name, n, cold) for n in reads]
            out[f"{name} ({cls})" if cls else name] = min((c for c in found if c is not None), default=None)
    return out


# -- the data offsets the code reads -------------------------------------------------
#
# A small forward data flow over the code an export reaches: which registers
# may hold which addresses, from the PC-relative forms that make them
# (x86-64's RIP-relative lea, i386's get-PC thunk, arm64's adr and adrp,
# powerpc's bcl 20,31,.+4 and mflr, RISC-V's auipc, LoongArch's pcaddi,
# pcalau12i and pcaddu12i) and the constant adds, moves and selects that
# carry them on; a load through such a register at a constant displacement
# reads that address plus it.  A register an instruction writes in any
# other way holds no known address; at a join the addresses of both paths
# count (a load there may read either).  A load indexed by a value computed
# at run time is not counted.  Each ISA has one transfer function:
# transfer(address, Insn, raw bytes, state, reads, code regions) updates
# the state and the reads, and returns the state after a call when the call
# only reads the PC (None: the callee gets the state, the code after the
# call knows nothing).

MAX_VALUES = 16                  # more possible addresses in one register: unknown
MAX_ROUNDS = 1                   # branches back a flow's registers are followed along
Regs = dict[int, frozenset]


def data_offsets(img: ElfImage, skip: tuple = ()) -> dict[str, list[int]] | None:
    """export -> the sorted offsets, from the image's first byte, of the data
    outside the image that the export's code reads (below the image, where
    Linux maps its data pages: negative offsets); None where the ISA's
    PC-relative forms are not decoded (x86, arm64, powerpc, RISC-V,
    LoongArch and MIPS are).  `skip`: names left out (the signal trampolines,
    whose syscall does not return)."""
    transfer = {EM_386: _x86_transfer(False), EM_X86_64: _x86_transfer(True),
                EM_AARCH64: _arm64_transfer, EM_RISCV: _riscv_transfer,
                EM_LOONGARCH: _loongarch_transfer, EM_PPC: _powerpc_transfer(img.code_endian),
                EM_PPC64: _powerpc_transfer(img.code_endian),
                EM_MIPS: _mips_transfer(img.code_endian)}.get(img.e_machine)
    if transfer is None:
        return None
    base = min((s.vaddr for s in img.loads), default=0)
    end = img.image_end
    regions = decode.Regions(hotpath.code_regions(img))
    slots = img.e_machine == EM_MIPS
    out: dict[str, list[int]] = {}
    for name, value in functions_of(img).items():
        if name in skip:
            continue
        entry = decode.entry(img, value)
        insns = {addr: (insn, raw) for addr, insn, raw in decode.walk(img, regions, [entry])}
        if slots:
            _add_delay_slots(img, insns, regions)
        offsets = {a - base for a in _flow(insns, entry[0], transfer, regions, slots) if not base <= a < end}
        if offsets:
            out[name] = sorted(offsets)
    return out


def _add_delay_slots(img: ElfImage, insns: dict, regions: decode.Regions) -> None:
    """The delay slot of every jump, which the walk stops before (it runs
    before the jump goes)."""
    dec = decode.decoder_for(img)
    for addr, (insn, _raw) in list(insns.items()):
        slot = addr + insn.length
        found = regions.find(slot)
        if dec is None or insn.kind != decode.JUMP or slot in insns or found is None:
            continue
        start, code = found
        got = dec(code, slot - start, slot, None)
        if got is not None and got.length > 0:
            insns[slot] = got, bytes(code[slot - start:slot - start + got.length])


def _flow(insns: dict, entry: int, transfer, regions: decode.Regions, slots: bool = False) -> set[int]:
    """Every address a load of the flow from `entry` may read.  A flow goes
    round a loop once: along a branch back to an earlier address (a retry,
    or a second way into shared code) its registers are followed once more,
    then no further, so an address a loop steps (p += 16) adds one step, not
    every one.  `slots`: branches have a delay slot, whose instruction the
    branch's target gets the registers after."""
    reads: set[int] = set()
    states: dict[tuple[int, int], Regs] = {(entry, 0): {}}
    work = [(entry, 0)]
    while work:
        addr, rounds = key = work.pop()
        if addr not in insns:
            continue
        insn, raw = insns[addr]
        state = dict(states[key])
        nxt = addr + insn.length
        after_call = transfer(addr, insn, raw, state, reads, regions)
        succ: list[tuple[int, Regs]] = []
        if insn.kind in (decode.SEQ, decode.CJUMP):
            succ.append((nxt, state))
        if insn.kind == decode.CALL:
            succ.append((nxt, after_call if after_call is not None else {}))
            if after_call is None and insn.target is not None:
                succ.append((insn.target, state))
        if insn.kind in (decode.JUMP, decode.CJUMP) and insn.target is not None:
            taken = state
            if slots and nxt in insns:
                taken = dict(state)
                transfer(nxt, insns[nxt][0], insns[nxt][1], taken, reads, regions)
            succ.append((insn.target, taken))
        for to, st in succ:
            at = (to, rounds + (to <= addr))
            if at[1] > MAX_ROUNDS:
                continue
            old = states.get(at)
            merged = st if old is None else _join(old, st)
            if old is None or merged != old:
                states[at] = merged
                work.append(at)
    return reads


TOP: frozenset = frozenset({None})   # too many addresses: unknown, for good


def _join(a: Regs, b: Regs) -> Regs:
    out = dict(a)
    for reg, values in b.items():
        both = out.get(reg, frozenset()) | values
        out[reg] = TOP if None in both or len(both) > MAX_VALUES else both
    return out


def _set(state: Regs, reg: int, values) -> None:
    values = frozenset(values)
    if not values or None in values or len(values) > MAX_VALUES:
        state.pop(reg, None)
    else:
        state[reg] = values


def _known(state: Regs, reg: int) -> frozenset:
    values = state.get(reg, frozenset())
    return frozenset() if None in values else values


# x86 ------------------------------------------------------------------------------------

_X86_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
# One-byte opcodes with a ModRM whose reg field is the destination.
_X86_REG_DEST = {0x02, 0x03, 0x0A, 0x0B, 0x12, 0x13, 0x1A, 0x1B, 0x22, 0x23, 0x2A, 0x2B, 0x32, 0x33, 0x63, 0x69,
                 0x6B, 0x8A, 0x8B, 0x8D}
# ... and those that write nothing but flags or memory (compare, test, the stores).
_X86_NO_REG = {0x38, 0x39, 0x3A, 0x3B, 0x84, 0x85, 0x88, 0x89, 0xC6, 0xC7}
_X86_STORES = {0x88, 0x89, 0xC6, 0xC7}
_X86_TOS = 16                    # the word on top of the stack, as a register of the flow
# (0F-prefixed, opcode, ModRM for 0F 01) -> the registers an instruction writes without naming them.
_X86_IMPLICIT = {(True, 0x31, None): (0, 2),              # rdtsc: eax, edx
                 (True, 0x01, 0xF9): (0, 1, 2),           # rdtscp: and ecx
                 (True, 0x05, None): (0, 1, 11),          # syscall: rax, and rcx, r11 it clobbers
                 (True, 0x34, None): (0, 1, 2),           # sysenter
                 (True, 0xA2, None): (0, 1, 2, 3),        # cpuid
                 (False, 0xCD, None): (0,),               # int $0x80
                 (False, 0x98, None): (0,), (False, 0x99, None): (2,),   # cwde, cdq
                 (False, 0xA0, None): (0,), (False, 0xA1, None): (0,)}   # mov moffs, %al/%eax


def _x86_transfer(long_mode: bool):
    """The data-flow step of x86 (long_mode: x86-64 and x32's 64-bit code)."""

    def step(addr, insn, raw, state, reads, regions):
        i, rex = 0, 0
        while i < len(raw) and (raw[i] in _X86_PREFIXES or (long_mode and 0x40 <= raw[i] <= 0x4F)):
            rex = raw[i] if long_mode and 0x40 <= raw[i] <= 0x4F else rex
            i += 1
        if i >= len(raw):
            return None
        op, two = raw[i], False
        if op == 0x0F and i + 1 < len(raw):
            two, op = True, raw[i + 1]
            i += 2
            if op in (0x38, 0x3A):
                i += 1
        else:
            i += 1
        nxt = addr + insn.length
        if insn.kind == decode.CALL:
            if insn.target == nxt:                           # call to the next instruction, then pop
                out = dict(state)
                out[_X86_TOS] = frozenset({nxt})
                return out
            return _x86_thunk(insn.target, nxt, regions, state)
        if not two and 0x58 <= op <= 0x5F:                     # pop: what a call to the next pushed
            _set(state, op & 7 | (rex & 1) << 3, _known(state, _X86_TOS))
            state.pop(_X86_TOS, None)
            return None
        if not two and (0x50 <= op <= 0x57 or op in (0x68, 0x6A)):
            state.pop(_X86_TOS, None)
            return None
        if not two and 0xB8 <= op <= 0xBF or 0x91 <= op <= 0x97:
            state.pop(op & 7 | (rex & 1) << 3, None)
            if 0x91 <= op <= 0x97:
                state.pop(0, None)
            return None
        if not two and op in (0x05, 0x2D):                     # add, sub $imm, %eax
            imm = int.from_bytes(raw[-4:], "little", signed=True)
            _set(state, 0, (v + (imm if op == 0x05 else -imm) for v in _known(state, 0)))
            return None
        if not two and op < 0x40 and op & 7 in (4, 5) and op not in (0x3C, 0x3D):
            state.pop(0, None)                               # the other ALU ops on %al/%eax
            return None
        for reg in _X86_IMPLICIT.get((two, op, raw[i] if two and op == 0x01 and i < len(raw) else None), ()):
            state.pop(reg, None)
        if two and op == 0x01:                               # rdtscp and the system group: no GPR operand
            return None
        has_modrm = (two and op not in X86_0F_NO_MODRM) or (not two and op in X86_MODRM)
        if not has_modrm or i >= len(raw):
            return None
        modrm = raw[i]
        mod, reg, rm = modrm >> 6, (modrm >> 3) & 7 | (rex & 4) << 1, modrm & 7
        group = (modrm >> 3) & 7
        at: frozenset | None = None                          # the addresses the memory operand may be
        if mod != 3:
            disp_at, base = i + 1, rm | (rex & 1) << 3
            indexed = False
            if rm == 4:
                sib = raw[i + 1] if i + 1 < len(raw) else 0
                base = sib & 7 | (rex & 1) << 3
                indexed = (sib >> 3) & 7 | (rex & 2) << 2 != 4
                disp_at += 1
                if mod == 0 and sib & 7 == 5:
                    base = -1                                # no base: disp32 alone
            size = {0: 0, 1: 1, 2: 4}[mod]
            if mod == 0 and rm == 5:
                size = 4
            disp = int.from_bytes(raw[disp_at:disp_at + size], "little", signed=True) if size else 0
            if mod == 0 and rm == 5:
                at = frozenset({nxt + disp}) if long_mode else frozenset({disp & 0xFFFFFFFF})
                if not long_mode:
                    at = frozenset()                         # an absolute address: not the code's
            elif not indexed and base >= 0:
                at = frozenset(v + disp for v in _known(state, base))
        if at is not None and not two and op == 0x8D:
            _set(state, reg, at)                             # lea: an address, not a read
            return None
        if at and not (not two and op in _X86_STORES):
            reads.update(at)
        if not two and op in (0x81, 0x83) and mod == 3 and group in (0, 5):
            imm = int.from_bytes(raw[-4:] if op == 0x81 else raw[-1:], "little", signed=True)
            target = rm | (rex & 1) << 3
            _set(state, target, (v + (imm if group == 0 else -imm) for v in _known(state, target)))
            return None
        if not two and op == 0x89 and mod == 3:                # mov reg, reg
            _set(state, rm | (rex & 1) << 3, _known(state, reg))
            return None
        if not two and op in (0xF6, 0xF7) and group >= 4:      # mul, div: rax, rdx
            state.pop(0, None)
            state.pop(2, None)
        if two or op in _X86_REG_DEST:
            state.pop(reg, None)
        elif mod == 3 and op not in _X86_NO_REG and not (op in (0x80, 0x81, 0x83) and group == 7) \
                and not (op in (0xF6, 0xF7) and group in (0, 1)):
            state.pop(rm | (rex & 1) << 3, None)
        return None

    return step


def _x86_thunk(target, after, regions, state):
    """The state after a call: i386's get-PC thunk (mov (%esp), %reg; ret)
    puts the return address in its register; any other call may change every
    register (None: follow the callee with the state, and know nothing after)."""
    found = regions.find(target) if target is not None else None
    if found is None:
        return None
    start, code = found
    raw = bytes(code[target - start:target - start + 4])
    if len(raw) == 4 and raw[0] == 0x8B and raw[1] & 0xC7 == 0x04 and raw[2] == 0x24 and raw[3] == 0xC3:
        out = dict(state)
        out[(raw[1] >> 3) & 7] = frozenset({after})
        return out
    return None


# arm64 ----------------------------------------------------------------------------------

def _arm64_transfer(addr, insn, raw, state, reads, regions):
    w = int.from_bytes(raw[:4], "little")
    rd, rn, rm = w & 31, (w >> 5) & 31, (w >> 16) & 31
    if w & 0x1F000000 == 0x10000000:                          # adr, adrp
        imm = _sext(((w >> 5) & 0x7FFFF) << 2 | (w >> 29) & 3, 21)
        _set(state, rd, {(addr & ~0xFFF) + (imm << 12) if w >> 31 else addr + imm})
        return None
    if w & 0x3F800000 == 0x11000000:                          # add, sub (immediate), not setting flags
        imm = ((w >> 10) & 0xFFF) << (12 * ((w >> 22) & 1))
        sign = -1 if (w >> 30) & 1 else 1
        _set(state, rd, (v + sign * imm for v in _known(state, rn)))
        return None
    if w & 0x7FE00C00 == 0x1A800000:                          # csel: either register
        _set(state, rd, _known(state, rn) | _known(state, rm))
        return None
    if w & 0x7FE0FFE0 == 0x2A0003E0:                          # mov (orr with the zero register)
        _set(state, rd, _known(state, rm))
        return None
    if w & 0x3B000000 == 0x18000000:                          # ldr (literal)
        reads.add(addr + _sext(w >> 5, 19) * 4)
        state.pop(rd, None)
        return None
    offsets, writeback = _arm64_load(w)
    if offsets is not None:
        reads.update(v + off for v in _known(state, rn) for off in offsets)
        state.pop(rd, None)
        if w & 0x3A000000 == 0x28000000:
            state.pop((w >> 10) & 31, None)
    if writeback:
        state.pop(rn, None)
    if offsets is None and ((w >> 25) & 0xF in (0x8, 0x9, 0x5, 0xD) or w & 0xFFF00000 == 0xD5300000):
        state.pop(rd, None)                                   # data processing, mrs: rd written
    return None


def _arm64_load(w: int) -> tuple[list[int] | None, bool]:
    """(the offsets from the base register that a load reads, or None for no
    load; whether it writes its base back)."""
    if (w >> 25) & 5 != 4:
        return None, False
    vector = (w >> 26) & 1
    if w & 0x3B000000 == 0x39000000:                          # unsigned offset
        if not (w >> 22) & 3:
            return None, False
        scale = (w >> 30) | (4 if vector and (w >> 23) & 1 else 0)
        return [((w >> 10) & 0xFFF) << scale], False
    if w & 0x3B200000 == 0x38000000:                          # unscaled, pre- and post-indexed
        kind = (w >> 10) & 3
        if kind == 2:                                         # unprivileged: not in a vDSO
            return None, False
        imm = _sext(w >> 12, 9)
        load = bool((w >> 22) & 3)
        return ([0 if kind == 1 else imm] if load else None), kind in (1, 3)
    if w & 0x3A000000 == 0x28000000:                          # pairs
        size = 4 << ((w >> 30) if vector else (w >> 31))
        kind = (w >> 23) & 3
        off = _sext(w >> 15, 7) * size
        at = 0 if kind == 1 else off
        return ([at, at + size] if (w >> 22) & 1 else None), kind in (1, 3)
    if w & 0x3F400000 == 0x08400000 or w & 0x3FBFFC00 == 0x38BFC000:   # exclusive, acquire loads; ldapr
        return [0], False
    return None, False


# RISC-V -----------------------------------------------------------------------------------

def _riscv_transfer(addr, insn, raw, state, reads, regions):
    if len(raw) == 2:
        _riscv_compressed(int.from_bytes(raw, "little"), state, reads)
        return None
    w = int.from_bytes(raw[:4], "little")
    op, rd, rs1, f3 = w & 0x7F, (w >> 7) & 31, (w >> 15) & 31, (w >> 12) & 7
    imm = _sext(w >> 20, 12)
    if op == 0x17:                                            # auipc
        _set(state, rd, {addr + _sext(w & 0xFFFFF000, 32)})
    elif op == 0x13 and f3 == 0:                              # addi (and mv)
        _set(state, rd, (v + imm for v in _known(state, rs1)))
    elif op in (0x03, 0x07):                                  # integer and float loads
        reads.update(v + imm for v in _known(state, rs1))
        if op == 0x03:
            state.pop(rd, None)
    elif op not in (0x23, 0x27, 0x63, 0x0F):                  # stores, branches and fences write no register
        state.pop(rd, None)
    state.pop(0, None)                                        # x0 is always 0
    return None


def _riscv_compressed(h: int, state: Regs, reads: set[int]) -> None:
    quadrant, f3 = h & 3, h >> 13
    low, high, rd = (h >> 2) & 7 | 8, (h >> 7) & 7 | 8, (h >> 7) & 31
    if quadrant == 0:
        if f3 in (1, 2, 3):                                   # c.fld, c.lw, c.ld: offset from rs1'
            offset = ((h >> 10) & 7) << 3 | ((h >> 5) & 3) << 6 if f3 != 2 else \
                ((h >> 6) & 1) << 2 | ((h >> 10) & 7) << 3 | ((h >> 5) & 1) << 6
            reads.update(v + offset for v in _known(state, high))
        if f3 in (0, 2, 3):                                   # c.addi4spn, c.lw, c.ld write rd'
            state.pop(low, None)
    elif quadrant == 1:
        if f3 == 0:                                           # c.addi
            imm = _sext(((h >> 12) & 1) << 5 | (h >> 2) & 31, 6)
            _set(state, rd, (v + imm for v in _known(state, rd)))
        elif f3 in (1, 2, 3):                                 # c.addiw, c.li, c.lui, c.addi16sp
            state.pop(rd, None)
        elif f3 == 4:                                         # the ALU ops on rd'
            state.pop(high, None)
    elif quadrant == 2:
        rs2 = (h >> 2) & 31
        if f3 in (0, 2, 3):                                   # c.slli, c.lwsp, c.ldsp
            state.pop(rd, None)
        elif f3 == 4 and rs2:
            if (h >> 12) & 1:                                 # c.add: an index
                state.pop(rd, None)
            else:                                             # c.mv
                _set(state, rd, _known(state, rs2))
        elif f3 == 4 and (h >> 12) & 1 and rd:                # c.jalr
            state.pop(1, None)


# PowerPC ----------------------------------------------------------------------------------

_PPC_LR = 32                     # the link register, as a register of the flow
_PPC_LOADS = {32, 33, 34, 35, 40, 41, 42, 43, 48, 49, 50, 51}   # lwz(u) lbz(u) lhz(u) lha(u) lfs(u) lfd(u)


def _powerpc_transfer(order: ByteOrder):
    """The data-flow step of powerpc, whose code is in byte order `order`:
    `bcl 20,31,.+4` and mflr give a register the address after the bcl."""

    def step(addr, insn, raw, state, reads, regions):
        w = int.from_bytes(raw[:4], order)
        op, rt, ra = w >> 26, (w >> 21) & 31, (w >> 16) & 31
        simm = _sext(w, 16)
        nxt = addr + insn.length
        if insn.kind == decode.CALL:
            if insn.target == nxt:                            # bcl 20,31,.+4: only to read the PC
                out = dict(state)
                out[_PPC_LR] = frozenset({nxt})
                return out
            return None
        if w & 0xFC1FFFFE == 0x7C0802A6:                      # mflr
            _set(state, rt, _known(state, _PPC_LR))
            return None
        if w & 0xFC1FFFFE == 0x7C0803A6:                      # mtlr
            state.pop(_PPC_LR, None)
            return None
        if op in (14, 15) and ra:                             # addi, addis
            _set(state, rt, (v + (simm << 16 if op == 15 else simm) for v in _known(state, ra)))
            return None
        if op == 31 and (w >> 1) & 0x3FF == 444 and rt == (w >> 11) & 31:     # mr (or ra, rs, rs)
            _set(state, ra, _known(state, rt))
            return None
        if op in _PPC_LOADS and ra:
            reads.update(v + simm for v in _known(state, ra))
        elif op == 58 and ra and w & 3 in (0, 1, 2):         # ld, ldu, lwa
            reads.update(v + (simm & ~3) for v in _known(state, ra))
        for reg in ppc_gprs_written(w):
            state.pop(reg, None)
        if op in _PPC_LOADS and op < 48:                      # the integer loads write rt (and ra with update)
            state.pop(rt, None)
        return None

    return step


# LoongArch --------------------------------------------------------------------------------

_LA_LOADS = {0xA0, 0xA1, 0xA2, 0xA3, 0xA8, 0xA9, 0xAA, 0xAC, 0xAE}    # ld.{b,h,w,d,bu,hu,wu}, fld.{s,d}
_LA_STORES = {0xA4, 0xA5, 0xA6, 0xA7, 0xAD, 0xAF}                       # st.{b,h,w,d}, fst.{s,d}


def _loongarch_transfer(addr, insn, raw, state, reads, regions):
    w = int.from_bytes(raw[:4], "little")
    rd, rj = w & 31, (w >> 5) & 31
    si20 = _sext(w >> 5, 20)
    if w >> 25 in (0x0C, 0x0D, 0x0E, 0x0F):                 # pcaddi, pcalau12i, pcaddu12i, pcaddu18i
        _set(state, rd, {{0x0C: addr + (si20 << 2), 0x0D: (addr & ~0xFFF) + (si20 << 12),
                          0x0E: addr + (si20 << 12), 0x0F: addr + (si20 << 18)}[w >> 25]})
    elif w >> 22 in (0x0A, 0x0B):                             # addi.w, addi.d
        _set(state, rd, (v + _sext(w >> 10, 12) for v in _known(state, rj)))
    elif w >> 22 in _LA_LOADS:
        reads.update(v + _sext(w >> 10, 12) for v in _known(state, rj))
        if w >> 22 < 0xAC:
            state.pop(rd, None)
    elif w >> 24 in (0x20, 0x22, 0x24, 0x26):                 # ll.{w,d}, ldptr.{w,d}
        reads.update(v + (_sext(w >> 10, 14) << 2) for v in _known(state, rj))
        state.pop(rd, None)
    elif w & 0xFFFF8000 == 0x00150000 and (w >> 10) & 31 == 0:    # or rd, rj, $zero: move
        _set(state, rd, _known(state, rj))
    elif w >> 22 in _LA_STORES or w >> 24 in (0x21, 0x23, 0x25, 0x27) or 0x10 <= w >> 26 <= 0x1B and \
            w >> 26 not in (0x13, 0x15):
        pass                                                  # stores and branches write no register
    elif w >> 26 == 0x15:                                     # bl: $ra
        state.pop(1, None)
    else:
        state.pop(rd, None)
    state.pop(0, None)                                        # $zero is always 0
    return None


# MIPS -------------------------------------------------------------------------------------

_MIPS_RA = 31
_MIPS_LOADS = {0x20, 0x21, 0x23, 0x24, 0x25, 0x27, 0x30, 0x34, 0x37, 0x1A, 0x1B, 0x22, 0x26}   # integer loads
_MIPS_FP_LOADS = {0x31, 0x35}                                  # lwc1, ldc1: an FPR
_MIPS_STORES = {0x28, 0x29, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F, 0x38, 0x39, 0x3C, 0x3D, 0x3F}
_MIPS_SPECIAL_NO_RD = {0x08, 0x0C, 0x0D, 0x0F, 0x11, 0x13} | set(range(0x18, 0x20)) | set(range(0x30, 0x37))


def _mips_transfer(order: ByteOrder):
    """The data-flow step of MIPS, whose code is in byte order `order`.  The
    entries of Linux's images and vdsogen's find the data without the GOT:
    bal over a word, which $ra then points at, holding the distance from
    itself to the data; lw of that word and addu of $ra make the address."""

    def word_at(regions: decode.Regions, addr: int) -> int | None:
        found = regions.find(addr)
        if found is None or addr + 4 > found[0] + len(found[1]):
            return None
        return int.from_bytes(bytes(found[1][addr - found[0]:addr - found[0] + 4]), order)

    def step(addr, insn, raw, state, reads, regions):
        w = int.from_bytes(raw[:4], order)
        op, rs, rt, rd = w >> 26, (w >> 21) & 31, (w >> 16) & 31, (w >> 11) & 31
        imm = _sext(w, 16)

        def known(reg: int) -> frozenset:
            return frozenset({0}) if reg == 0 else _known(state, reg)
        if insn.kind == decode.CALL:
            if mips.call_reads_pc(insn.target, addr + 8, lambda a: word_at(regions, a)):
                out = dict(state)
                out[_MIPS_RA] = frozenset({addr + 8})         # past the delay slot: the word jumped over
                return out
            return None
        if addr in _known(state, _MIPS_RA):                   # the word a bal jumped over: data
            return None
        if op in _MIPS_LOADS or op in _MIPS_FP_LOADS:
            at = {v + imm for v in known(rs)}
            reads.update(at)
            value = {word_at(regions, a) for a in at} if op == 0x23 and at else {None}
            if op in _MIPS_LOADS:
                _set(state, rt, (_sext(v, 32) for v in value) if None not in value else ())
        elif op in (0x09, 0x19):                              # addiu, daddiu
            _set(state, rt, (v + imm for v in known(rs)))
        elif op == 0 and w & 0x3F in (0x21, 0x2D, 0x25) and (w & 0x3F != 0x25 or not rt):   # addu, daddu; move
            _set(state, rd, (a + b for a in known(rs) for b in known(rt)))
        elif op == 0:
            if w & 0x3F not in _MIPS_SPECIAL_NO_RD:
                state.pop(rd, None)
        elif op in (0x1C, 0x1F):                              # SPECIAL2 (Loongson's gs*), SPECIAL3
            state.pop(rd, None)
            state.pop(rt, None)
        elif op == 0x11 and rs in (0, 1, 2, 3):               # mfc1, dmfc1, cfc1, mfhc1: a GPR
            state.pop(rt, None)
        elif 0x08 <= op <= 0x0F or op == 0x18:                # the other immediate ops, lui
            state.pop(rt, None)
        elif op not in _MIPS_STORES and op not in (1, 2, 4, 5, 6, 7, 20, 21, 22, 23, 0x2F, 0x33, 0x3B):
            state.pop(rt, None)                               # anything unknown: its rt may be written
        state.pop(0, None)
        return None

    return step


def _sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# -- comparing -------------------------------------------------------------------------

def _found(v: Verdict) -> set[str]:
    return {f"{x.symbol}@{x.version}" for x in v.lookups if x.status == "found"}


def _verdict_text(v: Verdict) -> str:
    if v.verdict == "n/a":
        return "n/a"
    return f"{v.verdict} ({len(_found(v))}/{len(v.lookups)} found)"


def _hex(values: list[int]) -> str:
    return ", ".join(f"{'-' if v < 0 else ''}0x{abs(v):x}" for v in values) or "nothing"


def compare(old: Facts, new: Facts) -> list[Change]:
    """Every change from OLD to NEW, the breaking ones first."""
    if old.abi.name != new.abi.name:
        raise AbiMismatch(f"{old.path} is of ABI {old.abi.name} and {new.path} of ABI {new.abi.name}: "
                          "diff compares two images of one ABI")
    changes: list[Change] = []
    lost: dict[str, list[str]] = {}    # "sym@ver" -> consumers that found it in OLD and not in NEW
    old_v = {v.consumer: v for v in old.consumers}
    for v in new.consumers:
        before = old_v.get(v.consumer)
        if before is None:
            continue
        gone = _found(before) - _found(v)
        for lookup in gone:
            lost.setdefault(lookup, []).append(v.consumer)
        if RANK[v.verdict] > RANK[before.verdict] or gone:
            changes.append(Change("consumer", v.title, _verdict_text(before), _verdict_text(v), [v.consumer],
                                  v.reason))
        elif v.verdict != before.verdict or _found(before) != _found(v):
            changes.append(Change("consumer", v.title, _verdict_text(before), _verdict_text(v), [], v.reason))

    def export_name(e):
        return f"{e[0]}@{e[1]}" if e[1] else e[0]
    for e in sorted(old.exports - new.exports, key=export_name):
        name = export_name(e)
        if (e[0], None) in new.exports or any(n == e[0] for n, _ in new.exports):
            breaks = lost.get(name, [])
            why = "still exported under another version" + (f", which {', '.join(breaks)} do not find"
                                                            if breaks else "")
        else:
            breaks = lost.get(name) or [CALLERS]
            why = "removed"
        changes.append(Change("export", name, name, None, breaks, why))
    for e in sorted(new.exports - old.exports, key=export_name):
        changes.append(Change("export", export_name(e), None, export_name(e), [], "added"))
    for v in old.versions:
        if v not in new.versions:
            breaks = sorted({c for lk, cs in lost.items() if lk.endswith("@" + v) for c in cs}) or [CALLERS]
            changes.append(Change("version", v, v, None, breaks, "version node removed"))
    for v in new.versions:
        if v not in old.versions:
            changes.append(Change("version", v, None, v, [], "version node added"))
    if old.soname != new.soname:
        changes.append(Change("soname", "DT_SONAME", old.soname, new.soname))
    if old.flags != new.flags:
        bad = [f.what for f in new.abi.flags if f.ok(old.flags) and not f.ok(new.flags)]
        changes.append(Change("flags", "e_flags", f"0x{old.flags:x}", f"0x{new.flags:x}", [],
                              f"no longer {'; '.join(bad)}" if bad else ""))
    for key in sorted(old.notes.keys() | new.notes.keys()):
        a, b = old.notes.get(key), new.notes.get(key)
        if a != b:
            changes.append(Change("note", key, a, b))
    _trampoline_changes(old, new, changes)
    _data_changes(old, new, changes)
    for label in sorted(old.hotpaths.keys() & new.hotpaths.keys()):
        a, b = old.hotpaths[label], new.hotpaths[label]
        if a != b:
            changes.append(Change("hotpath", label, a, b, [], "instructions on the hot path"))
    for key in ("file", "load", "pages"):
        if old.size[key] != new.size[key]:
            changes.append(Change("size", key, old.size[key], new.size[key]))
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(changes, key=lambda c: (not c.breaks, order[c.kind]))


def _trampoline_changes(old: Facts, new: Facts, changes: list[Change]) -> None:
    for name, a in old.trampolines.items():
        b = new.trampolines[name]
        if a.address is None or b.address is None:
            continue                     # none, or an export added or removed: the export's change says so
        if a.address != b.address:
            changes.append(Change("trampoline", f"{name} offset", a.address, b.address, [],
                                  "moved in the image (the kernel links it by its offset)"))
        if a.words != b.words:
            if a.matches and not b.matches and b.cfi == "no":
                breaks, why = [UNWINDERS], "no longer the words unwinders compare, and no CFI covers it"
            elif a.matches and not b.matches:
                breaks, why = [], f"no longer the words unwinders compare, but CFI ({b.cfi}) covers it"
            elif b.matches:
                breaks, why = [], "now the words unwinders compare"
            else:
                breaks, why = [], "neither is what unwinders compare"
            changes.append(Change("trampoline", f"{name} words", a.words or OUTSIDE, b.words or OUTSIDE, breaks, why))
        if a.cfi != b.cfi:
            breaks = [UNWINDERS] if a.cfi != "no" and b.cfi == "no" and not b.matches else []
            changes.append(Change("cfi", name, a.cfi, b.cfi, breaks, "CFI covering the trampoline"))


def _data_changes(old: Facts, new: Facts, changes: list[Change]) -> None:
    if old.data is None or new.data is None:
        return
    for name in sorted(old.data.keys() | new.data.keys()):
        a, b = old.data.get(name, []), new.data.get(name, [])
        if a != b and any(n == name for n, _ in old.exports) and any(n == name for n, _ in new.exports):
            gone, added = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            changes.append(Change("data", name, a, b, [],
                                  f"reads {_hex(added)} instead of {_hex(gone)}" if gone and added else
                                  f"reads also {_hex(added)}" if added else f"no longer reads {_hex(gone)}"))


# -- reporting ---------------------------------------------------------------------------

def _show(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and kind == "trampoline":
        return f"0x{value:x}"
    return str(value)


def _header(f: Facts) -> dict[str, Any]:
    return {"file": f.path, "abi": f.abi.name, "linux": f.linux, "data_offsets": f.data is not None}


def exit_code(changes: list[Change]) -> int:
    return 1 if any(c.breaks for c in changes) else 0


def line(c: Change) -> str:
    """One change as the text report prints it, without its mark."""
    if c.kind in ("export", "version", "data"):
        body = f"{c.what}: {c.why}"
    else:
        body = f"{c.what}: {_show(c.old, c.kind)} -> {_show(c.new, c.kind)}" + (f"; {c.why}" if c.why else "")
    return body + (f" (breaks {', '.join(c.breaks)})" if c.breaks else "")


def render_text(old: Facts, new: Facts, changes: list[Change], stream: TextIO) -> None:
    print(f"{old.abi.name}: {old.path} (Linux {old.linux or 'unknown'}) -> {new.path} "
          f"(Linux {new.linux or 'unknown'})", file=stream)
    for f in (old, new):
        if f.data is None:
            print(f"note: {f.path}: data offsets are not decoded for {f.abi.name}", file=stream)
    width = max((len(c.kind) for c in changes), default=0)
    for c in changes:
        print(f"{'BREAKS' if c.breaks else '      '} {c.kind:<{width}} {line(c)}", file=stream)
    broken = sorted({b for c in changes for b in c.breaks})
    print(f"{len(changes)} change(s), {sum(bool(c.breaks) for c in changes)} breaking"
          + (f": {', '.join(broken)}" if broken else ""), file=stream)


def render_json(old: Facts, new: Facts, changes: list[Change], stream: TextIO) -> None:
    doc = {"schema": SCHEMA, "tool": f"vdsogen {__version__}", "old": _header(old), "new": _header(new),
           "exit_code": exit_code(changes), "changes": [c.as_dict() for c in changes]}
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def main(old_path: str, new_path: str, fmt: str = "text", stream: TextIO | None = None) -> int:
    """`vdsogen diff`: the exit status (1 when a change breaks a consumer)."""
    old, new = read(old_path), read(new_path)
    changes = compare(old, new)
    (render_json if fmt == "json" else render_text)(old, new, changes, stream or sys.stdout)
    return exit_code(changes)
