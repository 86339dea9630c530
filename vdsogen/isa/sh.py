"""SuperH (EM_SH): SH-4 and its kin, 16-bit instructions, both byte orders.

Decoding: bra and bsr (a 12-bit displacement), bt, bf and their delayed
forms bt/s and bf/s (8 bits), each counted in halfwords from the
instruction's address plus 4; jmp @Rm, braf Rm, rts and rte end the flow,
jsr @Rm and bsrf Rm call through a register (the flow goes on after
them).  A zero halfword is padding, as the linker fills the text.  Hot
path: SuperH has no counter a user can read; the syscall is trapa (Linux
takes #0x10 and up), the return rts.  Branches but bt and bf have a delay
slot: its instruction runs before the branch goes anywhere.  SuperH code
is in the ELF's byte order.  Linux's SH vDSO has no time data, so audit
rules K008 and K009 have nothing to read.
"""

from vdsogen.isa.base import CALL, CJUMP, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Classify, Code, \
    Decode, Image, Insn, Isa, sext

EM_SH = 42


def sh_insn(half: int, addr: int) -> Insn:
    """One instruction (a halfword) at addr."""
    top = half >> 12
    if half == 0:
        return Insn(2, STOP)                              # padding
    if top in (0xA, 0xB):                                 # bra, bsr: pc + 4 + disp12 * 2
        return Insn(2, JUMP if top == 0xA else CALL, addr + 4 + 2 * sext(half, 12))
    if half >> 8 in (0x89, 0x8B, 0x8D, 0x8F):            # bt, bf, bt/s, bf/s: pc + 4 + disp8 * 2
        return Insn(2, CJUMP, addr + 4 + 2 * sext(half, 8))
    low = half & 0xF0FF
    if half in (0x000B, 0x002B) or low in (0x402B, 0x0023):  # rts, rte, jmp @Rm, braf Rm
        return Insn(2, STOP)
    return Insn(2, SEQ)                                   # jsr @Rm, bsrf Rm too: calls that come back


def sh_class(half: int) -> str:
    """The hot-path class of one instruction."""
    if half >> 8 == 0xC3:                                 # trapa #imm
        return SYSCALL
    if half == 0x000B:                                    # rts
        return RETURN
    return OTHER


def _decoder(img: Image) -> Decode:
    order = img.code_endian

    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        if i + 2 > len(code):
            return None
        return sh_insn(int.from_bytes(code[i:i + 2], order), addr)
    return decode


def _classifier(img: Image) -> Classify:
    order: ByteOrder = img.code_endian
    return lambda raw, mode=None: sh_class(int.from_bytes(raw[:2], order))


ISA = Isa("sh", {EM_SH: "EM_SH"}, _decoder, _classifier, delay_slots=True)
