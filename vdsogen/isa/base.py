"""What every ISA module provides, and the words the generic code speaks.

An ISA module (vdsogen/isa/NAME.py) describes one instruction set family
in an `ISA` object: the e_machine numbers it serves, how to decode one
instruction (for the code walk: vdsogen.elf.decode), how to classify one
(for hot-path counts: vdsogen.bench.hotpath), and the ELF facts that depend
on the machine (the byte order of code, the DT_HASH word, how r_info
splits).  vdsogen.isa finds the modules and keys them by e_machine; the
generic code asks the registry and never tests e_machine itself.

Nothing here imports the rest of vdsogen: the ELF reader depends on this
package, not the other way round.  An image is anything with the
attributes `Image` names (an ElfImage, or a test's stand-in).
"""

from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping, NamedTuple, Protocol

# What an instruction does to the flow (Insn.kind).
SEQ, CALL, JUMP, CJUMP, STOP = "seq", "call", "jump", "cjump", "stop"
# What an instruction is for the hot-path count (a classifier's answer).
OTHER, COUNTER, SYSCALL, RETURN, CRETURN = "other", "counter", "syscall", "return", "creturn"


ByteOrder = Literal["little", "big"]


class Insn(NamedTuple):
    length: int
    kind: str
    target: int | None = None
    mode: str | None = None     # ARM: the target's instruction set after BLX


class Image(Protocol):
    """What a decoder or a classifier reads of an image."""
    e_machine: int

    @property
    def code_endian(self) -> ByteOrder: ...


Code = bytes | bytearray | memoryview
# decode(code, index in code, address of code[index], mode) -> Insn, or None where nothing can be decoded.
Decode = Callable[[Code, int, int, str | None], Insn | None]


class Classify(Protocol):
    """classify(raw bytes of one instruction, mode) -> OTHER, COUNTER, SYSCALL,
    RETURN or CRETURN; mode is the decoder's (ARM: "thumb" for a Thumb one)."""
    def __call__(self, raw: bytes, mode: str | None = None) -> str: ...

# word_at(address) -> the 32-bit code word there, or None outside the code.
WordAt = Callable[[int], int | None]


def sext(value: int, bits: int) -> int:
    """`value`'s low `bits` bits as a signed number."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def fixed_width(insn: Callable[[int, int], Insn], order: ByteOrder) -> Decode:
    """A decoder for a fixed-width ISA of 32-bit words in byte order `order`:
    insn(word, address) decodes one word; None past the end of the code."""
    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        if i + 4 > len(code):
            return None
        return insn(int.from_bytes(code[i:i + 4], order), addr)
    return decode


def word_classifier(classify: Callable[[int], str], order: ByteOrder) -> Classify:
    """A classifier for a fixed-width ISA: classify(word) of the first 32-bit word."""
    return lambda raw, mode=None: classify(int.from_bytes(raw[:4], order))


def _same_endian(e_flags: int, endian: ByteOrder) -> ByteOrder:
    return endian


def _hash_word(elf_class: int) -> int:
    return 4


def gabi_r_info(info: int, elf_class: int, endian: ByteOrder) -> tuple[int, int]:
    """(type, symbol) of r_info as the gABI splits it."""
    if elf_class == 32:
        return info & 0xFF, info >> 8
    return info & 0xFFFFFFFF, info >> 32


def _plain_entry(value: int) -> tuple[int, str | None]:
    return value, None


def _call_to_next(target: int, after: int, word_at: WordAt) -> bool:
    return target == after


def _nothing_skipped(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    return 0


def _never(word: int) -> bool:
    return False


def _no_acquire(raw: bytes, mode: str | None, order: ByteOrder) -> bool:
    return False


def _writes_none(raw: bytes, mode: str | None, order: ByteOrder) -> int:
    return 0


def _no_pc_address(raw: bytes, mode: str | None, order: ByteOrder, addr: int) -> tuple[int, int] | None:
    return None


# load_address's base for a load of any form other than register plus constant.
OTHER_FORM = -1


@dataclass(frozen=True)
class Isa:
    """One instruction set family and the ELF facts of its machines.

    Required: name, machines, decoder, classifier.  The rest have the
    defaults of most machines; an ISA overrides only what differs."""
    name: str
    # e_machine -> its name as binutils spells it ("EM_ARM"); every machine the module serves.
    machines: Mapping[int, str]
    # decoder(image) -> Decode for the image's machine and code byte order.
    decoder: Callable[[Image], Decode]
    # classifier(image) -> Classify, the hot-path classes (counter read, syscall, return).
    classifier: Callable[[Image], Classify]
    # code_endian(e_flags, EI_DATA byte order) -> the byte order of instructions.
    code_endian: Callable[[int, ByteOrder], ByteOrder] = _same_endian
    # hash_word(ELF class) -> bytes of a DT_HASH word as the ABI's consumers read them.
    hash_word: Callable[[int], int] = _hash_word
    # r_info(r_info, ELF class, byte order) -> (relocation type, symbol index).
    r_info: Callable[[int, int, ByteOrder], tuple[int, int]] = gabi_r_info
    # entry(symbol value) -> (code address, decoder mode): ARM's Thumb bit.
    entry: Callable[[int], tuple[int, str | None]] = _plain_entry
    # Branches have a delay slot (MIPS): the next instruction runs first.
    delay_slots: bool = False
    # branch_likely(word): a branch whose delay slot runs only when taken.
    branch_likely: Callable[[int], bool] = _never
    # call_reads_pc(target, address after the call and its slot, word_at): a call
    # made only to read the PC, which returns nowhere.
    call_reads_pc: Callable[[int, int, WordAt], bool] = _call_to_next
    # cjump_skips(raw, mode, order): instructions a taken conditional jump passes over
    # that still run, as no-ops (Thumb's IT block).
    cjump_skips: Callable[[bytes, str | None, ByteOrder], int] = _nothing_skipped
    # data_load(raw, mode, code byte order, 64-bit x86) -> the instruction reads memory
    # other than the stack, as a vDSO reads its data page (audit rule K008); None: unknown.
    data_load: Callable[[bytes, str | None, ByteOrder, bool], bool] | None = None
    # Audit rule K009, the seqcount's load ordering, for an ISA that may reorder loads
    # (None: it keeps loads in order, as x86 and s390 do, and the rule does not apply).
    # read_barrier(raw, mode, code byte order): orders every earlier load before every later one.
    read_barrier: Callable[[bytes, str | None, ByteOrder], bool] | None = None
    # load_address(raw, mode, code byte order) -> (base register, offset, destination register)
    # of a data load (not from the stack, not from the code): the offset in bytes of a register
    # plus constant form; any other form is (OTHER_FORM, the instruction less its destination
    # registers, OTHER_FORM), equal only to the same form.  None for any other instruction.
    load_address: Callable[[bytes, str | None, ByteOrder], tuple[int, int, int] | None] | None = None
    # pc_address(raw, mode, code byte order, address) -> (register, value) of an instruction that
    # sets a register to an address relative to its own (auipc, adrp): a load right after it
    # through that register into that register reads a known address.
    pc_address: Callable[[bytes, str | None, ByteOrder, int], tuple[int, int] | None] = _no_pc_address
    # written(raw, mode, code byte order) -> the mask of the general registers the instruction may
    # write (more is safe: a load pairs only with a later one through the same unchanged base).
    written: Callable[[bytes, str | None, ByteOrder], int] = _writes_none
    # acquire_load(raw, mode, code byte order): a load that orders every later load after itself.
    acquire_load: Callable[[bytes, str | None, ByteOrder], bool] = _no_acquire
    # stack_store(raw, mode, code byte order) -> None when the instruction stores nothing to the
    # stack (through the stack or frame pointer, a push, a call's return address); else the mask
    # of the general registers whose values it stores there, as `written` numbers them (0: any
    # other value, a vector register's, an immediate).  None: not known for this ISA (audit rule
    # K010, getrandom's ChaCha20 never touches the stack, does not apply).
    stack_store: Callable[[bytes, str | None, ByteOrder], int | None] | None = None
    # e_machine -> {processor dynamic tag: name} a vDSO of that machine may carry (MIPS's GOT tags).
    dynamic_tags: Mapping[int, Mapping[int, str]] = field(default_factory=dict)
    # e_machine -> the processor program header types its vDSOs carry (ARM's PT_ARM_EXIDX).
    segment_types: Mapping[int, frozenset[int]] = field(default_factory=dict)


__all__ = ["ByteOrder", "SEQ", "CALL", "JUMP", "CJUMP", "STOP", "OTHER", "COUNTER", "SYSCALL", "RETURN", "CRETURN",
           "Insn", "Image", "Code", "Decode", "Classify", "WordAt", "Isa", "OTHER_FORM", "sext", "fixed_width",
           "word_classifier", "gabi_r_info"]
