"""Rules that read the code itself."""

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from vdsogen.bench import hotpath
from vdsogen.elf import decode
from vdsogen.elf.consts import (EM_AARCH64, EM_PPC, EM_PPC64, EM_S390, EM_X86_64, PF_X, SHF_EXECINSTR, SHT_NOBITS,
                                STB_LOCAL, STT_FUNC, STT_NOTYPE)
from vdsogen.elf.reader import ElfImage
from vdsogen.isa import for_machine, s390
from vdsogen.isa.arm64 import arm64_writes_x18
from vdsogen.isa.powerpc import ppc_gprs_written
from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Isa
from vdsogen.audit.rules import Context, Findings, rule

# (address, bytes, file offset) of a stretch of code.
Region = tuple[int, memoryview, int]

BCL_20_31_NEXT = 0x429F0005   # bcl 20,31,.+4
MAX_FINDINGS = 20


def capped(findings: Iterable[tuple[str, str]], more: str | None = None) -> Findings:
    """The first MAX_FINDINGS of `findings` ((where, message) pairs), then, if
    `more` names what they are, one finding that counts the rest."""
    count = 0
    for finding in findings:
        count += 1
        if count <= MAX_FINDINGS:
            yield finding
    if more and count > MAX_FINDINGS:
        yield "code", f"{count - MAX_FINDINGS} more {more}"


def code_words(img: ElfImage) -> Iterator[tuple[int, int]]:
    """(file offset, 32-bit word) of every aligned word in executable sections;
    four words are a unit of the image's work budget."""
    fmt = ">I" if img.code_endian == "big" else "<I"
    for sec in img.sections:
        if sec.flags & SHF_EXECINSTR and sec.type != SHT_NOBITS:   # SHT_NOBITS holds no code
            data = img.section_bytes(sec)
            n = len(data) // 4
            img.charge(n // 4 + 1)
            for i, (word,) in enumerate(struct.iter_unpack(fmt, data[:4 * n])):
                yield sec.offset + 4 * i, word


@rule("K001", "warning", "powerpc: every bcl should be `bcl 20,31,.+4`, the form that spares the link-stack predictor",
      """Getting the address of the data page needs the program counter; on
      powerpc `bcl 20,31,.+4` followed by mflr is the one branch-and-link
      form that processors treat as not-a-call, leaving the return-address
      predictor intact.  Any other bcl unbalances it and every return after
      it mispredicts: slower, never wrong (powerpc kernels before 2016 used
      `bcl 20,31,.+8` over an inline word), so a warning; vdsogen's own
      images must use the right form (an error in check).""", check="error")
def powerpc_bcl(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_PPC, EM_PPC64):
        return

    def found():
        for off, word in code_words(img):
            # opcode 16 (bc) with LK set and AA clear is a bcl.
            if word & 0xFC000003 == 0x40000001 and word != BCL_20_31_NEXT:
                bo, bi, bd = (word >> 21) & 31, (word >> 16) & 31, word & 0xFFFC
                yield f"@0x{off:x}", f"bcl {bo},{bi},.{'+' if bd < 0x8000 else '-'}{bd if bd < 0x8000 else 0x10000 - bd}"
    yield from capped(found(), "bcl of another form")


def code_regions(img: ElfImage) -> list[Region]:
    """[(address, bytes, file offset)] of the code: executable sections, or
    executable PT_LOADs when there is no section table.  .altinstr_replacement
    is left out: its code is copied elsewhere before it runs."""
    out = []
    for sec in img.sections:
        if (sec.flags & SHF_EXECINSTR and sec.type != SHT_NOBITS and sec.size
                and sec.name != ".altinstr_replacement" and sec.offset < len(img.data)):
            out.append((sec.addr, img.view[sec.offset:sec.offset + sec.size], sec.offset))
    if not img.sections:
        for seg in img.loads:
            if seg.flags & PF_X:
                out.append((seg.vaddr, img.view[seg.offset:seg.offset + seg.filesz], seg.offset))
    return out


def entry_points(img: ElfImage, regions: decode.Regions | list[Region]) -> list[tuple[int, str | None]]:
    """(address, mode) of every function the symbol tables name inside the code."""
    if not isinstance(regions, decode.Regions):
        regions = decode.Regions([(a, code) for a, code, _o in regions])
    out = set()
    for s in img.dynsym[1:] + img.symtab[1:]:
        if not s.defined:
            continue
        if s.type != STT_FUNC and not (s.type == STT_NOTYPE and s.table == ".dynsym" and s.bind != STB_LOCAL):
            continue
        addr, mode = decode.entry(img, s.value)          # ARM: an odd value is a Thumb entry
        if addr in regions:
            out.add((addr, mode))
    return sorted(out, key=lambda e: (e[0], e[1] or ""))


def reached(ctx: Context) -> tuple[list[Region], list[tuple]]:
    """Every instruction reached from the entry points, computed once per image."""
    if "code" not in ctx.cache:
        img = ctx.image
        regions = code_regions(img)
        index = decode.Regions([(a, code) for a, code, _o in regions])
        decoded: dict = {}
        ctx.cache["decoded"] = decoded
        ctx.cache["code"] = (regions, list(decode.walk(img, index, entry_points(img, index), decoded)))
    return ctx.cache["code"]


def _where(regions, img, addr):
    for a, code, off in regions:
        if a <= addr < a + len(code):
            sec = next((s for s in img.sections if s.offset == off and s.addr == a), None)
            name = sec.name if sec else "code"
            return f"{name} @0x{off + addr - a:x}"
    return f"@0x{addr:x}"


@rule("K002", "error", "direct branches and calls must stay inside the image",
      """A call or jump to an address outside the mapped image (a PLT that
      does not exist, an absolute address, a symbol the link left
      unresolved, a prelinked address) lands in the data pages or in
      unmapped memory.  The code is followed from every function symbol,
      for x86, arm64, arm/Thumb, powerpc, MIPS, RISC-V, s390x and
      LoongArch.""")
def branches_inside(ctx: Context) -> Findings:
    img = ctx.image
    regions, insns = reached(ctx)
    lo = min((s.vaddr for s in img.loads), default=0)
    hi = img.image_end
    yield from capped(((_where(regions, img, addr), f"{insn.kind} at 0x{addr:x} to "
                        f"0x{insn.target & (1 << 64) - 1:x}, outside the image [0x{lo:x}, 0x{hi:x})")
                       for addr, insn, _raw in insns if insn.target is not None and not lo <= insn.target < hi),
                      "branch(es) outside the image")


@rule("K003", "error", "arm64 code must not write x18",
      """x18 is the platform register: some ABIs reserve it and Linux uses it
      for the Shadow Call Stack, so a vDSO called from any process must
      leave it alone (-ffixed-x18, no -fsanitize=shadow-call-stack).""")
def arm64_x18(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine != EM_AARCH64:
        return
    regions, insns = reached(ctx)
    yield from capped((_where(regions, img, addr), f"instruction 0x{int.from_bytes(raw, 'little'):08x} at 0x{addr:x} "
                                                   f"writes x18")
                      for addr, insn, raw in insns
                      if len(raw) == 4 and arm64_writes_x18(int.from_bytes(raw, "little")))


@rule("K004", "error", "powerpc code that Go calls must not write r30, where Go before 1.16 keeps its g pointer",
      """Go before 1.16 keeps its g pointer in r30 and reads it in a signal
      handler that may interrupt the vDSO, so the entry points it calls
      (__kernel_clock_gettime) must leave r30 alone, even where they would
      restore it later; Linux builds its time functions with -ffixed-r30
      (since 2021).  An image is judged by the code reached from the
      exports the ABI's Go runtime looks up: Linux 6.12+ getrandom code,
      which only Go 1.24+ calls, saves and uses r30.  vdsogen's own images
      are judged by all their code (check): gcc keeps r30 free with
      -ffixed-r30; clang-19 has no such option for powerpc and allocates
      r30.""")
def powerpc_r30(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine not in (EM_PPC, EM_PPC64):
        return
    regions, insns = reached(ctx)
    abi = ctx.expect.abi_info
    if not ctx.expect.generated and abi is not None and "go" in abi.lookups:
        index = decode.Regions([(a, code) for a, code, _o in regions])
        go = {lk.symbol for lk in abi.lookups["go"]}
        entries = [(s.value, None) for s in img.dynsym[1:] if s.defined and s.name in go and s.value in index]
        insns = list(decode.walk(img, index, entries))
    yield from capped(((_where(regions, img, addr), f"instruction 0x{int.from_bytes(raw, img.code_endian):08x} "
                                                    f"at 0x{addr:x} writes r30")
                       for addr, insn, raw in insns
                       if len(raw) == 4 and 30 in ppc_gprs_written(int.from_bytes(raw, img.code_endian))),
                      "instruction(s) writing r30")


# The kernel walks user stacks by their back chains (perf callchains,
# arch/s390's arch_stack_walk_user) since Linux 6.7.
USER_STACK_WALKER_SINCE = "6.7"
# How far before a frame allocation the stack pointer's copy is looked for.
BACK_CHAIN_LOOKBACK = 8


def _s390x_frame_problem(at: dict[int, tuple[decode.Insn, bytes]], before: dict[int, int], addr: int,
                         size: int) -> str | None:
    """What is wrong with the back chain of the frame of `size` bytes that the
    instruction at `addr` allocates, or None.  at: address -> (Insn, raw) of
    the reached code; before: address -> the address of the instruction
    that runs straight into it."""
    sources: set[int] = set()          # registers holding the stack pointer the frame is cut from
    prev = before.get(addr)
    for _ in range(BACK_CHAIN_LOOKBACK):
        if prev is None:
            break
        reg = s390.copies_stack_pointer(at[prev][1])
        if reg is not None:
            sources.add(reg)
        prev = before.get(prev)
    cleared = saved = False
    insn, _raw = at[addr]
    nxt = addr + insn.length
    while nxt in at:                   # the straight line after the allocation
        insn, raw = at[nxt]
        reg = s390.stores_back_chain(raw)
        if reg is not None:
            return None if reg in sources else f"stores %r{reg} as its back chain, not the caller's stack pointer"
        cleared |= s390.clears_back_chain(raw)
        saved |= s390.saves_return_address(raw, s390.STACK_FRAME_OVERHEAD)
        if (cleared and saved) or insn.kind != decode.SEQ or s390.frame_allocation(raw) is not None:
            break
        nxt += insn.length
    if not cleared:
        return f"without storing its back chain at 0(%r15) before 0x{nxt:x}"
    if size != s390.VDSO_ENTRY_FRAME:
        return (f"with a cleared back chain, the kernel walker's mark of the vDSO entry frame, which is "
                f"{s390.VDSO_ENTRY_FRAME} bytes")
    if not saved:
        return (f"with a cleared back chain but no %r14 at {s390.STACK_FRAME_OVERHEAD}(%r15) before 0x{nxt:x}, "
                f"where the kernel's walker reads the vDSO entry frame's return address")
    return None


@rule("K007", "warning",
      "s390x: every stack frame should store the back chain the kernel's user stack walker follows",
      """The kernel's user stack walker (perf callchains, since Linux 6.7)
      follows the back chain: the word at 0(%r15) of each frame, the
      caller's stack pointer, as code built with -mbackchain stores it.  A
      frame allocated without storing it leaves a stale word there, and
      the walk goes on from whatever it points at.  The vDSO's entry frames
      (168 bytes, the caller's %r14 at 160(%r15)) clear it instead: the
      walker takes a zero back chain in the vDSO for that frame and goes on
      from the caller's.  Every frame allocation (aghi, agfi, lay on %r15)
      in the code reached from the symbols must, before the next branch,
      store the stack pointer an `lgr %rX,%r15` copied just before, or be
      such an entry frame.  Not judged: 31-bit images (the walker skips
      compat tasks), images of Linux before 6.7 (no walker; Linux's entry
      frames left the word stale until 6.10) and QEMU's under the
      qemu-user profile (no kernel walks a guest's stack).""", check="error")
def s390x_back_chain(ctx: Context) -> Findings:
    img = ctx.image
    if (img.e_machine != EM_S390 or img.elf_class != 64 or ctx.profile == "qemu-user"
            or ctx.before(USER_STACK_WALKER_SINCE)):
        return
    regions, insns = reached(ctx)
    at = {addr: (insn, raw) for addr, insn, raw in insns}
    before = {addr + insn.length: addr for addr, insn, _raw in insns if insn.kind == decode.SEQ}

    def found():
        for addr, (_insn, raw) in sorted(at.items()):
            size = s390.frame_allocation(raw)
            problem = None if size is None else _s390x_frame_problem(at, before, addr, size)
            if problem:
                yield _where(regions, img, addr), f"{size}-byte frame allocated at 0x{addr:x} {problem}"
    yield from capped(found(), "frame(s) without a back chain")


# ---------------------------------------------------------------------------
# K008: the counter read before the clock mode test.  What a load is is
# each ISA module's data_load (vdsogen/isa).
_TIME_EXPORTS = ("clock_gettime", "gettimeofday")


class Flow:
    """The instructions of an image as the flow walks of K008 and K009 see them:
    decoded on demand, each (and charged to the work budget) once across the
    walks that share `memo`."""

    def __init__(self, img: ElfImage, isa: Isa, memo: dict | None = None) -> None:
        self.img, self.isa = img, isa
        self.dec, self.classify = isa.decoder(img), isa.classifier(img)
        self.regions = decode.Regions(hotpath.code_regions(img))
        self.order: ByteOrder = "big" if img.code_endian == "big" else "little"
        self.cache = {} if memo is None else memo

    def at(self, addr: int, mode: str | None) -> tuple[decode.Insn, bytes] | None:
        """(Insn, raw bytes) at addr, or None."""
        cache = self.cache
        if (addr, mode) not in cache:
            cache[addr, mode] = None
            region = self.regions.find(addr)
            if region is not None:
                self.img.charge()
                insn = self.dec(region[1], addr - region[0], addr, mode)
                if insn is not None and insn.length > 0:
                    cache[addr, mode] = insn, bytes(region[1][addr - region[0]:addr - region[0] + insn.length])
        return cache[addr, mode]

    def raw_at(self, addr: int, mode: str | None) -> bytes | None:
        got = self.at(addr, mode)
        return None if got is None else got[1]

    def word_at(self, addr: int) -> int | None:
        raw = self.raw_at(addr, None)
        return None if raw is None or len(raw) != 4 else int.from_bytes(raw, self.order)

    def has_slot(self, insn: decode.Insn, kind: str) -> bool:
        """A branch whose delay slot runs first (MIPS), whichever way it goes."""
        return self.isa.delay_slots and (kind in (RETURN, CRETURN) or insn.kind in (CALL, JUMP, CJUMP))

    def next(self, insn: decode.Insn, kind: str, nxt: int, mode: str | None,
             stack: tuple) -> list[tuple[int, str | None, tuple]]:
        """(address, mode, call stack) of where the flow goes after `insn` (of hot-path class
        `kind`), `nxt` the address after it (and its delay slot); calls are followed up to
        hotpath's MAX_DEPTH and return to their caller."""
        succ = []
        if kind in (RETURN, CRETURN):
            if stack:
                succ.append((stack[-1][0], stack[-1][1], stack[:-1]))
            if kind == CRETURN:
                succ.append((nxt, mode, stack))
        elif insn.kind == CALL and insn.target is not None:
            to = insn.mode or mode
            if self.isa.call_reads_pc(insn.target, nxt, self.word_at):
                succ.append((nxt, to, stack))
            elif len(stack) < hotpath.MAX_DEPTH:
                succ.append((insn.target, to, stack + ((nxt, mode),)))
        elif insn.kind == JUMP and insn.target is not None:
            succ.append((insn.target, insn.mode or mode, stack))
        elif insn.kind == CJUMP and insn.target is not None:
            succ += [(insn.target, insn.mode or mode, stack), (nxt, mode, stack)]
        elif insn.kind == SEQ:
            succ.append((nxt, mode, stack))
        return succ


def time_exports(img: ElfImage) -> dict[int, str]:
    """Entry -> its first name (aliases share the entry) of the exports of clock_gettime and
    gettimeofday (and their 64-bit flavours)."""
    exports: dict[int, str] = {}
    for s in sorted(img.dynsym[1:], key=lambda s: s.name):
        if s.defined and s.type == STT_FUNC and any(s.name.endswith((n, n + "64")) for n in _TIME_EXPORTS):
            exports.setdefault(s.value, s.name)
    return exports


def flow_memo(ctx: Context) -> dict:
    """The decoded instructions the flow walks share: the walk from the entry points, then theirs."""
    reached(ctx)
    if "flow" not in ctx.cache:
        ctx.cache["flow"] = dict(ctx.cache["decoded"])
    return ctx.cache["flow"]


def counter_before_branch(img: ElfImage, entry: int, memo: dict | None = None) -> list[int]:
    """Addresses of counter reads that a flow from `entry` reaches after a load
    and with no conditional branch (nor a Thumb IT) since its first load; []
    where the ISA has no data_load (vdsogen/isa).  Each flow ends at its first counter
    read, a syscall or its return; calls are followed (hotpath's MAX_DEPTH).
    `memo` keeps each instruction decoded (and charged) once across calls."""
    isa = for_machine(img.e_machine)
    loads = isa.data_load if isa is not None else None
    if isa is None or loads is None:
        return []
    flow = Flow(img, isa, memo)
    classify, order = flow.classify, flow.order
    long_mode = img.e_machine == EM_X86_64
    addr, mode = isa.entry(entry)

    # phase 0: no load yet; 1: a load, no branch since.  A flow past a branch after a load cannot be flagged.
    work: list[tuple[int, str | None, int, tuple]] = [(addr, mode, 0, ())]
    seen: set = set()
    found: set[int] = set()
    while work and len(seen) < hotpath.MAX_STATES:
        state = work.pop()
        if state in seen:
            continue
        seen.add(state)
        addr, mode, phase, stack = state
        got = flow.at(addr, mode)
        if got is None:
            continue
        insn, raw = got
        kind = classify(raw, mode)
        if kind == COUNTER:
            if phase == 1:
                found.add(addr)
            continue
        if kind == SYSCALL:
            continue
        nxt = addr + insn.length
        branches = insn.kind == CJUMP or kind == CRETURN or isa.cjump_skips(raw, mode, order) > 0   # Thumb's IT
        if branches and phase == 1:
            continue
        if phase == 0 and loads(raw, mode, order, long_mode):
            phase = 1
        if flow.has_slot(insn, kind):
            # MIPS: the delay slot runs after the branch is decided, whichever way it goes.
            slot = flow.raw_at(nxt, mode)
            if slot is None or classify(slot, mode) == SYSCALL:
                continue
            if classify(slot, mode) == COUNTER:
                if phase == 1:
                    found.add(nxt)
                continue
            if phase == 0 and loads(slot, mode, order, long_mode):
                phase = 1
            nxt += len(slot)
        work += [s for s in ((a, m, phase, st) for a, m, st in flow.next(insn, kind, nxt, mode, stack))
                 if s not in seen]
    return sorted(found)


@rule("K008", "warning", "the time functions should test the clock mode before they read the counter",
      """In clock mode NONE the kernel says the counter must not be read:
      the TSC of a process that disabled it with prctl(PR_SET_TSC,
      PR_TSC_SIGSEGV) traps, as does an architected timer the kernel keeps
      from user mode.  Linux's vDSO loads clock_mode and tests it before the
      counter read, and in mode NONE makes the syscall without touching the
      counter.  An image that reads the counter first dies of SIGSEGV or
      SIGILL where Linux's answers.  Found from the code alone: a flow from
      an export of clock_gettime or gettimeofday that reaches a counter
      read after a load (not from the stack) with no conditional branch in
      between has not tested the clock mode, which it must load first (a
      flow that branches after its first load is given the benefit of the
      doubt).  x86, ARM, arm64, RISC-V, LoongArch, powerpc, MIPS and
      s390.  A warning, as the image works until a process disables its
      counter; vdsogen's own images must test the mode first (an error in
      check).""", check="error")
def counter_before_mode(ctx: Context) -> Findings:
    img = ctx.image
    regions = code_regions(img)
    reads: dict[int, str] = {}               # counter read -> the first export that reaches it so
    memo = flow_memo(ctx)
    for value, name in sorted(time_exports(img).items()):
        for addr in counter_before_branch(img, value, memo):
            reads.setdefault(addr, name)
    yield from capped(((_where(regions, img, addr), f"{name}: the counter read at 0x{addr:x} runs after a load "
                                                    f"with no test in between: not after the clock mode's")
                       for addr, name in sorted(reads.items())), "counter read(s) before the clock mode test")


# ---------------------------------------------------------------------------
# K009: the seqcount's load ordering.  What orders loads is each ISA module's
# read_barrier and acquire_load, what a data load reads its load_address and
# pc_address (vdsogen/isa).
MAX_OPEN = 32         # the most recent loads a flow keeps to pair with a later load of one address (a
                      # read of the time data loads up to 20 fields)
ABSOLUTE = -2         # a load's base when it reads a known address (auipc, adrp right before)
# The flow states the walks of one image may visit, all exports together: a vDSO's need at most
# about 2200 (vdsogen's ppc32 .so.dbg); hostile code with thousands of exports stops here.
MAX_PAIR_STATES = 20_000

Key = tuple[int, int]


class _Open(NamedTuple):
    """A load a later load of the same address may pair with."""
    key: Key
    load: int                 # its address
    ordered: bool             # a barrier since it, or it is a load-acquire
    early: int | None         # the first other load after it before any ordering
    between: int | None       # the first other load after it


class Pair(NamedTuple):
    """A load, data loads, and the same load again (a re-read)."""
    key: Key
    load: int
    reread: int
    data: int                 # the first data load between
    early: int | None         # a data load not ordered after the load, or None
    late: int | None          # a data load the re-read is not ordered after, or None


@dataclass
class Pairs:
    """The seqcount reads the flows from one entry show."""
    ordered: set[Pair] = field(default_factory=set)     # with some ordering between the loads
    bare: set[Pair] = field(default_factory=set)        # with none
    states: int = 0                                     # the flow states visited

    def clean(self) -> set[Key]:
        """The addresses of the pairs ordered both ways."""
        return {p.key for p in self.ordered if p.early is None and p.late is None}


def seqcount_pairs(img: ElfImage, entry: int, memo: dict | None = None,
                   max_states: int = MAX_PAIR_STATES) -> Pairs | None:
    """The seqcount reads of the flows from `entry`, walking at most `max_states` flow
    states; None where the ISA keeps loads in order (no read_barrier in vdsogen/isa).

    A seqcount read is a load of the sequence, data loads, and the same load again: in
    each flow, two loads of one address (load_address: one base register, not written in
    between, and offset; or the address the instruction before puts in the register a load
    reads through and into, auipc's) with other loads between.  A re-read ordered both
    ways closes the loads made inside its pair, so the data loads of a retry loop do not
    pair with the next pass's, across its sequence.  A load that pairs with itself, a loop back
    to it, waits for the sequence to be even: the re-read that checks a read is another
    load, which compares its value with the first's.  Each flow ends at a syscall or its
    return; calls are followed."""
    isa = for_machine(img.e_machine)
    if isa is None or isa.read_barrier is None or isa.load_address is None:
        return None
    barrier, address, acquire, pc_address = isa.read_barrier, isa.load_address, isa.acquire_load, isa.pc_address
    written = isa.written
    flow = Flow(img, isa, memo)
    classify, order = flow.classify, flow.order
    pairs = Pairs()

    def step(opens: tuple[_Open, ...], dirty: int | None, pc: tuple[int, int] | None, addr: int, raw: bytes,
             mode: str | None) -> tuple[tuple[_Open, ...], int | None, tuple[int, int] | None]:
        """The open loads, the last load since the last barrier and the register a pc-relative
        address was just put in, after the instruction at addr."""
        if barrier(raw, mode, order):
            return tuple(o._replace(ordered=True) for o in opens), None, None
        load = address(raw, mode, order)
        if load is not None:
            base, offset, into = load
            key = (ABSOLUTE, pc[1] + offset) if pc is not None and base == pc[0] == into else (base, offset)
            acq = acquire(raw, mode, order)
            again = next((o for o in opens if o.key == key), None)
            if again is not None:
                clean = False
                if again.between is not None and again.load != addr:   # not a wait: a loop back to a load
                    pair = Pair(key, again.load, addr, again.between, again.early if again.ordered else None,
                                dirty if again.ordered else None)
                    (pairs.ordered if again.ordered else pairs.bare).add(pair)
                    clean = again.ordered and pair.early is None and pair.late is None
                # A read ordered both ways ends the loads inside it, so the data loads of a retry
                # loop do not pair with the next pass's; the loads around it stay open.
                opens = opens[:opens.index(again)] if clean else tuple(o for o in opens if o is not again)
            opens = tuple(o._replace(early=addr if o.early is None and not o.ordered else o.early,
                                     between=addr if o.between is None else o.between) for o in opens)
            opens, dirty = (opens + (_Open(key, addr, acq, None, None),))[-MAX_OPEN:], addr
        changed = written(raw, mode, order)
        if changed:                                   # a load through a changed base reads elsewhere
            opens = tuple(o for o in opens if o.key[0] < 0 or not changed >> o.key[0] & 1)
        return opens, dirty, None if load is not None else pc_address(raw, mode, order, addr)

    addr, mode = isa.entry(entry)
    work: list[tuple] = [(addr, mode, (), None, None, ())]
    seen: set = set()
    while work and len(seen) < max_states:
        state = work.pop()
        if state in seen:
            continue
        seen.add(state)
        addr, mode, opens, dirty, pc, stack = state
        got = flow.at(addr, mode)
        if got is None:
            continue
        insn, raw = got
        kind = classify(raw, mode)
        if kind == SYSCALL:
            continue
        opens, dirty, pc = step(opens, dirty, pc, addr, raw, mode)
        nxt = addr + insn.length
        if flow.has_slot(insn, kind):
            slot = flow.raw_at(nxt, mode)
            if slot is None or classify(slot, mode) == SYSCALL:
                continue
            opens, dirty, pc = step(opens, dirty, pc, nxt, slot, mode)
            nxt += len(slot)
        work += [s for s in ((a, m, opens, dirty, pc, st) for a, m, st in flow.next(insn, kind, nxt, mode, stack))
                 if s not in seen]
    pairs.states = len(seen)
    return pairs


@rule("K009", "warning", "weakly ordered ISAs: a seqcount read should order its data loads between its sequence loads",
      """The kernel publishes the time data under a sequence count: the
      reader loads the sequence, loads the data, and loads the sequence
      again, retrying when it moved.  On a processor that reorders loads
      (arm, arm64, powerpc, RISC-V, MIPS, LoongArch) that proves nothing
      unless the data loads are ordered after the first load of the
      sequence and before the second: Linux's smp_rmb(), which is arm64's
      and ARMv8's dmb ishld (arm64 may load the sequence with ldar or ldapr
      instead, for the first), ARMv7's dmb ish, powerpc's lwsync (sync on
      32-bit), RISC-V's fence r,r, MIPS's sync and LoongArch's dbar 0x15
      (vdsogen/isa: each ISA module's read_barrier).  Without them a reader
      can take a torn record for a stable one, on real hardware only:
      qemu-user on x86 never shows it.

      Found from the code, in the flows from the exports of clock_gettime
      and gettimeofday: two loads of one address (one base register, not
      written in between, and offset) with other loads between are a load
      and its re-read; a re-read ordered both ways closes the loads made
      inside its pair (a retry loop's data loads do not pair with the next
      pass's), and a load the flow loops back to (waiting for an even
      sequence) pairs with nothing.  A function whose pairs have no
      ordering between their loads at all orders nothing; one whose pairs
      are all ordered on one side only misses the other side.  A function
      with a read ordered both ways passes: what looks like a one-sided
      pair beside it is the start of another read (the hot path's first
      load, then the cold path's) or a re-read of the clock mode while the
      sequence is odd.  Not judged, then: one read of a function left
      unordered while another is right; loads of one address through two
      registers; a function with an ordered read of anything, such as
      MIPS's GIC counter (Linux's MIPS kernels for cores that keep loads in
      order, without CONFIG_WEAK_ORDERING, build smp_rmb() as a compiler
      barrier: Debian's 5kc-malta images order only their GIC reads).
      x86 and s390 keep loads in order: the rule does not apply.  A
      warning, as the finding comes from the shape of the code; vdsogen's
      own images must order their reads (an error in check).""", check="error")
def seqcount_order(ctx: Context) -> Findings:
    img = ctx.image
    isa = for_machine(img.e_machine)
    if isa is None or isa.read_barrier is None:
        return
    regions = code_regions(img)
    memo = flow_memo(ctx)
    found: dict[tuple[int, str], str] = {}     # (address, what) -> message, first export that shows it
    left = MAX_PAIR_STATES
    for value, name in sorted(time_exports(img).items()):
        if left <= 0:
            break
        pairs = seqcount_pairs(img, value, memo, left)
        if pairs is None:
            return
        left -= pairs.states
        if not pairs.ordered:
            for p in sorted(pairs.bare):
                found.setdefault((p.load, "bare"), f"{name}: the sequence load at 0x{p.load:x} and its re-read at "
                                                   f"0x{p.reread:x} bracket the data load at 0x{p.data:x}, and no "
                                                   f"seqcount read of the function orders its loads")
            continue
        if pairs.clean():
            continue                           # a read ordered both ways: the others are waits, or the start
        for p in sorted(pairs.ordered):        # of a cold path's read after the hot path's first load
            if p.early is not None:
                found.setdefault((p.early, "first"), f"{name}: the data load at 0x{p.early:x} is not ordered after "
                                                     f"the sequence load at 0x{p.load:x} (re-read at 0x{p.reread:x})")
            if p.late is not None:
                found.setdefault((p.reread, "last"), f"{name}: the sequence re-read at 0x{p.reread:x} is not ordered "
                                                     f"after the data load at 0x{p.late:x} (first load at "
                                                     f"0x{p.load:x})")
    yield from capped(((_where(regions, img, addr), message) for (addr, _what), message in sorted(found.items())),
                      "unordered seqcount load(s)")


# getrandom's entry points, and the name Linux (and vdsogen) give its ChaCha20 routine.
GETRANDOM_EXPORTS = ("__vdso_getrandom", "__kernel_getrandom")
CHACHA_SYMBOL = "__arch_chacha20_blocks_nostack"


def chacha_routines(img: ElfImage, index: decode.Regions) -> list[tuple[int, str | None, str]]:
    """(entry, mode, name) of getrandom's ChaCha20 routine: the symbol table's
    __arch_chacha20_blocks_nostack; in an image without one, every function
    the getrandom export calls (directly, through its callees or after a tail
    call) that itself calls nothing and makes no syscall, which in Linux's
    images and vdsogen's is that routine alone."""
    named = [(s.value, s.name) for s in img.symtab[1:] if s.defined and s.name == CHACHA_SYMBOL]
    if named:
        return [(*decode.entry(img, value), name) for value, name in sorted(set(named))]
    isa = for_machine(img.e_machine)
    if isa is None:
        return []
    classify, decoder = isa.classifier(img), isa.decoder(img)

    def swept(value: int, size: int) -> Iterator[tuple[int, decode.Insn]]:
        """Every instruction of a function's extent in address order: its first may be a
        branch the kernel patches away (arm64's), which a walk from the entry would follow."""
        addr, mode = decode.entry(img, value)
        region = index.find(addr)
        while region is not None and addr < value + size:
            insn = decoder(region[1], addr - region[0], addr, mode)
            if insn is None or insn.length <= 0:
                return
            yield addr, insn
            addr += insn.length

    exports = [s for s in img.dynsym[1:] if s.defined and s.name in GETRANDOM_EXPORTS]
    # The export's extent swept, and its flow walked (vdsogen's C entries tail-call their code).
    flow = [(a, i) for s in exports for a, i in swept(s.value, s.size)]
    flow += [(a, i) for a, i, _r in decode.walk(img, index, [decode.entry(img, s.value) for s in exports])]
    work = sorted({(i.target, i.mode) for a, i in flow
                   if i.kind == CALL and i.target is not None and i.target != a + i.length},
                  key=lambda e: (e[0], e[1] or ""))
    seen: set = set()
    out = []
    while work:
        entry = work.pop()
        if entry in seen:
            continue
        seen.add(entry)
        walked = list(decode.walk(img, index, [entry]))
        inner = {(i.target, i.mode or entry[1]) for a, i, _r in walked
                 if i.kind == CALL and i.target is not None and i.target != a + i.length}
        if not inner and not any(classify(raw, entry[1]) == SYSCALL for _a, _i, raw in walked):
            out.append((entry[0], entry[1], f"getrandom's callee at 0x{entry[0]:x}"))
        work.extend(inner)
    return sorted(out)


def stack_stores(img: ElfImage, isa: Isa, index: decode.Regions, entry: int,
                 mode: str | None) -> Iterator[tuple[int, bytes]]:
    """(address, raw bytes) of the stores to the stack in the routine at `entry`, but its
    prologue's saves: in the straight run from the entry up to the first instruction any branch
    of the routine targets (its loop), a store of general registers it has not written yet (the
    caller's, where the ISA tells the registers apart)."""
    assert isa.stack_store is not None
    order = img.code_endian
    insns = list(decode.walk(img, index, [(entry, mode)]))
    at = {addr: (insn, raw) for addr, insn, raw in insns}
    targets = {insn.target for _a, insn, _r in insns if insn.kind in (CJUMP, JUMP)}
    saves, written, addr = set(), 0, entry
    while addr in at and (addr == entry or addr not in targets):
        insn, raw = at[addr]
        stored = isa.stack_store(raw, mode, order)
        if stored and not stored & written:
            saves.add(addr)
        written |= isa.written(raw, mode, order)
        if insn.kind in (JUMP, STOP):
            break
        addr += insn.length
    for addr, insn, raw in insns:
        if addr not in saves and isa.stack_store(raw, mode, order) is not None:
            yield addr, raw


@rule("K010", "error", "getrandom's ChaCha20 routine must never store to the stack",
      """getrandom's generator is worth its name only if its key never
      reaches memory that outlives the call: the routine that makes the
      ChaCha20 blocks (__arch_chacha20_blocks_nostack) keeps the key, the
      counter and the keystream in registers and writes only the caller's
      buffer and the counter.  A spill to the stack would leave them in
      memory the next call, another library or a core dump reads.  The
      saves of the caller's registers in its prologue are allowed (a store,
      in the straight run from the entry to its loop, of a general register
      the routine has not written yet), as Linux's powerpc, RISC-V and
      LoongArch routines save their callee-saved registers.  The routine is the symbol table's
      __arch_chacha20_blocks_nostack, or, without one, each function the
      getrandom export calls that calls nothing and makes no syscall; on
      every ISA whose stores the decoders know (x86, arm64, powerpc, s390x,
      RISC-V, LoongArch).""")
def chacha_no_stack(ctx: Context) -> Findings:
    img = ctx.image
    isa = for_machine(img.e_machine)
    if isa is None or isa.stack_store is None:
        return
    regions = code_regions(img)
    index = decode.Regions([(a, code) for a, code, _o in regions])

    def found():
        for entry, mode, name in chacha_routines(img, index):
            for addr, raw in stack_stores(img, isa, index, entry, mode):
                yield _where(regions, img, addr), f"{name}: instruction {raw.hex()} at 0x{addr:x} stores to the stack"
    yield from capped(found(), "stores to the stack")
