"""powerpc: ppc32 (EM_PPC), ppc64 and ppc64le (EM_PPC64).

Decoding: b, bl and the absolute forms, bc (bcl a call), the unconditional
bclr and bcctr end the flow (the conditional ones go on); a Power ISA 3.1
prefixed instruction is 8 bytes; a zero word (padding) stops.  Hot path:
the counter read is mftb (mfspr 268, and the old mftb form), the syscalls
sc and scv, the returns blr and the conditional bclr forms.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, \
    Classify, Code, Decode, Image, Insn, Isa, sext, word_classifier

EM_PPC, EM_PPC64 = 20, 21
DT_PPC_GOT = 0x70000000         # ppc32: where the GOT is; kernel images keep a .got in the text
DT_PPC64_OPT = 0x70000003


def ppc_insn(word: int, addr: int) -> Insn:
    op = word >> 26
    if op == 1:                                       # Power ISA 3.1 prefix: 8 bytes (pld, paddi, ...), none a branch
        return Insn(8, SEQ)
    if op == 18:                                      # b, bl; ba, bla (absolute: position-dependent)
        off = sext(word & 0x03FFFFFC, 26)
        target = off if word & 2 else addr + off
        return Insn(4, CALL if word & 1 else JUMP, target)
    if op == 16:                                      # bc
        bo = (word >> 21) & 31
        off = sext(word & 0xFFFC, 16)
        target = off if word & 2 else addr + off
        kind = CALL if word & 1 else (JUMP if bo & 0x14 == 0x14 else CJUMP)
        return Insn(4, kind, target)
    if op == 19 and (word >> 1) & 0x3FF in (16, 528):   # bclr, bcctr
        bo = (word >> 21) & 31
        if word & 1 or bo & 0x14 != 0x14:
            return Insn(4, SEQ)
        return Insn(4, STOP)
    if word == 0:
        return Insn(4, STOP)
    return Insn(4, SEQ)


def ppc_class(word: int) -> str:
    """The hot-path class of one instruction word (the first of a prefixed one)."""
    if word & 0xFC1FFFFE in (0x7C0C42A6, 0x7C0C42E6):       # mfspr rt, 268 (mftb); the old mftb form
        return COUNTER
    if word == 0x44000002 or word & 0xFFFFF01F == 0x44000001:   # sc, scv
        return SYSCALL
    if word >> 26 == 19 and (word >> 1) & 0x3FF == 16 and not word & 1:   # bclr, no link
        bo = (word >> 21) & 31
        return RETURN if bo & 0x14 == 0x14 else CRETURN
    return OTHER


def _decoder(img: Image) -> Decode:
    order = img.code_endian

    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        if i + 4 > len(code):
            return None
        w = int.from_bytes(code[i:i + 4], order)
        if w >> 26 == 1 and i + 8 > len(code):        # a prefixed instruction cut short
            return None
        return ppc_insn(w, addr)
    return decode


def _classifier(img: Image) -> Classify:
    return word_classifier(ppc_class, img.code_endian)


_PPC_X_LOADS = {20, 21, 23, 53, 55, 84, 87, 119, 279, 311, 341, 343, 373, 375, 532, 534, 790}


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """The D-form loads (lwz..lhau, lmw, lfs..lfdu), ld/ldu/lwa, lq, and the X-form ones; base not r1."""
    word = int.from_bytes(raw[:4], order)
    op = word >> 26
    if (word >> 16) & 31 == 1:
        return False
    if op in (32, 33, 34, 35, 40, 41, 42, 43, 46, 48, 49, 50, 51, 56, 58):
        return True
    return op == 31 and (word >> 1) & 0x3FF in _PPC_X_LOADS


ISA = Isa("powerpc", {EM_PPC: "EM_PPC", EM_PPC64: "EM_PPC64"}, _decoder, _classifier,
          dynamic_tags={EM_PPC: {DT_PPC_GOT: "PPC_GOT"}, EM_PPC64: {DT_PPC64_OPT: "PPC64_OPT"}},
          data_load=data_load)
