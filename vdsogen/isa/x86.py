"""x86: i386 (EM_386), x86-64 and x32 (EM_X86_64: x32 images are ELF32 with 64-bit code).

Decoding: the length of every instruction (prefixes, REX, VEX/EVEX, ModRM,
SIB, displacement, immediates) and the direct branches: call and jmp rel,
jcc, loop and jcxz.  Hot path: the counter reads are rdtsc and rdtscp, the
syscalls syscall, sysenter and int $0x80, the return ret.
"""

from vdsogen.isa.base import CALL, CJUMP, COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, SYSCALL, ByteOrder, Classify, Code, \
    Decode, Image, Insn, Isa, sext

EM_386, EM_X86_64 = 3, 62


def _set(*ranges: int | range) -> set[int]:
    out: set[int] = set()
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


def _modrm_len(code: Code, i: int, addr32: bool, long_mode: bool) -> int:
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


def _prefix_alone(code: Code, i: int, start: int) -> bool:
    """The prefix at code[i] ends an instruction of its own, as LLVM's disassembler
    (llvm-objdump) decodes it: a lock (F0) that is the instruction's first byte
    (`lock` then `cmpxchgl ...`), and an F2/F3 that is xacquire/xrelease (before a
    lock, an xchg, or F3 before a mov to memory), with the prefixes before it."""
    byte = code[i]
    if byte == 0xF0:
        return i == start
    if byte not in (0xF2, 0xF3) or i + 1 >= len(code):
        return False
    nxt = code[i + 1]
    if nxt == 0xF0 or nxt & 0xFE == 0x86 or (nxt & 0xF8 == 0x90 and not (byte == 0xF3 and nxt == 0x90)):
        return True
    return byte == 0xF3 and nxt in (0x88, 0x89, 0xC6, 0xC7)


def x86_insn(code: Code, i: int, addr: int, long_mode: bool) -> Insn | None:
    """The instruction at code[i] (address addr); None for one invalid in 64-bit code.
    IndexError or KeyError where it runs past the code."""
    start = i
    opsize16 = addr16 = False
    rex_w = False
    while code[i] in X86_PREFIXES:
        if _prefix_alone(code, i, start):
            return Insn(i + 1 - start, SEQ)
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
    modrm = code[i] if op in X86_MODRM else 0
    if op in X86_MODRM:
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
        return Insn(length, JUMP, addr + length + sext(code[i - 1], 8))
    if 0x70 <= op <= 0x7F or 0xE0 <= op <= 0xE3:
        return Insn(length, CJUMP, addr + length + sext(code[i - 1], 8))
    if op in (0xC2, 0xC3, 0xCA, 0xCB, 0xCF, 0xF4, 0xCC):
        return Insn(length, STOP)
    if op == 0xFF and (modrm >> 3) & 7 in (4, 5):
        return Insn(length, STOP)
    return Insn(length, SEQ)


def x86_class(raw: bytes, long_mode: bool) -> str:
    """The hot-path class of one instruction."""
    i = 0
    while i < len(raw) and (raw[i] in X86_PREFIXES or (long_mode and 0x40 <= raw[i] <= 0x4F)):
        i += 1
    op = bytes(raw[i:i + 3])
    if op[:2] == b"\x0f\x31" or op == b"\x0f\x01\xf9":     # rdtsc, rdtscp
        return COUNTER
    if op[:2] in (b"\x0f\x05", b"\x0f\x34", b"\xcd\x80"):   # syscall, sysenter, int $0x80
        return SYSCALL
    if op[:1] in (b"\xc3", b"\xc2"):                        # ret, ret imm16
        return RETURN
    return OTHER


def _decoder(img: Image) -> Decode:
    long_mode = img.e_machine == EM_X86_64

    def decode(code: Code, i: int, addr: int, mode: str | None) -> Insn | None:
        try:
            return x86_insn(code, i, addr, long_mode)
        except (IndexError, KeyError):
            return None
    return decode


def _classifier(img: Image) -> Classify:
    long_mode = img.e_machine == EM_X86_64
    return lambda raw, mode=None: x86_class(raw, long_mode)


def _x86_modrm_load(raw: bytes, i: int, rex_b: bool) -> bool:
    """The ModRM at raw[i] names memory, and not through the stack pointer."""
    if i >= len(raw) or raw[i] >> 6 == 3:
        return False
    if raw[i] & 7 == 4 and i + 1 < len(raw):                 # SIB: base esp/rsp (r12 with REX.B)
        return raw[i + 1] & 7 != 4 or rex_b
    return True


def data_load(raw: bytes, mode: str | None, order: ByteOrder, long_mode: bool) -> bool:
    """A one-byte or 0F opcode with a memory ModRM operand that it reads (not
    lea, not the stores mov/movb, not the hint nops), or a moffs load."""
    i, rex_b = 0, False
    while i < len(raw) and (raw[i] in X86_PREFIXES or (long_mode and 0x40 <= raw[i] <= 0x4F)):
        rex_b = long_mode and 0x40 <= raw[i] <= 0x4F and bool(raw[i] & 1)
        i += 1
    if i + 1 >= len(raw):
        return False
    op = raw[i]
    if op == 0x0F:
        op2 = raw[i + 1]
        if op2 in X86_0F_NO_MODRM or 0x18 <= op2 <= 0x1F or op2 in (0x38, 0x3A):
            return False
        return _x86_modrm_load(raw, i + 2, rex_b)
    if op in (0xA0, 0xA1):
        return True
    if op not in X86_MODRM or op in (0x88, 0x89, 0x8D, 0xC6, 0xC7):
        return False
    return _x86_modrm_load(raw, i + 1, rex_b)




# Opcodes whose ModRM memory operand they write: mov, the ALU ops but cmp,
# xchg, and (with the ModRM reg field they need) the immediate ALU group,
# inc/dec, not/neg, the shifts; 0F: setcc, bts/btr/btc, cmpxchg, xadd, the SSE stores.
X86_STORES = {0x00, 0x01, 0x08, 0x09, 0x10, 0x11, 0x18, 0x19, 0x20, 0x21, 0x28, 0x29, 0x30, 0x31, 0x86, 0x87,
              0x88, 0x89, 0xC0, 0xC1, 0xD0, 0xD1, 0xD2, 0xD3}
X86_STORES_REG = {0x80: range(7), 0x81: range(7), 0x83: range(7), 0xC6: (0,), 0xC7: (0,), 0xFE: (0, 1),
                  0xFF: (0, 1), 0xF6: (2, 3), 0xF7: (2, 3)}
X86_0F_STORES = _set(range(0x90, 0xA0), 0xAB, 0xB3, 0xBB, 0xB0, 0xB1, 0xC0, 0xC1, 0x11, 0x13, 0x17, 0x29, 0x2B,
                     0x7E, 0x7F, 0xD6, 0xE7, 0xC3)


def store_targets(img: Image, code: Code, addr: int) -> list[tuple[int, int | None]]:
    """(address, target) of every instruction in `code` (at `addr`) that
    writes memory other than the stack: the target of a RIP-relative
    operand (64-bit code) or an absolute one (32-bit code), else None
    (through a register, or a string store).  A linear sweep; VEX-encoded
    stores are not recognised."""
    long_mode = img.e_machine == EM_X86_64
    out: list[tuple[int, int | None]] = []
    i = 0
    while i < len(code):
        try:
            insn = x86_insn(code, i, addr + i, long_mode)
        except (IndexError, KeyError):
            break
        if insn is None:
            i += 1
            continue
        raw = bytes(code[i:i + insn.length])
        target = _store(raw, addr + i, long_mode)
        if target is not False:
            out.append((addr + i, target))
        i += insn.length
    return out


def _store(raw: bytes, at: int, long_mode: bool) -> int | None | bool:
    """The target the instruction writes (None: unknown), or False for no store or a stack one."""
    j, rex_b = 0, False
    while j < len(raw) and (raw[j] in X86_PREFIXES or (long_mode and 0x40 <= raw[j] <= 0x4F)):
        rex_b = long_mode and 0x40 <= raw[j] <= 0x4F and bool(raw[j] & 1)
        j += 1
    if j >= len(raw):
        return False
    op = raw[j]
    if op in (0xA4, 0xA5, 0xAA, 0xAB):                       # movs, stos: through rdi
        return None
    if op == 0x0F:
        if j + 2 >= len(raw) or raw[j + 1] not in X86_0F_STORES:
            return False
        m = j + 2
    elif op in X86_STORES or (op in X86_STORES_REG and j + 1 < len(raw)
                              and (raw[j + 1] >> 3) & 7 in X86_STORES_REG[op]):
        m = j + 1
    else:
        return False
    if m >= len(raw) or raw[m] >> 6 == 3:
        return False                                          # a register operand
    modrm = raw[m]
    mod, rm = modrm >> 6, modrm & 7
    if mod == 0 and rm == 5:                                  # RIP-relative (64-bit), absolute (32-bit)
        disp = int.from_bytes(raw[m + 1:m + 5], "little", signed=True)
        return at + len(raw) + disp if long_mode else disp & 0xFFFFFFFF
    if rm == 4 and m + 1 < len(raw) and raw[m + 1] & 7 == 4 and not rex_b:
        return False                                          # SIB base rsp: the stack
    if rm == 5 and not rex_b:
        return False                                          # rbp-based: the frame
    return None


def _stack_based(raw: bytes, m: int, rex_b: bool) -> bool:
    """The ModRM at raw[m] names memory based on the stack or frame pointer (esp/rsp, ebp/rbp)."""
    if m >= len(raw) or raw[m] >> 6 == 3:
        return False
    mod, rm = raw[m] >> 6, raw[m] & 7
    if rm == 4 and m + 1 < len(raw):
        base = raw[m + 1] & 7
        return not rex_b and (base == 4 or (base == 5 and mod != 0))
    return rm == 5 and mod != 0 and not rex_b


def stack_store(raw: bytes, mode: str | None, order: ByteOrder) -> int | None:
    """push, pushf, enter, call (the return address), and the stores (legacy and VEX-encoded)
    through the stack or frame pointer: 0 (register values are not told apart here), else None."""
    j, rex_b = 0, False
    while j < len(raw) and (raw[j] in X86_PREFIXES or 0x40 <= raw[j] <= 0x4F):
        rex_b = 0x40 <= raw[j] <= 0x4F and bool(raw[j] & 1)
        j += 1
    if j >= len(raw):
        return None
    op = raw[j]
    if 0x50 <= op <= 0x57 or op in (0x68, 0x6A, 0x9C, 0xC8, 0xE8, 0x9A):
        return 0
    if op == 0xFF and j + 1 < len(raw) and (raw[j + 1] >> 3) & 7 in (2, 3, 6):   # call, lcall, push r/m
        return 0
    if op in (0xC4, 0xC5) and j + 2 < len(raw):                # VEX: map 1 stores
        rex_b = op == 0xC4 and not raw[j + 1] & 0x20
        if op == 0xC4 and raw[j + 1] & 0x1F != 1:
            return None
        k = j + (3 if op == 0xC4 else 2)
        return 0 if k + 1 < len(raw) and raw[k] in X86_0F_STORES and _stack_based(raw, k + 1, rex_b) else None
    if op == 0x0F:
        m = j + 2
        if j + 1 >= len(raw) or raw[j + 1] not in X86_0F_STORES:
            return None
    elif op in X86_STORES or (op in X86_STORES_REG and j + 1 < len(raw)
                              and (raw[j + 1] >> 3) & 7 in X86_STORES_REG[op]):
        m = j + 1
    else:
        return None
    return 0 if _stack_based(raw, m, rex_b) else None


ISA = Isa("x86", {EM_386: "EM_386", EM_X86_64: "EM_X86_64"}, _decoder, _classifier,
          data_load=data_load, stack_store=stack_store)
