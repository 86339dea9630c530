"""SPARC (EM_SPARCV9, EM_SPARC32PLUS): SPARC V9, 64-bit, and V8+ (the 32-bit
ABI on a V9 CPU, as sparc64 kernels' compat vDSO is built), big-endian words.

Decoding: call (disp30), the branches on integer and floating-point
condition codes (Bicc, BPcc, FBfcc, FBPfcc: `a` always jumps, `n` never)
and on a register (BPr); jmpl into %g0 and return end the flow (ret, retl
and return are the returns), jmpl into %o7 is an indirect call that comes
back.  Branches have a delay slot: its instruction runs before the branch
takes effect, and a conditional branch with the annul bit runs it only when
taken (as MIPS's branch-likely).  Hot path: the counter reads are rd %tick
and rd %stick (%asr24), the syscall a trap (ta), the returns ret, retl and
return.  Audit rule K009 does not apply: Linux runs SPARC V9 in TSO, where
loads are not reordered with loads, and its smp_rmb() is a compiler barrier.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Classify, \
    Decode, Image, Insn, Isa, fixed_width, sext, word_classifier

EM_SPARCV9 = 43
EM_SPARC32PLUS = 18
O7, I7, SP, FP = 15, 31, 14, 30
ASR_TICK, ASR_STICK = 4, 24
JMPL, RETURN_OP3, TCC, RDASR = 0x38, 0x39, 0x3A, 0x28
# op3 of the loads (op 3): integer, alternate space, floating point; not the stores, swaps or casa.
_LOADS = frozenset({0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B,
                    0x10, 0x11, 0x12, 0x13, 0x18, 0x19, 0x1A, 0x1B,
                    0x20, 0x22, 0x23, 0x30, 0x32, 0x33})


def _branch(word: int, addr: int, cond: int, disp: int) -> Insn:
    target = addr + disp * 4
    if cond == 8:                                       # ba, fba: always
        return Insn(4, JUMP, target)
    if cond == 0:                                       # bn, fbn: never (a prefetch of the target)
        return Insn(4, SEQ)
    return Insn(4, CJUMP, target)


def sparc_insn(word: int, addr: int) -> Insn:
    op = word >> 30
    if op == 1:                                         # call disp30
        return Insn(4, CALL, (addr + sext(word, 30) * 4) & 0xFFFFFFFFFFFFFFFF)
    if op == 0:
        op2, cond = (word >> 22) & 7, (word >> 25) & 15
        if op2 in (1, 5):                               # BPcc, FBPfcc: disp19
            return _branch(word, addr, cond, sext(word, 19))
        if op2 in (2, 6):                               # Bicc, FBfcc: disp22
            return _branch(word, addr, cond, sext(word, 22))
        if op2 == 3 and (word >> 28) & 1 == 0:          # BPr: d16hi:d16lo
            return Insn(4, CJUMP, addr + sext(((word >> 20) & 3) << 14 | word & 0x3FFF, 16) * 4)
        if op2 == 0:                                    # illtrap
            return Insn(4, STOP)
        return Insn(4, SEQ)                             # sethi, nop
    if op == 2:
        op3, rd = (word >> 19) & 0x3F, (word >> 25) & 31
        if op3 == JMPL and rd == 0 or op3 == RETURN_OP3:
            return Insn(4, STOP)                        # ret, retl, return; any other jump through a register
    return Insn(4, SEQ)


def _returns(word: int) -> bool:
    """ret (jmpl %i7+8, %g0), retl (jmpl %o7+8, %g0), return %i7+8."""
    op3, rd, rs1 = (word >> 19) & 0x3F, (word >> 25) & 31, (word >> 14) & 31
    imm8 = word & 0x3FFF == 0x2008                      # i = 1, simm13 = 8
    if word >> 30 != 2 or not imm8:
        return False
    return op3 == JMPL and rd == 0 and rs1 in (O7, I7) or op3 == RETURN_OP3 and rs1 == I7


def sparc_class(word: int) -> str:
    """The hot-path class of one instruction word."""
    op, op3, rs1 = word >> 30, (word >> 19) & 0x3F, (word >> 14) & 31
    if op == 2 and op3 == RDASR and rs1 in (ASR_TICK, ASR_STICK) and (word >> 25) & 31:
        return COUNTER                                  # rd %tick, rd %stick (%asr24)
    if op == 2 and op3 == TCC:                          # ta: Linux's syscalls are software traps
        return SYSCALL
    if _returns(word):
        return RETURN
    return OTHER


def branch_likely(word: int) -> bool:
    """A conditional branch with the annul bit: its delay slot runs only when it is taken."""
    op2, cond = (word >> 22) & 7, (word >> 25) & 15
    return word >> 30 == 0 and op2 in (1, 2, 3, 5, 6) and word >> 29 & 1 == 1 and (op2 == 3 or cond not in (0, 8))


def _decoder(img: Image) -> Decode:
    return fixed_width(sparc_insn, img.code_endian)


def _classifier(img: Image) -> Classify:
    return word_classifier(sparc_class, img.code_endian)


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """The loads (ld*, lda*, ldf*), base neither %sp nor %fp."""
    word = int.from_bytes(raw[:4], "big")
    return word >> 30 == 3 and (word >> 19) & 0x3F in _LOADS and (word >> 14) & 31 not in (SP, FP)


ISA = Isa("sparc", {EM_SPARCV9: "EM_SPARCV9", EM_SPARC32PLUS: "EM_SPARC32PLUS"}, _decoder, _classifier,
          delay_slots=True, branch_likely=branch_likely, data_load=data_load)
