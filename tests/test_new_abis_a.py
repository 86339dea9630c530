"""Linux ABIs added for issue 25 (riscv32; SuperH for audit): what the generic tables of
tests/test_targets.py and tests/test_golden.py do not say.

riscv32 is Linux 6.17's vDSO of an rv32 kernel: the signal trampoline,
getcpu, flush_icache and hwprobe, with no time function (Linux builds the
generic ones for rv64 only); its harness is freestanding (no rv32 libc or
gcc in Debian), so no libgcc unwinder proves the trampoline's CFI by
unwinding: the CFI is checked here against the rv32 frame as Linux lays it
out, and the words by `check` (T001) and the harness.
"""

import json
import re
import subprocess

import pytest
from elftools.dwarf.callframe import CIE, FDE

from conftest import breg, dynsym, elf, vdsogen
from vdsogen.elf import decode
from vdsogen.elf.reader import ElfImage
from vdsogen.isa import for_machine, riscv
from vdsogen.isa.base import CALL, CJUMP, JUMP, SEQ, STOP

# rv32's struct rt_sigframe: 128 bytes of siginfo, then the ucontext, whose
# uc_mcontext (at 160: 4 + 4 + 12 + 8 + 120 bytes, 16-aligned) starts with
# pc, x1 ... x31, 4 bytes each.
REGS32 = 128 + 160
PC_COLUMN = 64


def test_riscv32_export_set_of_linux_6_17(built):
    _, so, _ = built("riscv32")
    e = elf(so)
    assert (e.elfclass, e.header.e_machine, e.header.e_flags) == (32, "EM_RISCV", 1)
    syms = {n: s for n, s in dynsym(so).items() if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] == "STT_FUNC"}
    assert set(syms) == {"__vdso_rt_sigreturn", "__vdso_getcpu", "__vdso_flush_icache", "__vdso_riscv_hwprobe"}
    assert not [s.name for s in e.iter_sections() if s["sh_type"] in ("SHT_REL", "SHT_RELA")]


def test_riscv32_trampoline_cfi_reads_the_rv32_frame(built):
    """The CFA is the ucontext's sp (x2, at REGS32 + 8), every register
    x1-x31 and the pc a word of 4 bytes from REGS32: rv64's offsets (304,
    8 bytes a register) would unwind into the reserved space."""
    _, so, _ = built("riscv32")
    start = dynsym(so)["__vdso_rt_sigreturn"]["st_value"]
    fdes = [f for f in elf(so).get_dwarf_info().EH_CFI_entries() if isinstance(f, FDE)
            and f.header["initial_location"] <= start - 1 < f.header["initial_location"] + f.header["address_range"]]
    assert len(fdes) == 1
    fde = fdes[0]
    assert isinstance(fde.cie, CIE) and "S" in fde.cie.header["augmentation"].decode()
    cfa = [i for i in fde.instructions if i.opcode == 0x0f]
    regs = {i.args[0]: breg(i.args[1], 2) for i in fde.instructions if i.opcode == 0x10}
    assert len(cfa) == 1 and breg(cfa[0].args[0], 2) == (REGS32 + 4 * 2, [0x06]), cfa
    assert regs == {PC_COLUMN: (REGS32, []), **{n: (REGS32 + 4 * n, []) for n in range(1, 32)}}, regs


def test_riscv32_hwprobe_reads_pairs_as_words(built):
    """hwprobe's pairs are two 64-bit words: rv32 code reads and writes them
    as 32-bit halves (lw/sw), with no rv64 instruction (ld/sd), and the key's
    high half decides a negative or huge key."""
    _, so, _ = built("riscv32")
    out = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", str(so)], capture_output=True,
                         text=True, check=True).stdout
    body = out.split("<__vdso_riscv_hwprobe>:")[1].split("\n\n")[0]
    ops = [line.split("\t")[1] if "\t" in line else "" for line in body.splitlines()[1:]]
    assert "ld" not in ops and "sd" not in ops, body
    assert ops.count("lw") >= 4 and "sw" in ops, body


def test_rv32_c_jal_is_a_call(tmp_path):
    """RV32's c.jal (quadrant 1, funct3 1) is RV64's c.addiw: in an
    ELFCLASS32 image the walk must follow it to its target."""
    src, so = tmp_path / "f.s", tmp_path / "f.so"
    src.write_text("\t.text\n\t.globl f\nf:\n\tmv t0, ra\n\tc.jal g\n\tmv ra, t0\n\tret\ng:\n\tc.li a0, 1\n\tret\n")
    subprocess.run(["clang-19", "--target=riscv32-linux-gnu", "-march=rv32imac", "-nostdlib", "-shared",
                    "--ld-path=/usr/bin/ld.lld-19", str(src), "-o", str(so)], check=True)
    img = ElfImage(so)
    text = img.section(".text")
    code, at = img.data[text.offset:text.offset + text.size], text.addr
    assert riscv.riscv_insn(code, 2, at + 2, rv32=True)[:3] == (2, CALL, at + 8)   # g, after c.mv, c.jal, c.mv, c.jr
    assert riscv.riscv_insn(code, 2, at + 2).kind == SEQ            # c.addiw on RV64
    index = decode.Regions([(at, code)])
    reached = {addr for addr, _insn, _raw in decode.walk(img, index, [(at, None)])}
    assert {at + 8, at + 10} <= reached, sorted(reached)


def test_audit_knows_riscv32(built, tmp_path):
    """An rv32 image is riscv32 to audit (its catalogue entry), not an unknown ABI (H010)."""
    _, so, _ = built("riscv32")
    r = vdsogen("audit", "--format=json", str(so))
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"riscv32"' in r.stdout and "H010" not in r.stdout


def test_vdsogen_run_riscv32(built, tmp_path):
    """`vdsogen run` maps the riscv32 image for the freestanding probe: it
    sees the image (its build-id), and, the image having no clock_gettime as
    on Linux, each clock read is a clock_gettime64 syscall, counted as
    clock_gettime from qemu's log."""
    _, so, _ = built("riscv32")
    counts = tmp_path / "counts"
    r = vdsogen("run", "--arch=riscv32", f"--image={so}", f"--syscall-counts={counts}", "--", "vdsogen-probe")
    assert r.returncode == 0, r.stderr
    build_id = next(bytes(n.desc).hex() for n in ElfImage(str(so)).notes if n.name == "GNU" and n.type == 3)
    assert f"probe.build-id {build_id}\n" in r.stdout, r.stdout
    clocks = {int(line.split()[1]) for line in counts.read_text().splitlines() if line.startswith("clock_gettime ")}
    assert {0, 1, 4, 5, 6, 7, 11} <= clocks, counts.read_text()


# --- SuperH (sh4, sh4eb): the ABI catalogue and ISA module, for audit ------------------------

SH_BRANCHY = """\t.text
\t.globl f
f:
\tbt\t1f
\tbf\t2f
\tbt/s\t3f
\tnop
\tbf/s\t1f
\tnop
\tbsr\tg
\tnop
1:\tbra\t2f
\tnop
2:\ttrapa\t#0x10
\tjsr\t@r1
\tnop
\tbraf\tr2
\tnop
3:\tjmp\t@r3
\tnop
g:\trts
\tnop
"""


@pytest.mark.parametrize("big", [False, True])
def test_sh_decoder_agrees_with_gnu_objdump(big, tmp_path):
    """Every branch's kind and target as binutils prints them, in either byte order; the walk
    from f reaches every instruction but the slots after bra, braf, jmp and rts (llvm-objdump
    has no SuperH)."""
    src, obj = tmp_path / "t.s", tmp_path / "t.o"
    src.write_text(SH_BRANCHY)
    subprocess.run(["sh4-linux-gnu-as", *(["-big"] if big else []), str(src), "-o", str(obj)], check=True)
    dis = subprocess.run(["sh4-linux-gnu-objdump", "-d", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    want = {}
    for line in dis.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(?:[0-9a-f]{2} ){2}\s*(\S+)\s*(\S*)", line)
        if m:
            want[int(m.group(1), 16)] = (m.group(2), m.group(3))
    img = ElfImage(obj)
    assert img.code_endian == ("big" if big else "little")
    text = img.section(".text")
    code = img.data[text.offset:text.offset + text.size]
    kinds = {"bt": CJUMP, "bf": CJUMP, "bt.s": CJUMP, "bf.s": CJUMP, "bra": JUMP, "bsr": CALL,
             "rts": STOP, "jmp": STOP, "braf": STOP}
    decode_one = for_machine(img.e_machine).decoder(img)
    for addr, (mnemonic, operand) in want.items():
        insn = decode_one(code, addr, addr, None)
        assert insn.kind == kinds.get(mnemonic, SEQ), (hex(addr), mnemonic, insn)
        if insn.kind in (CJUMP, JUMP, CALL):
            assert insn.target == int(operand, 16), (hex(addr), mnemonic, operand, insn)
    # The walk, as on MIPS, leaves out the delay slot of a branch that does not come back.
    slots = {a + 2 for a, (mnemonic, _) in want.items() if mnemonic in ("bra", "braf", "jmp", "rts")}
    index = decode.Regions([(0, code)])
    assert {a for a, _i, _r in decode.walk(img, index, [(0, None)])} == set(want) - slots


def sh_vdso(tmp_path, big, nr_rt=173):
    """An SH vDSO with what Linux's has (arch/sh/kernel/vsyscall/), in ld's default layout:
    __kernel_vsyscall (trapa #0x10; nop), then each sigreturn trampoline 32-byte aligned: mov.w of the number at its
    end into r3, trapa #0x10, five `or r0,r0`, the number; soname linux-gate.so.1, LINUX_2.6."""
    src, obj, lds, so = (tmp_path / n for n in ("v.s", "v.o", "v.lds", "v.so"))
    tramp = "\t.balign 32\n\t.globl {0}\n\t.type {0}, @function\n{0}:\n\tmov.w\t1f, r3\n\ttrapa\t#0x10\n" + \
            "\tor\tr0, r0\n" * 5 + "1:\t.short\t{1}\n\t.size {0}, . - {0}\n"
    src.write_text("\t.text\n\t.globl __kernel_vsyscall\n\t.type __kernel_vsyscall, @function\n__kernel_vsyscall:\n"
                   "\ttrapa\t#0x10\n\tnop\n\t.size __kernel_vsyscall, . - __kernel_vsyscall\n" +
                   tramp.format("__kernel_sigreturn", 119) + tramp.format("__kernel_rt_sigreturn", nr_rt))
    lds.write_text("LINUX_2.6 { global: __kernel_vsyscall; __kernel_sigreturn; __kernel_rt_sigreturn; local: *; };\n")
    subprocess.run(["sh4-linux-gnu-as", *(["-big"] if big else []), str(src), "-o", str(obj)], check=True)
    subprocess.run(["sh4-linux-gnu-ld", *(["-EB"] if big else []), "-shared", "-soname=linux-gate.so.1",
                    "--hash-style=both", f"--version-script={lds}", str(obj), "-o", str(so)], check=True)
    return so


@pytest.mark.parametrize("big", [False, True])
def test_audit_knows_sh_vdso(big, tmp_path):
    """An SH vDSO is sh4 or sh4eb to audit (no H010), its trampolines Linux's words (no T001);
    one whose rt_sigreturn makes another syscall is a T001 error."""
    r = vdsogen("audit", "--format=json", str(sh_vdso(tmp_path, big)))
    doc = json.loads(r.stdout)
    (image,) = doc["images"]
    rules = {f["rule"] for f in image["findings"]}
    assert image["abi"]["name"] == ("sh4eb" if big else "sh4"), image["abi"]
    assert not rules & {"H010", "T001", "S008"}, image["findings"]
    bad = tmp_path / "bad"
    bad.mkdir()
    r = vdsogen("audit", "--format=json", str(sh_vdso(bad, big, nr_rt=119)))
    (image,) = json.loads(r.stdout)["images"]
    assert any(f["rule"] == "T001" and "__kernel_rt_sigreturn" in json.dumps(f) for f in image["findings"]), \
        image["findings"]
