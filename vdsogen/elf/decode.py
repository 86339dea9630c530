"""Just enough instruction decoding to follow a vDSO's direct branches.

For each ABI a decoder tells, for the instruction at an address, its length
and whether it is a direct call, jump or conditional jump (with its target),
an end of flow (return, indirect jump, trap) or anything else.  The code
walk starts at the function symbols and follows the flow, so data placed
between functions is never taken for code.  Encodings come from the
architecture manuals; nothing here runs or interprets what it decodes.
"""

from bisect import bisect_right
from typing import NamedTuple

from vdsogen.elf.consts import (EM_386, EM_AARCH64, EM_ARM, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64, EM_RISCV,
                                EM_S390, EM_X86_64)

SEQ, CALL, JUMP, CJUMP, STOP = "seq", "call", "jump", "cjump", "stop"


class Insn(NamedTuple):
    length: int
    kind: str
    target: int | None = None
    mode: str | None = None     # ARM: the target's instruction set after BLX


def _sext(value, bits):
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# -- x86 (i386, x86-64, x32) -------------------------------------------------------

def _set(*ranges):
    out = set()
    for r in ranges:
        out.update(r if isinstance(r, range) else (r,))
    return out


X86_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
X86_MODRM = _set(*(range(b, b + 4) for b in range(0, 0x40, 8)), 0x62, 0x63, 0x69, 0x6B, range(0x80, 0x90),
                 0xC0, 0xC1, 0xC4, 0xC5, 0xC6, 0xC7, range(0xD0, 0xD4), range(0xD8, 0xE0), 0xF6, 0xF7, 0xFE, 0xFF)
X86_IMM8 = _set(*(b + 4 for b in range(0, 0x40, 8)), 0x6A, 0x6B, range(0x70, 0x80), 0x80, 0x82, 0x83, 0xA8,
                range(0xB0, 0xB8), 0xC0, 0xC1, 0xC6, 0xCD, 0xD4, 0xD5, range(0xE0, 0xE8), 0xEB)
X86_IMMZ = _set(*(b + 5 for b in range(0, 0x40, 8)), 0x68, 0x69, 0x81, 0xA9, 0xC7, 0xE8, 0xE9)
X86_0F_NO_MODRM = _set(0x05, 0x06, 0x07, 0x08, 0x09, 0x0B, 0x0E, range(0x30, 0x38), 0x77, range(0x80, 0x90),
                       0xA0, 0xA1, 0xA2, 0xA8, 0xA9, 0xAA, range(0xC8, 0xD0))
X86_0F_IMM8 = {0x70, 0x71, 0x72, 0x73, 0xA4, 0xAC, 0xBA, 0xC2, 0xC4, 0xC5, 0xC6}


def _modrm_len(code, i, addr32, long_mode):
    """Length of ModRM + SIB + displacement at code[i]."""
    modrm = code[i]
    mod, rm = modrm >> 6, modrm & 7
    if mod == 3:
        return 1
    if not addr32:                      # 16-bit addressing (0x67 in 32-bit code)
        return 1 + {0: 2 if rm == 6 else 0, 1: 1, 2: 2}[mod]
    n = 1
    if rm == 4:
        sib = code[i + 1]
        n += 1
        if mod == 0 and sib & 7 == 5:
            return n + 4
    if mod == 0:
        return n + (4 if rm == 5 else 0)
    return n + (1 if mod == 1 else 4)


def x86_insn(code, i, addr, long_mode):
    start = i
    opsize16 = addr16 = False
    rex_w = False
    while code[i] in X86_PREFIXES:
        opsize16 |= code[i] == 0x66
        addr16 |= code[i] == 0x67
        i += 1
    if long_mode and 0x40 <= code[i] <= 0x4F:
        rex_w = bool(code[i] & 8)
        i += 1
    op = code[i]
    i += 1
    addr32 = not addr16 if not long_mode else True
    immz = 2 if opsize16 else 4

    # VEX (and EVEX in 64-bit code): C4/C5/62 are LES/LDS/BOUND in 32-bit code unless ModRM.mod is 3.
    if op in (0xC4, 0xC5, 0x62) and (long_mode or code[i] >> 6 == 3):
        if op == 0xC5:
            mapsel, i = 1, i + 1
        elif op == 0xC4:
            mapsel, i = code[i] & 0x1F, i + 2
        else:
            mapsel, i = code[i] & 0x3, i + 3
        vop = code[i]
        i += 1
        if mapsel == 1 and vop == 0x77:
            return Insn(i - start, SEQ)
        i += _modrm_len(code, i, addr32, long_mode)
        if mapsel == 3 or (mapsel == 1 and vop in X86_0F_IMM8):
            i += 1
        return Insn(i - start, SEQ)

    if op == 0x0F:
        op2 = code[i]
        i += 1
        if op2 == 0x38:
            i += 1
            i += _modrm_len(code, i, addr32, long_mode)
            return Insn(i - start, SEQ)
        if op2 == 0x3A:
            i += 1
            i += _modrm_len(code, i, addr32, long_mode) + 1
            return Insn(i - start, SEQ)
        if 0x80 <= op2 <= 0x8F:                       # jcc rel32, rel16 after 0x66 (as jmp and call)
            rel = int.from_bytes(code[i:i + immz], "little", signed=True)
            i += immz
            return Insn(i - start, CJUMP, addr + (i - start) + rel)
        if op2 == 0x0B:
            return Insn(i - start, STOP)
        if op2 not in X86_0F_NO_MODRM:
            i += _modrm_len(code, i, addr32, long_mode)
        if op2 in X86_0F_IMM8 or op2 == 0x0F:
            i += 1
        return Insn(i - start, SEQ)

    if not long_mode and op in (0x9A, 0xEA):
        i += immz + 2
        return Insn(i - start, STOP if op == 0xEA else SEQ)
    if long_mode and op in (0x06, 0x07, 0x0E, 0x16, 0x17, 0x1E, 0x1F, 0x27, 0x2F, 0x37, 0x3F, 0x60, 0x61, 0x82,
                            0x9A, 0xD4, 0xD5, 0xD6, 0xEA):
        return None                     # invalid in 64-bit code: not an instruction we can follow
    modrm = code[i] if op in X86_MODRM else None
    if modrm is not None:
        i += _modrm_len(code, i, addr32, long_mode)
    if op in X86_IMM8:
        i += 1
    if op in X86_IMMZ:
        i += immz
    if 0xB8 <= op <= 0xBF:
        i += 8 if rex_w else immz
    if op in (0xC2, 0xCA):
        i += 2
    if op == 0xC8:
        i += 3
    if 0xA0 <= op <= 0xA3:
        i += (8 if not addr16 else 4) if long_mode else (4 if addr32 else 2)
    if op in (0xF6, 0xF7) and (modrm >> 3) & 7 in (0, 1):
        i += 1 if op == 0xF6 else immz
    length = i - start
    if op == 0xE8:
        return Insn(length, CALL, addr + length + int.from_bytes(code[i - immz:i], "little", signed=True))
    if op == 0xE9:
        return Insn(length, JUMP, addr + length + int.from_bytes(code[i - immz:i], "little", signed=True))
    if op == 0xEB:
        return Insn(length, JUMP, addr + length + _sext(code[i - 1], 8))
    if 0x70 <= op <= 0x7F or 0xE0 <= op <= 0xE3:
        return Insn(length, CJUMP, addr + length + _sext(code[i - 1], 8))
    if op in (0xC2, 0xC3, 0xCA, 0xCB, 0xCF, 0xF4, 0xCC):
        return Insn(length, STOP)
    if op == 0xFF and (modrm >> 3) & 7 in (4, 5):
        return Insn(length, STOP)
    return Insn(length, SEQ)


# -- fixed-width RISC decoders -------------------------------------------------------

def arm64_insn(word, addr):
    if word & 0x7C000000 == 0x14000000:               # B, BL
        return Insn(4, CALL if word >> 31 else JUMP, addr + _sext(word, 26) * 4)
    if word & 0xFF000010 == 0x54000000:               # B.cond
        return Insn(4, CJUMP, addr + _sext(word >> 5, 19) * 4)
    if word & 0x7E000000 == 0x34000000:               # CBZ, CBNZ
        return Insn(4, CJUMP, addr + _sext(word >> 5, 19) * 4)
    if word & 0x7E000000 == 0x36000000:               # TBZ, TBNZ
        return Insn(4, CJUMP, addr + _sext(word >> 5, 14) * 4)
    if word & 0xFFFFFC1F in (0xD65F0000, 0xD61F0000):  # RET, BR
        return Insn(4, STOP)
    if word & 0xFFFF0000 == 0 or word & 0xFFE0001F == 0xD4200000:   # UDF, BRK
        return Insn(4, STOP)
    return Insn(4, SEQ)


def ppc_insn(word, addr):
    op = word >> 26
    if op == 1:                                       # Power ISA 3.1 prefix: 8 bytes (pld, paddi, ...), none a branch
        return Insn(8, SEQ)
    if op == 18:                                      # b, bl; ba, bla (absolute: position-dependent)
        off = _sext(word & 0x03FFFFFC, 26)
        target = off if word & 2 else addr + off
        return Insn(4, CALL if word & 1 else JUMP, target)
    if op == 16:                                      # bc
        bo = (word >> 21) & 31
        off = _sext(word & 0xFFFC, 16)
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


def mips_insn(word, addr):
    op = word >> 26
    rs, rt = (word >> 21) & 31, (word >> 16) & 31
    rel = addr + 4 + _sext(word & 0xFFFF, 16) * 4
    if op in (2, 3):                                  # j, jal: within the 256 MiB region of the delay slot
        target = ((addr + 4) & ~0x0FFFFFFF) | ((word & 0x03FFFFFF) << 2)
        return Insn(4, CALL if op == 3 else JUMP, target)
    if op == 4 and rs == 0 and rt == 0:               # b (beq $0,$0)
        return Insn(4, JUMP, rel)
    if op in (4, 5, 6, 7, 20, 21, 22, 23):            # beq, bne, blez, bgtz and the likely forms
        return Insn(4, CJUMP, rel)
    if op == 1 and rt in (0, 1, 2, 3):                # bltz, bgez(l)
        return Insn(4, CJUMP, rel)
    if op == 1 and rt in (0x10, 0x11, 0x12, 0x13):    # bltzal, bgezal (bal)
        return Insn(4, CALL, rel)
    if op == 0 and word & 0x3F == 8:                  # jr
        return Insn(4, STOP)
    return Insn(4, SEQ)


def riscv_insn(code, i, addr):
    half = int.from_bytes(code[i:i + 2], "little")
    if half == 0:
        return Insn(2, STOP)                          # c.unimp / padding
    if half & 3 != 3:
        quadrant, funct3 = half & 3, half >> 13
        if quadrant == 1 and funct3 in (5, 6, 7):
            if funct3 == 5:                           # c.j
                imm = ((half >> 1) & 0x800) | ((half << 2) & 0x400) | ((half >> 1) & 0x300) | \
                      ((half << 1) & 0x80) | ((half >> 1) & 0x40) | ((half << 3) & 0x20) | \
                      ((half >> 7) & 0x10) | ((half >> 2) & 0xE)
                return Insn(2, JUMP, addr + _sext(imm, 12))
            imm = ((half >> 4) & 0x100) | ((half << 1) & 0xC0) | ((half << 3) & 0x20) | \
                  ((half >> 7) & 0x18) | ((half >> 2) & 0x6)
            return Insn(2, CJUMP, addr + _sext(imm, 9))   # c.beqz, c.bnez
        if quadrant == 2 and funct3 == 4 and (half >> 2) & 31 == 0 and (half >> 7) & 31:
            return Insn(2, SEQ if half & 0x1000 else STOP)    # c.jalr / c.jr
        return Insn(2, SEQ)
    word = int.from_bytes(code[i:i + 4], "little")
    opcode, rd = word & 0x7F, (word >> 7) & 31
    if opcode == 0x6F:                                # jal
        imm = ((word >> 11) & 0x100000) | (word & 0xFF000) | ((word >> 9) & 0x800) | ((word >> 20) & 0x7FE)
        return Insn(4, CALL if rd else JUMP, addr + _sext(imm, 21))
    if opcode == 0x63:                                # branches
        imm = ((word >> 19) & 0x1000) | ((word << 4) & 0x800) | ((word >> 20) & 0x7E0) | ((word >> 7) & 0x1E)
        return Insn(4, CJUMP, addr + _sext(imm, 13))
    if opcode == 0x67:                                # jalr
        return Insn(4, SEQ if rd else STOP)
    return Insn(4, SEQ)


def s390_insn(code, i, addr):
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
        target = addr + 2 * _sext(int.from_bytes(raw[2:4], "big"), 16)
        if op2 == 4:
            return Insn(4, SEQ) if mask == 0 else Insn(4, JUMP if mask == 15 else CJUMP, target)
        return Insn(4, CALL if op2 == 5 else CJUMP, target)
    if b0 == 0xC0 and raw[1] & 15 in (4, 5):          # brcl, brasl
        mask = raw[1] >> 4
        target = addr + 2 * _sext(int.from_bytes(raw[2:6], "big"), 32)
        if raw[1] & 15 == 5:
            return Insn(6, CALL, target)
        return Insn(6, SEQ) if mask == 0 else Insn(6, JUMP if mask == 15 else CJUMP, target)
    if b0 == 0xEC and raw[5] in (0x64, 0x65, 0x76, 0x77, 0x7C, 0x7D, 0x7E, 0x7F):   # compare and branch relative
        return Insn(6, CJUMP, addr + 2 * _sext(int.from_bytes(raw[2:4], "big"), 16))
    return Insn(length, SEQ)


def loongarch_insn(word, addr):
    op = word >> 26
    if op == 0x12 and (word >> 8) & 3 >= 2:           # jiscr0, jiscr1 (LBT): to a scratch register + offs21
        return Insn(4, STOP)
    if op in (0x10, 0x11, 0x12):                      # beqz, bnez, bceqz/bcnez: offs21
        off = ((word >> 10) & 0xFFFF) | ((word & 31) << 16)
        return Insn(4, CJUMP, addr + _sext(off, 21) * 4)
    if op in (0x14, 0x15):                            # b, bl: offs26
        off = ((word >> 10) & 0xFFFF) | ((word & 0x3FF) << 16)
        return Insn(4, CALL if op == 0x15 else JUMP, addr + _sext(off, 26) * 4)
    if 0x16 <= op <= 0x1B:                            # beq ... bgeu: offs16
        return Insn(4, CJUMP, addr + _sext(word >> 10, 16) * 4)
    if op == 0x13:                                    # jirl
        return Insn(4, SEQ if word & 31 else STOP)
    if word >> 15 == 0x54:                            # break
        return Insn(4, STOP)
    return Insn(4, SEQ)


def arm_insn(word, addr):
    cond = word >> 28
    if (word >> 25) & 7 == 5:
        off = _sext(word & 0xFFFFFF, 24) * 4
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


def thumb_insn(code, i, addr, little):
    order = "little" if little else "big"
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
                off = _sext((s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FF) << 1), 25)
                if h2 & 0x4000:
                    if h2 & 0x1000:
                        return Insn(4, CALL, addr + 4 + off)
                    return Insn(4, CALL, (addr + 4 + off) & ~3, "arm")
                return Insn(4, JUMP, addr + 4 + off)
            if (h1 >> 6) & 0xE == 0xE:                # cond 111x: hints, barriers, msr/mrs
                return Insn(4, SEQ)
            off = _sext((s << 20) | (j2 << 19) | (j1 << 18) | ((h1 & 0x3F) << 12) | ((h2 & 0x7FF) << 1), 21)
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
        return Insn(2, CJUMP, addr + 4 + _sext(h1 & 0xFF, 8) * 2)
    if h1 >> 11 == 0x1C:                              # b (T2)
        return Insn(2, JUMP, addr + 4 + _sext(h1 & 0x7FF, 11) * 2)
    if h1 & 0xF500 == 0xB100:                         # cbz, cbnz
        return Insn(2, CJUMP, addr + 4 + ((((h1 >> 9) & 1) << 6) | ((h1 >> 3) & 0x1F) << 1))
    if h1 & 0xFF87 == 0x4700 or h1 & 0xFF00 == 0xBD00 or h1 >> 8 == 0xDE:   # bx, pop {pc}, udf
        return Insn(2, STOP)
    return Insn(2, SEQ)


def decoder_for(img):
    """decode(code, i, addr, mode) -> Insn or None, for the image's machine; None if unsupported."""
    m, big = img.e_machine, img.code_endian == "big"
    order = "big" if big else "little"

    def word_at(code, i):
        return int.from_bytes(code[i:i + 4], order) if i + 4 <= len(code) else None

    def fixed(fn):
        def decode(code, i, addr, mode):
            w = word_at(code, i)
            return None if w is None else fn(w, addr)
        return decode

    if m in (EM_X86_64, EM_386):
        long_mode = m == EM_X86_64

        def decode(code, i, addr, mode):
            try:
                return x86_insn(code, i, addr, long_mode)
            except (IndexError, KeyError):
                return None
        return decode
    if m == EM_AARCH64:
        return fixed(arm64_insn)
    if m in (EM_PPC, EM_PPC64):
        def decode(code, i, addr, mode):
            w = word_at(code, i)
            if w is None or (w >> 26 == 1 and i + 8 > len(code)):     # a prefixed instruction cut short
                return None
            return ppc_insn(w, addr)
        return decode
    if m == EM_MIPS:
        return fixed(mips_insn)
    if m == EM_LOONGARCH:
        return fixed(loongarch_insn)
    if m == EM_RISCV:
        return lambda code, i, addr, mode: riscv_insn(code, i, addr) if i + 2 <= len(code) and (
            code[i] & 3 != 3 or i + 4 <= len(code)) else None
    if m == EM_S390:
        return lambda code, i, addr, mode: s390_insn(code, i, addr) if i < len(code) else None
    if m == EM_ARM:
        def decode(code, i, addr, mode):
            if mode == "thumb":
                return thumb_insn(code, i, addr, not big) if i + 2 <= len(code) else None
            w = word_at(code, i)
            return None if w is None else arm_insn(w, addr)
        return decode
    return None


class Regions:
    """The code regions, for finding the one an address is in by bisection.

    regions: [(start address, bytes)].  Where regions overlap, the one that
    starts first owns the overlap."""

    def __init__(self, regions):
        pieces, covered = [], None
        for start, code in sorted(regions, key=lambda r: (r[0], -len(r[1]))):
            end = start + len(code)
            lo = start if covered is None else max(start, covered)
            if lo < end:
                pieces.append((lo, end, start, code))
                covered = end
        self.starts = [p[0] for p in pieces]
        self.pieces = pieces

    def find(self, addr):
        """(region start, bytes) of the region holding addr, or None."""
        i = bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        _lo, end, start, code = self.pieces[i]
        return (start, code) if addr < end else None

    def __contains__(self, addr):
        return self.find(addr) is not None


def walk(img, regions, entries):
    """Follow the flow from entries; yield (address, Insn, raw bytes) of every
    instruction reached, each once.  Each instruction decoded is one unit of
    the image's work budget.

    regions: [(start address, bytes)] of executable code, or a Regions;
    entries: [(address, mode)]."""
    decode = decoder_for(img)
    if decode is None:
        return
    if not isinstance(regions, Regions):
        regions = Regions(regions)
    charge = img.charge
    seen = set()
    work = list(entries)
    while work:
        addr, mode = work.pop()
        region = None
        while True:
            if (addr, mode) in seen:
                break
            if region is None or not region[0] <= addr < region[0] + len(region[1]):
                region = regions.find(addr)
                if region is None:
                    break
            seen.add((addr, mode))
            charge()
            start, code = region
            insn = decode(code, addr - start, addr, mode)
            if insn is None or insn.length <= 0:
                break
            yield addr, insn, bytes(code[addr - start:addr - start + insn.length])
            if insn.target is not None:
                work.append((insn.target, insn.mode or mode))
            if insn.kind in (JUMP, STOP):
                break
            addr += insn.length


def arm64_writes_x18(word):
    """Whether an A64 instruction writes x18 (or w18)."""
    def rd(shift=0):
        return (word >> shift) & 31 == 18
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
            return not vector and (word >> 30) != 3 and rd()
        if word & 0x3F000000 == 0x08000000:           # exclusives
            if word >> 22 & 1:
                return rd() or (word >> 21 & 1 and rd(10))
            return not word >> 23 & 1 and rd(16)
        if word & 0x3A000000 == 0x28000000:           # pairs
            writeback = (word >> 23) & 3 in (1, 3)
            load = word >> 22 & 1
            return (writeback and rd(5)) or (load and not vector and (rd() or rd(10)))
        if word & 0x38000000 == 0x38000000:           # single register
            size, opc = word >> 30, (word >> 22) & 3
            if not word >> 24 & 1 and word >> 21 & 1 and (word >> 10) & 3 == 0:
                return not vector and rd()            # atomics (ldadd, swp, ...)
            writeback = not word >> 24 & 1 and not word >> 21 & 1 and (word >> 10) & 3 in (1, 3)
            load = opc != 0 and not (size == 3 and opc == 2 and not vector)
            return (writeback and rd(5)) or (load and not vector and rd())
        return False
    if word & 0x5F20FC00 == 0x1E200000 and (word >> 16) & 7 in (0, 1, 4, 5, 6):   # fp -> general
        return rd()
    if word & 0xBFE0FC00 in (0x0E003C00, 0x0E002C00):                          # umov, smov
        return rd()
    return False
