"""LoongArch (EM_LOONGARCH): LA64, little-endian words.

Decoding: b, bl, beqz, bnez, bceqz, bcnez and the two-register branches;
jirl without a link, break and the LBT jiscr0/jiscr1 (jumps through a
scratch register) end the flow.  Hot path: the counter reads are rdtime.d,
rdtimel.w and rdtimeh.w (not into $zero: that one wants only the counter
ID, getcpu's CPU), the syscall syscall, the return jirl $zero, $ra, 0.
Audit rule K009: the seqcount is ordered by dbar 0 or a load-load hint.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Classify, \
    Decode, Image, Insn, Isa, OTHER_FORM, fixed_width, sext, word_classifier

EM_LOONGARCH = 258          # pyelftools 0.29 has no name for it


def loongarch_insn(word: int, addr: int) -> Insn:
    op = word >> 26
    if op == 0x12 and (word >> 8) & 3 >= 2:           # jiscr0, jiscr1 (LBT): to a scratch register + offs21
        return Insn(4, STOP)
    if op in (0x10, 0x11, 0x12):                      # beqz, bnez, bceqz/bcnez: offs21
        off = ((word >> 10) & 0xFFFF) | ((word & 31) << 16)
        return Insn(4, CJUMP, addr + sext(off, 21) * 4)
    if op in (0x14, 0x15):                            # b, bl: offs26
        off = ((word >> 10) & 0xFFFF) | ((word & 0x3FF) << 16)
        return Insn(4, CALL if op == 0x15 else JUMP, addr + sext(off, 26) * 4)
    if 0x16 <= op <= 0x1B:                            # beq ... bgeu: offs16
        return Insn(4, CJUMP, addr + sext(word >> 10, 16) * 4)
    if op == 0x13:                                    # jirl
        return Insn(4, SEQ if word & 31 else STOP)
    if word >> 15 == 0x54:                            # break
        return Insn(4, STOP)
    return Insn(4, SEQ)


def loongarch_class(word: int) -> str:
    """The hot-path class of one instruction word."""
    if (word & 0xFFFFF800 == 0x00006000 or word & 0xFFFFFC00 == 0x00006800) and word & 31:
        return COUNTER          # rdtimel.w, rdtimeh.w, rdtime.d; into $zero only the counter ID is wanted (getcpu)
    if word >> 15 == 0x56:                                  # syscall code
        return SYSCALL
    if word == 0x4C000020:                                  # jirl $zero, $ra, 0 (jr $ra)
        return RETURN
    return OTHER


def _decoder(img: Image) -> Decode:
    return fixed_width(loongarch_insn, img.code_endian)


def _classifier(img: Image) -> Classify:
    return word_classifier(loongarch_class, img.code_endian)


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """ld.{b,h,w,d,bu,hu,wu}, fld.{s,d}, ldptr.{w,d}, ll.{w,d}, ldx.*, base not $sp."""
    word = int.from_bytes(raw[:4], "little")
    return ((word >> 5) & 31 != 3 and
            ((word >> 22) in (0xA0, 0xA1, 0xA2, 0xA3, 0xA8, 0xA9, 0xAA, 0xAC, 0xAE)
             or (word >> 24) in (0x20, 0x22, 0x24, 0x26)
             or (word >> 15) in (0x7000, 0x7008, 0x7010, 0x7018, 0x7040, 0x7048, 0x7050)))


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """dbar with a hint that orders earlier loads before later ones: 0 (full) or an ordering hint
    (bit 4) whose bits 3 and 1 do not leave out earlier or later loads (0x15, Linux's smp_rmb()
    since 6.5).  Not 0x700, which orders loads of one address only."""
    word = int.from_bytes(raw[:4], "little")
    hint = word & 0x7FFF
    return word & 0xFFFF8000 == 0x38720000 and hint < 0x20 and not hint & 0b01010


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load): rj and the offset of ld.* and fld.* (si12), ldptr.* and ll.* (si14 << 2)."""
    if not data_load(raw, mode, order, False):
        return None
    word = int.from_bytes(raw[:4], "little")
    rj, rd = (word >> 5) & 31, word & 31
    if 0xA0 <= word >> 22 <= 0xAE:
        return rj, sext(word >> 10, 12), rd
    if word >> 24 in (0x20, 0x22, 0x24, 0x26):
        return rj, sext(word >> 10, 14) << 2, rd
    return OTHER_FORM, word & ~0x1F, OTHER_FORM


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The registers an instruction may write, as a mask: rd, but of the branches and barriers
    (stores too: more is safe); $ra for bl."""
    word = int.from_bytes(raw[:4], "little")
    op = word >> 26
    if op == 0x15:
        return 1 << 1
    if 0x10 <= op <= 0x1B and op != 0x13 or word >> 15 in (0x70E4, 0x70E5):   # branches; dbar, ibar
        return 0
    return 1 << (word & 31)


def pc_address(raw: bytes, mode: str | None, order: ByteOrder, addr: int) -> tuple[int, int] | None:
    """pcaddi, pcalau12i and pcaddu12i: rd and the address."""
    word = int.from_bytes(raw[:4], "little")
    op, si20 = word >> 25, sext(word >> 5, 20)
    if op == 0x0C:
        return word & 31, addr + (si20 << 2)
    if op == 0x0D:
        return word & 31, (addr + (si20 << 12)) & ~0xFFF
    if op == 0x0E:
        return word & 31, addr + (si20 << 12)
    return None


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """A store based on $sp or $fp (r3, r22): st.b..st.d, stptr.w/d, stx.* (rd), fst.*, vst, xvst,
    fstx, vstx, xvstx (0); else None."""
    word = int.from_bytes(raw[:4], "little")
    if (word >> 5) & 31 not in (3, 22):
        return None
    rd = 1 << (word & 31)
    if 0xA4 <= word >> 22 <= 0xA7 or word >> 24 in (0x25, 0x27) or word >> 15 in (0x7020, 0x7028, 0x7030, 0x7038):
        return rd
    if word >> 22 in (0xAD, 0xAF, 0xB1, 0xB3) or word >> 15 in (0x7070, 0x7078, 0x7088, 0x7098):
        return 0
    return None


ISA = Isa("loongarch", {EM_LOONGARCH: "EM_LOONGARCH"}, _decoder, _classifier,
          data_load=data_load, read_barrier=read_barrier, load_address=load_address, pc_address=pc_address,
          written=written, stack_store=stack_store)
