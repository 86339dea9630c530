"""powerpc's images do what Linux's do where a CPU or a kernel differs (issue 19, point 4).

  - ppc32 reads the seqcount with sync, never lwsync: e500 cores
    (powerpcspe) trap lwsync, and Linux's 32-bit smp_rmb() is sync (on
    e500 builds a sync the kernel patches to lwsync where the core has it);
    the 64-bit images keep lwsync, as Linux's do.
  - ppc64 (big-endian: Cell, e5500, e6500) reads the timebase again while
    its low word is 0, in a CPU-feature section the kernel keeps only on
    CPUs with CPU_FTR_CELL_TB_BUG, as Linux's 64-bit mftb() does in kernels
    built for Cell or e500; ppc64le (no such CPU) and ppc32 (Linux's compat
    vDSO reads the halves) do not, and a ppc32 spec that asks is refused.
  - __kernel_get_syscall_map stores the kernel's NR_syscalls (Linux 6.1's
    images store 451, 7.2's 472), not the map's capacity: the layout's
    syscall_map gives it (bits), checked against the map's words.
"""


import pytest

from conftest import build_broken, elf, run_broken, vdsogen
from test_powerpc import ftr_fixups as powerpc_fixups
from vdsogen import paths
from vdsogen.elf.consts import SHF_EXECINSTR
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target

LWSYNC, SYNC = 0x7C2004AC, 0x7C0004AC


def code_words(path):
    """Every aligned 32-bit word of the image's executable sections."""
    image = elf(path)
    order = "little" if image.little_endian else "big"
    words = []
    for sec in image.iter_sections():
        if sec["sh_flags"] & SHF_EXECINSTR and sec["sh_type"] != "SHT_NOBITS":
            data = sec.data()
            words += [int.from_bytes(data[i:i + 4], order) for i in range(0, len(data) - 3, 4)]
    return words


def test_ppc32_reads_with_sync(built):
    _t, so, _dbg = built("ppc32")
    words = code_words(so)
    assert LWSYNC not in words, f"{words.count(LWSYNC)} lwsync in ppc32's code"
    assert SYNC in words


@pytest.mark.parametrize("name", ["ppc64", "ppc64le"])
def test_ppc64_reads_with_lwsync(built, name):
    _t, so, _dbg = built(name)
    assert LWSYNC in code_words(so)


# --- the Cell timebase bug ----------------------------------------------------

CPU_FTR_CELL_TB_BUG = 0x800000      # Linux's asm/cputable.h


def is_mftb(w):
    return w & 0xFC1FFFFE == 0x7C0C42A6         # mfspr rT, 268; the old mftb form


def ftr_fixups(so):
    """The image's __ftr_fixup entries as (mask, value, start, end, alt_start, alt_end), offsets resolved."""
    img, _sec, entries = powerpc_fixups(so)
    return img, [e[1:] for e in entries]


def timebase_reads(so):
    """(the image, {offset of each mftb: the two words after it}, the Cell entries' (start, end))."""
    img, entries = ftr_fixups(so)
    text = img.section(".text")

    def word(off):
        return int.from_bytes(img.data[off:off + 4], img.endian)
    reads = {a: (word(a + 4), word(a + 8)) for a in range(text.offset, text.offset + text.size, 4) if is_mftb(word(a))}
    cell = [(s, e) for m, v, s, e, alt, alt_end in entries if m == CPU_FTR_CELL_TB_BUG]
    assert all(v == m and alt == alt_end for m, v, s, e, alt, alt_end in entries if m == CPU_FTR_CELL_TB_BUG)
    return img, reads, cell


def rereads_zero(img, at, after):
    """After the mftb rT at `at`: cmpwi rT, 0, then beq- back to it."""
    rt = (int.from_bytes(img.data[at:at + 4], img.endian) >> 21) & 31
    cmp, bc = after
    back = at + 8 + (((bc & 0xFFFC) ^ 0x8000) - 0x8000)
    return (cmp == 0x2C000000 | rt << 16 and bc >> 26 == 16 and (bc >> 21) & 0x1C == 0x0C
            and (bc >> 16) & 31 == 2 and bc & 3 == 0 and back == at)


def test_ppc64_rereads_a_zero_low_word_on_cell(built):
    """Every timebase read of ppc64 is mftb rT; cmpwi rT, 0; beq- back, the
    two words the body of a feature-fixup entry kept where cpu_features has
    CPU_FTR_CELL_TB_BUG, with an empty alternative (nops elsewhere)."""
    _t, so, _dbg = built("ppc64")
    img, reads, cell = timebase_reads(so)
    assert reads
    for at, after in reads.items():
        assert rereads_zero(img, at, after), f"mftb at {at:#x}, then {after[0]:#010x} {after[1]:#010x}"
    assert sorted(cell) == sorted((at + 4, at + 12) for at in reads)


@pytest.mark.parametrize("name", ["ppc64le", "ppc32"])
def test_no_cell_loop_elsewhere(built, name):
    _t, so, _dbg = built(name)
    img, reads, cell = timebase_reads(so)
    assert reads and cell == []
    assert not any(rereads_zero(img, at, after) for at, after in reads.items())


@pytest.mark.parametrize("features, applied", [("0", "{n} of {n}"), ("0x800000", "1 of {n}")])
def test_ppc64_runs_with_and_without_the_loop(built, harnesses, monkeypatch, features, applied):
    """The harness plays a CPU without the bug (the loops patched to nops)
    and a Cell (the loops kept, sync_dicache's branch patched): both pass."""
    monkeypatch.setenv("VDSOGEN_HARNESS_PPC_CPU_FEATURES", features)
    target, so, _dbg = built("ppc64")
    status, outcome, output = run_broken(target, harnesses("ppc64"), so)
    n = len(ftr_fixups(so)[1])
    assert status == 0 and "patch" in outcome.passed, output
    assert f"# patch: {applied.format(n=n)} feature fixups applied for CPU features {features}" in output, output


def test_ppc32_refuses_the_cell_loop(tmp_path):
    (tmp_path / "ppc32.toml").write_text('extends = "ppc32"\n[counter.params]\ncell_tb_bug = true\n')
    r = vdsogen("build", f"--specs={tmp_path}", "--arch=ppc32", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert (f"{tmp_path}/ppc32.toml: counter.params.cell_tb_bug: the timebase counter fragment takes it for "
            "64-bit targets only") in r.stderr, r.stderr


def test_a_param_s_elf_class_is_checked(tmp_path):
    arch = tmp_path / "arch" / "powerpc"
    arch.mkdir(parents=True)
    (arch / "contract.toml").write_text('[counter.timebase]\nmodes = ["archtimer"]\n'
                                        '[counter.timebase.params.cell_tb_bug]\ntype = "boolean"\n'
                                        'default = false\nelf_class = 48\n')
    (tmp_path / "ppc64.toml").write_text('extends = "ppc64"\n')
    r = vdsogen("build", f"--specs={tmp_path}", "--arch=ppc64", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{arch}/contract.toml: counter.timebase.params.cell_tb_bug.elf_class: 48 is not an ELF class" in r.stderr, \
        r.stderr


# --- __kernel_get_syscall_map's count: the kernel's NR_syscalls ---------------

LI_R0 = 0x38000000              # addi r0, 0, SI (li r0, SI)


# NR_syscalls of the Linux each spec's layout describes: 6.17's is 470 (469
# file_setattr its last), 7.2's 472 (ppc32's spec is noted 7.2).
NR_SYSCALLS = {"ppc32": 472, "ppc64": 470, "ppc64le": 470}


@pytest.mark.parametrize("name", ["ppc32", "ppc64", "ppc64le"])
def test_get_syscall_map_stores_nr_syscalls(built, name):
    """The powerpc NR_syscalls of the spec's Linux, in a map of
    (NR_syscalls + 31) / 32 words: the layout says so and the image stores
    it, not the map's 480 bits."""
    nr = NR_SYSCALLS[name]
    target, so, _dbg = built(name)
    field = target.datapage.layout.struct("vdso_arch_data").field("syscall_map")
    assert (field.bits, field.count) == (nr, 15)
    img = ElfImage(str(so))
    sym = next(s for s in img.dynsym if s.name == "__kernel_get_syscall_map")
    at = img.offset_of(sym.value)
    words = [int.from_bytes(img.data[at + i:at + i + 4], img.endian) for i in range(0, sym.size, 4)]
    assert [w & 0xFFFF for w in words if w & 0xFFFF0000 == LI_R0] == [nr], [hex(w) for w in words]


@pytest.mark.parametrize("name", ["ppc32", "ppc64le"])
def test_harness_wants_nr_syscalls(name, harnesses, tmp_path):
    """An image that stores the map's capacity, as vdsogen's did, fails the
    check; one that stores more than the map holds fails it too."""
    nr = NR_SYSCALLS[name]
    target = load_target(name)
    for count, why in ((480, f"stored a count of 480, the kernel's NR_syscalls is {nr}"),
                       (481, "stored a count of 481, more than the map's 480 bits")):
        image = build_broken(target, tmp_path / str(count), {"impl-get_syscall_map.S": [
            (f"\tli\t%r0, {nr}\n", f"\tli\t%r0, {count}\n")]})
        status, outcome, output = run_broken(target, harnesses(name), image)
        assert status == 1 and set(outcome.failed) == {"get_syscall_map"}, output
        assert why in outcome.failed["get_syscall_map"], output


BAD_BITS = {
    "481": ('count = 15, bits = 470', 'count = 15, bits = 481',
            "struct[0].fields[1].bits: 481 bits do not fit in syscall_map's 15 u32 (480 bits): they need 16"),
    "440": ('count = 15, bits = 470', 'count = 15, bits = 440',
            "struct[0].fields[1].bits: 440 bits need 14 u32, and syscall_map has 15: Linux sizes the map"),
    "scalar": ('{ name = "tb_ticks_per_sec", type = "u64" }', '{ name = "tb_ticks_per_sec", type = "u64", bits = 3 }',
               "struct[0].fields[0].bits: tb_ticks_per_sec is not an array of unsigned scalars"),
}


@pytest.mark.parametrize("case", sorted(BAD_BITS))
def test_layout_bits_checked(tmp_path, case):
    old, new, why = BAD_BITS[case]
    layouts = tmp_path / "layouts"
    layouts.mkdir()
    text = (paths.LAYOUTS / "linux-6.17-powerpc32.toml").read_text()
    assert old in text
    (layouts / "linux-6.17-powerpc32.toml").write_text(text.replace(old, new))
    (tmp_path / "ppc32.toml").write_text('extends = "ppc32"\n')
    r = vdsogen("build", f"--specs={tmp_path}", "--arch=ppc32", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{layouts}/linux-6.17-powerpc32.toml: {why}" in r.stderr, r.stderr
