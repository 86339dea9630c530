"""How many instructions an export's common case runs, counted in the image.

The hot path of an export is the shortest flow, in instructions executed,
from its entry to its return that reads the counter exactly once (a
counter clock: clock_gettime of MONOTONIC, gettimeofday) or never (a
coarse clock, time, clock_getres, getcpu) and makes no syscall.  Loops
count zero times round (one pass of a seqcount loop), calls are followed
into the callee and back (ppc64's asm entries, i386's get-pc thunk), a
call to the next instruction is only a way to read the PC (on MIPS, one
over a few words of data to a load from them through $ra too: the entries
of vdsogen's images and Linux's).  It is a static count, the same rule for
every image, so a generated image can be put next to a distribution
kernel's of the same ABI where no kernel of that ABI runs.

Instructions are decoded by vdsogen.elf.decode, which knows every branch,
and classified by the image's ISA module (vdsogen/isa/NAME.py), which
recognises the counter reads, the syscalls and the returns, each module's
docstring says which.  The ISA also says what the walk must know of it:
ARM images mix two instruction sets (an entry whose symbol value is odd is
Thumb, the walk follows the set through BLX, returning to the caller's; the
instructions of an IT block count whether their condition holds or not, as
the conditional A32 ones do); MIPS branches have a delay slot (its
instruction runs, once, counted with the branch, before the branch goes
anywhere, also before jr $ra returns; the branch-likely forms run it only
when taken).
"""

import heapq

from vdsogen.elf.consts import PF_X, STT_FUNC
from vdsogen.elf.decode import CALL, CJUMP, JUMP, SEQ, Regions
from vdsogen.isa import for_machine
from vdsogen.isa.base import COUNTER, CRETURN, OTHER, RETURN, SYSCALL, ByteOrder, Classify, Image

__all__ = ["hot_path", "export_hot_path", "entry_address", "classifier", "code_regions", "cold_ranges",
           "OTHER", "COUNTER", "SYSCALL", "RETURN", "CRETURN"]

MAX_STATES = 200_000          # a vDSO function is a few hundred instructions
MAX_DEPTH = 4                 # nested calls followed


def classifier(img: Image) -> Classify | None:
    """classify(raw bytes of one instruction, mode=None) -> OTHER, COUNTER,
    SYSCALL, RETURN or CRETURN; None if unsupported.  mode is the decoder's:
    on ARM, "thumb" for a Thumb instruction (else an A32 one)."""
    isa = for_machine(img.e_machine)
    return None if isa is None else isa.classifier(img)


def code_regions(img):
    """[(vaddr, bytes)] of the executable PT_LOADs."""
    return [(s.vaddr, img.data[s.offset:s.offset + s.filesz]) for s in img.loads if s.flags & PF_X]


def entry_address(img, name):
    """The address of the defined function `name` in the dynamic symbol table, or None."""
    for s in img.dynsym:
        if s.name == name and s.defined and s.type == STT_FUNC:
            return s.value
    return None


def cold_ranges(img):
    """[(start, end)] of the functions the symbol table calls cold: vdsogen's
    `*_cold` functions (gcc may add `.constprop.0` and the like) and gcc's
    `*.cold` parts.  A hot path never runs them;
    without this the walk could pair the entry's early exit into the cold
    code with a branch inside it that the same condition rules out."""
    return [(s.value, s.value + s.size) for s in img.symtab
            if s.defined and s.type == STT_FUNC and s.size and ("_cold" in s.name or ".cold" in s.name)]


def _reads_after(kind, nread, reads):
    """The counter reads after an instruction of `kind`, or None where the
    path ends there (a syscall, or a read more than `reads`)."""
    if kind == SYSCALL:
        return None
    if kind == COUNTER:
        nread += 1
    return None if nread > reads else nread


def hot_path(img, entry, reads, avoid=()):
    """The fewest instructions from `entry` to its return that read the counter
    exactly `reads` times (0 or 1), make no syscall and stay out of the
    `avoid` ranges; None when no such path exists (or the machine is not one
    this module knows).  On ARM an odd entry is a Thumb one."""
    isa = for_machine(img.e_machine)
    if isa is None:
        return None
    decode, classify = isa.decoder(img), isa.classifier(img)
    regions = Regions(code_regions(img))
    entry, entry_mode = isa.entry(entry)
    mode = entry_mode or ""
    delay_slots = isa.delay_slots
    order: ByteOrder = "big" if img.code_endian == "big" else "little"

    def step(addr, mode):
        """(Insn, class, raw) of the instruction at addr, or None."""
        region = regions.find(addr)
        if region is None or any(lo <= addr < hi for lo, hi in avoid):
            return None
        base, code = region
        insn = decode(code, addr - base, addr, mode or None)
        if insn is None or insn.length <= 0:
            return None
        raw = bytes(code[addr - base:addr - base + insn.length])
        return insn, classify(raw, mode or None), raw

    def back(cost, nread, stack):
        """The state after a return to the innermost caller on `stack`."""
        (addr, mode), rest = stack[-1], stack[:-1]
        return cost, addr, mode, nread, rest

    def word_at(addr):
        region = regions.find(addr)
        if region is None or addr + 4 > region[0] + len(region[1]):
            return None
        return int.from_bytes(region[1][addr - region[0]:addr - region[0] + 4], order)

    start = (0, entry, mode, 0, ())
    queue, done = [start], set()
    while queue and len(done) < MAX_STATES:
        cost, addr, mode, nread, stack = heapq.heappop(queue)
        state = (addr, mode, nread, stack)
        if state in done:
            continue
        done.add(state)
        got = step(addr, mode)
        if got is None:
            continue
        insn, kind, raw = got
        cost += 1
        nread = _reads_after(kind, nread, reads)
        if nread is None:
            continue
        nxt = addr + insn.length
        succ = []                   # (cost, address, mode, reads, stack)
        if delay_slots and (kind in (RETURN, CRETURN) or insn.kind in (CALL, JUMP, CJUMP)):
            # The delay slot runs before the branch takes effect: counted here, once.
            likely = insn.kind == CJUMP and isa.branch_likely(int.from_bytes(raw[:4], order))
            if likely and (nxt + 4, mode, nread, stack) not in done:
                heapq.heappush(queue, (cost, nxt + 4, mode, nread, stack))   # not taken: the slot is annulled
            slot = step(nxt, mode)
            if slot is None:
                continue
            cost += 1
            nread = _reads_after(slot[1], nread, reads)
            if nread is None:
                continue
            after = nxt + 4
            if kind in (RETURN, CRETURN):
                if not stack:
                    if nread == reads:
                        return cost
                else:
                    succ.append(back(cost, nread, stack))
            elif insn.kind == CALL and insn.target is not None:
                if isa.call_reads_pc(insn.target, after, word_at):
                    succ.append((cost, insn.target, mode, nread, stack))     # reads the PC
                elif len(stack) < MAX_DEPTH:
                    succ.append((cost, insn.target, mode, nread, stack + ((after, mode),)))
            elif insn.target is not None:
                succ.append((cost, insn.target, mode, nread, stack))
                if insn.kind == CJUMP and not likely:
                    succ.append((cost, after, mode, nread, stack))
        elif kind in (RETURN, CRETURN):
            if not stack:
                if nread == reads:
                    return cost
            else:
                succ.append(back(cost, nread, stack))
            if kind == CRETURN:
                succ.append((cost, nxt, mode, nread, stack))
        elif insn.kind == CALL and insn.target is not None:
            to = insn.mode or mode
            if isa.call_reads_pc(insn.target, nxt, word_at):
                succ.append((cost, nxt, to, nread, stack))          # reads the PC
            elif len(stack) < MAX_DEPTH:
                succ.append((cost, insn.target, to, nread, stack + ((nxt, mode),)))
        elif insn.kind == JUMP and insn.target is not None:
            succ.append((cost, insn.target, insn.mode or mode, nread, stack))
        elif insn.kind == CJUMP and insn.target is not None:
            # Past a Thumb IT block its instructions still ran, as no-ops (as an A32 one whose condition fails).
            skipped = isa.cjump_skips(raw, mode or None, order)
            succ += [(cost + skipped, insn.target, insn.mode or mode, nread, stack), (cost, nxt, mode, nread, stack)]
        elif insn.kind == SEQ:
            succ.append((cost, nxt, mode, nread, stack))
        # STOP that is no return (an indirect jump, a trap): the flow is lost.
        for item in succ:
            if item[1:] not in done:
                heapq.heappush(queue, item)
    return None


def export_hot_path(img, name, reads, avoid=()):
    """hot_path() of the exported function `name`, or None if the image has no such function."""
    entry = entry_address(img, name)
    return None if entry is None else hot_path(img, entry, reads, avoid)
