"""RISC-V (EM_RISCV): RV64 and RV32 with the compressed (C) extension.

Decoding: jal, the branches, c.j, c.beqz and c.bnez, and on RV32 (an ELFCLASS32
image) c.jal, the call RV64 replaced by c.addiw; jalr and c.jr without
a link end the flow, as c.unimp (a zero halfword, padding) does.  Hot path:
the counter read is csrr of time or timeh (rdtime: csrrs/csrrc rd, 0xc01
or 0xc81, x0 and the immediate forms with 0), the syscall ecall, the
returns ret (jalr x0, 0(ra)) and c.jr ra, and the same through t0, the
alternate link register (after sspopchk t0).  Audit rule K009: the
seqcount is ordered by a fence of r before r.  RISC-V code is little-endian.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Classify, Code, \
    Decode, Image, Insn, Isa, OTHER_FORM, sext

EM_RISCV = 243
PT_RISCV_ATTRIBUTES = 0x70000003


def riscv_insn(code: Code, i: int, addr: int, rv32: bool = False) -> Insn:
    half = int.from_bytes(code[i:i + 2], "little")
    if half == 0:
        return Insn(2, STOP)                          # c.unimp / padding
    if half & 3 != 3:
        quadrant, funct3 = half & 3, half >> 13
        if quadrant == 1 and (funct3 in (5, 6, 7) or (rv32 and funct3 == 1)):
            if funct3 in (1, 5):                      # c.jal (RV32), c.j
                imm = ((half >> 1) & 0x800) | ((half << 2) & 0x400) | ((half >> 1) & 0x300) | \
                      ((half << 1) & 0x80) | ((half >> 1) & 0x40) | ((half << 3) & 0x20) | \
                      ((half >> 7) & 0x10) | ((half >> 2) & 0xE)
                return Insn(2, CALL if funct3 == 1 else JUMP, addr + sext(imm, 12))
            imm = ((half >> 4) & 0x100) | ((half << 1) & 0xC0) | ((half << 3) & 0x20) | \
                  ((half >> 7) & 0x18) | ((half >> 2) & 0x6)
            return Insn(2, CJUMP, addr + sext(imm, 9))   # c.beqz, c.bnez
        if quadrant == 2 and funct3 == 4 and (half >> 2) & 31 == 0 and (half >> 7) & 31:
            return Insn(2, SEQ if half & 0x1000 else STOP)    # c.jalr / c.jr
        return Insn(2, SEQ)
    word = int.from_bytes(code[i:i + 4], "little")
    opcode, rd = word & 0x7F, (word >> 7) & 31
    if opcode == 0x6F:                                # jal
        imm = ((word >> 11) & 0x100000) | (word & 0xFF000) | ((word >> 9) & 0x800) | ((word >> 20) & 0x7FE)
        return Insn(4, CALL if rd else JUMP, addr + sext(imm, 21))
    if opcode == 0x63:                                # branches
        imm = ((word >> 19) & 0x1000) | ((word << 4) & 0x800) | ((word >> 20) & 0x7E0) | ((word >> 7) & 0x1E)
        return Insn(4, CJUMP, addr + sext(imm, 13))
    if opcode == 0x67:                                # jalr
        return Insn(4, SEQ if rd else STOP)
    return Insn(4, SEQ)


def riscv_class(raw: bytes) -> str:
    """The hot-path class of one instruction (2 or 4 bytes)."""
    if len(raw) == 2:                                       # c.jr ra; c.jr t0 (the alternate link register,
        return RETURN if int.from_bytes(raw, "little") in (0x8082, 0x8282) else OTHER   # shadow-stack code)
    word = int.from_bytes(raw[:4], "little")
    if word == 0x00000073:                                  # ecall
        return SYSCALL
    if word in (0x00008067, 0x00028067):                    # ret: jalr x0, 0(ra); jalr x0, 0(t0)
        return RETURN
    if word & 0x7F == 0x73 and word >> 20 in (0xC01, 0xC81):    # a csr instruction on time or timeh
        funct3, src = (word >> 12) & 7, (word >> 15) & 31
        if funct3 in (2, 3, 6, 7) and src == 0:             # csrrs/csrrc rd, time, x0 and the uimm 0 forms: reads
            return COUNTER
    return OTHER


def _decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
    if i + 2 > len(code) or (code[i] & 3 == 3 and i + 4 > len(code)):
        return None
    return riscv_insn(code, i, addr)


def _decode32(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
    if i + 2 > len(code) or (code[i] & 3 == 3 and i + 4 > len(code)):
        return None
    return riscv_insn(code, i, addr, rv32=True)


def _decoder(img: Image) -> Decode:
    """RV32's for an ELFCLASS32 image (c.jal), else RV64's."""
    return _decode32 if getattr(img, "elf_class", 64) == 32 else _decode


def _classifier(img: Image) -> Classify:
    return lambda raw, mode=None: riscv_class(raw)


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """lb..ld, flw/fld, lr/amo, base not sp; compressed c.lw, c.ld, c.fld."""
    if len(raw) == 2:
        hw = int.from_bytes(raw, "little")
        return hw & 3 == 0 and (hw >> 13) in (1, 2, 3)
    word = int.from_bytes(raw[:4], "little")
    return word & 0x7F in (0x03, 0x07, 0x2F) and (word >> 15) & 31 != 2


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """A fence whose predecessor and successor sets both hold r: fence r,r (Linux's smp_rmb()),
    fence rw,rw, fence.tso."""
    if len(raw) != 4:
        return False
    word = int.from_bytes(raw, "little")
    return word & 0x707F == 0x000F and bool(word >> 25 & 1) and bool(word >> 21 & 1)


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The registers an instruction may write, as a mask: rd, but of stores and branches; of the
    compressed ones rd' of the loads, rd (and rd' of the CA and CB forms) elsewhere, ra for c.jalr."""
    value = int.from_bytes(raw, "little")
    if len(raw) == 2:
        quadrant, funct3 = value & 3, value >> 13
        if quadrant == 0:
            return 1 << (8 + ((value >> 2) & 7)) if funct3 < 4 else 0
        if quadrant == 1 and funct3 >= 5:
            return 0
        mask = 1 << ((value >> 7) & 31) | 1 << 1
        if quadrant == 1 and funct3 == 4:
            mask |= 1 << (8 + ((value >> 7) & 7))
        return 0 if quadrant == 2 and funct3 >= 5 else mask
    if value & 0x7F in (0x23, 0x27, 0x63, 0x0F):     # stores, branches, fences
        return 0
    return 1 << ((value >> 7) & 31)


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load): rs1 and the offset of the loads, c.lw, c.ld and c.fld."""
    if not data_load(raw, mode, order, False):
        return None
    value = int.from_bytes(raw, "little")
    if len(raw) == 2:
        rs1, rd = 8 + ((value >> 7) & 7), 8 + ((value >> 2) & 7)
        high = ((value >> 10) & 7) << 3
        if value >> 13 == 2:                          # c.lw: offset[5:3] | [2] | [6]
            return rs1, high | ((value >> 4) & 4) | ((value << 1) & 0x40), rd
        return rs1, high | ((value << 1) & 0xC0), rd  # c.ld, c.fld: offset[5:3] | [7:6]
    if value & 0x7F in (0x03, 0x07):
        return (value >> 15) & 31, sext(value >> 20, 12), (value >> 7) & 31
    return OTHER_FORM, value & ~0xF80, OTHER_FORM


def pc_address(raw: bytes, mode: str | None, order: ByteOrder, addr: int) -> tuple[int, int] | None:
    """auipc: rd and the address."""
    if len(raw) != 4:
        return None
    word = int.from_bytes(raw, "little")
    return ((word >> 7) & 31, addr + sext(word & 0xFFFFF000, 32)) if word & 0x7F == 0x17 else None


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """A store based on sp or s0 (x2, x8): sb..sd (rs2), fsw/fsd and the vector stores (0), the
    atomics (0); compressed c.swsp/c.sdsp, c.sw/c.sd through s0, c.fsdsp; else None."""
    value = int.from_bytes(raw, "little")
    if len(raw) == 2:
        quadrant, funct3 = value & 3, value >> 13
        if quadrant == 2 and funct3 in (6, 7):        # c.swsp, c.sdsp
            return 1 << ((value >> 2) & 31)
        if quadrant == 2 and funct3 == 5:             # c.fsdsp
            return 0
        if quadrant == 0 and funct3 in (5, 6, 7) and (value >> 7) & 7 == 0:   # c.fsd, c.sw, c.sd through s0
            return 0 if funct3 == 5 else 1 << (8 + ((value >> 2) & 7))
        return None
    if (value >> 15) & 31 not in (2, 8):
        return None
    if value & 0x7F == 0x23:
        return 1 << ((value >> 20) & 31)
    return 0 if value & 0x7F in (0x27, 0x2F) else None


ISA = Isa("riscv", {EM_RISCV: "EM_RISCV"}, _decoder, _classifier,
          segment_types={EM_RISCV: frozenset({PT_RISCV_ATTRIBUTES})},
          data_load=data_load, read_barrier=read_barrier, load_address=load_address, pc_address=pc_address,
          written=written, stack_store=stack_store)


def _compressed_rd(hw: int) -> int | None:
    """The register a compressed instruction writes, or None (stores, branches, jumps)."""
    quadrant, funct3 = hw & 3, hw >> 13
    full, prime = (hw >> 7) & 31, 8 + ((hw >> 2) & 7)
    if quadrant == 0:
        return prime if funct3 in (0, 1, 2, 3) else None      # c.addi4spn, c.fld, c.lw, c.ld
    if quadrant == 1:
        if funct3 in (0, 1, 2, 3):                            # c.addi, c.addiw, c.li, c.lui/c.addi16sp
            return full or None
        return 8 + ((hw >> 7) & 7) if funct3 == 4 else None   # c.srli .. c.and
    if funct3 in (0, 1, 2, 3):                                # c.slli, c.fldsp, c.lwsp, c.ldsp
        return full or None
    if funct3 == 4 and (hw >> 2) & 31:                        # c.mv, c.add
        return full or None
    return None


def store_targets(img: Image, code: Code, addr: int) -> list[tuple[int, int | None]]:
    """(address, target) of every store in `code` (at `addr`) that is not
    to the stack: the target where auipc/lui and addi in the same straight
    run of code give its base register, else None.  A linear sweep; the
    known registers are forgotten at every jump, call and branch."""
    known: dict[int, int] = {}
    out: list[tuple[int, int | None]] = []
    i = 0
    while i + 2 <= len(code):
        at = addr + i
        half = int.from_bytes(code[i:i + 2], "little")
        if half & 3 != 3:
            quadrant, funct3 = half & 3, half >> 13
            if quadrant == 0 and funct3 in (5, 6, 7):          # c.fsd, c.sw, c.sd
                base = 8 + ((half >> 7) & 7)
                off = (((half >> 10) & 7) << 3) | (((half >> 5) & 3) << 6) if funct3 != 6 else \
                    (((half >> 10) & 7) << 3) | (((half >> 6) & 1) << 2) | (((half >> 5) & 1) << 6)
                out.append((at, known[base] + off if base in known else None))
            elif quadrant == 1 and funct3 == 0 and (half >> 7) & 31 in known:   # c.addi
                reg = (half >> 7) & 31
                known[reg] += sext(((half >> 7) & 0x20) | ((half >> 2) & 31), 6)
            elif quadrant == 2 and funct3 == 4 and (half >> 2) & 31 and not half & 0x1000 \
                    and (half >> 2) & 31 in known:               # c.mv rd, rs: the address moves
                known[(half >> 7) & 31] = known[(half >> 2) & 31]
            else:
                if riscv_insn(code, i, at).kind != SEQ or (quadrant == 2 and funct3 == 4 and half & 0x1000):
                    known.clear()                              # jumps, branches, c.jalr
                rd = _compressed_rd(half)
                if rd is not None:
                    known.pop(rd, None)
            i += 2
            continue
        if i + 4 > len(code):
            break
        word = int.from_bytes(code[i:i + 4], "little")
        opcode, rd, rs1 = word & 0x7F, (word >> 7) & 31, (word >> 15) & 31
        if opcode in (0x23, 0x27):                             # sb..sd, fsw/fsd
            if rs1 != 2:
                off = sext(((word >> 25) << 5) | ((word >> 7) & 31), 12)
                out.append((at, known[rs1] + off if rs1 in known else None))
        elif opcode == 0x2F and (word >> 27) != 2:             # AMOs and sc (not lr)
            out.append((at, known.get(rs1)))
            known.pop(rd, None)
        elif opcode == 0x17:                                   # auipc
            known[rd] = at + sext(word & 0xFFFFF000, 32)
        elif opcode == 0x37:                                   # lui
            known[rd] = sext(word & 0xFFFFF000, 32)
        elif opcode == 0x13 and (word >> 12) & 7 == 0 and rs1 in known:   # addi
            known[rd] = known[rs1] + sext(word >> 20, 12)
        else:
            if opcode in (0x67, 0x6F) or riscv_insn(code, i, at).kind != SEQ:
                known.clear()                                  # jumps, calls (jalr with a link too)
            if opcode not in (0x63,):                          # branches write no register
                known.pop(rd, None)
        known.pop(0, None)
        i += 4
    return out
