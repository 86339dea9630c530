"""The powerpc family: ppc32, ppc64 (big-endian ELFv1) and ppc64le (ELFv2).

Each builds with its default toolchain, passes `check` and `audit`, and runs
the whole harness under its qemu-user: the arch checks of
__kernel_get_syscall_map, __kernel_get_tbfreq and __kernel_sync_dicache, and
the unwind checks, which step from a handler through each trampoline's CFI
and return through it (arch/powerpc/harness-signal.h.j2).  Beyond that: r30 stays free (gcc is the default because clang
cannot keep it so, and an image that writes it fails check), ppc64 exports
are plain code labels with no .opd and no relocation, the entry wrappers'
CFI describes every register they change, and the trampolines' signal-frame
CFI, evaluated here, finds every register in the pt_regs the kernel saved.
On ppc64 getcpu is a frameless leaf of asm that reads USPRG3 (SPR 259),
which qemu-user reads as 0: an arch check patches the read to load chosen
values and checks their decoding.  sync_dicache carries Linux's CPU-feature fixup for coherent i-caches: the
__ftr_fixup entry is Linux's, the harness applies it for the CPU features it
plays (both paths run), and it refuses a table the kernel could not apply.
"""

import io
import struct

import pytest
from elftools.dwarf.callframe import CIE, FDE
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.elf.elffile import ELFFile

from conftest import build_broken, run_broken, vdsogen
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder, select_tools
from vdsogen.audit.check import build_validator
from vdsogen.elf.consts import EM_PPC, EM_PPC64
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import BuildError
from vdsogen.spec.model import load_target

PPC = ["ppc32", "ppc64", "ppc64le"]
ARCH_CHECKS = {"get_syscall_map", "get_tbfreq", "sync_dicache"}
# Where each trampoline's frame keeps its pt_regs pointer, from r1 at the
# trampoline (Linux's signal frame layouts; see the sigtramp fragments).
PTREGS = {"__kernel_sigtramp32": 64 + 28, "__kernel_sigtramp_rt32": 64 + 16 + 128 + 48,
          "__kernel_sigtramp_rt64": 128 + 168 + 56}
# DWARF register -> pt_regs slot: r0-r31, then lr, ctr, the return address (nip).
SLOTS = {**{r: r for r in range(32)}, 65: 36, 66: 35, 67: 32}


@pytest.mark.parametrize("name", PPC)
def test_builds_checks_audits_and_runs(name, tmp_path):
    out = tmp_path / "out"
    build = vdsogen("build", f"--arch={name}", f"--out={out}")
    assert build.returncode == 0, build.stdout + build.stderr
    so = out / "vdso.so"
    img = ElfImage(str(so))
    assert img.e_machine == (EM_PPC if name == "ppc32" else EM_PPC64)
    assert not img.section(".opd") and not img.section(".rela.dyn")
    check = vdsogen("check", f"--arch={name}", str(so))
    assert check.returncode == 0 and "0 error(s), 0 warning(s)" in check.stdout, check.stdout
    audit = vdsogen("audit", str(so))
    assert audit.returncode == 0 and f"ABI {name} (detected)" in audit.stdout and " 0 error(s)" in audit.stdout
    test = vdsogen("test", f"--arch={name}", f"--image={so}", f"--workdir={tmp_path / 'h'}")
    assert test.returncode == 0, test.stdout + test.stderr
    passed = {line[3:] for line in test.stdout.splitlines() if line.startswith("ok ")}
    assert ARCH_CHECKS <= passed, test.stdout
    # ppc64 getcpu reads USPRG3; the arch check feeds it values qemu-user cannot.
    assert name == "ppc32" or {"getcpu", "getcpu.usprg3"} <= passed, test.stdout
    # A libc's own function descriptor (TOC 0) reaches the ELFv1 code labels.
    assert name != "ppc64" or "get_tbfreq.descriptor" in passed, test.stdout
    # Unwinding from a handler through each trampoline's CFI, and returning through it.
    for t in load_target(name).trampolines:
        assert {f"unwind.{t.name}", f"sigreturn.{t.name}"} <= passed, test.stdout


def test_ppc32_has_the_time64_entries():
    names = {e.name for e in load_target("ppc32").exports}
    assert {"__kernel_clock_gettime64", "__kernel_clock_getres_time64", "__kernel_get_syscall_map"} <= names


@pytest.mark.parametrize("name", PPC)
def test_gcc_is_the_default_and_clang_images_fail_k004(name, tmp_path):
    """clang-19 rejects -ffixed-r30 and allocates r30, so gcc is the default;
    with LLVM=1 the image uses r30 and its build's check stops it."""
    target = load_target(name)
    assert select_tools(target, {}).kind == "gnu"
    assert select_tools(target, {"CROSS_COMPILE": f"{target.toolchain.gnu_triple}-"}).kind == "gnu"
    llvm = select_tools(target, {"LLVM": "-19"})
    assert llvm.kind == "llvm"
    if name == "ppc64":
        # lld links ELFv1 wrongly: clang links with GNU ld.
        assert llvm.ld == ("--ld-path=powerpc64-linux-gnu-ld",)
    if name == "ppc64le":
        with pytest.raises(BuildError, match="K004"):
            build_target(target, tmp_path, builder=Builder(target, {"LLVM": "-19"}, stream=io.StringIO()),
                         validate=build_validator)


def test_ppc64_exports_are_plain_code_labels(built):
    """ELFv1 as Linux: no .opd, no relocation, e_flags 1, and every export
    is the address of its first instruction (a libc builds the descriptor)."""
    target, so, _ = built("ppc64")
    img = ElfImage(str(so))
    assert img.e_flags == 1 and img.endian == "big"
    text = img.section(".text")
    for e in target.exports:
        sym = next(s for s in img.dynsym if s.name == e.name)
        assert text.addr <= sym.value < text.addr + text.size, e.name
    entry = next(s for s in img.dynsym if s.name == "__kernel_clock_gettime")
    assert int.from_bytes(img.data[img.offset_of(entry.value):][:4], "big") == 0x7C0802A6   # mflr r0


def _frames(path):
    f = open(path, "rb")
    elf = ELFFile(f)
    dwarf = elf.get_dwarf_info()
    syms = {s.name: s for s in elf.get_section_by_name(".dynsym").iter_symbols()}
    fdes = [e for e in dwarf.EH_CFI_entries() if isinstance(e, FDE)]
    return f, elf, dwarf, syms, fdes


def _fde_at(fdes, addr):
    return next(fde for fde in fdes
                if fde.header.initial_location <= addr < fde.header.initial_location + fde.header.address_range)


@pytest.mark.parametrize("name", PPC)
def test_trampoline_cfi_finds_the_saved_registers(built, name):
    """Evaluate each trampoline's CFI against a frame whose pt_regs pointer
    sits where Linux's frame keeps it: the CFA is the saved r1 and every
    register, the return address (nip) included, is read from its slot."""
    target, _, dbg = built(name)
    word = 4 if name == "ppc32" else 8
    f, elf, dwarf, syms, fdes = _frames(dbg)
    parser = DWARFExprParser(dwarf.structs)
    with f:
        for t in target.trampolines:
            addr = syms[t.name]["st_value"]
            fde = _fde_at(fdes, addr - 4)       # unwinders look up return address - 1
            assert fde is _fde_at(fdes, addr)
            cie = fde.cie
            assert isinstance(cie, CIE) and cie.header.augmentation == b"zRS"
            assert cie.header.return_address_register == 67
            base, regs = 0x10000, 0x50000
            memory = {base + PTREGS[t.name]: regs, regs + word: 0x7777_0000}

            def run(expr):
                stack = []
                for op in parser.parse_expr(expr):
                    if op.op_name == "DW_OP_breg1":
                        stack.append(r1 + op.args[0])
                    elif op.op_name == "DW_OP_deref":
                        stack.append(memory[stack.pop()])
                    elif op.op_name == "DW_OP_plus_uconst":
                        stack.append(stack.pop() + op.args[0])
                    else:
                        raise AssertionError(f"{t.name}: unexpected {op.op_name}")
                return stack[-1]

            rows = fde.get_decoded().table
            # ppc64's trampoline pops 128 bytes first: a second row says where the frame is then.
            assert len(rows) == (2 if word == 8 else 1), rows
            assert word == 4 or rows[1]["pc"] == addr + 4, "the second row starts after the addi"
            for i, row in enumerate(rows):
                r1 = base + 128 * i
                assert run(row["cfa"].expr) == 0x7777_0000, f"{t.name}: the CFA is not the saved r1"
                for reg, slot in SLOTS.items():
                    rule = row[reg]
                    assert rule.type == "EXPRESSION", (t.name, reg)
                    assert run(rule.arg) == regs + slot * word, (t.name, reg)


@pytest.mark.parametrize("name", PPC)
def test_entry_cfi_describes_every_register_it_changes(built, name):
    """The wrappers change r1 (the CFA) and LR, and nothing else the caller keeps."""
    target, _, dbg = built(name)
    f, elf, dwarf, syms, fdes = _frames(dbg)
    with f:
        for e in target.core_exports:
            addr = syms[e.name]["st_value"]
            table = _fde_at(fdes, addr).get_decoded().table
            saved = set()
            for row in table:
                saved |= {r for r, rule in row.items() if r not in ("pc", "cfa") and rule.type == "OFFSET"}
            assert saved == {65}, (e.name, saved)
            assert any(row["cfa"].offset for row in table), e.name


@pytest.mark.parametrize("name", ["ppc64", "ppc64le"])
def test_entries_leave_r2_alone_and_the_c_needs_no_toc(built, name):
    """The wrappers do not set up a TOC pointer, so the C must address
    nothing through one: no TOC-relative relocation in its object (ELFv2
    global entry prologues, which the wrappers skip, are no use of it)."""
    target, so, dbg = built(name)
    with open(so.parent / "obj" / "vdso.o", "rb") as f:
        elf = ELFFile(f)
        types = {rel.entry.r_info_type for sec in elf.iter_sections()
                 if sec.name.startswith(".rela") and sec.name != ".rela.opd" for rel in sec.iter_relocations()}
    from elftools.elf.enums import ENUM_RELOC_TYPE_PPC64
    toc = {v for k, v in ENUM_RELOC_TYPE_PPC64.items() if "TOC" in k}
    assert not types & toc, sorted(k for k, v in ENUM_RELOC_TYPE_PPC64.items() if v in types & toc)
    img = ElfImage(str(so))
    text = img.section(".text")
    code = img.data[text.offset:text.offset + text.size]
    words = {text.addr + i: int.from_bytes(code[i:i + 4], img.endian) for i in range(0, len(code), 4)}
    writes_r2 = {a: w for a, w in words.items() if w >> 26 in (14, 15) and (w >> 21) & 31 == 2}  # addi/addis r2
    # Only the ELFv2 global entry prologues of C functions (never run: the
    # wrappers call the local entry) set r2: addis r2,r12 then addi r2,r2.
    with open(dbg, "rb") as f:
        starts = {s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                  if s["st_info"]["type"] == "STT_FUNC"}
    prologue = {a for s in starts if s in writes_r2 for a in (s, s + 4)}
    assert name == "ppc64le" or not writes_r2, writes_r2
    assert set(writes_r2) == prologue, sorted(hex(a) for a in set(writes_r2) ^ prologue)
    assert all(writes_r2[a] >> 16 == 0x3C4C and writes_r2[a + 4] >> 16 == 0x3842 for a in prologue if a in starts)


# --- sync_dicache's coherent-icache feature fixup ---------------------------

COHERENT_ICACHE = 0x1           # CPU_FTR_COHERENT_ICACHE (Linux's asm/cputable.h)
B, NOP = 18, 0x60000000
# sync; icbi 0,r1; isync; li r3,0; crclr so; blr
SHORT_PATH = [0x7C0004AC, 0x7C000FAC, 0x4C00012C, 0x38600000, 0x4C631982, 0x4E800020]


def ftr_fixups(so):
    """The __ftr_fixup entries of so as (at, mask, value, start, end, alt_start, alt_end), offsets resolved."""
    img = ElfImage(str(so))
    sec = img.section("__ftr_fixup")
    raw = bytes(img.section_bytes(sec))
    fmt = ("<" if img.little else ">") + ("QQqqqq" if img.elf_class == 64 else "IIiiii")
    size = struct.calcsize(fmt)
    assert len(raw) % size == 0
    out = []
    for i in range(0, len(raw), size):
        mask, value, *rel = struct.unpack_from(fmt, raw, i)
        at = sec.offset + i
        out.append((at, mask, value, *(at + r for r in rel)))
    return img, sec, out


def word(img, off):
    return int.from_bytes(img.data[off:off + 4], img.endian)


@pytest.mark.parametrize("name", PPC)
def test_sync_dicache_coherent_icache_fixup_entry(built, name):
    """One entry of its own (ppc64's timebase reads have theirs:
    test_powerpc_faults.py), in Linux's format: the branch at sync_dicache's
    entry to its short path, kept where cpu_features has
    CPU_FTR_COHERENT_ICACHE (mask == value), an empty alternative (a nop
    elsewhere); the table in the text segment, after the code."""
    _, so, _ = built(name)
    img, sec, entries = ftr_fixups(so)
    [(at, mask, value, start, end, alt_start, alt_end)] = [e for e in entries if e[1] == COHERENT_ICACHE]
    assert sec.size == (24 if name == "ppc32" else 48) * len(entries) and sec.offset % 8 == 0
    assert mask == value == COHERENT_ICACHE
    entry = next(s for s in img.dynsym if s.name == "__kernel_sync_dicache")
    assert (start, end) == (img.offset_of(entry.value), img.offset_of(entry.value) + 4)
    assert alt_start == alt_end, "no alternative: the kernel nops the branch"
    text = img.section(".text")
    assert text.offset <= alt_start <= text.offset + text.size and end < at
    [load] = img.loads
    assert load.offset <= sec.offset and sec.offset + sec.size <= load.offset + load.filesz
    b = word(img, start)
    assert b >> 26 == B and b & 3 == 0
    target = start + (b & 0x03FFFFFC)
    assert [word(img, target + 4 * i) for i in range(len(SHORT_PATH))] == SHORT_PATH


# Each path: the environment that selects it, the harness's summary (of the
# image's n entries, ppc64's timebase reads' among them), and which path's
# breakage its sync_dicache check must then catch.
PATHS = {
    "walk": ({"VDSOGEN_HARNESS_PPC_CPU_FEATURES": "0"},
             "# patch: {n} of {n} feature fixups applied for CPU features 0; sync_dicache: i-cache not coherent"),
    "coherent": ({"VDSOGEN_HARNESS_PPC_CPU_FEATURES": "0x1"},
                 "# patch: {m} of {n} feature fixups applied for CPU features 0x1; sync_dicache: coherent i-cache"),
    "unpatched": ({"VDSOGEN_HARNESS_NO_PATCH": "1"},
                  "(VDSOGEN_HARNESS_NO_PATCH: none applied)"),
}
# Breakages of one path each: it answers 1 instead of 0.
BROKEN_PATH = {
    "walk": ("5:\tisync\t\t\t\t/* discard prefetched instructions */\n\tli\t%r3, 0",
             "5:\tisync\t\t\t\t/* discard prefetched instructions */\n\tli\t%r3, 1"),
    "coherent": ("\tisync\n\tli\t%r3, 0", "\tisync\n\tli\t%r3, 1"),
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", PPC)
def test_harness_applies_the_fixup_as_the_kernel(name, path, built, harnesses, tmp_path, monkeypatch):
    """The harness patches the image for the CPU features it plays: the good
    image passes on every path, and an image whose path answers wrong
    fails sync_dicache exactly where that path runs."""
    env, summary = PATHS[path]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    target, so, _ = built(name)
    status, outcome, output = run_broken(target, harnesses(name), so)
    assert status == 0 and {"patch", "sync_dicache"} <= set(outcome.passed), output
    n = len(ftr_fixups(so)[2])
    assert summary.format(n=n, m=n - 1) in output, output
    runs = "walk" if path == "walk" else "coherent"
    for broken, edit in BROKEN_PATH.items():
        image = build_broken(target, tmp_path / broken, {"impl-sync_dicache.S": [edit]})
        status, outcome, output = run_broken(target, harnesses(name), image)
        if broken == runs:
            assert status == 1 and set(outcome.failed) == {"sync_dicache"}, output
        else:
            assert status == 0 and "sync_dicache" in outcome.passed, output


# Breakages of the table: (entry field, value relative to the entry) -> why the kernel could not apply it.
BAD_TABLES = {
    "end-before-start": lambda start, end, alt: {3: start - 4},           # end_off < start_off
    "outside": lambda start, end, alt: {2: -0x40000000},                 # the body 1 GiB before the image
    "alt-longer": lambda start, end, alt: {5: alt + 8},                  # 8 bytes of alternative, 4 of body
    "unaligned": lambda start, end, alt: {2: start + 2},
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
@pytest.mark.parametrize("name", ["ppc32", "ppc64le"])
def test_harness_rejects_a_bad_feature_fixup_table(name, case, built, harnesses, tmp_path):
    """A table the kernel would refuse or could not follow: FAIL patch, no run."""
    target, so, _ = built(name)
    img, sec, [(at, _, _, start, end, alt_start, _)] = ftr_fixups(so)
    data = bytearray(so.read_bytes())
    wsize = 4 if name == "ppc32" else 8
    for field, rel in BAD_TABLES[case](start - at, end - at, alt_start - at).items():
        data[at + field * wsize:at + (field + 1) * wsize] = rel.to_bytes(wsize, img.endian, signed=True)
    bad = tmp_path / "vdso.so"
    bad.write_bytes(bytes(data))
    status, outcome, output = run_broken(target, harnesses(name), bad)
    assert status != 0 and "patch" in outcome.failed, output


# --- getcpu from USPRG3 -------------------------------------------------------

MFSPR_259, RD_FIELD, SC, BLR = 0x7C0342A6, 0x03E00000, 0x44000002, 0x4E800020


@pytest.mark.parametrize("name", ["ppc64", "ppc64le"])
def test_getcpu_is_a_leaf_reading_usprg3(built, name):
    """No frame, no syscall, no data page: one SPR read and two stores."""
    target, so, _ = built(name)
    assert [e.arch_impl for e in target.exports if e.impl == "getcpu"] == [True]
    img = ElfImage(str(so))
    sym = next(s for s in img.dynsym if s.name == "__kernel_getcpu")
    words = [word(img, img.offset_of(sym.value) + i) for i in range(0, sym.size, 4)]
    assert [w & ~RD_FIELD for w in words].count(MFSPR_259) == 1, [hex(w) for w in words]
    assert SC not in words and words[-1] == BLR
    assert not any(w >> 26 in (37, 62) and (w >> 16) & 31 == 1 for w in words), "stwu/stdu r1: a frame"
    assert len(words) <= 12
