"""The loongarch64 target: Linux's LoongArch vDSO (export set, 16 KiB data
pages with the per-CPU arch page getcpu reads, the rt_sigreturn trampoline
and its signal-frame CFI), and the freestanding test harness it needs,
Debian having no LoongArch C library: harness/freestanding/ instead of a
libc, built with clang-19 and lld-19, run under qemu-loongarch64-static."""

import io
import re
import shutil
import subprocess

import pytest

from conftest import vdsogen
from vdsogen import paths
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import SpecError
from vdsogen.harness.driver import build_harness, freestanding_argv, runner
from vdsogen.spec.model import load_target

EM_LOONGARCH = 258
EXPORTS = {"__vdso_getcpu", "__vdso_clock_getres", "__vdso_clock_gettime", "__vdso_gettimeofday",
           "__vdso_rt_sigreturn", "__vdso_getrandom"}
PAGE = 16384
NOP = 0x03400000
# Every group of the time harness: each must report on this target too.
GROUPS = ("clock_gettime.", "clock_getres.", "gettimeofday", "getcpu", "y2038.", "clock_mode.",
          "mode_none.", "timens.", "seqcount.wait.", "seqcount.concurrent")


def test_exports_are_linux_set_of_its_era():
    """The spec exports what the catalogue says a 6.17 LoongArch kernel does,
    __vdso_getrandom (Linux 6.12) included."""
    target = load_target("loongarch64")
    era = target.elf.linux_version
    linux = {e.name for e in target.abi.exports if e.alive(era)}
    assert linux == EXPORTS
    assert {(n, v) for n, v, _ in target.symbols()} == {(n, "LINUX_5.10") for n in EXPORTS}


def test_cli_build_check_test_audit(tmp_path):
    out = tmp_path / "out"
    build = vdsogen("build", "--arch=loongarch64", f"--out={out}")
    assert build.returncode == 0, build.stdout + build.stderr
    so = out / "vdso.so"
    img = ElfImage(str(so))
    assert (img.elf_class, img.e_machine, img.endian, img.e_flags) == (64, EM_LOONGARCH, "little", 0x41)
    assert {s.name for s in img.dynsym if s.defined} == EXPORTS
    check = vdsogen("check", "--arch=loongarch64", str(so))
    assert check.returncode == 0 and "0 error(s)" in check.stdout, check.stdout
    audit = vdsogen("audit", str(so))
    assert audit.returncode == 0 and "ABI loongarch64 (detected)" in audit.stdout, audit.stdout
    assert "0 error(s), 0 warning(s)" in audit.stdout, audit.stdout
    test = vdsogen("test", "--arch=loongarch64", f"--image={so}", f"--workdir={tmp_path / 'h'}")
    assert test.returncode == 0, test.stdout + test.stderr
    passed = [line[3:] for line in test.stdout.splitlines() if line.startswith("ok ")]
    assert all(any(p.startswith(g) for p in passed) for g in GROUPS), test.stdout
    assert re.search(rf"\d+ data pages of {PAGE} bytes", test.stdout), test.stdout


def _symbols(dbg):
    from elftools.elf.elffile import ELFFile

    with open(dbg, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: s["st_value"] for s in symtab.iter_symbols()}


def test_data_pages_sit_below_the_text(built):
    """Four 16 KiB pages: time, time namespace, rng, and the per-CPU arch page right below the text."""
    _, _, dbg = built("loongarch64")
    syms = _symbols(dbg)
    wrap = 1 << 64
    assert syms["vdso_u_data"] == syms["vdso_u_time_data"] == wrap - 4 * PAGE
    assert syms["vdso_u_rng_data"] == wrap - 2 * PAGE
    assert syms["vdso_u_arch_data"] == wrap - PAGE


def test_getcpu_reads_its_cpu_line_of_the_arch_page(built):
    """rdtime.d's counter id is the CPU; its node is at 64 * id in the page one page below the text."""
    _, so, _ = built("loongarch64")
    dis = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", str(so)], capture_output=True,
                         text=True, check=True).stdout
    body = re.search(r"<__vdso_getcpu>:\n(.*?)\n\n", dis, re.S)[1]
    assert re.search(r"rdtime\.d\s+\$zero, \$\w+", body), body
    assert re.search(r"slli\.d\s+\$\w+, \$\w+, 6", body) and "ldx.w" in body, body
    assert re.search(r"pcalau12i\s+\$\w+, -4\b", body), body     # -4 4 KiB units: one 16 KiB page down
    assert "syscall" not in body, body


def test_trampoline_is_linux_words_with_signal_frame_cfi(built):
    """li.w a7, 139; syscall 0 after a nop, and CFI that takes every register from the sigcontext."""
    _, so, _ = built("loongarch64")
    img = ElfImage(str(so))
    sym = next(s for s in img.dynsym if s.name == "__vdso_rt_sigreturn")
    text = so.read_bytes()
    words = [int.from_bytes(text[sym.value + 4 * i:sym.value + 4 * i + 4], "little") for i in range(-1, 2)]
    assert words == [NOP, 0x03822C0B, 0x002B0000]
    frames = subprocess.run(["llvm-dwarfdump-19", "--eh-frame", str(so)], capture_output=True, text=True,
                            check=True).stdout
    fde = re.search(rf"FDE cie=(\w+) pc=0*{sym.value - 4:x}\.\.\.0*{sym.value + 8:x}\n", frames)
    assert fde, frames
    cie = re.search(rf"^{fde[1]} \w+ \w+ CIE\n(.*?)\n\n", frames, re.S | re.M)[1]
    assert 'Augmentation:          "zRS"' in cie and "Return address column: 0" in cie, cie
    row = re.search(rf"\n  0x{sym.value - 4:x}: (.*)", frames[fde.end():])[1]
    assert row.startswith("CFA=R3+304: R0=[CFA], R1=[CFA+16], R2=[CFA+24], R3=[CFA+32]"), row
    assert row.endswith("R31=[CFA+256]"), row


def test_freestanding_harness_has_no_libc(tmp_path):
    """The harness is a static LoongArch executable built by clang from harness/ and harness/freestanding/
    alone: no C library's headers or objects, no gcc."""
    target = load_target("loongarch64")
    argv = freestanding_argv(target, tmp_path, [], tmp_path / "harness")
    assert argv[0].startswith("clang")
    assert {"-ffreestanding", "-nostdlibinc", "-nostdlib", "-static"} <= set(argv)
    assert not any("gcc" in a or a.startswith("-l") for a in argv)
    exe = build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))
    img = ElfImage(str(exe))
    assert (img.e_machine, img.e_type) == (EM_LOONGARCH, 2)          # ET_EXEC
    assert not [p for p in img.segments if p.type in (2, 3)]         # no PT_DYNAMIC, no PT_INTERP


def _selftest(tmp_path, *args):
    target = load_target("loongarch64")
    exe = tmp_path / "selftest"
    argv = freestanding_argv(target, tmp_path, [paths.HARNESS / "freestanding" / "test" / "selftest.c"], exe)
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return subprocess.run([*runner(target), str(exe), *args], capture_output=True, text=True, timeout=60)


def test_freestanding_library_selftest(tmp_path):
    """printf, sscanf, strings, errno, TLS in threads, signals and sigsetjmp of harness/freestanding/."""
    proc = _selftest(tmp_path, "arg")
    assert proc.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", proc.stdout, re.M), proc.stdout
    for check in ("printf.#010x", "sscanf.maps", "thread.tls", "signal.siginfo", "signal.mask"):
        assert f"ok {check}\n" in proc.stdout, proc.stdout


def test_freestanding_selftest_can_fail(tmp_path):
    proc = _selftest(tmp_path, "other")
    assert proc.returncode == 1 and "FAIL argv: " in proc.stdout and "1 failed" in proc.stdout, proc.stdout


GNU_TRIPLE = 'gnu_triple = "loongarch64-linux-gnu"\n'
LIBC = 'libc = "freestanding"'
CLANG_TARGET = 'clang_target = "loongarch64-linux-gnu"   # the harness'

# Edits of the spec, (old, new), and the error that must then name the spec and its key.
SPEC_ERRORS = {
    "system-libc-without-gnu-triple": ([(LIBC, 'libc = "system"'), (CLANG_TARGET, "# " + CLANG_TARGET)],
                                       "toolchain.gnu_triple: missing: the harness is built by"),
    "clang-target-with-system-libc": ([(LIBC, 'libc = "system"'), ("qemu = ", GNU_TRIPLE + "qemu = ")],
                                      "harness.clang_target: only a freestanding harness"),
    "unknown-libc": ([(LIBC, 'libc = "musl"')], "harness.libc"),
}


@pytest.mark.parametrize("case", sorted(SPEC_ERRORS))
def test_harness_libc_errors_name_the_key(case, tmp_path):
    edits, message = SPEC_ERRORS[case]
    text = (paths.SPECS / "loongarch64.toml").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / "loongarch64.toml").write_text(text)
    shutil.copytree(paths.LAYOUTS, tmp_path / "layouts")
    with pytest.raises(SpecError) as e:
        load_target("loongarch64", specs=tmp_path)
    assert str(tmp_path / "loongarch64.toml") in str(e.value) and message in str(e.value), str(e.value)
