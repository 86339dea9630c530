"""The MIPS targets: o32, n32 and n64, little- and big-endian, each with
Linux's identity (e_flags, object format, .MIPS.abiflags behind the first
program header, .reginfo or .MIPS.options), its ABI's export set, the time
data reached without a GOT entry, and the R4K counter.  qemu-user reads
Count as 0, so the harness runs a test build with an injected counter and
`check` finds the real build's rdhwr by its word (T002)."""

import dataclasses
import io
import struct

import pytest

from conftest import TARGETS, vdsogen
from vdsogen.audit.check import check_image
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.elf.consts import EM_MIPS, PT_LOAD, PT_MIPS_ABIFLAGS, PT_MIPS_REGINFO
from vdsogen.elf.reader import ElfImage
from vdsogen.gen.render import sources
from vdsogen.spec.model import load_target

MIPS = [n for n in TARGETS if n.startswith("mips-")]
RDHWR_V0_COUNT = 0x7C02103B                 # rdhwr $2, $2
# (OUTPUT_FORMAT, e_flags, exports) of each ABI, as Linux builds it.
ABIS = {
    "mips-o32": ("elf32-trad{}mips", 0x70001007, 5),
    "mips-n32": ("elf32-ntrad{}mips", 0x80000027, 5),
    "mips-n64": ("elf64-trad{}mips", 0x80000007, 3),
}
# n64 has the first three; o32 and n32 the time64 ones too (clock_getres_time64 since Linux 7.0).
EXPORTS = ["__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_clock_getres", "__vdso_clock_gettime64",
           "__vdso_clock_getres_time64"]
DT_MIPS_LOCAL_GOTNO, DT_MIPS_SYMTABNO, DT_MIPS_GOTSYM = 0x7000000A, 0x70000011, 0x70000013


def dyn(img, tag):
    return next(val for t, val, _off in img.dynamic if t == tag)


def build_quiet(target, outdir, files=None):
    so, _ = build_target(target, outdir, builder=Builder(target, stream=io.StringIO()), files=files)
    return so


def test_every_abi_in_both_byte_orders_is_a_target():
    assert set(MIPS) == {f"mips-{abi}{be}" for abi in ("o32", "n32", "n64") for be in ("", "-be")}


@pytest.mark.parametrize("toolchain", ["gnu", "llvm"])
@pytest.mark.parametrize("name", MIPS)
def test_linux_identity(name, toolchain, tmp_path):
    target = load_target(name)
    env = {"LLVM": "-19"} if toolchain == "llvm" else {}
    out = tmp_path / "out"
    build = vdsogen("build", f"--arch={name}", f"--out={out}", env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    fmt, flags, nexports = ABIS[target.abi.name]
    img = ElfImage(str(out / "vdso.so"))
    assert (img.e_machine, img.e_flags, img.endian) == (EM_MIPS, flags, target.elf.endian)
    assert f'OUTPUT_FORMAT("{fmt.format(target.elf.endian)}")' in (out / "src" / "vdso.lds").read_text()

    # The kernel's ELF loader wants PT_MIPS_ABIFLAGS first; REGINFO follows
    # (empty on n64, whose register info is in .MIPS.options).
    assert [s.type for s in img.segments[:3]] == [PT_MIPS_ABIFLAGS, PT_MIPS_REGINFO, PT_LOAD]
    assert img.section(".MIPS.abiflags").size == 24
    assert img.section(".MIPS.options" if img.elf_class == 64 else ".reginfo") is not None

    # No GOT entry beyond the two reserved ones, no relocation, no DT_GNU_HASH.
    assert dyn(img, DT_MIPS_LOCAL_GOTNO) == 2
    assert dyn(img, DT_MIPS_GOTSYM) == dyn(img, DT_MIPS_SYMTABNO)
    assert [r for r in img.dynamic_relocs() if r.type != 0] == []
    assert img.dyn("GNU_HASH") is None and img.dyn("HASH") is not None

    assert {s.name for s in img.dynsym if s.defined} - {"LINUX_2.6"} == set(EXPORTS[:nexports])
    check = vdsogen("check", f"--arch={name}", str(out / "vdso.so"))
    assert check.returncode == 0 and "0 error(s), 0 warning(s)" in check.stdout, check.stdout


@pytest.mark.parametrize("name", MIPS)
def test_hash_tables_come_from_the_catalogue(name, built):
    """DT_HASH only, because the ABI catalogue says so (hash_styles), not
    the spec: the link flag follows the ABI, and x86_64's image, of an ABI
    with the default, has both tables."""
    target, so, _ = built(name)
    assert target.abi.hash_styles == ("sysv",) and target.abi.hash_style == "sysv"
    assert not [f for f in target.toolchain.ldflags if "hash-style" in f]
    img = ElfImage(str(so))
    assert img.dyn("HASH") is not None and img.dyn("GNU_HASH") is None
    x86, x86_so, _ = built("x86_64")
    assert x86.abi.hash_styles == ("sysv", "gnu")
    img = ElfImage(str(x86_so))
    assert img.dyn("HASH") is not None and img.dyn("GNU_HASH") is not None


@pytest.mark.parametrize("name", MIPS)
def test_the_counter_read_is_rdhwr_count(name, tmp_path):
    """The real build's read is `rdhwr $2, $2`, found by check (T002); an
    image that reads another register fails T002 and nothing else."""
    target = load_target(name)
    assert target.counter.words == (RDHWR_V0_COUNT,) and target.harness.injected_counter
    so = build_quiet(target, tmp_path / "good")
    img = ElfImage(str(so))
    text = img.section(".text")
    order = ">" if target.elf.endian == "big" else "<"
    words = [w for (w,) in struct.iter_unpack(f"{order}I", img.data[text.offset:text.offset + text.size])]
    assert words.count(RDHWR_V0_COUNT) >= 3, "one counter read inlined in each counter clock entry"
    assert not [f for f in check_image(target, so) if f.severity == "error"]

    files = [(f, t.replace('count __asm__("$2")', 'count __asm__("$3")') if f == "vdso_arch.h" else t)
             for f, t in sources(target)]
    bad = build_quiet(target, tmp_path / "bad", files)
    assert RDHWR_V0_COUNT not in struct.unpack_from(f"{order}{text.size // 4}I", ElfImage(str(bad)).data,
                                                    ElfImage(str(bad)).section(".text").offset)
    assert {f.rule for f in check_image(target, bad) if f.severity == "error"} == {"T002"}


@pytest.mark.parametrize("name", ["mips-o32", "mips-n64-be"])
def test_time_data_through_plain_c_takes_a_local_got_entry(name, tmp_path):
    """Why the entries are asm: C's `&vdso_u_time_data` makes a third local
    GOT entry, which only a dynamic loader would relocate; audit rule R002
    refuses the image (and only for that)."""
    target = dataclasses.replace(load_target(name), entry_style="c")
    so = build_quiet(target, tmp_path / "c")
    img = ElfImage(str(so))
    assert dyn(img, DT_MIPS_LOCAL_GOTNO) == 3
    assert {f.rule for f in check_image(target, so) if f.severity == "error"} == {"R002"}


@pytest.mark.parametrize("name", MIPS)
def test_harness_runs_the_test_build_under_qemu(name, tmp_path):
    """Every check of the time harness, on the test build under qemu-user."""
    target = load_target(name)
    proc = vdsogen("test", f"--arch={name}", f"--workdir={tmp_path}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(f"counter read {RDHWR_V0_COUNT:08x} (T002)" in line for line in lines), proc.stdout
    passed = {line[3:] for line in lines if line.startswith("ok ")}
    assert {"counter", "seqcount.concurrent", "clock_gettime.MONOTONIC", "clock_mode.1"} <= passed
    if target.abi.name != "mips-n64":
        assert "clock_gettime64.REALTIME" in passed


GIC = 'extends = "{base}"\n[counter]\nmodes = {modes}\n{extra}[datapage]\nlayout = "linux-6.17-mips-gic"\npages = 5\n'


def gic_specs(tmp_path, base, modes, extra=""):
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    (specs / f"{base}-gic.toml").write_text(GIC.format(base=base, modes=modes, extra=extra))
    return specs, f"{base}-gic"


@pytest.mark.parametrize("base", ["mips-o32", "mips-n64-be"])
def test_gic_counter_is_a_spec_option(base, tmp_path):
    """Clock mode GIC beside R4K: the GIC's user page one page below the
    data pages (five pages below the text), read in mode 2; the harness runs
    the test build, in which both modes read the injected counter."""
    specs, name = gic_specs(tmp_path, base, '["r4k", "gic"]')
    out = tmp_path / "out"
    build = vdsogen("build", f"--specs={specs}", f"--arch={name}", f"--out={out}")
    assert build.returncode == 0, build.stdout + build.stderr
    symbols = {s.name: s.value for s in ElfImage(str(out / "vdso.so.dbg")).symtab}
    width = 1 << (64 if "n64" in base else 32)
    assert symbols["vdso_u_gic"] == width - 5 * 4096 and symbols["vdso_u_time_data"] == width - 4 * 4096
    check = vdsogen("check", f"--specs={specs}", f"--arch={name}", str(out / "vdso.so"))
    assert check.returncode == 0 and "0 error(s)" in check.stdout, check.stdout
    test = vdsogen("test", f"--specs={specs}", f"--arch={name}", f"--workdir={tmp_path / 'w'}")
    assert test.returncode == 0, test.stdout + test.stderr
    assert {"ok clock_mode.1", "ok clock_mode.2", "ok clock_mode.3.syscall"} <= set(test.stdout.splitlines())


# The GIC read as the image makes it, broken, and the checks that must then fail.
GIC_BREAKAGES = {
    # The halves swapped.
    "swapped-halves": ("return ((uint64_t)hi << 32) | lo;", "return ((uint64_t)lo << 32) | hi;",
                       ["clock_mode.2", "clock_gettime.MONOTONIC"]),
    # The high half dropped: time jumps back by 2^32 ticks (43 s).
    "low-half-only": ("return ((uint64_t)hi << 32) | lo;", "return lo;",
                      ["clock_mode.2", "clock_gettime.MONOTONIC"]),
}


@pytest.mark.parametrize("breakage", [None, *sorted(GIC_BREAKAGES)])
@pytest.mark.parametrize("base", ["mips-o32-be", "mips-n64"])
def test_gic_only_image_runs_its_real_counter_read(base, breakage, tmp_path):
    """A GIC-only image reads no Count: its real build runs under qemu-user,
    the harness playing the GIC (a thread that moves its counter)."""
    extra = "words = []\n[harness]\ninjected_counter = false\n"
    specs, name = gic_specs(tmp_path, base, '["gic"]', extra)
    image = None
    if breakage:
        old, new, must_fail = GIC_BREAKAGES[breakage]
        target = load_target(name, str(specs))
        files = []
        for fname, text in sources(target):
            if fname == "vdso_arch.h":
                assert old in text
                text = text.replace(old, new)
            files.append((fname, text))
        image = build_quiet(target, tmp_path / "broken", files)
    args = [f"--image={image}"] if image else []
    test = vdsogen("test", f"--specs={specs}", f"--arch={name}", f"--workdir={tmp_path / 'w'}", *args)
    failed = {line[5:].partition(":")[0] for line in test.stdout.splitlines() if line.startswith("FAIL ")}
    if not breakage:
        assert test.returncode == 0, test.stdout + test.stderr
        assert "ok clock_mode.2.counter" in test.stdout and "ok clock_mode.2.concurrent" in test.stdout
    else:
        assert test.returncode == 1 and set(must_fail) <= failed, test.stdout + test.stderr
        assert "symbol.__vdso_clock_gettime" not in failed
