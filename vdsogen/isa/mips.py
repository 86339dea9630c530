"""MIPS (EM_MIPS): o32, n32 and n64, both byte orders.

Decoding: j and jal (within the 256 MiB region of the delay slot), b, the
conditional branches and their likely forms, bal and the other
branch-and-link forms; jr ends the flow.  Hot path: the counter read is
rdhwr of hardware register 2 (CP0 Count: the GIC counter is a plain load
and is not recognised, so a spec that reads it has no counter-clock
counts), the syscall syscall, the returns jr $ra (and jr.hb, and jalr
$zero, $ra).  Branches have a delay slot: its instruction runs (once,
counted with the branch) before the branch goes anywhere, also before jr
$ra returns, and the branch-likely forms run it only when taken.  A call
to the instruction after its delay slot, or over a few words of data to a
load from them through $ra (the entries of vdsogen's images and Linux's),
only reads the PC.  Audit rule K009: the seqcount is ordered by sync
(and its stypes that order loads).  Linux emits it only in kernels for
weakly ordered cores (CONFIG_WEAK_ORDERING: Octeon, Loongson-3); one image
of vdsogen's serves every core of its ABI.

ELF: MIPS64 splits r_info into a symbol index and three types.
"""

from vdsogen.isa.base import ByteOrder, CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, Classify, \
    Decode, Image, Insn, Isa, WordAt, fixed_width, sext, word_classifier

EM_MIPS = 8
PT_MIPS_REGINFO, PT_MIPS_RTPROC, PT_MIPS_OPTIONS, PT_MIPS_ABIFLAGS = 0x70000000, 0x70000001, 0x70000002, 0x70000003
# The processor dynamic tags of a MIPS vDSO: its GOT's shape, which the dynamic loader reads.
DT_MIPS = {0x70000001: "MIPS_RLD_VERSION", 0x70000005: "MIPS_FLAGS", 0x70000006: "MIPS_BASE_ADDRESS",
           0x7000000A: "MIPS_LOCAL_GOTNO", 0x70000011: "MIPS_SYMTABNO", 0x70000012: "MIPS_UNREFEXTNO",
           0x70000013: "MIPS_GOTSYM"}
PC_READ = 16      # how far past its return address a call over data may land


def mips_insn(word: int, addr: int) -> Insn:
    op = word >> 26
    rs, rt = (word >> 21) & 31, (word >> 16) & 31
    rel = addr + 4 + sext(word & 0xFFFF, 16) * 4
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


def mips_class(word: int) -> str:
    """The hot-path class of one instruction word."""
    if word & 0xFFE0FFFF == 0x7C00103B:                     # rdhwr rt, $2 (CP0 Count); sel 0
        return COUNTER
    if word & 0xFC00003F == 0x0000000C:                     # syscall code
        return SYSCALL
    if word & 0xFFFFF83F == 0x03E00008 or word & 0xFFFFF83F == 0x03E00009:   # jr $ra (.hb); jalr $zero, $ra
        return RETURN
    return OTHER


def branch_likely(word: int) -> bool:
    """A branch-likely: its delay slot runs only when the branch is taken."""
    op, rt = word >> 26, (word >> 16) & 31
    return op in (20, 21, 22, 23) or (op == 1 and rt in (2, 3))           # beql ... bgtzl; bltzl, bgezl


def loads_from_ra(word: int | None) -> bool:
    """Whether a word is lw, lwu or ld based on $ra: at the target of a call it
    reads the word after the delay slot, data (vdsogen's entries): the call reads the PC."""
    return word is not None and word >> 26 in (0x23, 0x27, 0x37) and (word >> 21) & 31 == 31


def call_reads_pc(target: int, after: int, word_at: WordAt) -> bool:
    """A call to `after` (past its delay slot), or over data to a load through $ra."""
    return target == after or (after < target <= after + PC_READ and loads_from_ra(word_at(target)))


def r_info(info: int, elf_class: int, endian: ByteOrder) -> tuple[int, int]:
    """(type, symbol) of r_info, read as one word in the file's byte order.

    MIPS64's is r_sym (4 bytes), r_ssym, r_type3, r_type2, r_type (a byte
    each) in file order; the three types make one number, r_type lowest."""
    if elf_class == 32:
        return info & 0xFF, info >> 8
    if endian == "big":
        return info & 0xFFFFFF, info >> 32
    return (info >> 56) | ((info >> 48) & 0xFF) << 8 | ((info >> 40) & 0xFF) << 16, info & 0xFFFFFFFF


def _decoder(img: Image) -> Decode:
    return fixed_width(mips_insn, img.code_endian)


def _classifier(img: Image) -> Classify:
    return word_classifier(mips_class, img.code_endian)


_MIPS_LOADS = {0x1A, 0x1B, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x30, 0x31, 0x34, 0x35, 0x37}


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """lb..lwu, ld, ldl/ldr, ll/lld, lwc1/ldc1; base neither $sp nor $ra (the
    entries' reads of a word of their own code, after a bal)."""
    word = int.from_bytes(raw[:4], order)
    return word >> 26 in _MIPS_LOADS and (word >> 21) & 31 not in (29, 31)


# sync stypes that order earlier loads before later ones: 0 (full), 0x10 (mb), 0x11 (acquire), 0x13 (rmb).
SYNC_ORDERS_LOADS = frozenset({0, 0x10, 0x11, 0x13})


def read_barrier(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    """sync of a type that orders earlier loads before later ones (SYNC_ORDERS_LOADS)."""
    word = int.from_bytes(raw[:4], order)
    return word & 0xFFFFF83F == 0x0000000F and (word >> 6) & 31 in SYNC_ORDERS_LOADS


def load_address(raw: bytes, mode: str | None, order: ByteOrder) -> tuple[int, int, int] | None:
    """A data load (data_load): base, offset and rt."""
    if not data_load(raw, mode, order, False):
        return None
    word = int.from_bytes(raw[:4], order)
    return (word >> 21) & 31, sext(word & 0xFFFF, 16), (word >> 16) & 31


def written(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    """The registers an instruction may write, as a mask: rd and rt of the register forms (SPECIAL,
    SPECIAL2, SPECIAL3: rdhwr), rt of the immediate ones and loads, $ra of the calls."""
    word = int.from_bytes(raw[:4], order)
    op, rt, rd = word >> 26, (word >> 16) & 31, (word >> 11) & 31
    if op in (0, 0x1C, 0x1F):
        return 1 << rd | 1 << rt | 1 << 31
    if 0x08 <= op <= 0x0F or 0x18 <= op <= 0x1B or 0x20 <= op <= 0x27 or 0x30 <= op <= 0x37:
        return 1 << rt
    if op == 3 or (op == 1 and rt & 0x10):            # jal; bltzal, bgezal (bal)
        return 1 << 31
    return 0


ISA = Isa("mips", {EM_MIPS: "EM_MIPS"}, _decoder, _classifier, r_info=r_info, delay_slots=True,
          branch_likely=branch_likely, call_reads_pc=call_reads_pc, dynamic_tags={EM_MIPS: DT_MIPS},
          read_barrier=read_barrier, load_address=load_address, written=written,
          # PT_NULL: GNU ld leaves an empty header behind on MIPS
          segment_types={EM_MIPS: frozenset({0, PT_MIPS_REGINFO, PT_MIPS_OPTIONS, PT_MIPS_ABIFLAGS})},
          data_load=data_load)
