"""How many instructions an export's common case runs, counted in the image.

The hot path of an export is the shortest flow, in instructions executed,
from its entry to its return that reads the counter exactly once (a
counter clock: clock_gettime of MONOTONIC, gettimeofday) or never (a
coarse clock, time, clock_getres, getcpu) and makes no syscall.  Loops
count zero times round (one pass of a seqcount loop), calls are followed
into the callee and back (ppc64's asm entries, i386's get-pc thunk), a
call to the next instruction is only a way to read the PC.  It is a
static count, the same rule for every image, so a generated image can be
put next to a distribution kernel's of the same ABI where no kernel of
that ABI runs.

Instructions are decoded by vdsogen.elf.decode, which knows every branch;
this module adds what it must recognise itself: the counter reads (x86
rdtsc and rdtscp, arm64 mrs of cntvct_el0 or cntvctss_el0, powerpc mftb),
the syscalls (x86 syscall, sysenter and int $0x80, arm64 svc, powerpc sc
and scv), and the returns (x86 ret, arm64 ret, retaa and retab, powerpc
blr and the conditional bclr forms).
"""

import heapq

from vdsogen.elf.consts import EM_386, EM_AARCH64, EM_PPC, EM_PPC64, EM_X86_64, PF_X, STT_FUNC
from vdsogen.elf.decode import CALL, CJUMP, JUMP, SEQ, Regions, decoder_for

# What one instruction is, for the walk.
OTHER, COUNTER, SYSCALL, RETURN, CRETURN = "other", "counter", "syscall", "return", "creturn"

MAX_STATES = 200_000          # a vDSO function is a few hundred instructions
MAX_DEPTH = 4                 # nested calls followed

X86_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}


def _x86_class(raw, long_mode):
    i = 0
    while i < len(raw) and (raw[i] in X86_PREFIXES or (long_mode and 0x40 <= raw[i] <= 0x4F)):
        i += 1
    op = bytes(raw[i:i + 3])
    if op[:2] == b"\x0f\x31" or op == b"\x0f\x01\xf9":
        return COUNTER
    if op[:2] in (b"\x0f\x05", b"\x0f\x34", b"\xcd\x80"):
        return SYSCALL
    if op[:1] in (b"\xc3", b"\xc2"):
        return RETURN
    return OTHER


def _arm64_class(word):
    if word & 0xFFFFFFE0 in (0xD53BE040, 0xD53BE0C0):       # mrs xt, cntvct_el0 / cntvctss_el0
        return COUNTER
    if word & 0xFFE0001F == 0xD4000001:                     # svc #imm
        return SYSCALL
    if word & 0xFFFFFC1F == 0xD65F0000 or word in (0xD65F0BFF, 0xD65F0FFF):   # ret, retaa, retab
        return RETURN
    return OTHER


def _ppc_class(word):
    if word & 0xFC1FFFFE in (0x7C0C42A6, 0x7C0C42E6):       # mfspr rt, 268 (mftb); the old mftb form
        return COUNTER
    if word == 0x44000002 or word & 0xFFFFF01F == 0x44000001:   # sc, scv
        return SYSCALL
    if word >> 26 == 19 and (word >> 1) & 0x3FF == 16 and not word & 1:   # bclr, no link
        bo = (word >> 21) & 31
        return RETURN if bo & 0x14 == 0x14 else CRETURN
    return OTHER


def classifier(img):
    """classify(raw bytes of one instruction) -> OTHER, COUNTER, SYSCALL, RETURN or CRETURN; None if unsupported."""
    m = img.e_machine
    order = "big" if img.code_endian == "big" else "little"
    if m in (EM_X86_64, EM_386):
        long_mode = m == EM_X86_64           # x32 images are ELF32 with 64-bit code
        return lambda raw: _x86_class(raw, long_mode)
    if m == EM_AARCH64:
        return lambda raw: _arm64_class(int.from_bytes(raw[:4], order))
    if m in (EM_PPC, EM_PPC64):
        return lambda raw: _ppc_class(int.from_bytes(raw[:4], order))
    return None


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


def hot_path(img, entry, reads, avoid=()):
    """The fewest instructions from `entry` to its return that read the counter
    exactly `reads` times (0 or 1), make no syscall and stay out of the
    `avoid` ranges; None when no such path exists (or the machine is not one
    this module knows)."""
    decode, classify = decoder_for(img), classifier(img)
    if decode is None or classify is None:
        return None
    regions = Regions(code_regions(img))
    start = (0, entry, 0, ())
    queue, done = [start], set()
    while queue and len(done) < MAX_STATES:
        cost, addr, nread, stack = heapq.heappop(queue)
        state = (addr, nread, stack)
        if state in done:
            continue
        done.add(state)
        region = regions.find(addr)
        if region is None or any(lo <= addr < hi for lo, hi in avoid):
            continue
        base, code = region
        insn = decode(code, addr - base, addr, None)
        if insn is None or insn.length <= 0:
            continue
        kind = classify(bytes(code[addr - base:addr - base + insn.length]))
        cost += 1
        if kind == SYSCALL:
            continue
        if kind == COUNTER:
            nread += 1
            if nread > reads:
                continue
        nxt = addr + insn.length
        succ = []
        if kind in (RETURN, CRETURN):
            if not stack:
                if nread == reads:
                    return cost
            else:
                succ.append((stack[-1], stack[:-1]))
            if kind == CRETURN:
                succ.append((nxt, stack))
        elif insn.kind == CALL and insn.target is not None:
            if insn.target == nxt:
                succ.append((nxt, stack))           # reads the PC
            elif len(stack) < MAX_DEPTH:
                succ.append((insn.target, stack + (nxt,)))
        elif insn.kind == JUMP and insn.target is not None:
            succ.append((insn.target, stack))
        elif insn.kind == CJUMP and insn.target is not None:
            succ += [(insn.target, stack), (nxt, stack)]
        elif insn.kind == SEQ:
            succ.append((nxt, stack))
        # STOP that is no return (an indirect jump, a trap): the flow is lost.
        for target, st in succ:
            if (target, nread, st) not in done:
                heapq.heappush(queue, (cost, target, nread, st))
    return None


def export_hot_path(img, name, reads, avoid=()):
    """hot_path() of the exported function `name`, or None if the image has no such function."""
    entry = entry_address(img, name)
    return None if entry is None else hot_path(img, entry, reads, avoid)


__all__ = ["hot_path", "export_hot_path", "entry_address", "classifier", "code_regions", "cold_ranges"]
