"""arm64 (EM_AARCH64): A64, whose instructions are little-endian words in
either byte order of data.

Decoding: B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ; RET and BR end the flow, as
UDF and BRK do.  Hot path: the counter read is mrs of cntvct_el0 or
cntvctss_el0, the syscall svc, the returns ret, retaa and retab.  The audit
rule K003 asks arm64_writes_x18 about every instruction reached; K009
orders the seqcount with dmb/dsb of a load type (Linux: dmb ishld) or a
load-acquire (ldar, ldapr) for the sequence's first load.
"""

from vdsogen.isa.base import ByteOrder, CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, Classify, \
    Decode, Image, Insn, Isa, OTHER_FORM, fixed_width, sext, word_classifier

EM_AARCH64 = 183


def arm64_insn(word: int, addr: int) -> Insn:
    if word & 0x7C000000 == 0x14000000:               # B, BL
        return Insn(4, CALL if word >> 31 else JUMP, addr + sext(word, 26) * 4)
    if word & 0xFF000010 == 0x54000000:               # B.cond
        return Insn(4, CJUMP, addr + sext(word >> 5, 19) * 4)
    if word & 0x7E000000 == 0x34000000:               # CBZ, CBNZ
        return Insn(4, CJUMP, addr + sext(word >> 5, 19) * 4)
    if word & 0x7E000000 == 0x36000000:               # TBZ, TBNZ
        return Insn(4, CJUMP, addr + sext(word >> 5, 14) * 4)
    if word & 0xFFFFFC1F in (0xD65F0000, 0xD61F0000):  # RET, BR
        return Insn(4, STOP)
    if word & 0xFFFF0000 == 0 or word & 0xFFE0001F == 0xD4200000:   # UDF, BRK
        return Insn(4, STOP)
    return Insn(4, SEQ)


def arm64_class(word: int) -> str:
    """The hot-path class of one instruction word."""
    if word & 0xFFFFFFE0 in (0xD53BE040, 0xD53BE0C0):       # mrs xt, cntvct_el0 / cntvctss_el0
        return COUNTER
    if word & 0xFFE0001F == 0xD4000001:                     # svc #imm
        return SYSCALL
    if word & 0xFFFFFC1F == 0xD65F0000 or word in (0xD65F0BFF, 0xD65F0FFF):   # ret, retaa, retab
        return RETURN
    return OTHER


def arm64_writes_x18(word: int) -> bool:
    """Whether an A64 instruction writes x18 (or w18)."""
    return arm64_writes(word, 18)


def arm64_writes(word: int, reg: int) -> bool:
    """Whether an A64 instruction writes general register `reg` (x or w)."""
    def rd(shift: int = 0) -> bool:
        return (word >> shift) & 31 == reg
    op0 = (word >> 25) & 0xF
    if op0 in (0x8, 0x9):                             # data processing, immediate
        return rd()
    if op0 in (0x5, 0xD):                             # data processing, register
        return rd()
    if word & 0xFFF00000 == 0xD5300000 or word & 0xFFF80000 == 0xD5280000:   # mrs, sysl
        return rd()
    if op0 & 0x5 == 0x4:                              # loads and stores
        vector = word >> 26 & 1
        if word & 0x3B000000 == 0x18000000:           # load literal
            return bool(not vector and (word >> 30) != 3 and rd())
        if word & 0x3F000000 == 0x08000000:           # exclusives
            if word >> 22 & 1:
                return bool(rd() or (word >> 21 & 1 and rd(10)))
            return bool(not word >> 23 & 1 and rd(16))
        if word & 0x3A000000 == 0x28000000:           # pairs
            writeback = (word >> 23) & 3 in (1, 3)
            load = word >> 22 & 1
            return bool((writeback and rd(5)) or (load and not vector and (rd() or rd(10))))
        if word & 0x38000000 == 0x38000000:           # single register
            size, opc = word >> 30, (word >> 22) & 3
            if not word >> 24 & 1 and word >> 21 & 1 and (word >> 10) & 3 == 0:
                return bool(not vector and rd())      # atomics (ldadd, swp, ...)
            writeback = not word >> 24 & 1 and not word >> 21 & 1 and (word >> 10) & 3 in (1, 3)
            load = opc != 0 and not (size == 3 and opc == 2 and not vector)
            return bool((writeback and rd(5)) or (load and not vector and rd()))
        return False
    if word & 0x5F20FC00 == 0x1E200000 and (word >> 16) & 7 in (0, 1, 4, 5, 6):   # fp -> general
        return rd()
    if word & 0xBFE0FC00 in (0x0E003C00, 0x0E002C00):                          # umov, smov
        return rd()
    return False


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The general registers an instruction writes, as a mask (arm64_writes; bl: x30)."""
    word = int.from_bytes(raw[:4], order)
    mask = 1 << 30 if word & 0xFC000000 == 0x94000000 else 0
    for reg in {word & 31, (word >> 5) & 31, (word >> 10) & 31, (word >> 16) & 31}:
        if arm64_writes(word, reg):
            mask |= 1 << reg
    return mask


def _decoder(img: Image) -> Decode:
    return fixed_width(arm64_insn, img.code_endian)


def _classifier(img: Image) -> Classify:
    return word_classifier(arm64_class, img.code_endian)


def _code_endian(e_flags: int, endian: ByteOrder) -> ByteOrder:
    return "little"                                   # A64 code is little-endian in big-endian images too


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """The load/store class with its L bit (22), base not sp; the literal loads."""
    word = int.from_bytes(raw[:4], order)
    if (word >> 25) & 5 != 4:
        return False
    if word & 0x3B000000 == 0x18000000:
        return True
    return bool(word & (1 << 22)) and (word >> 5) & 31 != 31


def acquire_load(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """ldar, ldaxr (load-acquire) and ldapr (RCpc): later loads are ordered after them."""
    word = int.from_bytes(raw[:4], order)
    return word & 0x3FFFFC00 in (0x08DFFC00, 0x085FFC00, 0x38BFC000)


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """dmb or dsb of a type that orders loads: the LD types (ishld, Linux's smp_rmb()) and the full ones."""
    word = int.from_bytes(raw[:4], order)
    return word & 0xFFFFF0DF == 0xD503309F and bool(word & 0x100)     # CRm: 01 LD, 11 full (10 ST)


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load, or a load-acquire): Rn and the offset of ldr (unsigned, scaled),
    ldur and ldp (signed offset); not the literal loads."""
    word = int.from_bytes(raw[:4], order)
    rn, rt = (word >> 5) & 31, word & 31
    if acquire_load(raw, mode, order):
        return rn, 0, rt
    if not data_load(raw, mode, order, True) or word & 0x3B000000 == 0x18000000:
        return None
    if word & 0x3B000000 == 0x39000000:               # ldr (unsigned offset), scaled by the size
        return rn, ((word >> 10) & 0xFFF) << (word >> 30), rt
    if word & 0x3B200C00 == 0x38000000:               # ldur
        return rn, sext(word >> 12, 9), rt
    if word & 0x3B800000 == 0x29000000:               # ldp (signed offset)
        return rn, sext(word >> 15, 7) << (3 if word >> 31 else 2), OTHER_FORM
    return OTHER_FORM, word & ~(0x7C1F if word & 0x3A000000 == 0x28000000 else 0x1F), OTHER_FORM


def pc_address(raw: bytes, mode: str | None, order: ByteOrder, addr: int) -> tuple[int, int] | None:
    """adr and adrp: Rd and the address."""
    word = int.from_bytes(raw[:4], order)
    if word & 0x1F000000 != 0x10000000:
        return None
    imm = sext((((word >> 5) & 0x7FFFF) << 2) | ((word >> 29) & 3), 21)
    return word & 31, (addr & ~0xFFF) + (imm << 12) if word >> 31 else addr + imm


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """A store (single register, pair, exclusive, atomic, SIMD structure) based on sp or x29: the
    general registers it stores (Rt, and Rt2 of a pair; 0 for the SIMD and FP ones), else None."""
    word = int.from_bytes(raw[:4], order)
    if (word >> 25) & 5 != 4 or (word >> 5) & 31 not in (31, 29):
        return None
    vector = word >> 26 & 1
    rt, rt2 = word & 31, (word >> 10) & 31
    if word & 0x3B000000 == 0x18000000:               # load literal
        return None
    if word & 0x3F000000 == 0x08000000:               # exclusives: stxr, stlxr, stxp, stlr
        return None if word >> 22 & 1 else 1 << rt
    if word & 0x3A000000 == 0x28000000:               # pairs
        return None if word >> 22 & 1 else 0 if vector else 1 << rt | 1 << rt2
    if word & 0x38000000 == 0x38000000:               # single register
        opc = (word >> 22) & 3
        if not word >> 24 & 1 and word >> 21 & 1 and (word >> 10) & 3 == 0:
            return 0                                  # atomics write memory
        if vector:
            return 0 if opc in (0, 2) else None
        return 1 << rt if opc == 0 else None
    if word & 0xBE000000 == 0x0C000000:               # SIMD structures: st1..st4 (L clear)
        return None if word >> 22 & 1 else 0
    return None


ISA = Isa("arm64", {EM_AARCH64: "EM_AARCH64"}, _decoder, _classifier, code_endian=_code_endian,
          data_load=data_load, read_barrier=read_barrier, load_address=load_address, acquire_load=acquire_load,
          pc_address=pc_address, written=written, stack_store=stack_store)


def store_targets(img: Image, code: bytes | bytearray | memoryview, addr: int) -> list[tuple[int, int | None]]:
    """(address, target) of every store in `code` (at `addr`) that is not to
    the stack: the target where adrp/adr and add in the same straight run of
    code give its base register, else None.  A linear sweep; the known
    registers are forgotten at every branch and call."""
    known: dict[int, int] = {}
    out: list[tuple[int, int | None]] = []
    for i in range(0, len(code) - len(code) % 4, 4):
        at = addr + i
        word = int.from_bytes(code[i:i + 4], "little")
        rd, rn = word & 31, (word >> 5) & 31
        if word & 0x1F000000 == 0x10000000:                    # adr, adrp
            imm = sext(((word >> 5) & 0x7FFFF) << 2 | ((word >> 29) & 3), 21)
            known[rd] = (at & ~0xFFF) + (imm << 12) if word >> 31 else at + imm
        elif word & 0x7F800000 == 0x11000000 and rn in known:   # add (immediate)
            known[rd] = known[rn] + (((word >> 10) & 0xFFF) << (12 if word >> 22 & 1 else 0))
        elif (word >> 25) & 5 == 4:                            # loads and stores
            _load_store(word, at, known, out)
        elif arm64_insn(word, at).kind != SEQ or word & 0xFFFFFC1F == 0xD63F0000:   # branches, blr
            known.clear()
        elif (word >> 25) & 0xF in (0x8, 0x9, 0x5, 0xD) or word & 0xFFF00000 == 0xD5300000:
            known.pop(rd, None)                                # data processing and mrs write Rd
    return out



def _load_store(word: int, at: int, known: dict[int, int], out: list[tuple[int, int | None]]) -> None:
    rt, rn, vector = word & 31, (word >> 5) & 31, word >> 26 & 1
    off: int | None = None
    written = [rt]                                             # what a load writes
    if word & 0x3B000000 == 0x18000000:                        # load literal
        known.pop(rt, None)
        return
    if word & 0x3F000000 == 0x08000000:                        # exclusives and acquire/release
        store, off = not word >> 22 & 1, 0
    elif word & 0x3A000000 == 0x28000000:                      # pairs
        store = not word >> 22 & 1
        scale = 2 + (word >> 30) if vector else 2 + (word >> 31)
        off = sext(word >> 15, 7) << scale if (word >> 23) & 3 != 1 else 0
        written.append((word >> 10) & 31)
        if (word >> 23) & 3 in (1, 3):
            written.append(rn)                                 # writeback
    else:
        size, opc = word >> 30, (word >> 22) & 3
        store = opc == 0 or bool(vector and opc == 2)
        if word & 0x3B000000 == 0x39000000:                    # unsigned offset, scaled
            off = ((word >> 10) & 0xFFF) << (size | (opc & 2) << 1 if vector else size)
        elif word & 0x3B200000 == 0x38000000:                  # 9-bit offset: unscaled, pre- or post-index
            off = sext(word >> 12, 9) if (word >> 10) & 3 != 1 else 0
            if (word >> 10) & 1:
                written.append(rn)                             # writeback
    if store and rn != 31:
        out.append((at, known[rn] + off if rn in known and off is not None else None))
    for reg in written[0 if not store else 1:]:
        known.pop(reg, None)
