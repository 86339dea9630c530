"""SuperH (sh4, and sh4eb big-endian): Linux's SH vDSO (arch/sh/kernel/
vsyscall/, the same from 2.6.19 to 6.17), the targets specs/sh4.toml and
specs/sh4eb.toml, built from arch/sh/ without time data (no [counter], no
[datapage]: vdsogen/spec/model.py), with the GNU toolchain only (LLVM has
no SuperH backend).

What only sh4 has: its exports and e_entry, one page and no data pages,
Linux's trampoline bytes, their signal-frame CFI read by pyelftools and
held against Linux's frame layout (struct sigframe, struct rt_sigframe), a
broken trampoline or CFI caught; the freestanding harness built by gcc
(Debian's sh4 glibc does not start under qemu-sh4 7.2), and the reason it
is built at -O0; `vdsogen run` without time data.  The generic tables
(tests/test_targets.py) hold its check, audit and harness rows.

The harness has no unwind checks here: Debian 12's libgcc_eh.a for sh4 is
built by the same gcc 12 and carries its bug (test_gcc_drops_the_load_a_
test_reads): uw_frame_state_for branches on context->ra without testing
it, and no backtrace gets through.  tests/test_sh4_unwind.py unwinds
through the trampolines of both with a libgcc unwinder gcc 12 did not
build at -O2; here their rules are held against the layout Linux's
arch/sh/kernel/signal_32.c builds, and the harness's trampoline checks
hold the code to Linux's words."""

import json
import re
import subprocess

import pytest
from elftools.dwarf.callframe import CIE, FDE

from conftest import ROOT, breg, dynsym, elf, vdsogen
from vdsogen import paths
from vdsogen.harness.driver import freestanding_argv, runner
from vdsogen.spec import abi
from vdsogen.spec.model import load_target

SPEC = (ROOT / "specs" / "sh4.toml").read_text()

# Linux's trampolines (vsyscall-sigreturn.S): mov.w 1f, r3; trapa #0x10;
# five `or r0, r0`; 1: .short NR -- eight halfwords, in each byte order.
LINUX_BYTES = {
    "sh4": {"__kernel_sigreturn": bytes.fromhex("0593 10c3 0b20 0b20 0b20 0b20 0b20 7700"),
            "__kernel_rt_sigreturn": bytes.fromhex("0593 10c3 0b20 0b20 0b20 0b20 0b20 ad00")},
    "sh4eb": {"__kernel_sigreturn": bytes.fromhex("9305 c310 200b 200b 200b 200b 200b 0077"),
              "__kernel_rt_sigreturn": bytes.fromhex("9305 c310 200b 200b 200b 200b 200b 00ad")},
}
TRAMPOLINES = sorted(LINUX_BYTES["sh4"])

# Linux's frames, written out from the uapi headers: struct sigframe starts
# with the sigcontext; struct rt_sigframe is the siginfo (128 bytes), then
# the ucontext: uc_flags, uc_link, uc_stack (12 bytes), uc_mcontext.  The
# handler returns with r15 at the frame.
SIGCONTEXT_AT = {"__kernel_sigreturn": 0, "__kernel_rt_sigreturn": 128 + 4 + 4 + 12}
# struct sigcontext: oldmask, sc_regs[16], sc_pc, sc_pr, sc_sr, sc_gbr, sc_mach, sc_macl;
# by GCC's DWARF numbers for SuperH: r0-r15 0-15, pc 16, pr 17, gbr 19, mach 20, macl 21.
SC = {**{n: 4 + 4 * n for n in range(16)}, 16: 68, 17: 72, 19: 80, 20: 84, 21: 88}
SP, PC_COLUMN = 15, 16


@pytest.fixture(scope="module", params=["sh4", "sh4eb"])
def image(request, built):
    _, so, _ = built(request.param)
    return request.param, so


def symbols(path):
    """{name: value} of the image's defined functions."""
    return {n: s["st_value"] for n, s in dynsym(path).items()
            if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] == "STT_FUNC"}


def signal_rules(path, name):
    """The signal-frame CFI of trampoline `name`: (CFA expression, {register: expression}) as
    (offset from r15, the rest of the expression), from the one FDE that covers the address
    before the symbol (where an unwinder looks up a handler's return address - 1)."""
    start = symbols(path)[name]
    fdes = [f for f in elf(path).get_dwarf_info().EH_CFI_entries() if isinstance(f, FDE)
            and f.header["initial_location"] <= start - 1 < f.header["initial_location"] + f.header["address_range"]]
    assert len(fdes) == 1, fdes
    fde = fdes[0]
    assert isinstance(fde.cie, CIE) and "S" in fde.cie.header["augmentation"].decode()
    cfa = [breg(i.args[0], SP) for i in fde.instructions if i.opcode == 0x0f]          # DW_CFA_def_cfa_expression
    regs = {i.args[0]: breg(i.args[1], SP) for i in fde.instructions if i.opcode == 0x10}  # DW_CFA_expression
    assert len(cfa) == 1, fde.instructions
    return fde.cie.header["return_address_register"], cfa[0], regs


def linux_rules(name):
    at = SIGCONTEXT_AT[name]
    return PC_COLUMN, (at + SC[SP], [0x06]), {r: (at + off, []) for r, off in SC.items() if r != SP}


def test_exports_entry_version_and_no_data_pages(image):
    name, image = image
    syms = symbols(image)
    assert set(syms) == {e.name for e in abi.get(name).exports}
    assert set(syms) == {"__kernel_vsyscall", "__kernel_sigreturn", "__kernel_rt_sigreturn"}
    e = elf(image)
    assert (e.elfclass, e.little_endian, e.header.e_machine, e.header.e_flags) == (32, name == "sh4", "EM_SH", 1)
    assert e.header.e_entry == syms["__kernel_vsyscall"]
    versions = subprocess.run(["sh4-linux-gnu-readelf", "-V", str(image)], capture_output=True, text=True,
                              check=True).stdout
    assert "Name: LINUX_2.6" in versions, versions
    assert "linux-gate.so.1" in subprocess.run(["sh4-linux-gnu-readelf", "-d", str(image)], capture_output=True,
                                               text=True, check=True).stdout
    # One PT_LOAD from address 0: no data pages below the text.
    loads = [s for s in e.iter_segments() if s["p_type"] == "PT_LOAD"]
    assert len(loads) == 1 and loads[0]["p_vaddr"] == 0, loads


def test_audits_as_its_abi_with_no_finding(image):
    name, image = image
    doc = json.loads(vdsogen("audit", "--format=json", str(image)).stdout)
    (img,) = doc["images"]
    assert img["abi"]["name"] == name and img["findings"] == [], img["findings"]


def test_trampolines_are_linux_bytes(image):
    name, image = image
    syms = symbols(image)
    data = image.read_bytes()      # one PT_LOAD at offset 0, address 0: file offset = address
    for t, want in LINUX_BYTES[name].items():
        assert data[syms[t]:syms[t] + 16] == want, t


@pytest.mark.parametrize("name", TRAMPOLINES)
def test_trampoline_cfi_reads_linux_frame(image, name):
    """The CFA is the interrupted r15 (sc_regs[15], loaded), every other
    register and the pc (the return column: a signal frame resumes at the pc
    itself) at its place in the frame's sigcontext."""
    assert signal_rules(image[1], name) == linux_rules(name)


def test_a_broken_cfi_is_caught(tmp_path):
    """The rules read from an image whose sigcontext table is one word off
    for r15 are not Linux's: the test above fails on such an image."""
    specs = tmp_path / "specs"
    arch = specs / "arch" / "sh"
    arch.mkdir(parents=True)
    (specs / "sh4.toml").write_text(SPEC)
    text = (ROOT / "arch" / "sh" / "sigframe-cfi.S.j2").read_text()
    assert "{% set SC_R15 = 64 %}" in text
    (arch / "sigframe-cfi.S.j2").write_text(text.replace("{% set SC_R15 = 64 %}", "{% set SC_R15 = 60 %}"))
    r = vdsogen("build", "-q", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    so = tmp_path / "out" / "vdso.so"
    for name in TRAMPOLINES:
        assert signal_rules(so, name) != linux_rules(name)


def test_a_broken_trampoline_fails_check(tmp_path):
    specs = tmp_path / "specs"
    arch = specs / "arch" / "sh"
    arch.mkdir(parents=True)
    (specs / "sh4.toml").write_text(SPEC)
    text = (ROOT / "arch" / "sh" / "sigframe-cfi.S.j2").read_text()
    assert "\ttrapa\t#0x10\n" in text
    (arch / "sigframe-cfi.S.j2").write_text(text.replace("\ttrapa\t#0x10\n", "\ttrapa\t#0x11\n"))
    r = vdsogen("build", "-q", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "T001 error" in r.stderr and "__kernel_rt_sigreturn" in r.stderr, r.stderr


def test_no_llvm(tmp_path):
    r = vdsogen("build", "--arch=sh4", f"--out={tmp_path / 'out'}", env={"LLVM": "-19"})
    assert r.returncode != 0 and "LLVM has no backend for the sh4 ABI" in r.stderr, r.stderr


@pytest.mark.parametrize("edit, key, message", [
    # time data is all or nothing: each table is "missing" on its own, as for every target
    ('[syscall]', "datapage", "missing"),
    ('[[export]]\nname = "__kernel_time"\nimpl = "time"\n\n[syscall]', "counter", "missing"),
    ('default = "gnu"', "toolchain.clang_target", "missing: only a target with default"),
])
def test_time_data_and_toolchain_errors(tmp_path, edit, key, message):
    spec = SPEC
    if edit == "[syscall]":
        spec = spec.replace("[syscall]", '[counter]\nfragment = "none"\nmodes = []\nmask = false\n'
                                         'clamp_backwards = false\n\n[syscall]')
    elif edit.startswith("[[export]]"):
        spec = spec.replace("[syscall]", edit)
    else:
        assert edit + "             # clang-19 has no SuperH backend\n" in spec
        spec = spec.replace(edit + "             # clang-19 has no SuperH backend\n", "")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "sh4.toml").write_text(spec)
    r = vdsogen("build", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{key}: {message}" in r.stderr, r.stderr


def test_freestanding_harness_is_built_by_gcc_without_libc(tmp_path):
    """No clang_target: the harness is sh4-linux-gnu-gcc's, against gcc's own headers and
    harness/freestanding/ (no glibc header or object), static, with libgcc."""
    target = load_target("sh4")
    argv = freestanding_argv(target, tmp_path, [], tmp_path / "harness")
    assert argv[0] == "sh4-linux-gnu-gcc"
    assert {"-ffreestanding", "-nostdinc", "-nostdlib", "-static", "-O0"} <= set(argv)
    assert not [a for a in argv if a.startswith("-l")]          # no libgcc: arch/sh/udivsi3.S
    includes = [argv[i + 1] for i, a in enumerate(argv) if a in ("-I", "-isystem")]
    assert not [i for i in includes if "sh4-linux-gnu/include" in i or i.startswith("/usr/include")], includes
    assert argv.index("-O0") > argv.index("-O2")        # the spec's harness_cflags come last


def _selftest(tmp_path, name, *args):
    target = load_target(name)
    exe = tmp_path / "selftest"
    argv = freestanding_argv(target, tmp_path, [paths.HARNESS / "freestanding" / "test" / "selftest.c"], exe)
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return subprocess.run([*runner(target), str(exe), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", ["sh4", "sh4eb"])
def test_freestanding_library_selftest(tmp_path, name):
    """harness/freestanding/arch/sh/: trapa, start-up, clone with TLS at gbr (variant I, the TCB at
    the thread pointer), sigsetjmp of r8-r15, pr, fpscr and fr12-fr15, the division gcc calls;
    the 64-bit timespec in either byte order (nanosleep)."""
    proc = _selftest(tmp_path, name, "arg")
    assert proc.returncode == 0 and re.search(r"^\d+ passed, 0 failed$", proc.stdout, re.M), proc.stdout
    for check in ("printf.ld", "printf.zu", "thread.create", "thread.tls", "thread.join", "signal.siginfo",
                  "signal.mask", "setjmp.zero", "nanosleep"):
        assert f"ok {check}\n" in proc.stdout, proc.stdout


def test_gcc_drops_the_load_a_test_reads(tmp_path):
    """Why specs/sh4.toml builds the harness at -O0: Debian's gcc 12.2 for sh4
    drops the load that feeds a `tst` at -O1 and above, so `while (*p) p++`
    branches on a stale T bit (the harness hung in its start-up).  When this
    fails, gcc is fixed and the -O0 can go."""
    src = tmp_path / "t.c"
    src.write_text("char **f(char **p)\n{\n\twhile (*p)\n\t\tp++;\n\treturn p;\n}\n")

    def asm(opt):
        return subprocess.run(["sh4-linux-gnu-gcc", opt, "-S", "-o", "-", str(src)], capture_output=True,
                              text=True, check=True).stdout
    assert "tst" not in asm("-O2") and "@r" not in asm("-O2").split("f:")[1], asm("-O2")
    assert "tst" in asm("-O0")


def test_run_maps_the_image_without_time_data(image):
    """`vdsogen run`: the loader maps the image above nominal pages it never reads and keeps
    no time; the probe finds it at AT_SYSINFO_EHDR, by its build-id, and answers the clocks
    by syscalls."""
    name, image = image
    r = vdsogen("run", f"--arch={name}", f"--image={image}", "--", "vdsogen-probe")
    assert r.returncode == 0, r.stderr
    notes = subprocess.run(["sh4-linux-gnu-readelf", "-n", str(image)], capture_output=True, text=True,
                           check=True).stdout
    want = re.search(r"Build ID: (\w+)", notes)[1]
    assert re.search(r"^probe\.vdso 0x[1-9a-f]", r.stdout, re.M) and f"probe.build-id {want}\n" in r.stdout, \
        r.stdout
    assert "probe.clock 1 " in r.stdout, r.stdout


def test_bench_says_there_is_no_time_data():
    r = vdsogen("bench", "--arch=sh4")
    assert r.returncode != 0 and "no time data" in r.stderr and "nothing to benchmark" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
