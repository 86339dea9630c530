"""powerpc: ppc32 (EM_PPC), ppc64 and ppc64le (EM_PPC64).

Decoding: b, bl and the absolute forms, bc (bcl a call), the unconditional
bclr and bcctr end the flow (the conditional ones go on); a Power ISA 3.1
prefixed instruction is 8 bytes; a zero word (padding) stops.  Hot path:
the counter read is mftb (mfspr 268, and the old mftb form), the syscalls
sc and scv, the returns blr and the conditional bclr forms.  Audit rule K009: the
seqcount is ordered by sync or lwsync.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, CRETURN, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, \
    Classify, Code, Decode, Image, Insn, Isa, OTHER_FORM, sext, word_classifier

EM_PPC, EM_PPC64 = 20, 21
DT_PPC_GOT = 0x70000000         # ppc32: where the GOT is; kernel images keep a .got in the text
DT_PPC64_OPT = 0x70000003


def ppc_insn(word: int, addr: int) -> Insn:
    op = word >> 26
    if op == 1:                                       # Power ISA 3.1 prefix: 8 bytes (pld, paddi, ...), none a branch
        return Insn(8, SEQ)
    if op == 18:                                      # b, bl; ba, bla (absolute: position-dependent)
        off = sext(word & 0x03FFFFFC, 26)
        target = off if word & 2 else addr + off
        return Insn(4, CALL if word & 1 else JUMP, target)
    if op == 16:                                      # bc
        bo = (word >> 21) & 31
        off = sext(word & 0xFFFC, 16)
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


def ppc_class(word: int) -> str:
    """The hot-path class of one instruction word (the first of a prefixed one)."""
    if word & 0xFC1FFFFE in (0x7C0C42A6, 0x7C0C42E6):       # mfspr rt, 268 (mftb); the old mftb form
        return COUNTER
    if word == 0x44000002 or word & 0xFFFFF01F == 0x44000001:   # sc, scv
        return SYSCALL
    if word >> 26 == 19 and (word >> 1) & 0x3FF == 16 and not word & 1:   # bclr, no link
        bo = (word >> 21) & 31
        return RETURN if bo & 0x14 == 0x14 else CRETURN
    return OTHER


# X-form (primary opcode 31) extended opcodes whose destination is RA, not
# RT: the logical, shift, sign-extend and count instructions.
_PPC_X_TO_RA = {28, 60, 124, 284, 316, 412, 444, 476,      # and andc nor eqv xor orc or nand
                24, 536, 792, 824, 27, 539, 794,            # slw srw sraw srawi sld srd srad
                26, 58, 922, 954, 986, 122, 378, 506, 508,  # cntlzw cntlzd extsh extsb extsw popcnt* cmpb
                538, 570}                                   # cnttzw cnttzd
# X-form extended opcodes that write no GPR at all (stores, compares, cache,
# barriers, moves to special registers, traps).
_PPC_X_NO_GPR = {0, 32, 4, 68, 151, 149, 215, 407, 150, 214, 662, 918, 660, 54, 86, 982, 278, 246, 1014,
                 598, 854, 467, 144, 146, 178, 663, 727, 695, 759, 983, 919, 951, 726, 758}
# ... and those with update (RA written back) that store.
_PPC_X_STORE_UPDATE = {183, 181, 247, 439, 695, 759}
_PPC_X_LOAD_UPDATE = {55, 119, 311, 375, 53, 373}


def ppc_gprs_written(word: int) -> set[int]:
    """The general registers a powerpc instruction writes (a decoding for
    the integer and load/store instructions a vDSO uses; lmw writes RT..r31)."""
    op = word >> 26
    rt, ra = (word >> 21) & 31, (word >> 16) & 31
    if op in (7, 8, 12, 13, 14, 15, 32, 34, 40, 42):           # mulli subfic addic(.) addi addis lwz lbz lhz lha
        return {rt}
    if op in (33, 35, 41, 43):                                  # lwzu lbzu lhzu lhau
        return {rt, ra}
    if op in (37, 39, 45, 53, 55, 61) or (op == 62 and word & 3 == 1):   # stwu stbu sthu stfsu stfdu stfdpu stdu
        return {ra}
    if op == 46:                                                # lmw
        return set(range(rt, 32))
    if op == 58:                                                # ld ldu lwa
        return {rt, ra} if word & 3 == 1 else {rt}
    if op in (20, 21, 23, 24, 25, 26, 27, 28, 29, 30):          # rlw*, ori, oris, xori, xoris, andi., andis., rld*
        return {ra}
    if op == 31:
        xo = (word >> 1) & 0x3FF
        if xo in _PPC_X_TO_RA or (xo >> 1) == 413:              # sradi (XS-form)
            return {ra}
        if xo in _PPC_X_STORE_UPDATE:
            return {ra}
        if xo in _PPC_X_LOAD_UPDATE:
            return {rt, ra}
        if xo in _PPC_X_NO_GPR:
            return set()
        return {rt}                                             # arithmetic, indexed loads, mf*
    return set()


def _decoder(img: Image) -> Decode:
    order = img.code_endian

    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        if i + 4 > len(code):
            return None
        w = int.from_bytes(code[i:i + 4], order)
        if w >> 26 == 1 and i + 8 > len(code):        # a prefixed instruction cut short
            return None
        return ppc_insn(w, addr)
    return decode


def _classifier(img: Image) -> Classify:
    return word_classifier(ppc_class, img.code_endian)


_PPC_X_LOADS = {20, 21, 23, 53, 55, 84, 87, 119, 279, 311, 341, 343, 373, 375, 532, 534, 790}


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """The D-form loads (lwz..lhau, lmw, lfs..lfdu), ld/ldu/lwa, lq, and the X-form ones; base not r1."""
    word = int.from_bytes(raw[:4], order)
    op = word >> 26
    if (word >> 16) & 31 == 1:
        return False
    if op in (32, 33, 34, 35, 40, 41, 42, 43, 46, 48, 49, 50, 51, 56, 58):
        return True
    return op == 31 and (word >> 1) & 0x3FF in _PPC_X_LOADS


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """sync, lwsync and ptesync (sync L=0, 1, 2): Linux's smp_rmb() is lwsync on 64-bit, sync on 32-bit."""
    return int.from_bytes(raw[:4], order) & 0xFF9FFFFF == 0x7C0004AC


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The general registers an instruction writes, as a mask (ppc_gprs_written)."""
    mask = 0
    for reg in ppc_gprs_written(int.from_bytes(raw[:4], order)):
        mask |= 1 << reg
    return mask


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load): RA and D of the D-form loads, RA and DS of ld, ldu and lwa."""
    if not data_load(raw, mode, order, False):
        return None
    word = int.from_bytes(raw[:4], order)
    op, rt, ra = word >> 26, (word >> 21) & 31, (word >> 16) & 31
    if op == 58 or op == 56:                          # DS-form (lq: DQ, whose low bits are 0 too)
        return ra, sext(word & 0xFFFC, 16), rt
    if op != 31:
        return ra, sext(word & 0xFFFF, 16), rt
    return OTHER_FORM, word & ~0x03E00000, OTHER_FORM


# X-form stores (stwx stwux stbx stbux sthx sthux stdx stdux stfsx stfdx stvx stvewx stxvw4x stxvd2x stxvx)
# and the two that store GPRs among them.
_PPC_X_STORES = {151, 183, 215, 247, 407, 439, 149, 181, 663, 727, 231, 199, 908, 972, 396, 918, 662, 150, 214}
_PPC_X_GPR_STORES = {151, 183, 215, 247, 407, 439, 149, 181, 918, 662, 150, 214}


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """A store based on r1: the general registers it stores (RS; RS..r31 of stmw; 0 for FP and
    vector stores), else None."""
    word = int.from_bytes(raw[:4], order)
    op, rs = word >> 26, (word >> 21) & 31
    if (word >> 16) & 31 != 1:
        return None
    if op in (36, 37, 38, 39, 44, 45) or (op == 62 and word & 3 in (0, 1)):   # stw(u) stb(u) sth(u) std(u)
        return 1 << rs
    if op == 47:                                      # stmw
        return sum(1 << r for r in range(rs, 32))
    if op in (52, 53, 54, 55, 61) or (op == 62 and word & 3 == 2):           # stfs(u) stfd(u), DQ/DS vector, stq
        return 0
    if op == 31 and (word >> 1) & 0x3FF in _PPC_X_STORES:
        return 1 << rs if (word >> 1) & 0x3FF in _PPC_X_GPR_STORES else 0
    return None


ISA = Isa("powerpc", {EM_PPC: "EM_PPC", EM_PPC64: "EM_PPC64"}, _decoder, _classifier,
          dynamic_tags={EM_PPC: {DT_PPC_GOT: "PPC_GOT"}, EM_PPC64: {DT_PPC64_OPT: "PPC64_OPT"}},
          data_load=data_load, read_barrier=read_barrier, load_address=load_address, written=written,
          stack_store=stack_store)
