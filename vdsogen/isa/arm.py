"""32-bit ARM (EM_ARM): A32 and Thumb-2, mixed in one image.

An entry whose symbol value is odd is Thumb; the walk follows the
instruction set through BLX (Insn.mode), returning to the caller's.

Decoding: A32 b, bl and blx (to Thumb), bx and pop {..., pc} end the flow,
as udf does; Thumb b, b<cond>, cbz/cbnz, b.w, b<cond>.w, bl and blx (to
A32), bx, pop {pc}, pop.w {..., pc} and udf; an IT is a conditional jump
past the instructions it makes conditional (they may all be skipped).
Hot path: the counter read is mrrc p15 of CNTVCT or CNTPCT (opc1 1 or 0,
c14), the syscall svc (swi), the returns A32 bx lr, mov pc, lr, pop (ldmia
sp!) of a list with pc and ldr pc, [sp], #4, conditional too; Thumb bx lr,
mov pc, lr, pop {..., pc}, pop.w {..., pc} and ldr.w pc, [sp], #4.  The
instructions of an IT block count whether their condition holds or not, as
the conditional A32 ones do.

Audit rule K009: the seqcount is ordered by dmb or dsb of a type that
orders loads (ARMv6's CP15 forms too).

ELF: BE-8 images (EF_ARM_BE8) keep their code little-endian.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, \
    Classify, Code, Decode, Image, Insn, Isa, OTHER_FORM, sext

EM_ARM = 40
EF_ARM_ABI_FLOAT_SOFT = 0x00000200
EF_ARM_BE8 = 0x00800000
PT_ARM_EXIDX = 0x70000001       # lld's header for .ARM.exidx


def arm_insn(word: int, addr: int) -> Insn:
    cond = word >> 28
    if (word >> 25) & 7 == 5:
        off = sext(word & 0xFFFFFF, 24) * 4
        if cond == 15:                                # blx imm: to Thumb
            return Insn(4, CALL, addr + 8 + off + ((word >> 23) & 2), "thumb")
        kind = CALL if word & 0x01000000 else (JUMP if cond == 14 else CJUMP)
        return Insn(4, kind, addr + 8 + off)
    if word & 0x0FFFFFF0 == 0x012FFF10 and cond == 14:   # bx rm
        return Insn(4, STOP)
    if word & 0x0FFF8000 == 0x08BD8000 and cond == 14:   # pop {..., pc}
        return Insn(4, STOP)
    if word & 0xFFF000F0 == 0xE7F000F0:               # udf
        return Insn(4, STOP)
    return Insn(4, SEQ)


def thumb_insn(code: Code, i: int, addr: int, little: bool) -> Insn | None:
    order: ByteOrder = "little" if little else "big"
    h1 = int.from_bytes(code[i:i + 2], order)
    if h1 >> 11 in (0x1D, 0x1E, 0x1F):
        if len(code) < i + 4:
            return None
        h2 = int.from_bytes(code[i + 2:i + 4], order)
        if h1 >> 11 == 0x1E and h2 & 0x8000:
            s = (h1 >> 10) & 1
            j1, j2 = (h2 >> 13) & 1, (h2 >> 11) & 1
            if h2 & 0x1000 or h2 & 0x4000:            # b.w (T4), bl, blx
                i1, i2 = 1 ^ j1 ^ s, 1 ^ j2 ^ s
                off = sext((s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FF) << 1), 25)
                if h2 & 0x4000:
                    if h2 & 0x1000:
                        return Insn(4, CALL, addr + 4 + off)
                    return Insn(4, CALL, (addr + 4 + off) & ~3, "arm")
                return Insn(4, JUMP, addr + 4 + off)
            if (h1 >> 6) & 0xE == 0xE:                # cond 111x: hints, barriers, msr/mrs
                return Insn(4, SEQ)
            off = sext((s << 20) | (j2 << 19) | (j1 << 18) | ((h1 & 0x3F) << 12) | ((h2 & 0x7FF) << 1), 21)
            return Insn(4, CJUMP, addr + 4 + off)       # b<cond>.w (T3)
        if h1 == 0xE8BD and h2 & 0x8000:              # pop.w {..., pc}
            return Insn(4, STOP)
        return Insn(4, SEQ)
    if h1 >> 8 == 0xBF and h1 & 0xF:                  # it: the next 1 to 4 instructions are conditional,
        end = i + 2                                   # so the flow may go on after all of them
        for _ in range(5 - (h1 & -h1 & 0xF).bit_length()):
            end += 4 if int.from_bytes(code[end:end + 2], order) >> 11 in (0x1D, 0x1E, 0x1F) else 2
        return Insn(2, CJUMP, addr + end - i)
    if h1 >> 12 == 0xD and (h1 >> 8) & 15 < 14:      # b<cond> (T1)
        return Insn(2, CJUMP, addr + 4 + sext(h1 & 0xFF, 8) * 2)
    if h1 >> 11 == 0x1C:                              # b (T2)
        return Insn(2, JUMP, addr + 4 + sext(h1 & 0x7FF, 11) * 2)
    if h1 & 0xF500 == 0xB100:                         # cbz, cbnz
        return Insn(2, CJUMP, addr + 4 + ((((h1 >> 9) & 1) << 6) | ((h1 >> 3) & 0x1F) << 1))
    if h1 & 0xFF87 == 0x4700 or h1 & 0xFF00 == 0xBD00 or h1 >> 8 == 0xDE:   # bx, pop {pc}, udf
        return Insn(2, STOP)
    return Insn(2, SEQ)


def arm_class(word: int) -> str:
    """The hot-path class of an A32 instruction word."""
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


def thumb_class(raw: bytes, order: ByteOrder) -> str:
    """The hot-path class of a Thumb instruction: one halfword, or two (the first the high one)."""
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


def it_size(raw: bytes, order: ByteOrder) -> int:
    """How many instructions a Thumb IT makes conditional (0 for any other instruction)."""
    h1 = int.from_bytes(raw[:2], order)
    if len(raw) != 2 or h1 >> 8 != 0xBF or not h1 & 0xF:
        return 0
    return 5 - (h1 & -h1 & 0xF).bit_length()


def _decoder(img: Image) -> Decode:
    little = img.code_endian != "big"
    order: ByteOrder = "little" if little else "big"

    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        if mode == "thumb":
            return thumb_insn(code, i, addr, little) if i + 2 <= len(code) else None
        if i + 4 > len(code):
            return None
        return arm_insn(int.from_bytes(code[i:i + 4], order), addr)
    return decode


def _classifier(img: Image) -> Classify:
    order: ByteOrder = "big" if img.code_endian == "big" else "little"
    return lambda raw, mode=None: (thumb_class(raw, order) if mode == "thumb"
                                   else arm_class(int.from_bytes(raw[:4], order)))


def _code_endian(e_flags: int, endian: ByteOrder) -> ByteOrder:
    return "little" if e_flags & EF_ARM_BE8 else endian


def _entry(value: int) -> tuple[int, str | None]:
    return value & ~1, "thumb" if value & 1 else "arm"


def _it_skips(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """Past a Thumb IT block its instructions still ran, as no-ops (as an A32 one whose condition fails)."""
    return it_size(raw, order) if mode == "thumb" else 0


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """A32: ldr/ldrb (op 01x, L), ldrh/ldrsb/ldrsh/ldrd (the extra loads), ldm
    (op 100, L).  Thumb: the 16-bit ldr forms and ldm; the 32-bit loads
    (1111 100x with L) and ldm/ldrd/ldrex (1110 100x with L).  Base sp: none."""
    if mode == "thumb":
        hw = int.from_bytes(raw[:2], order)
        if len(raw) == 4:
            return hw & 0xFE00 in (0xF800, 0xE800) and bool(hw & 0x10) and hw & 0xF != 13
        # ldr literal, ldr/ldrb/ldrh imm, ldm; ldr/ldrh/ldrb/ldrsb/ldrsh register (sp-relative and pop: none)
        return hw >> 11 in (0b01001, 0b01101, 0b01111, 0b10001, 0b11001) or (hw >> 12 == 0b0101 and (hw >> 9) & 7 >= 3)
    word = int.from_bytes(raw[:4], order)
    if word >> 28 == 0xF or (word >> 16) & 0xF == 13:
        return False
    op = (word >> 25) & 7
    if op in (2, 3):
        return bool(word & (1 << 20)) and not (op == 3 and word & 0x10)
    if op == 4:
        return bool(word & (1 << 20))
    if op == 0 and word & 0x90 == 0x90 and word & 0x60:
        return bool(word & (1 << 20)) or (word >> 5) & 3 == 2           # ldrh/ldrsb/ldrsh, or ldrd
    return False


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """dmb or dsb of a type that orders loads (ish, Linux's ARMv7 smp_rmb(); ishld in ARMv8
    code, as the arm64 kernel's compat vDSO), A32 or Thumb; ARMv6's CP15 barriers."""
    if mode == "thumb":
        if len(raw) != 4:
            return False
        h1, h2 = int.from_bytes(raw[:2], order), int.from_bytes(raw[2:4], order)
        return h1 == 0xF3BF and h2 & 0xFFE0 == 0x8F40 and bool(h2 & 1)
    word = int.from_bytes(raw[:4], order)
    if word & 0xFFFFFFE0 == 0xF57FF040:               # dsb, dmb: option 01 LD, 11 full (10 ST)
        return bool(word & 1)
    return word & 0x0FFF0FDF == 0x0E070F9A            # mcr p15, 0, rt, c7, c10, 4 (dsb) or 5 (dmb)


def _thumb16_written(h: int) -> int:
    """The registers a 16-bit Thumb instruction may write, as a mask."""
    top = h >> 11
    if top >= 0b11010 or h & 0xF500 == 0xB100 or h >> 8 == 0xBF:   # branches, svc, udf; cbz, cbnz; it, hints
        return 0
    if h >> 10 == 0b010001:                           # add, cmp, mov (high registers), bx, blx
        return 1 << ((h & 7) | ((h >> 4) & 8)) | 1 << 14
    if top in (0b00100, 0b00101, 0b00110, 0b00111, 0b01001, 0b10010, 0b10011, 0b10100, 0b10101):
        return 1 << ((h >> 8) & 7)                    # imm8 forms, ldr literal, sp-relative, adr, add sp
    if top in (0b11000, 0b11001):                     # stm, ldm: the base, the list
        return 1 << ((h >> 8) & 7) | (h & 0xFF if top == 0b11001 else 0)
    if h >> 9 == 0b1011110:                           # pop
        return h & 0xFF | 1 << 13
    return 1 << (h & 7) | 1 << 13                     # rd or rt in bits 0-2 (add sp, push: sp)


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The registers an instruction may write, as a mask, generously: A32 Rd/Rt (bits 12-15),
    RdHi (16-19) of the multiplies and mrrc, ldm's list, a written-back base; Thumb's
    destination field of each 16-bit format; of the 32-bit ones hw2's 8-11 and 12-15, ldm's
    list and a written-back base; lr."""
    if mode == "thumb":
        h1 = int.from_bytes(raw[:2], order)
        if len(raw) == 2:
            return _thumb16_written(h1)
        h2 = int.from_bytes(raw[2:4], order)
        mask = 1 << (h2 >> 12) | 1 << ((h2 >> 8) & 15) | 1 << 14
        if h1 & 0xFFD0 in (0xE890, 0xE910):           # ldm.w: the list
            mask |= h2
        if h1 & 0xFE00 == 0xE800 and h1 & 0x20:        # ldm/stm, ldrd/strd written back
            mask |= 1 << (h1 & 15)
        elif h1 & 0xFE00 == 0xF800 and h2 & 0x0900 == 0x0900:   # single, written-back base
            mask |= 1 << (h1 & 15)
        return mask
    word = int.from_bytes(raw[:4], order)
    mask = 1 << ((word >> 12) & 15) | 1 << 14
    op = (word >> 25) & 7
    if op == 4:                                       # ldm/stm
        mask |= (word & 0xFFFF if word & (1 << 20) else 0) | ((1 << ((word >> 16) & 15)) if word & (1 << 21) else 0)
    elif op in (0, 2, 3) and (not word & (1 << 24) or word & (1 << 21)):   # post-indexed or written back
        mask |= 1 << ((word >> 16) & 15)
    if op == 0 and word & 0xF0 == 0x90 or word & 0x0FF00000 == 0x0C500000:  # multiplies, mrrc: RdHi, Rt2
        mask |= 1 << ((word >> 16) & 15)
    return mask


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load): Rn and the offset of the immediate-offset forms (A32 ldr, ldrb,
    ldrh, ldrd; Thumb ldr, ldrb, ldrh, their .w forms and ldrd); not the literal loads."""
    if not data_load(raw, mode, order, False):
        return None
    if mode == "thumb":
        h1 = int.from_bytes(raw[:2], order)
        if len(raw) == 2:
            if h1 >> 11 == 0b01001:                   # ldr rt, [pc, #imm]
                return None
            scale = {0b01101: 4, 0b01111: 1, 0b10001: 2}.get(h1 >> 11)    # ldr, ldrb, ldrh rt, [rn, #imm5]
            if scale:
                return (h1 >> 3) & 7, ((h1 >> 6) & 31) * scale, h1 & 7
            return OTHER_FORM, h1 & ~(0xFF if h1 >> 12 == 0xC else 0x7), OTHER_FORM   # ldm: the list; else rt
        if h1 & 0xF == 15:
            return None
        h2 = int.from_bytes(raw[2:4], order)
        if h1 & 0xFF90 == 0xF890:                     # ldr.w, ldrb.w, ldrh.w rt, [rn, #imm12]
            return h1 & 0xF, h2 & 0xFFF, h2 >> 12
        if h1 & 0xFF90 == 0xF810 and h2 & 0x0F00 == 0x0C00:   # the same, [rn, #-imm8]
            return h1 & 0xF, -(h2 & 0xFF), h2 >> 12
        if h1 & 0xFF70 == 0xE950:                     # ldrd rt, rt2, [rn, #+/-imm8*4]
            return h1 & 0xF, (h2 & 0xFF) * (4 if h1 & 0x80 else -4), OTHER_FORM
        if h1 & 0xFFD0 in (0xE890, 0xE910):           # ldm.w: the register list
            return OTHER_FORM, h1 << 16, OTHER_FORM
        return OTHER_FORM, (h1 << 16) | (h2 & (0x00FF if h1 >> 9 == 0x74 else 0x0FFF)), OTHER_FORM   # ldrd
    word = int.from_bytes(raw[:4], order)
    rn, rt = (word >> 16) & 0xF, (word >> 12) & 0xF
    if rn == 15:
        return None
    sign = 1 if word & 0x00800000 else -1
    if word & 0x0F200000 == 0x05000000:               # ldr, ldrb rt, [rn, #+/-imm12]
        return rn, sign * (word & 0xFFF), rt
    if word & 0x0F600090 == 0x01400090:               # ldrh, ldrsb, ldrsh, ldrd rt, [rn, #+/-imm8]
        return rn, sign * (((word >> 4) & 0xF0) | (word & 0xF)), rt
    return OTHER_FORM, word & ~(0xFFFF if (word >> 25) & 7 == 4 else 0xF000), OTHER_FORM   # ldm: the list


ISA = Isa("arm", {EM_ARM: "EM_ARM"}, _decoder, _classifier, code_endian=_code_endian, entry=_entry,
          cjump_skips=_it_skips, segment_types={EM_ARM: frozenset({PT_ARM_EXIDX})},
          data_load=data_load, read_barrier=read_barrier, load_address=load_address, written=written)
