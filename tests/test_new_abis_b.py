"""The ABIs of issue 25 this file covers: sparc64 (Linux 7.2's vDSO, the
generic library: %stick or %tick by clock mode, asm entries reaching the
data without the GOT, timeval's 32-bit tv_usec), and parisc's catalogue
entry and ISA module (audit recognises Linux's vdso32 and QEMU's hppa image;
no parisc target yet).

What the generic tests (test_targets, test_harness, test_run, test_golden,
test_oracle_decode) do not: the ISA module's words, the export set of the
Linux version followed, the counter the spec's first mode puts on the hot
path, the tv_usec type shown to matter, the catalogue's eras.
"""

import io

import pytest

from conftest import build_broken, run_broken, run_variant
from vdsogen.audit.run import audit_path
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.gen.render import sources
from vdsogen.harness.driver import build_harness
from vdsogen.isa import base, for_machine, parisc, sparc
from vdsogen.spec.model import load_target

# Linux 7.2's arch/sparc/vdso/vdso.lds.S: no clock_getres, before or after the generic library (7.1).
SPARC64_EXPORTS = {"__vdso_clock_gettime", "clock_gettime", "__vdso_gettimeofday", "gettimeofday"}
RD_TICK, RD_STICK = 0x83410000, 0x83460000          # rd %tick, %g1; rd %asr24, %g1


# --- sparc64: the ISA module ---------------------------------------------------------------------

@pytest.mark.parametrize("word,kind", [
    (RD_TICK, base.COUNTER), (RD_STICK, base.COUNTER),
    (0x81410000, base.OTHER),                       # rd %tick, %g0: nothing kept
    (0x91d0206d, base.SYSCALL),                     # ta 0x6d
    (0x81c3e008, base.RETURN), (0x81c7e008, base.RETURN), (0x81cfe008, base.RETURN),   # retl, ret, return
    (0x81c06008, base.OTHER),                       # jmp %g1 + 8: no return
    (0x9fc04000, base.OTHER),                       # call %g1 (jmpl into %o7)
])
def test_sparc_classifier(word, kind):
    assert sparc.sparc_class(word) == kind


@pytest.mark.parametrize("word,addr,kind,target", [
    (0x40000007, 0x3a8, base.CALL, 0x3c4),          # call
    (0x7fffff84, 0x9cc, base.CALL, 0x7dc),          # call, backwards
    (0x18400026, 0x5a0, base.CJUMP, 0x638),         # bgu,pn %icc (BPcc)
    (0x106800de, 0x648, base.JUMP, 0x9c0),          # ba %xcc
    (0x106fffcd, 0x714, base.JUMP, 0x648),          # ba %xcc, backwards
    (0x10800003, 0x100, base.JUMP, 0x10c),          # ba (Bicc)
    (0x02ca002d, 0x720, base.CJUMP, 0x7d4),         # brz,pn %o0 (BPr)
    (0x00400010, 0x100, base.SEQ, None),            # bn %icc: never taken
    (0x81c3e008, 0x100, base.STOP, None),           # retl
    (0x81c06008, 0x100, base.STOP, None),           # jmp %g1 + 8
    (0x9fc04000, 0x100, base.SEQ, None),            # call %g1: comes back
    (0x00000000, 0x100, base.STOP, None),           # illtrap
])
def test_sparc_decoder(word, addr, kind, target):
    insn = sparc.sparc_insn(word, addr)
    assert (insn.length, insn.kind, insn.target) == (4, kind, target)


def test_sparc_annulled_conditional_runs_its_slot_only_when_taken():
    assert sparc.branch_likely(0x3848000a)          # bgu,a %icc
    assert sparc.branch_likely(0x22c80004)          # brz,a (BPr)
    assert not sparc.branch_likely(0x18400026)      # bgu,pn: its slot always runs
    assert not sparc.branch_likely(0x30800003)      # ba,a: an unconditional one annuls it
    isa = for_machine(sparc.EM_SPARCV9)
    assert isa is not None and isa.delay_slots and isa.read_barrier is None     # TSO: K009 does not apply


# --- sparc64: the image --------------------------------------------------------------------------

def test_sparc64_exports_are_linux_7_2s():
    """The spec exports what the catalogue says a 7.2 sparc64 kernel does, in LINUX_2.6."""
    target = load_target("sparc64")
    era = target.elf.linux_version
    assert era[:2] == (7, 2)
    linux = {e.name for e in target.abi.exports if e.alive(era)}
    assert linux == SPARC64_EXPORTS
    assert {(n, v) for n, v, _ in target.symbols()} == {(n, "LINUX_2.6") for n in SPARC64_EXPORTS}


def test_sparc64_image_identity(built):
    _, so, _ = built("sparc64")
    img = ElfImage(so)
    assert (img.elf_class, img.e_machine, img.endian, img.e_flags) == (64, 43, "big", 2)   # RMO, as GNU ld marks it
    assert {s.name for s in img.dynsym[1:] if s.defined and s.type == 2} == SPARC64_EXPORTS


def counter_reads(path):
    """The counter reads in the image's text, as rd %tick / rd %stick whatever register they set."""
    img = ElfImage(path)
    text = next(s for s in img.sections if s.name == ".text")
    code = img.data[text.offset:text.offset + text.size]
    words = (int.from_bytes(code[i:i + 4], "big") for i in range(0, len(code), 4))
    return {w & ~(31 << 25) | 1 << 25 for w in words if sparc.sparc_class(w) == base.COUNTER}


@pytest.mark.parametrize("modes", [["stick", "tick"], ["tick", "stick"]])
def test_sparc64_reads_the_counter_its_mode_names(modes, tmp_path):
    """Linux reads the counter the clock record's mode names.  The spec's first mode is read
    inline on the hot path, the other in the cold path: either order serves both, and the
    harness's clock_mode checks (each mode of the spec in turn) pass."""
    (tmp_path / "sparc64-m.toml").write_text(f'extends = "sparc64"\n\n[counter]\nmodes = ["{modes[0]}", "{modes[1]}"]\n')
    target = load_target("sparc64-m", tmp_path)
    assert f"return vdso_read_{modes[0]}();" in dict(sources(target))["vdso_arch.h"]
    status, outcome, out = run_variant(target, tmp_path / "work")
    assert status == 0 and {"clock_mode.1", "clock_mode.2"} <= set(outcome.passed), out
    assert counter_reads(tmp_path / "work" / "image" / "vdso.so") == {RD_TICK, RD_STICK}


def test_sparc64_timeval_usec_is_an_int(built, tmp_path):
    """sparc64's __kernel_suseconds_t is an int: tv_usec at offset 8, then padding.  An image
    that writes the long the other ABIs have leaves the int the caller reads at 0 (big-endian:
    the long's high half), and the harness's gettimeofday checks say so.  (A harness built with
    the long too compares the image with itself and passes it, but reads the syscall's timeval
    as garbage: its mode_none.gettimeofday failed before tv_usec's type came from the ABI.)"""
    target = load_target("sparc64")
    config = dict(sources(target))["vdso_config.h"]
    assert "#define VDSO_SUSECONDS_T\tint" in config
    assert "VDSO_SUSECONDS_T" not in dict(sources(load_target("riscv64")))["vdso_config.h"]
    old = build_broken(target, tmp_path / "old", {"vdso_config.h": [("#define VDSO_SUSECONDS_T\tint", "")]})
    harness = build_harness(target, tmp_path / "h", Builder(target, stream=io.StringIO()))
    _status, outcome, out = run_broken(target, harness, old)
    for check in ("gettimeofday", "gettimeofday.tz", "y2038.gettimeofday"):
        assert check in outcome.failed and ".000000000, want" in outcome.failed[check], out
    assert "mode_none.gettimeofday" in outcome.passed, out


def test_sparc64_audit_knows_the_7_0_exports(tmp_path):
    """An image of sparc's own vDSO (7.0 and older: the _stick copies) is judged by its era: its
    exports are known, none a backport (S009)."""
    (tmp_path / "sparc64-70.toml").write_text('''extends = "sparc64"

[elf]
linux_version = "7.0.0"

[[export]]
name = "__vdso_clock_gettime"
impl = "clock_gettime"
aliases = ["clock_gettime"]

[[export]]
name = "__vdso_gettimeofday"
impl = "gettimeofday"
aliases = ["gettimeofday"]

[[export]]
name = "__vdso_clock_gettime_stick"
impl = "clock_gettime"

[[export]]
name = "__vdso_gettimeofday_stick"
impl = "gettimeofday"
''')
    target = load_target("sparc64-70", tmp_path)
    so = build_broken(target, tmp_path / "out", {})
    report = audit_path(str(so))
    assert report.detection.abi.name == "sparc64"
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    assert not [f for f in report.findings if f.rule == "S009"], report.findings
    assert {v.consumer: v.verdict for v in report.consumers}["glibc"] == "works"


# --- parisc: the ISA module and the catalogue ----------------------------------------------------

HPPA_AS, HPPA_LD, HPPA_OBJDUMP = "hppa-linux-gnu-as", "hppa-linux-gnu-ld", "hppa-linux-gnu-objdump"
# Every branch form the decoder knows, forwards and backwards, with and without ,n.
HPPA_BRANCHES = """
	.text
	.globl	f
	.type	f, @function
f:
0:	comb,=,n %r3, %r4, 1f
	comib,<> 5, %r4, 1f
	addib,<> -1, %r5, 0b
	nop
	addb,= %r3, %r4, 1f
	bb,< %r3, 5, 0b
	movb,= %r3, %r4, 1f
	movib,= 1, %r4, 0b
	b,l	1f, %r2
	nop
	b,n	0b
	ble	0x100(%sr2, %r0)
	nop
1:	mfctl	%cr16, %r28
	bv	%r0(%r2)
	nop
	be	0x100(%sr2, %r0)
	ldi	0, %r20
"""


def gnu_branches(obj):
    """{address: target} of the direct branches hppa objdump prints, with a target "N <f+0xN>"."""
    import re
    import subprocess
    out = subprocess.run([HPPA_OBJDUMP, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    return {int(m.group(1), 16): int(m.group(2), 16)
            for m in re.finditer(r"^\s*([0-9a-f]+):.*[\s,]([0-9a-f]+) <f(?:\+0x[0-9a-f]+)?>", out, re.M)}


def test_parisc_decoder_agrees_with_gnu_objdump(tmp_path):
    src, obj = tmp_path / "f.S", tmp_path / "f.o"
    src.write_text(HPPA_BRANCHES)
    import subprocess
    subprocess.run([HPPA_AS, str(src), "-o", str(obj)], check=True)
    img = ElfImage(obj)
    text = next(s for s in img.sections if s.name == ".text")
    code = img.data[text.offset:text.offset + text.size]
    theirs = gnu_branches(obj)
    assert len(theirs) == 9, theirs
    for addr, target in theirs.items():
        insn = parisc.parisc_insn(int.from_bytes(code[addr:addr + 4], "big"), addr)
        assert insn.kind in (base.CALL, base.JUMP, base.CJUMP) and insn.target == target, (hex(addr), insn)
    words = [int.from_bytes(code[i:i + 4], "big") for i in range(0, len(code), 4)]
    kinds = [parisc.parisc_class(w) for w in words]
    assert kinds.count(base.COUNTER) == 1 and kinds.count(base.RETURN) == 1 and kinds.count(base.SYSCALL) == 2
    assert parisc.parisc_insn(words[-4], 0).kind == base.STOP          # bv
    assert parisc.parisc_insn(words[-2], 0).kind == base.STOP          # be: the gateway returns to %r31


# An image laid out as Linux 6.12's vdso32 (its facts, vdsogen's own source): the two trampolines
# the kernel links by offset (exported by the names of Linux's version script, as vdsogen's images
# export them: Linux's own keep them local), the time functions 6.11 added as plain syscalls, all
# under LINUX_6.11.
LINUX_LIKE = """
	.text
	.align	64
	.word	-672			/* where the rt frame's context is, for gdb */
	nop
	.globl	__kernel_sigtramp_rt32
	.type	__kernel_sigtramp_rt32, @function
__kernel_sigtramp_rt32:
	ldi	0, %r25
	ldi	173, %r20
	ble	0x100(%sr2, %r0)
	nop
	ldi	1, %r25
	ldi	173, %r20
	ble	0x100(%sr2, %r0)
	nop
	.size	__kernel_sigtramp_rt32, . - __kernel_sigtramp_rt32

	.globl	__kernel_restart_syscall32
	.type	__kernel_restart_syscall32, @function
__kernel_restart_syscall32:
	ldw	0(%sp), %r31
	be	0x100(%sr2, %r0)
	ldi	0, %r20
	.size	__kernel_restart_syscall32, . - __kernel_restart_syscall32

	.macro	wrapper name, nr
	.globl	\\name
	.type	\\name, @function
\\name:
	copy	%r31, %r1
	ble	0x100(%sr2, %r0)
	ldi	\\nr, %r20
	bv	%r0(%r1)
	nop
	.size	\\name, . - \\name
	.endm
	wrapper	__vdso_gettimeofday, 78
	wrapper	__vdso_clock_gettime, 256
	wrapper	__vdso_clock_gettime64, 403

	.section .note.Linux, "a", @note
	.balign	4
	.long	6, 4, 0
	.asciz	"Linux"
	.balign	4
	.long	0x060c00
	.section .note.GNU-stack, "", @progbits
"""


def test_parisc_audit_recognises_a_linux_image(tmp_path):
    import subprocess
    src, obj, so, ver = tmp_path / "v.S", tmp_path / "v.o", tmp_path / "vdso32.so", tmp_path / "v.map"
    src.write_text(LINUX_LIKE)
    ver.write_text("LINUX_6.11 { global: __kernel_sigtramp_rt32; __kernel_restart_syscall32; __vdso_gettimeofday; "
                   "__vdso_clock_gettime; __vdso_clock_gettime64; local: *; };\n")
    subprocess.run(["hppa-linux-gnu-gcc", "-c", str(src), "-o", str(obj)], check=True)
    lds = tmp_path / "v.lds"
    lds.write_text("PHDRS { text PT_LOAD FILEHDR PHDRS FLAGS(5); dynamic PT_DYNAMIC FLAGS(4); note PT_NOTE FLAGS(4); }\n"
                   "SECTIONS { . = SIZEOF_HEADERS; .hash : { *(.hash) } :text .gnu.hash : { *(.gnu.hash) }\n"
                   ".dynsym : { *(.dynsym) } .dynstr : { *(.dynstr) } .gnu.version : { *(.gnu.version) }\n"
                   ".gnu.version_d : { *(.gnu.version_d) } .note : { *(.note.*) } :text :note\n"
                   ".dynamic : { *(.dynamic) } :text :dynamic .text : { *(.text) } :text\n"
                   "/DISCARD/ : { *(.data .bss) } }\n")
    subprocess.run([HPPA_LD, "-shared", "-soname=linux-vdso32.so.1", "--hash-style=both", "--build-id=sha1",
                    f"--version-script={ver}", "-T", str(lds), str(obj), "-o", str(so)], check=True)
    report = audit_path(str(so))
    assert report.detection.abi.name == "parisc"
    findings = {f.rule for f in report.findings}
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    assert not findings & {"S008", "S009", "T001", "H010"}, report.findings   # every export known, trampolines Linux's
    assert {v.consumer: v.verdict for v in report.consumers} == {"glibc": "n/a", "musl": "n/a", "go": "n/a",
                                                                 "sysv": "works"}

    # The rt trampoline's words are what gdb matches: one changed (ldi 172 for rt_sigreturn's 173) is T001's error.
    src.write_text(LINUX_LIKE.replace("ldi\t173, %r20", "ldi\t172, %r20", 1))
    subprocess.run(["hppa-linux-gnu-gcc", "-c", str(src), "-o", str(obj)], check=True)
    subprocess.run([HPPA_LD, "-shared", "-soname=linux-vdso32.so.1", "--hash-style=both", "--build-id=sha1",
                    f"--version-script={ver}", "-T", str(lds), str(obj), "-o", str(so)], check=True)
    t001 = [f for f in audit_path(str(so)).findings if f.rule == "T001"]
    assert t001 and t001[0].severity == "error" and "34140158" in t001[0].message, t001
