"""The instruction decoder against an independent one: llvm-objdump-19.

vdsogen/elf/decode.py decodes just enough of x86 (i386, x86-64, x32),
arm64, arm and Thumb, powerpc, MIPS, RISC-V, s390x and LoongArch to follow
a vDSO's direct branches.  Here llvm-objdump disassembles the executable
sections of every image of the audit corpus (every one of those ABIs, both
byte orders where there are two), of vdsogen's own images and of one
branch-heavy image per ABI (BRANCHY_C), and at each address where it sees
an instruction the decoder must give the same length and, for a direct
branch or call, the same target; it must not see a branch where
llvm-objdump sees none.  The code walk the K rules use (decode.walk from
every function symbol) must land only on llvm-objdump's instruction
boundaries.  SNIPPETS are encodings the corpus lacks on which decode.py was
wrong until llvm-objdump showed it.

Not compared, because llvm-objdump's view there is not an instruction:
  * what it prints as data: `.word` and the like in ARM $d regions, and
    the bytes of an STT_OBJECT symbol in an executable section (ppc32's
    _GLOBAL_OFFSET_TABLE_ in .got);
  * what it cannot decode (`<unknown>`): the zero words padding ppc and
    s390x code, and `sigrie 1` (0x04170001), an R6 instruction lld fills
    the gaps between MIPS functions with, which LLVM does not decode for
    earlier ISAs.
One thing is compared that llvm-objdump does not print as a target: the
decoder treats a Thumb IT as a conditional jump past the instructions it
makes conditional (they may all be skipped); the end of the block is
counted in llvm-objdump's listing.
"""

import functools
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

import corpus as corpus_images
from conftest import IMAGES, TARGETS, image_path
from vdsogen.audit.rules.code import code_regions, entry_points
from vdsogen.elf import decode
from vdsogen.elf.consts import (EM_386, EM_AARCH64, EM_ARM, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64, EM_RISCV,
                                EM_S390, EM_X86_64)
from vdsogen.elf.reader import ElfImage
from vdsogen.isa import arm64, x86
from vdsogen.isa.sparc import EM_SPARC32PLUS, EM_SPARCV9
from vdsogen.spec.model import load_target

OBJDUMP = shutil.which("llvm-objdump-19") or "/usr/lib/llvm-19/bin/llvm-objdump"

ARM_COND = "(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
# Per machine, the mnemonics of the direct branches and calls llvm-objdump prints with their target.
BRANCHES = {
    EM_X86_64: r"j[a-z]+|call[lqw]?|loop[a-z]*",
    EM_AARCH64: r"b|bl|b\.[a-z]+|cbn?z|tbn?z",
    EM_ARM: rf"(b|bl|blx){ARM_COND}(\.w|\.n)?|cbn?z",
    EM_PPC64: r"b[a-z]*[+-]?",
    EM_MIPS: r"b|bal|beql?|bnel?|beqzl?|bnezl?|blezl?|bgtzl?|bltzl?|bgezl?|bltzall?|bgezall?|j|jal",
    EM_RISCV: r"j|jal|c\.j|c\.jal|beqz?|bnez?|bltu?|bgeu?|blez|bgez|bltz|bgtz|bgtu?|bleu?|c\.beqz|c\.bnez",
    EM_S390: r"j[a-z]*|bras|brasl|brcl?|brctg?|c[lg]*[ri]j[a-z]*",
    EM_LOONGARCH: r"b|bl|beqz|bnez|bceqz|bcnez|beq|bne|blt|bge|bltu|bgeu",
    # ba, bne, fbne, brnz..., with ,a and ,pt/,pn; not bn and fbn (never taken).
    EM_SPARCV9: r"call|(?!f?bn(,|$))(b|fb|br)[a-z]*(,a)?(,p[nt])?",
}
BRANCHES[EM_386] = BRANCHES[EM_X86_64]
BRANCHES[EM_PPC] = BRANCHES[EM_PPC64]
BRANCHES[EM_SPARC32PLUS] = BRANCHES[EM_SPARCV9]
BRANCH_RE = {m: re.compile(f"({r})$") for m, r in BRANCHES.items()}
IT = re.compile(r"it[te]{0,3}$")
X86_PREFIXES = {"lock", "rep", "repe", "repz", "repne", "repnz", "bnd", "notrack", "addr16", "addr32", "data16",
                "data32", "xacquire", "xrelease"}
LINE = re.compile(r"\s*([0-9a-f]+):\s(.*)$")
COMMENT = re.compile(r"\s*<.*$|\s+(#|@|//)\s.*$")     # a symbolized target, an x86/ARM/AArch64 comment


@functools.lru_cache(maxsize=None)
def objdump(path):
    """{address: (length, mnemonic, operands)} of every instruction llvm-objdump-19 -d prints."""
    # -z: runs of zero bytes too (MIPS delay-slot nops), which it would print as "...".
    proc = subprocess.run([OBJDUMP, "-d", "-z", str(path)], capture_output=True, text=True, check=True)
    out = {}
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        raw, tab, text = m.group(2).partition("\t")
        if not tab:                 # the bytes of an STT_OBJECT symbol (ppc32's GOT in .got), shown as data
            out[int(m.group(1), 16)] = (0, ".data", "")
            continue
        mnemonic, _, operands = text.strip().replace("\t", " ").partition(" ")
        while mnemonic in X86_PREFIXES and operands.strip():          # "repne  jmp 0x39": the prefix, then the rest
            mnemonic, _, operands = operands.strip().partition(" ")
        out[int(m.group(1), 16)] = (sum(len(h) for h in raw.split()) // 2, mnemonic, operands.strip())
    return out


def prefetch(paths):
    """Run llvm-objdump on many images at once (one process per CPU)."""
    with ThreadPoolExecutor() as pool:
        list(pool.map(objdump, paths))


def objdump_target(img, addr, mnemonic, operands):
    """The target llvm-objdump gives a direct branch at addr, or None."""
    if not BRANCH_RE[img.e_machine].match(mnemonic):
        return None
    operands = COMMENT.sub("", operands).split(",")
    if img.e_machine == EM_S390 and mnemonic in ("brc", "brcl") and operands[0].strip() == "0":
        return None                                     # mask 0: never taken, a nop
    last = operands[-1].strip()
    if img.e_machine in (EM_SPARCV9, EM_SPARC32PLUS) and re.fullmatch(r"-?[0-9]+", last):
        # SPARC prints call's displacement in bytes, signed, and a branch's field in words, unsigned:
        # 16 bits for one on a register, 19 on %icc/%xcc/%fccN (V9's predicted forms), else 22.
        if mnemonic == "call":
            return addr + int(last)
        bits = 16 if mnemonic.startswith("br") else \
            19 if len(operands) > 1 and operands[0].strip().startswith(("%icc", "%xcc", "%fcc")) else 22
        value = int(last)
        return addr + (value - (1 << bits) if value >> (bits - 1) else value) * 4
    if img.e_machine == EM_LOONGARCH:                   # LoongArch prints the offset, not the address
        return addr + int(last, 0) if re.fullmatch(r"-?(0x)?[0-9a-f]+", last) else None
    return int(last, 16) if re.fullmatch(r"0x[0-9a-f]+", last) else None


def arm_modes(img):
    """[(address, "arm" | "thumb" | "data")] from the ARM mapping symbols, sorted."""
    kinds = {"a": "arm", "t": "thumb", "d": "data"}
    return sorted((s.value, kinds[s.name[1]]) for s in img.symtab
                  if s.name[:1] == "$" and s.name[1:2] in kinds and s.name[2:3] in ("", "."))


def mode_at(modes, addr):
    mode = "arm"
    for start, kind in modes:
        if start > addr:
            break
        mode = kind
    return mode


def disagreements(path):
    """Every place where decode.py and llvm-objdump disagree, as text."""
    img = ElfImage(path)
    decoder = decode.decoder_for(img)
    assert decoder is not None, f"{path}: no decoder for e_machine {img.e_machine}"
    insns = objdump(path)
    modes = arm_modes(img) if img.e_machine == EM_ARM else []
    mask = (1 << img.elf_class) - 1
    regions = code_regions(img)
    problems = []
    compared = 0
    for start, code, _off in regions:
        for addr in sorted(a for a in insns if start <= a < start + len(code)):
            length, mnemonic, operands = insns[addr]
            mode = mode_at(modes, addr) if modes else None
            if mnemonic == "<unknown>" or mnemonic.startswith(".") or mode == "data":
                continue
            ours = decoder(code, addr - start, addr, mode)
            where = f"0x{addr:x} ({mnemonic} {operands})"
            if IT.match(mnemonic) and mode == "thumb":
                # An IT block's instructions may all be skipped: the decoder gives the address
                # after them as a conditional jump's target; count them in llvm-objdump's listing.
                theirs = addr + length
                for _ in range(len(mnemonic) - 1):
                    theirs += insns.get(theirs, (2,))[0]
            else:
                theirs = objdump_target(img, addr, mnemonic, operands)
            if ours is None:
                problems.append(f"{where}: the decoder cannot decode it")
                continue
            compared += 1
            if ours.length != length:
                problems.append(f"{where}: length {ours.length}, llvm-objdump {length}")
            target = ours.target & mask if ours.kind in (decode.CALL, decode.JUMP, decode.CJUMP) else None
            if target != (None if theirs is None else theirs & mask):
                problems.append(f"{where}: {ours.kind} target {target if target is None else hex(target)}, "
                                f"llvm-objdump {theirs if theirs is None else hex(theirs)}")
    assert compared, f"{path}: llvm-objdump shows no instruction the decoder could be compared on"
    index = decode.Regions([(a, code) for a, code, _o in regions])
    for addr, insn, _raw in decode.walk(img, index, entry_points(img, index)):
        if addr not in insns:
            problems.append(f"the code walk reaches 0x{addr:x} ({insn.kind}), inside an instruction of llvm-objdump's")
    return problems


# The corpus's own code (a helper and its callers) has conditional branches only on x86, and
# vdsogen's images cover x86_64, arm64 and ppc64le.  So, per ABI and byte order, one more image:
# a corpus recipe plus a function of loops, tests, bit tests, unsigned compares, a countdown and
# a block long enough for the long forms of conditional branches (Thumb b<cond>.w, RVC beyond
# c.beqz's reach, x86 jcc rel32).
BRANCHY_C = r"""
#define R4(x) x x x x
#define R64(x) R4(R4(R4(x)))
long vdso_branchy(long a, long b);
long vdso_branchy(long a, long b)
{
	volatile long v = a;
	long s = 0;
	unsigned long u = (unsigned long)b;

	for (long i = 0; i < a; i++) {
		if (i & 1)
			s += b;
		else
			s ^= i;
		if (s > 1000)
			break;
		if (!s)
			continue;
		if (s & 8)
			s -= 3;
		if (u < (unsigned long)s)
			u += 5;
	}
	if (a > b) {
		R64(v = v * 3 + b;)
	}
	switch (b) {
	case 1: s += 7; break;
	case 5: s *= 3; break;
	case 9: s -= a; break;
	default: s += vdso_helper(a, b, s);
	}
	for (unsigned long n = u & 15; n; n--)
		s += n;
	return s + v + (long)u;
}
"""
BRANCHY = ["x86_64", "x32", "i386", "arm64", "arm64-be", "arm", "arm-be", "arm64-compat", "mips-o32", "mips-o32-be",
           "mips-n32", "mips-n32-be", "mips-n64", "mips-n64-be", "ppc32", "ppc64", "ppc64le", "riscv64", "s390x",
           "loongarch64"]
# A stripped ARM image has lost its mapping symbols: nothing tells its
# literal words from Thumb code, for llvm-objdump or the decoder.  Its
# unstripped twin, the same code, is compared instead.
STRIPPED_ARM = {f"vdsogen:{t}.so" for t in TARGETS if load_target(t).elf.machine_name == "EM_ARM"}
# llvm-objdump has no SuperH and no PA-RISC: their decoders are held to GNU objdump (test_new_abis_a.py,
# test_new_abis_b.py).
NO_LLVM = {f"vdsogen:{t}.{k}" for t in TARGETS if load_target(t).elf.machine_name in ("EM_SH", "EM_PARISC")
           for k in ("so", "dbg")}
ALL = [i for i in IMAGES if i not in STRIPPED_ARM | NO_LLVM] + [f"branchy:{name}" for name in BRANCHY]


def build_branchy(name, workdir):
    recipe = corpus_images.RECIPES[name]
    return corpus_images.build(replace(recipe, name=f"{name}-branchy", extra_c=BRANCHY_C, expect={}), workdir)


@pytest.fixture(scope="module")
def all_images(corpus, built, tmp_path_factory):
    paths = {spec: image_path(spec, corpus, built) for spec in IMAGES if spec not in NO_LLVM}
    workdir = tmp_path_factory.mktemp("branchy")
    with ThreadPoolExecutor() as pool:
        paths.update(zip([f"branchy:{n}" for n in BRANCHY], pool.map(lambda n: build_branchy(n, workdir), BRANCHY)))
    prefetch(list(paths.values()))
    return paths


@pytest.mark.parametrize("spec", ALL)
def test_decoder_agrees_with_llvm_objdump(spec, all_images):
    problems = disagreements(all_images[spec])
    assert not problems, f"{spec}: decode.py and llvm-objdump disagree:\n" + "\n".join(problems[:20])


def test_every_decoder_is_compared(all_images):
    machines = {ElfImage(p).e_machine for p in all_images.values()}
    assert machines == set(BRANCHES), sorted(set(BRANCHES) - machines)


# -- encodings the corpus lacks, each once wrong in decode.py ---------------------------------------

SNIPPETS = {
    # Power ISA 3.1 prefixed instructions are 8 bytes: paddi, pld (ppc64le libm has them).
    "ppc64le": ("powerpc64le-linux-gnu", "", ".long 0x06000000, 0x38600001; .long 0x04100000, 0xe4600010; blr"),
    # LoongArch LBT jiscr0/jiscr1 share bceqz's opcode: jumps through a scratch register.
    "loongarch64": ("loongarch64-linux-gnu", "", "beqz $a0, 8; .word 0x48006600; .word 0x48006700"),
    # i386: after 0x66, jcc has a rel16; after 0x67, a VEX instruction has 16-bit addressing.
    "i386": ("i386-linux-gnu", "", ".byte 0x66, 0x0f, 0x84, 0x02, 0x00; nop; nop; "
                                   ".byte 0x67, 0xc5, 0xc9, 0x5f, 0x3e, 0xab, 0x2f; ret"),
    # x86-64: llvm-objdump decodes a lock that begins an instruction, and an F2/F3 that is
    # xacquire/xrelease, as instructions of their own (the robust-futex unlock's lock cmpxchg).
    "x86_64": ("x86_64-linux-gnu", "", ".byte 0xf0, 0x0f, 0xb1, 0x0f; .byte 0x66, 0xf0, 0x0f, 0xb1, 0x0f; "
                                       ".byte 0xf2, 0xf0, 0x83, 0x00, 0x01; .byte 0x66, 0xf3, 0xf0, 0x83, 0x00, 0x01; "
                                       ".byte 0xf3, 0x89, 0x07; .byte 0xf3, 0x90; .byte 0xf3, 0x48, 0xa5; ret"),
    # Thumb: after IT the flow goes on past a conditional return (bxeq, popgt).
    "thumb": ("armv7a-linux-gnueabi", ".syntax unified; .thumb; .thumb_func",
              "cmp r0, #0; it eq; bxeq lr; itte ne; movne r0, #1; addne.w r1, r1, #300; moveq r0, #3; "
              "it gt; popgt {r4, pc}; beq.w f; bx lr"),
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_encodings_the_corpus_lacks(name, tmp_path):
    """Code decode.py once got wrong (llvm-objdump showed it): it must agree now,
    and the walk from f must reach every instruction."""
    triple, head, body = SNIPPETS[name]
    src, obj = tmp_path / "f.s", tmp_path / "f.o"
    lines = [".text", ".p2align 2", ".globl f", ".type f, %function", *head.split("; "), "f:", *body.split("; "),
             ".size f, .-f"]
    src.write_text("".join(f"\t{line}\n" if line != "f:" else "f:\n" for line in lines if line))
    subprocess.run(["clang-19", f"--target={triple}", "-c", str(src), "-o", str(obj)], check=True)
    problems = disagreements(obj)
    assert not problems, problems
    img = ElfImage(obj)
    index = decode.Regions([(a, code) for a, code, _o in code_regions(img)])
    reached = {addr for addr, _insn, _raw in decode.walk(img, index, entry_points(img, index))}
    assert reached == set(objdump(obj)), [hex(a) for a in sorted(set(objdump(obj)) - reached)]


# -- the comparison can fail ------------------------------------------------------------------

def test_a_wrong_length_is_caught(all_images, monkeypatch):
    """x86: a decoder that forgets jmp rel8's immediate byte."""
    monkeypatch.setattr(x86, "X86_IMM8", x86.X86_IMM8 - {0xEB})
    problems = disagreements(all_images["corpus:x86_64"])
    assert any("jmp" in p and "length 1, llvm-objdump 2" in p for p in problems), problems


def test_a_wrong_target_is_caught(all_images, monkeypatch):
    """arm64: a decoder whose B/BL targets are one instruction off."""
    real = arm64.arm64_insn

    def off_by_one(word, addr):
        insn = real(word, addr)
        return insn._replace(target=insn.target + 4) if word & 0x7C000000 == 0x14000000 else insn
    monkeypatch.setattr(arm64, "arm64_insn", off_by_one)
    problems = disagreements(all_images["corpus:arm64"])
    assert any("target" in p for p in problems), problems
