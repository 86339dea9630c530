"""s390 and s390x (EM_S390): instructions of 2, 4 or 6 bytes, big-endian.

Decoding: bcr (br %r14 and the other unconditional forms end the flow),
brc, bras, brct, brctg, brcl, brasl and the compare-and-branch-relative
forms; a zero halfword (the illegal operation after svc in the
trampolines) stops.  Hot path: the counter reads are stck, stcke and
stckf, the syscall svc, the returns br %r14 (bcr 15,%r14; the other masks
are conditional returns) and b 0(%r14).

ELF: 64-bit s390 consumers read DT_HASH in 8-byte words.

Frames (audit rule K007): the instructions that allocate a stack frame and
store, clear or feed its back chain, the word at 0(%r15) that the kernel's
user stack walker follows.
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


# Every s390x frame starts with the ABI's 160-byte register save area, its
# first word the back chain (the caller's %r15).  Linux's vDSO entry frame
# adds the caller's return address after it and clears its back chain: the
# kernel's user stack walker takes a frame whose back chain is 0 and whose
# code lies in the vDSO for that frame (struct stack_frame_vdso_wrapper).
STACK_FRAME_OVERHEAD = 160
VDSO_ENTRY_FRAME = STACK_FRAME_OVERHEAD + 8


def frame_allocation(raw: bytes) -> int | None:
    """The bytes `aghi %r15,-N`, `agfi %r15,-N` or `lay %r15,-N(%r15)`
    allocates, or None for any other instruction."""
    if len(raw) == 4 and raw[:2] == b"\xa7\xfb":                      # aghi %r15,I16
        size = -sext(int.from_bytes(raw[2:4], "big"), 16)
    elif len(raw) == 6 and raw[:2] == b"\xc2\xf8":                    # agfi %r15,I32
        size = -sext(int.from_bytes(raw[2:6], "big"), 32)
    elif len(raw) == 6 and raw[:2] == b"\xe3\xf0" and raw[2] >> 4 == 15 and raw[5] == 0x71:   # lay %r15,D20(%r15)
        size = -sext(raw[4] << 12 | (raw[2] & 15) << 8 | raw[3], 20)
    else:
        return None
    return size if size > 0 else None


def copies_stack_pointer(raw: bytes) -> int | None:
    """The register `lgr %rX,%r15` copies the stack pointer into, or None."""
    if len(raw) == 4 and raw[:3] == b"\xb9\x04\x00" and raw[3] & 15 == 15:
        return raw[3] >> 4
    return None


def stores_back_chain(raw: bytes) -> int | None:
    """The register `stg %rX,0(%r15)` stores as the back chain, or None."""
    if len(raw) == 6 and raw[0] == 0xE3 and raw[1] & 15 == 0 and raw[2:] == b"\xf0\x00\x00\x24":
        return raw[1] >> 4
    return None


def clears_back_chain(raw: bytes) -> bool:
    """Whether the instruction is `xc 0(8,%r15),0(%r15)` or `mvghi 0(%r15),0`."""
    return bytes(raw) in (b"\xd7\x07\xf0\x00\xf0\x00", b"\xe5\x48\xf0\x00\x00\x00")


def saves_return_address(raw: bytes, offset: int) -> bool:
    """Whether the instruction is `stg %r14,offset(%r15)` (0 <= offset < 4096)."""
    return (len(raw) == 6 and raw[:2] == b"\xe3\xe0" and raw[4:] == b"\x00\x24"
            and (raw[2] << 8 | raw[3]) == 0xF000 | offset)


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
