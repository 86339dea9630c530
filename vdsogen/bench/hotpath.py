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

Instructions are decoded by vdsogen.elf.decode, which knows every branch;
this module adds what it must recognise itself:
- the counter reads: x86 rdtsc and rdtscp; arm64 mrs of cntvct_el0 or
  cntvctss_el0; powerpc mftb; ARM and Thumb-2 mrrc p15 of CNTVCT or CNTPCT
  (opc1 1 or 0, c14); MIPS rdhwr of hardware register 2 (CP0 Count: the
  GIC counter is a plain load and is not recognised, so a spec that reads it
  has no counter-clock counts); RISC-V csrr of time or timeh (rdtime:
  csrrs/csrrc rd, 0xc01 or 0xc81, x0 and the immediate forms with 0);
  s390 stck, stcke and stckf; LoongArch rdtime.d, rdtimel.w and rdtimeh.w
  (not into $zero: that one wants only the counter ID, getcpu's CPU);
- the syscalls: x86 syscall, sysenter and int $0x80; arm64 svc; powerpc sc
  and scv; ARM and Thumb svc (swi); MIPS syscall; RISC-V ecall; s390 svc;
  LoongArch syscall;
- the returns: x86 ret; arm64 ret, retaa and retab; powerpc blr and the
  conditional bclr forms; ARM bx lr, mov pc, lr, pop (ldmia sp!) of a list
  with pc and ldr pc, [sp], #4, conditional too; Thumb bx lr, mov pc, lr,
  pop {..., pc}, pop.w {..., pc} and ldr.w pc, [sp], #4; MIPS jr $ra (and
  jr.hb, and jalr $zero, $ra); RISC-V ret (jalr x0, 0(ra)) and c.jr ra,
  and the same through t0, the alternate link register (after sspopchk t0);
  s390 br %r14 (bcr 15,%r14; the other masks are conditional returns) and
  b 0(%r14); LoongArch jirl $zero, $ra, 0.

ARM images mix two instruction sets: an entry whose symbol value is odd is
Thumb, and the walk follows the set through BLX (the decoder's Insn.mode),
returning to the caller's; the instructions of an IT block count whether
their condition holds or not, as the conditional A32 ones do.  MIPS
branches have a delay slot: its instruction runs (once, counted with the
branch) before the branch goes anywhere, also before jr $ra returns, and
the branch-likely forms run it only when taken.
"""

import heapq

from vdsogen.elf.consts import (EM_386, EM_AARCH64, EM_ARM, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64, EM_RISCV,
                                EM_S390, EM_X86_64, PF_X, STT_FUNC)
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


def _arm_class(word):
    """An A32 instruction word."""
    cond = word >> 28
    if cond == 15:                                          # the unconditional space: mrrc2, blx imm, ...
        return OTHER
    if word & 0x0FF00FFF in (0x0C500F1E, 0x0C500F0E):       # mrrc p15, 1, rt, rt2, c14 (CNTVCT); opc1 0: CNTPCT
        return COUNTER
    if word & 0x0F000000 == 0x0F000000:                     # svc (swi) #imm24
        return SYSCALL
    if (word & 0x0FFFFFFF in (0x012FFF1E, 0x01A0F00E, 0x049DF004)   # bx lr; mov pc, lr; ldr pc, [sp], #4
            or word & 0x0FFF8000 == 0x08BD8000):            # pop (ldmia sp!) {..., pc}
        return RETURN if cond == 14 else CRETURN
    return OTHER


def _thumb_class(raw, order):
    """A Thumb instruction: one halfword, or two (the first the high one)."""
    h1 = int.from_bytes(raw[:2], order)
    if len(raw) < 4:
        if h1 >> 8 == 0xDF:                                 # svc #imm8
            return SYSCALL
        if h1 in (0x4770, 0x46F7) or h1 >> 8 == 0xBD:       # bx lr; mov pc, lr; pop {..., pc}
            return RETURN
        return OTHER
    h2 = int.from_bytes(raw[2:4], order)
    if h1 & 0xFFF0 == 0xEC50 and h2 & 0x0FFF in (0x0F1E, 0x0F0E):   # mrrc p15, 1 (or 0), rt, rt2, c14
        return COUNTER
    if (h1 == 0xE8BD and h2 & 0x8000) or (h1, h2) == (0xF85D, 0xFB04):   # pop.w {..., pc}; ldr.w pc, [sp], #4
        return RETURN
    return OTHER


def _mips_class(word):
    if word & 0xFFE0FFFF == 0x7C00103B:                     # rdhwr rt, $2 (CP0 Count); sel 0
        return COUNTER
    if word & 0xFC00003F == 0x0000000C:                     # syscall code
        return SYSCALL
    if word & 0xFFFFF83F == 0x03E00008 or word & 0xFFFFF83F == 0x03E00009:   # jr $ra (.hb); jalr $zero, $ra
        return RETURN
    return OTHER


def _riscv_class(raw):
    if len(raw) == 2:                                       # c.jr ra; c.jr t0 (the alternate link register,
        return RETURN if int.from_bytes(raw, "little") in (0x8082, 0x8282) else OTHER   # shadow-stack code)
    word = int.from_bytes(raw[:4], "little")
    if word == 0x00000073:                                  # ecall
        return SYSCALL
    if word in (0x00008067, 0x00028067):                    # ret: jalr x0, 0(ra); jalr x0, 0(t0)
        return RETURN
    if word & 0x7F == 0x73 and word >> 20 in (0xC01, 0xC81):    # a csr instruction on time or timeh
        funct3, src = (word >> 12) & 7, (word >> 15) & 31
        if funct3 in (2, 3, 6, 7) and src == 0:             # csrrs/csrrc rd, time, x0 and the uimm 0 forms: reads
            return COUNTER
    return OTHER


def _s390_class(raw):
    if raw[:2] in (b"\xb2\x05", b"\xb2\x78", b"\xb2\x7c"):     # stck, stcke, stckf
        return COUNTER
    if raw[0] == 0x0A:                                      # svc i
        return SYSCALL
    if raw[0] == 0x07 and raw[1] & 15 == 14 and raw[1] >> 4:    # bcr m,%r14: br %r14, or a conditional return
        return RETURN if raw[1] >> 4 == 15 else CRETURN
    if bytes(raw) == b"\x47\xf0\xe0\x00":                  # b 0(%r14)
        return RETURN
    return OTHER


def _loongarch_class(word):
    if (word & 0xFFFFF800 == 0x00006000 or word & 0xFFFFFC00 == 0x00006800) and word & 31:
        return COUNTER          # rdtimel.w, rdtimeh.w, rdtime.d; into $zero only the counter ID is wanted (getcpu)
    if word >> 15 == 0x56:                                  # syscall code
        return SYSCALL
    if word == 0x4C000020:                                  # jirl $zero, $ra, 0 (jr $ra)
        return RETURN
    return OTHER


def classifier(img):
    """classify(raw bytes of one instruction, mode=None) -> OTHER, COUNTER,
    SYSCALL, RETURN or CRETURN; None if unsupported.  mode is the decoder's:
    on ARM, "thumb" for a Thumb instruction (else an A32 one)."""
    m = img.e_machine
    order = "big" if img.code_endian == "big" else "little"
    if m in (EM_X86_64, EM_386):
        long_mode = m == EM_X86_64           # x32 images are ELF32 with 64-bit code
        return lambda raw, mode=None: _x86_class(raw, long_mode)
    if m == EM_AARCH64:
        return lambda raw, mode=None: _arm64_class(int.from_bytes(raw[:4], order))
    if m in (EM_PPC, EM_PPC64):
        return lambda raw, mode=None: _ppc_class(int.from_bytes(raw[:4], order))
    if m == EM_ARM:
        return lambda raw, mode=None: (_thumb_class(raw, order) if mode == "thumb"
                                       else _arm_class(int.from_bytes(raw[:4], order)))
    if m == EM_MIPS:
        return lambda raw, mode=None: _mips_class(int.from_bytes(raw[:4], order))
    if m == EM_RISCV:
        return lambda raw, mode=None: _riscv_class(raw)
    if m == EM_S390:
        return lambda raw, mode=None: _s390_class(raw)
    if m == EM_LOONGARCH:
        return lambda raw, mode=None: _loongarch_class(int.from_bytes(raw[:4], order))
    return None


def _mips_likely(word):
    """A MIPS branch-likely: its delay slot runs only when the branch is taken."""
    op, rt = word >> 26, (word >> 16) & 31
    return op in (20, 21, 22, 23) or (op == 1 and rt in (2, 3))           # beql ... bgtzl; bltzl, bgezl


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


def _it_size(raw, order):
    """How many instructions a Thumb IT makes conditional (0 for any other instruction)."""
    h1 = int.from_bytes(raw[:2], order)
    if len(raw) != 2 or h1 >> 8 != 0xBF or not h1 & 0xF:
        return 0
    return 5 - (h1 & -h1 & 0xF).bit_length()


MIPS_PC_READ = 16      # how far past its return address a MIPS call over data may land


def _mips_loads_from_ra(word):
    """Whether a MIPS word is lw, lwu or ld based on $ra: at the target of a call it
    reads the word after the delay slot, data (vdsogen's entries): the call reads the PC."""
    return word is not None and word >> 26 in (0x23, 0x27, 0x37) and (word >> 21) & 31 == 31


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
    decode, classify = decoder_for(img), classifier(img)
    if decode is None or classify is None:
        return None
    regions = Regions(code_regions(img))
    mode = ""
    if img.e_machine == EM_ARM:
        mode = "thumb" if entry & 1 else "arm"
        entry &= ~1
    delay_slots = img.e_machine == EM_MIPS
    order = "big" if img.code_endian == "big" else "little"

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
            likely = insn.kind == CJUMP and _mips_likely(int.from_bytes(raw[:4], order))
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
                if insn.target == after or (after < insn.target <= after + MIPS_PC_READ
                                            and _mips_loads_from_ra(word_at(insn.target))):
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
            if insn.target == nxt:
                succ.append((cost, nxt, to, nread, stack))          # reads the PC
            elif len(stack) < MAX_DEPTH:
                succ.append((cost, insn.target, to, nread, stack + ((nxt, mode),)))
        elif insn.kind == JUMP and insn.target is not None:
            succ.append((cost, insn.target, insn.mode or mode, nread, stack))
        elif insn.kind == CJUMP and insn.target is not None:
            # Past a Thumb IT block its instructions still ran, as no-ops (as an A32 one whose condition fails).
            skipped = _it_size(raw, order) if mode == "thumb" else 0
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


__all__ = ["hot_path", "export_hot_path", "entry_address", "classifier", "code_regions", "cold_ranges"]
