"""PA-RISC (EM_PARISC): hppa, big-endian words.

Decoding: b,l (B without a link register), its 22-bit form (PA 2.0) and
b,gate; the compare-and-branch, add-and-branch, branch-on-bit and
move-and-branch families (12-bit displacements); bv and bve (through a
register) end the flow, as does be (an external branch: the syscall
gateway returns to %r31, not after it); ble links %r31 and comes back.
Branches have a delay slot, which a ",n" branch may nullify (counted as
run here).  Hot path: the counter read is mfctl %cr16 (the interval
timer), the syscall be or ble 0x100(%sr2,%r0) (the gateway page), the
return bv %r0(%rp) and bve (%rp).  No data_load or K009 facts: Linux's
PA-RISC vDSO reads no data page.

ELF: the GNU toolchain marks Linux objects ELFOSABI_GNU (audit rule H009
knows it).
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, Classify, Decode, \
    Image, Insn, Isa, fixed_width, sext, word_classifier

EM_PARISC = 15
BRANCH, BE, BLE = 0x3A, 0x38, 0x39
# Major opcodes of the conditional branches with a 12-bit displacement: cmpb/comb, cmpib/comib, addb,
# addib (true and false forms, word and doubleword), bb, movb, movib.
_CONDITIONAL = frozenset({0x20, 0x21, 0x22, 0x23, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2F, 0x30, 0x31, 0x32, 0x33, 0x3B})
GATEWAY = (0xE0008200, 0xE4008200)      # be, ble 0x100(%sr2,%r0)
RETURNS = (0xE840C000, 0xE840D000)      # bv %r0(%rp), bve (%rp)


def _w2(word: int) -> int:
    """The 11-bit w2 field reassembled: its low bit is the displacement's bit 10."""
    w2 = (word >> 2) & 0x7FF
    return (w2 & 1) << 10 | w2 >> 1


def parisc_insn(word: int, addr: int) -> Insn:
    op = word >> 26
    if op in _CONDITIONAL:                              # 12-bit: w1 at bits 2-12, w at bit 0
        disp = (word & 1) << 11 | _w2(word)
        return Insn(4, CJUMP, (addr + 8 + sext(disp, 12) * 4) & 0xFFFFFFFF)
    if op == BRANCH:
        ext3, t = (word >> 13) & 7, (word >> 21) & 31
        w1, w = (word >> 16) & 31, word & 1
        if ext3 in (0, 1):                              # b,l and b,gate: 17 bits
            target = addr + 8 + sext(w << 16 | w1 << 11 | _w2(word), 17) * 4
            return Insn(4, CALL if t else JUMP, target & 0xFFFFFFFF)
        if ext3 in (4, 5):                              # b,l (PA 2.0, %rp): 22 bits
            target = addr + 8 + sext(w << 21 | t << 16 | w1 << 11 | _w2(word), 22) * 4
            return Insn(4, CALL, target & 0xFFFFFFFF)
        if ext3 == 2:                                   # blr x, t: into a table
            return Insn(4, SEQ if t else STOP)
        return Insn(4, STOP)                            # bv, bve
    if op == BE:
        return Insn(4, STOP)
    return Insn(4, SEQ)                                 # ble comes back through %r31


def parisc_class(word: int) -> str:
    """The hot-path class of one instruction word."""
    if word & 0xFFFFFFE0 == 0x020008A0:                 # mfctl %cr16, t
        return COUNTER
    if word & ~2 in GATEWAY:                            # ,n or not
        return SYSCALL
    if word & ~2 in RETURNS:
        return RETURN
    return OTHER


def _decoder(img: Image) -> Decode:
    return fixed_width(parisc_insn, img.code_endian)


def _classifier(img: Image) -> Classify:
    return word_classifier(parisc_class, img.code_endian)


ISA = Isa("parisc", {EM_PARISC: "EM_PARISC"}, _decoder, _classifier, delay_slots=True)
