"""s390 and s390x (EM_S390): instructions of 2, 4 or 6 bytes, big-endian.

Decoding: bcr (br %r14 and the other unconditional forms end the flow),
brc, bras, brct, brctg, brcl, brasl and the compare-and-branch-relative
forms; a zero halfword (the illegal operation after svc in the
trampolines) stops.  Hot path: the counter reads are stck, stcke and
stckf, the syscall svc, the returns br %r14 (bcr 15,%r14; the other masks
are conditional returns) and b 0(%r14).

ELF: 64-bit s390 consumers read DT_HASH in 8-byte words.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, Classify, \
    Code, Decode, Image, Insn, Isa, sext

EM_S390 = 22


def s390_insn(code: Code, i: int, addr: int) -> Insn | None:
    b0 = code[i]
    length = (2, 4, 4, 6)[b0 >> 6]
    raw = code[i:i + length]
    if len(raw) < length:
        return None
    if b0 == 0x00:
        return Insn(2, STOP)                          # illegal operation (after svc in the trampolines)
    if b0 == 0x07:                                    # bcr m,r
        mask, reg = raw[1] >> 4, raw[1] & 15
        return Insn(2, STOP if mask == 15 and reg else SEQ)
    if b0 == 0xA7 and raw[1] & 15 in (4, 5, 6, 7):    # brc, bras, brct, brctg
        op2, mask = raw[1] & 15, raw[1] >> 4
        target = addr + 2 * sext(int.from_bytes(raw[2:4], "big"), 16)
        if op2 == 4:
            return Insn(4, SEQ) if mask == 0 else Insn(4, JUMP if mask == 15 else CJUMP, target)
        return Insn(4, CALL if op2 == 5 else CJUMP, target)
    if b0 == 0xC0 and raw[1] & 15 in (4, 5):          # brcl, brasl
        mask = raw[1] >> 4
        target = addr + 2 * sext(int.from_bytes(raw[2:6], "big"), 32)
        if raw[1] & 15 == 5:
            return Insn(6, CALL, target)
        return Insn(6, SEQ) if mask == 0 else Insn(6, JUMP if mask == 15 else CJUMP, target)
    if b0 == 0xEC and raw[5] in (0x64, 0x65, 0x76, 0x77, 0x7C, 0x7D, 0x7E, 0x7F):   # compare and branch relative
        return Insn(6, CJUMP, addr + 2 * sext(int.from_bytes(raw[2:4], "big"), 16))
    return Insn(length, SEQ)


def s390_class(raw: bytes) -> str:
    """The hot-path class of one instruction."""
    if raw[:2] in (b"\xb2\x05", b"\xb2\x78", b"\xb2\x7c"):     # stck, stcke, stckf
        return COUNTER
    if raw[0] == 0x0A:                                      # svc i
        return SYSCALL
    if raw[0] == 0x07 and raw[1] & 15 == 14 and raw[1] >> 4:    # bcr m,%r14: br %r14, or a conditional return
        return RETURN if raw[1] >> 4 == 15 else CRETURN
    if bytes(raw) == b"\x47\xf0\xe0\x00":                  # b 0(%r14)
        return RETURN
    return OTHER


def _decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
    return s390_insn(code, i, addr) if i < len(code) else None


def _decoder(img: Image) -> Decode:
    return _decode


def _classifier(img: Image) -> Classify:
    return lambda raw, mode=None: s390_class(raw)


def hash_word(elf_class: int) -> int:
    """.hash word size consumers use: 8 on s390x (64-bit s390), 4 on 31-bit s390."""
    return 8 if elf_class == 64 else 4


ISA = Isa("s390", {EM_S390: "EM_S390"}, _decoder, _classifier, hash_word=hash_word)
