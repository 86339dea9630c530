"""x86's clock modes beyond the TSC, and getcpu in user space.

kvm-clock (PVCLOCK, 2) and Hyper-V's reference TSC page (HVCLOCK, 3) read
pages of their own, which the harness writes as the host would; the
harness must pass every check of each mode with both toolchains, and fail
the named checks of an image whose counter read is broken in one way.
getcpu answers from lsl, patched to rdpid where the CPU has it (or from
rdpid alone), and makes the syscall when it cannot.
"""

import dataclasses
import io
import os
import re
import shutil
import struct
import subprocess

import pytest

from conftest import build_broken, run_broken, run_variant
from vdsogen import paths
from vdsogen.build.toolchain import Builder
from vdsogen.errors import SpecError
from vdsogen.gen.render import sources
from vdsogen.harness.driver import harness_sources, run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

PV, HV = 2, 3
COUNTER_CLOCKS = ["REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI"]

# The checks of each paravirtual mode (harness/checks-modes.c, seqcount.c;
# the states come from arch/x86/harness-clockmodes.h.j2).
PV_CHECKS = {f"clock_mode.{PV}{s}" for s in ("", ".counter", ".rescaled", ".unstable", ".wait", ".concurrent")}
HV_CHECKS = {f"clock_mode.{HV}{s}" for s in ("", ".counter", ".invalid", ".concurrent")}
MODE_CHECKS = PV_CHECKS | HV_CHECKS | {"clock_mode.1", "clock_mode.4.syscall", "getcpu"}


def x86_64():
    return load_target("x86_64")


def test_spec_serves_the_three_modes_and_lsl():
    target = x86_64()
    assert target.counter.modes == (1, PV, HV)
    assert target.getcpu == "lsl-rdpid"


def test_layout_matches_linux():
    """Offsets of the two pages' structs, from Linux's pvclock-abi.h and hyperv's ms_hyperv_tsc_page."""
    layout = load_layout("linux-6.17-x86")
    pv = layout.struct(layout.page("pvclock").struct)
    assert pv.name == "pvclock_vcpu_time_info" and pv.size == 32
    assert {f.name: f.offset for f in pv.fields} == {
        "version": 0, "pad0": 4, "tsc_timestamp": 8, "system_time": 16, "tsc_to_system_mul": 24,
        "tsc_shift": 28, "flags": 29, "pad": 30}
    hv = layout.struct(layout.page("hvclock").struct)
    assert hv.name == "ms_hyperv_tsc_page"
    assert {f.name: f.offset for f in hv.fields} == {
        "tsc_sequence": 0, "reserved1": 4, "tsc_scale": 8, "tsc_offset": 16}
    assert (layout.page("pvclock").index, layout.page("hvclock").index) == (4, 5)


def test_pages_are_reached_through_hidden_symbols():
    files = dict(sources(x86_64()))
    arch = files["vdso_arch.h"]
    for sym in ("pvclock_page", "hvclock_page"):
        assert re.search(rf'^extern struct \w+ {sym} __attribute__\(\(visibility\("hidden"\)\)\);$', arch, re.M)
        assert re.search(rf"^\t{sym} = vdso_u_data \+ \d \* 4096;$", files["vdso.lds"], re.M)
    assert "__int128" not in arch, "the counter fragment serves i386 too: no 128-bit arithmetic"
    assert "#define vdso_cycles_ok vdso_cycles_ok" in arch


def test_tsc_only_spec_has_no_vclock_code():
    target = dataclasses.replace(x86_64(), counter=dataclasses.replace(x86_64().counter, modes=(1,)))
    files = dict(harness_sources(target))
    assert "pvclock" not in files["vdso_arch.h"] and "vdso_cycles_ok" not in files["vdso_arch.h"]
    assert "#define HARNESS_HAVE_CLOCK_MODES" not in files["harness_target.h"]


def test_vclock_mode_needs_its_page(tmp_path):
    (tmp_path / "v.toml").write_text('extends = "x86_64"\n[datapage]\nlayout = "linux-6.17"\n')
    with pytest.raises(SpecError, match=r"counter\.modes\[1\]: clock mode pvclock reads the pvclock page: "
                                        r"layout linux-6\.17 has none"):
        load_target("v", specs=tmp_path)


def test_unknown_mode_is_an_error(tmp_path):
    (tmp_path / "v.toml").write_text('extends = "x86_64"\n[counter]\nmodes = ["tsc", "hvclok"]\n')
    with pytest.raises(SpecError, match=r"counter\.modes\[1\]: unknown clock mode 'hvclok' \(did you mean 'hvclock'\?\)"):
        load_target("v", specs=tmp_path)


def test_counter_needs_no_libgcc_on_i386(tmp_path):
    """The x86-64 sources compiled for i386 (u64 aligned as the layout says) leave only data symbols
    undefined, and getrandom's ChaCha20 (chacha20.S, assembly of the image)."""
    src = tmp_path / "src"
    src.mkdir()
    for name, text in sources(x86_64()):
        (src / name).write_text(text)
    undefined, defined = set(), set()
    for c in ("vdso.c", "vdso-getrandom.c"):
        obj = tmp_path / f"{c}.o"
        subprocess.run(["clang-19", "--target=i386-linux-gnu", "-malign-double", "-O2", "-fPIC", "-ffreestanding",
                        "-fno-stack-protector", "-mno-sse", "-mno-mmx", "-c", str(src / c), "-o", str(obj)],
                       check=True)
        nm = subprocess.run(["llvm-nm-19", str(obj)], check=True, capture_output=True, text=True).stdout
        undefined |= {line.split()[-1] for line in nm.splitlines() if line.split()[-2] == "U"}
        defined |= {line.split()[-1] for line in nm.splitlines() if line.split()[-2] != "U"}
    assert undefined - defined <= {"_GLOBAL_OFFSET_TABLE_", "vdso_u_time_data", "pvclock_page", "hvclock_page",
                                   "vdso_u_rng_data", "__arch_chacha20_blocks_nostack"}, undefined


# --- every check of every mode passes, with both toolchains ---------------

@pytest.fixture(scope="module")
def gnu_run(tmp_path_factory):
    target = x86_64()
    work = tmp_path_factory.mktemp("gnu-x86_64")
    out = io.StringIO()
    builder = Builder(target, env={"CROSS_COMPILE": "x86_64-linux-gnu-"}, stream=out)
    assert builder.tools.kind == "gnu"
    status, outcome = run_tests_full(target, workdir=work, stream=out, builder=builder)
    return status, outcome, out.getvalue()


def test_every_mode_passes_llvm(good_runs):
    status, outcome, output, _ = good_runs("x86_64")
    assert status == 0 and not outcome.failed, output
    missing = MODE_CHECKS - set(outcome.passed)
    assert not missing, f"{sorted(missing)} not reported:\n{output}"


def test_every_mode_passes_gnu(gnu_run):
    status, outcome, output = gnu_run
    assert status == 0 and not outcome.failed, output
    missing = MODE_CHECKS - set(outcome.passed)
    assert not missing, f"{sorted(missing)} not reported:\n{output}"


def test_one_vclock_mode_alone(tmp_path):
    """modes [1, 2]: the pvclock checks run, HVCLOCK is an unserved mode that makes the syscall."""
    target = x86_64()
    variant = dataclasses.replace(target, counter=dataclasses.replace(target.counter, modes=(1, PV)))
    status, outcome, output = run_variant(variant, tmp_path)
    assert status == 0 and not outcome.failed, output
    assert PV_CHECKS | {"clock_mode.3.syscall"} <= set(outcome.passed), output
    assert not HV_CHECKS & set(outcome.passed), output


def test_i386_serves_the_vclocks_too(tmp_path):
    """The same fragments on i386 (no 128-bit type in the image or in the harness), with lsl."""
    target = load_target("i386")
    variant = dataclasses.replace(target, counter=dataclasses.replace(target.counter, modes=(1, PV, HV)),
                                  getcpu="lsl")
    status, outcome, output = run_variant(variant, tmp_path)
    assert status == 0 and not outcome.failed, output
    assert MODE_CHECKS <= set(outcome.passed), output


# --- the harness fails images with broken counter reads -------------------

PV_SCALE = "\tif (shift < 0)\n\t\tdelta >>= -shift;\n\telse\n\t\tdelta <<= shift;\n"

# Edits of the image's vdso_arch.h, the checks that must fail, and the
# checks that may fail with them (the others must pass).
VCLOCK_BREAKAGES = {
    # tsc_shift ignored: the rescaled page has a shift of at least 1 on any TSC.
    "pvclock-ignores-shift": ([(PV_SCALE, "\t(void)shift;\n")],
                              {"clock_mode.2.rescaled"}, PV_CHECKS),
    # tsc_shift with the wrong sign.
    "pvclock-shift-sign": ([(PV_SCALE, "\tif (shift > 0)\n\t\tdelta >>= shift;\n\telse\n\t\tdelta <<= -shift;\n")],
                           {"clock_mode.2.rescaled"}, PV_CHECKS),
    # A page without PVCLOCK_TSC_STABLE_BIT still read.
    "pvclock-ignores-stable-bit": ([("if (!(pvti->flags & PVCLOCK_TSC_STABLE_BIT))", "if (!pvti->flags && 0)")],
                                   {"clock_mode.2.unstable"}, set()),
    # An odd version (update in progress) not waited out.
    "pvclock-ignores-odd-version": ([("if (version & 1) {", "if (0) {")],
                                    {"clock_mode.2.wait"}, {"clock_mode.2.concurrent"}),
    # Hyper-V's sequence 0 (invalid) read as a valid page.
    "hvclock-ignores-sequence-0": ([("if (!seq)\n\t\t\treturn VDSO_CYCLES_INVALID;", "(void)0;")],
                                   {"clock_mode.3.invalid"}, {"clock_mode.3.concurrent"}),
    # The 128-bit product's cross terms dropped.
    "hvclock-drops-cross-terms": ([("return (uint64_t)a1 * b1 + (m1 >> 32) + (m2 >> 32) + (carry >> 32);",
                                    "return (uint64_t)a1 * b1 + (lo & 0) + (m1 & 0) + (m2 & 0) + (carry & 0);")],
                                  {"clock_mode.3"}, HV_CHECKS),
}


@pytest.mark.parametrize("breakage", sorted(VCLOCK_BREAKAGES))
def test_harness_catches(breakage, harnesses, tmp_path):
    target = x86_64()
    edits, must_fail, may_fail = VCLOCK_BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", {"vdso_arch.h": edits})
    status, outcome, output = run_broken(target, harnesses("x86_64"), image)
    assert status == 1, output
    failed = set(outcome.failed)
    assert must_fail <= failed, output
    assert failed <= must_fail | may_fail, output
    # The fallback checks of the other mode, and the TSC's, still pass.
    assert {"clock_mode.1", "clock_mode.2.unstable", "clock_mode.3.invalid"} - must_fail <= set(outcome.passed)


def test_concurrent_writer_catches_a_reader_that_does_not_retry(harnesses, tmp_path):
    assert (os.cpu_count() or 1) >= 2, "torn reads need a writer on another CPU: this test needs two"
    target = x86_64()
    image = build_broken(target, tmp_path / "image",
                         {"vdso_arch.h": [("if (pvti->version == version)", "if (1)")]})
    status, outcome, output = run_broken(target, harnesses("x86_64"), image)
    assert status == 1 and set(outcome.failed) == {"clock_mode.2.concurrent"}, output


@pytest.fixture
def shared_copy(tmp_path, monkeypatch):
    """A private copy of templates/ and arch/, in effect for the image and the harness alike."""
    for d in ("templates", "arch"):
        shutil.copytree(paths.ROOT / d, tmp_path / d)
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "TEMPLATES", tmp_path / "templates")
    monkeypatch.setattr(paths, "ARCH", tmp_path / "arch")
    return tmp_path


def test_counter_check_catches_a_fragment_the_harness_shares(shared_copy, tmp_path):
    """A sign error in the fragment itself: image and harness agree, the page's writer does not."""
    frag = shared_copy / "arch" / "x86" / "counter-rdtsc.h.j2"
    text = frag.read_text()
    assert PV_SCALE in text
    frag.write_text(text.replace(PV_SCALE, "\tif (shift > 0)\n\t\tdelta >>= shift;\n\telse\n\t\tdelta <<= -shift;\n"))
    status, outcome, output = run_variant(x86_64(), tmp_path / "work")
    assert status == 1, output
    assert "clock_mode.2.counter" in outcome.failed, output
    assert "clock_mode.3.counter" in outcome.passed and "clock_mode.1" in outcome.passed, output


# --- getcpu -----------------------------------------------------------------

LSL_STORE = "*cpu = (unsigned int)p & ((1U << VDSO_CPUNODE_BITS) - 1);"
RDPID = 16 * 32 + 22          # X86_FEATURE_RDPID


def test_getcpu_lsl_answers_in_user_space():
    arch = dict(sources(x86_64()))["vdso_arch.h"]
    assert '"661:\tlsl %[sel], %k[p]\\n"' in arch and "#define VDSO_CPUNODE_SELECTOR\t((15 * 8) | 3)" in arch
    assert '".pushsection .altinstructions' in arch.replace('"\t.push', '".push')


def alternatives(image):
    """The 14-byte struct alt_instr entries of image (Linux 6.2 on) as (orig, repl, feature, lens)."""
    from vdsogen.elf.reader import ElfImage
    elf = ElfImage(image)
    sec = elf.section(".altinstructions")
    raw = bytes(elf.section_bytes(sec))
    out = []
    for i in range(0, len(raw), 14):
        orig, repl, feature, ilen, rlen = struct.unpack_from("<iiIBB", raw, i)
        at = sec.offset + i
        out.append((at + orig, at + 4 + repl, feature, ilen, rlen))
    return out


def test_getcpu_alternative_entry(built):
    """One entry, as Linux writes its own: lsl padded with NOPs to the length of rdpid; cmp."""
    _, so, _ = built("x86_64")
    data = so.read_bytes()
    [(orig, repl, feature, ilen, rlen)] = alternatives(so)
    assert feature == RDPID and ilen == rlen == 6
    assert data[orig:orig + 3] == b"\x0f\x03\xc0" and data[orig + 3:orig + 6] == b"\x90" * 3  # lsl %ax,%eax
    assert data[repl:repl + 6] == b"\xf3\x0f\xc7\xf8\x39\xc0"  # rdpid %rax; cmp %eax,%eax


@pytest.mark.parametrize("patch", [True, False], ids=["rdpid", "lsl"])
def test_getcpu_both_sides_of_the_alternative(patch, harnesses, built, monkeypatch):
    assert cpu_has("rdpid"), "patching needs a CPU with RDPID (the development machines have it)"
    if not patch:
        monkeypatch.setenv("VDSOGEN_HARNESS_NO_PATCH", "1")
    target, so, _ = built("x86_64")
    status, outcome, output = run_broken(target, harnesses("x86_64"), so)
    assert status == 0 and {"patch", "getcpu"} <= set(outcome.passed), output
    assert f"# patch: {1 if patch else 0} of 1 alternatives applied" in output, output


@pytest.mark.parametrize("where,value", [(12, 7), (13, 7), (0, 0x7f)], ids=["instrlen", "repllen", "outside"])
def test_harness_rejects_a_bad_alternatives_table(where, value, harnesses, built, tmp_path):
    """A replacement longer than the original, or an original outside the image: FAIL patch, no run."""
    target, so, _ = built("x86_64")
    from vdsogen.elf.reader import ElfImage
    sec = ElfImage(so).section(".altinstructions")
    data = bytearray(so.read_bytes())
    if where == 12:
        data[sec.offset + 12] = 5          # the original shrinks below the replacement
    elif where == 13:
        data[sec.offset + 13] = value      # the replacement grows past the original
    else:
        data[sec.offset + 3] = value       # instr_offset points 2 GiB away
    bad = tmp_path / "vdso.so"
    bad.write_bytes(bytes(data))
    status, outcome, output = run_broken(target, harnesses("x86_64"), bad)
    assert status != 0 and "patch" in outcome.failed, output


def test_getcpu_falls_back_when_lsl_finds_no_segment(harnesses, tmp_path, monkeypatch):
    """The null selector: lsl clears ZF and the syscall answers (a user-space answer would be off by one)."""
    monkeypatch.setenv("VDSOGEN_HARNESS_NO_PATCH", "1")
    target = x86_64()
    image = build_broken(target, tmp_path / "image", {"vdso_arch.h": [
        ("#define VDSO_CPUNODE_SELECTOR\t((15 * 8) | 3)", "#define VDSO_CPUNODE_SELECTOR\t0"),
        (LSL_STORE, "*cpu = ((unsigned int)p & ((1U << VDSO_CPUNODE_BITS) - 1)) + 1;")]})
    status, outcome, output = run_broken(target, harnesses("x86_64"), image)
    assert status == 0 and "getcpu" in outcome.passed, output


@pytest.mark.parametrize("patch", [True, False], ids=["rdpid", "lsl"])
@pytest.mark.parametrize("edit", [
    (LSL_STORE, "*cpu = ((unsigned int)p & ((1U << VDSO_CPUNODE_BITS) - 1)) + 1;"),
    ("*node = (unsigned int)p >> VDSO_CPUNODE_BITS;", "*node = ((unsigned int)p >> VDSO_CPUNODE_BITS) + 1;"),
    ("if (cpu)\n\t\t*cpu", "if (node)\n\t\t*cpu"),
], ids=["wrong-cpu", "wrong-node", "stores-through-null"])
def test_harness_catches_a_wrong_getcpu(edit, patch, harnesses, tmp_path, monkeypatch):
    if not patch:
        monkeypatch.setenv("VDSOGEN_HARNESS_NO_PATCH", "1")
    target = x86_64()
    image = build_broken(target, tmp_path / "image", {"vdso_arch.h": [edit]})
    status, outcome, output = run_broken(target, harnesses("x86_64"), image)
    assert status == 1 and set(outcome.failed) == {"getcpu"}, output


def cpu_has(flag):
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and flag in line.split() for line in f)


def test_getcpu_rdpid(tmp_path):
    assert cpu_has("rdpid"), "the rdpid fragment needs a CPU with RDPID to run (the development machines have it)"
    variant = dataclasses.replace(x86_64(), getcpu="rdpid")
    assert '"rdpid %0"' in dict(sources(variant))["vdso_arch.h"]
    status, outcome, output = run_variant(variant, tmp_path)
    assert status == 0 and "getcpu" in outcome.passed, output
