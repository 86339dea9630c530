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

Data loads (audit rule K008): the instructions that read memory other than
the stack (neither based nor indexed on %r15), as the clock functions read
the data page: the loads (l, lg, ly, llgf, lt, lrl...), the compares and
arithmetic a compiler folds a load into (c, chsi, sg, n...) and the
storage-to-storage ones (mvc, clc...).  The decoder sees each as one
sequential instruction (SEQ) of 4 or 6 bytes.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, \
    Classify, Code, Decode, Image, Insn, Isa, sext

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


# K008: the instructions that read memory, as a vDSO reads its data page:
# the loads, the compares and arithmetic that take a memory operand (a
# compiler folds a load into them: `chsi 20(%r4),1` tests a clock mode),
# and the storage-to-storage copies and compares.  By format, and where in
# it the opcode is:
#   RX   op(8) r1(4) x2(4) b2(4) d2(12)                    first byte
_RX_READS = frozenset({
    0x43, 0x48, 0x49, 0x4A, 0x4B, 0x4C,     # ic lh ch ah sh mh
    0x54, 0x55, 0x56, 0x57, 0x58, 0x59,     # n cl o x l c
    0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F,     # a s m d al sl
    0x71,                                   # ms
})
#   RXY  0xE3 r1(4) x2(4) b2(4) dl2(12) dh2(8) op(8)         last byte
_RXY_READS = frozenset({
    0x02, 0x04, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0F,   # ltg lg ag sg alg slg msg dsg lrvg
    0x12, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B,   # lt lgf lgh llgf llgt agf sgf algf slgf
    0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21,                     # msgf dsgf lrv lrvh cg clg
    0x30, 0x31, 0x32, 0x34,                                 # cgf clgf ltgf cgh
    0x51, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x5B,   # msy ny cly oy xy ly cy ay sy
    0x5C, 0x5E, 0x5F,                                       # mfy aly sly
    0x73, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x7B, 0x7C,         # icy lb lgb lhy chy ahy shy mhy
    0x80, 0x81, 0x82, 0x86, 0x87, 0x88, 0x89, 0x8F,         # ng og xg mlg dlg alcg slbg lpq
    0x90, 0x91, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,         # llgc llgh llc llh ml dl alc slb
})
#   RS   op(8) r1(4) r3/m3(4) b2(4) d2(12),
#   SI   op(8) i2(8) b1(4) d1(12)                           first byte
_RS_SI_READS = frozenset({0x98, 0xBF, 0x91, 0x95})          # lm icm; tm cli
#   RSY  0xEB r1(4) r3/m3(4) b2(4) dl2(12) dh2(8) op(8),
#   SIY  0xEB i2(8) b1(4) dl1(12) dh1(8) op(8)               last byte
_EB_READS = frozenset({
    0x04, 0x51, 0x55, 0x80, 0x81, 0x98,     # lmg tmy cliy icmh icmy lmy
    0xE2, 0xF2,                             # locg loc
})
#   SIL  0xE5 op(8) b1(4) d1(12) i2(16)                      second byte
_SIL_READS = frozenset({0x54, 0x55, 0x58, 0x59, 0x5C, 0x5D})   # chhsi clhhsi cghsi clghsi chsi clfhsi
#   RIL  0xC4/0xC6 r1(4) op(4) ri2(32), relative long: no base, never the stack
_RIL_READS = {
    0xC4: frozenset({0x2, 0x4, 0x5, 0x6, 0x8, 0xC, 0xD, 0xE}),   # llhrl lghrl lhrl llghrl lgrl lgfrl lrl llgfrl
    0xC6: frozenset({0x4, 0x5, 0x6, 0x7, 0x8, 0xA, 0xC, 0xD, 0xE, 0xF}),   # cghrl chrl clghrl clhrl cgrl
}                                                                          # clgrl cgfrl crl clgfrl clrl
#   SS   op(8) l(8) b1(4) d1(12) b2(4) d2(12)              first byte: the operands it reads
_SS_READS = {0xD2: (2,), 0xD4: (1, 2), 0xD5: (1, 2), 0xD6: (1, 2), 0xD7: (1, 2)}   # mvc nc clc oc xc
SP = 15     # %r15, the stack pointer


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """An instruction of the tables above that reads an address neither
    based nor indexed on %r15 (a relative-long one never is)."""
    op = raw[0]
    if len(raw) == 6 and op in _RIL_READS:
        return raw[1] & 15 in _RIL_READS[op]
    if len(raw) == 4 and op in _RX_READS:
        return raw[2] >> 4 != SP and raw[1] & 15 != SP
    if len(raw) == 6 and op == 0xE3 and raw[5] in _RXY_READS:
        return raw[2] >> 4 != SP and raw[1] & 15 != SP
    if len(raw) == 4 and op in _RS_SI_READS:
        return raw[2] >> 4 != SP
    if len(raw) == 6 and op == 0xEB and raw[5] in _EB_READS:
        return raw[2] >> 4 != SP
    if len(raw) == 6 and op == 0xE5 and raw[1] in _SIL_READS:
        return raw[2] >> 4 != SP
    if len(raw) == 6 and op in _SS_READS:
        return any(raw[2 * n] >> 4 != SP for n in _SS_READS[op])
    return False


def _decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
    return s390_insn(code, i, addr) if i < len(code) else None


def _decoder(img: Image) -> Decode:
    return _decode


def _classifier(img: Image) -> Classify:
    return lambda raw, mode=None: s390_class(raw)


def hash_word(elf_class: int) -> int:
    """.hash word size consumers use: 8 on s390x (64-bit s390), 4 on 31-bit s390."""
    return 8 if elf_class == 64 else 4


# Stores whose (first) base register is the high nibble of byte 2: the RX, RS and SS forms by
# their opcode, the 6-byte RXY, RSY and VRX forms by their first and last bytes.
_STORES = {0x40, 0x42, 0x50, 0x60, 0x70, 0x90, 0xD2}
_STORES6 = {0xE3: {0x24, 0x50, 0x70, 0x72, 0x3E, 0x2F, 0x8E}, 0xEB: {0x24, 0x90}, 0xED: {0x66, 0x67},
            0xE7: {0x08, 0x09, 0x0A, 0x0B, 0x0E, 0x3E, 0x3F}}


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """A store based on %r15 or %r11 (the stack and frame pointers): 0 (the registers stored are not
    told apart here), else None."""
    if len(raw) < 4 or (raw[2] >> 4) not in (15, 11):
        return None
    if raw[0] in _STORES or (len(raw) == 6 and raw[5] in _STORES6.get(raw[0], ())):
        return 0
    return None


ISA = Isa("s390", {EM_S390: "EM_S390"}, _decoder, _classifier, hash_word=hash_word, data_load=data_load,
          stack_store=stack_store)
