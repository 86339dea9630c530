"""The signal-frame CFI of sh4 and sh4eb proven by unwinding: libgcc's
unwinder, in a program under qemu with the image as its vDSO (`vdsogen
run`), goes from a SIGSEGV handler through each trampoline (installed as
the restorer, as a C library does) to the interrupted function, at the
faulting instruction, with every register as the sigcontext holds it
(tests/sh4_unwind.c says what is checked); a CFI broken in any of the ways
below fails it.

The unwinder cannot be Debian 12's: its sh4 gcc 12.2 miscompiles it.  The
SH-only pass sh_treg_combine (seen with -fdump-rtl-all: its second run takes
`r = *p; T = (r == 0)` before a branch on T for an inverted cstore and
deletes both) leaves branches reading whatever T a call left.  In
libgcc_eh.a's uw_frame_state_for that is the test of context->ra after the
memset of the frame state (test_bookworm_libgcc_eh_branches_on_a_stale_t_bit),
in _Unwind_Find_FDE the branch after the registered-objects lookup: no
backtrace gets through.  GCC 12.2's own libgcc source built by that gcc
fails the same at -O2 and unwinds at -O0 (test_gcc_12_miscompiles_the_
unwinder_from_O1).  So, from scripts/fetch-consumers.sh:
  - sh4: trixie's libgcc 14 (libgcc_eh.a and libgcc.a, as Debian ships them);
  - sh4eb, which no Debian libgcc serves (test_debian_has_no_big_endian_
    libgcc): the same libgcc_eh.a members, and the libgcc.a ones they call,
    built from GCC 12.2's libgcc source by Debian 12's gcc at -O0, -mb, as
    libgcc's Makefile builds them but for the optimisation;
  - qemu 10's qemu-sh4 and qemu-sh4eb: 7.2's rt frame puts the ucontext's
    uc_mcontext 8 bytes off Linux's (its uc_link is a host pointer, 8 bytes
    on x86-64), so an unwinder that reads the frame as Linux lays it out, as
    the CFI does, reads the wrong words there
    (test_qemu_7_2_rt_frame_is_not_linuxs).
The program itself is built by Debian 12's gcc at the harness's -O0, with
harness/freestanding/ (Debian's sh4 glibc does not start under qemu 7.2)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, dynsym, vdsogen
from vdsogen.harness.driver import freestanding_argv
from vdsogen.spec.model import load_target

CACHE = Path(os.environ.get("VDSOGEN_CONSUMERS") or Path.home() / ".cache" / "vdsogen" / "consumers")
LIBGCC = CACHE / "libgcc" / "usr" / "lib" / "gcc-cross" / "sh4-linux-gnu" / "14"
GCC = CACHE / "libgcc" / "gcc"        # GCC 12.2's source: libgcc/, include/
PLUGIN = CACHE / "libgcc" / "usr" / "lib" / "gcc-cross" / "sh4-linux-gnu" / "12" / "plugin" / "include"
QEMU = CACHE / "root" / "usr" / "bin"
BOOKWORM_LIBGCC = Path("/usr/lib/gcc-cross/sh4-linux-gnu/12")
PROGRAM = ROOT / "tests" / "sh4_unwind.c"
TRAMPOLINES = ("__kernel_sigreturn", "__kernel_rt_sigreturn")
CFI = (ROOT / "arch" / "sh" / "sigframe-cfi.S.j2").read_text()
TARGETS = ["sh4", "sh4eb"]


def cached(path):
    """`path`, which scripts/fetch-consumers.sh leaves: an error (not a skip) when it is missing."""
    if not path.exists():
        pytest.fail(f"{path}: missing; scripts/setup.sh runs scripts/fetch-consumers.sh, which fetches it")
    return path


def libgcc_from_source(out, flags):
    """Of GCC 12.2's libgcc, built by Debian 12's sh4 gcc with `flags`: the unwinder's objects
    of libgcc_eh.a (unwind-dw2.o, unwind-dw2-fde-dip.o) and the helpers of libgcc.a they call
    (block moves, the division table)."""
    out.mkdir()
    # What configure leaves for libgcc: tconfig.h as gcc's mkconfig.sh writes it, libgcc_tm.h
    # (sh-linux names no tm_file), and the headers libgcc/config.host picks for sh-linux.
    (out / "tconfig.h").write_text('#define USED_FOR_TARGET\n#include "auto-host.h"\n')
    (out / "libgcc_tm.h").write_text("")
    for src, dst in (("unwind-generic.h", "unwind.h"), ("gthr-posix.h", "gthr-default.h"),
                     ("config/sh/linux-unwind.h", "md-unwind-support.h")):
        shutil.copy(cached(GCC / "libgcc" / src), out / dst)
    cc = ["sh4-linux-gnu-gcc", *flags, "-DIN_GCC", "-DCROSS_DIRECTORY_STRUCTURE", "-DIN_LIBGCC2",
          "-fbuilding-libgcc", "-fno-stack-protector", "-fexceptions", "-fvisibility=hidden", "-DHIDE_EXPORTS",
          "-I", str(out), "-I", str(GCC / "libgcc"), "-I", str(GCC / "libgcc" / "config" / "sh"),
          "-I", str(cached(PLUGIN)), "-I", str(GCC / "include")]
    jobs = [[*cc, "-c", str(GCC / "libgcc" / f"{name}.c"), "-o", str(out / f"{name}.o")]
            for name in ("unwind-dw2", "unwind-dw2-fde-dip")]
    jobs += [[*cc, f"-DL_{name}", "-xassembler-with-cpp", "-c", str(GCC / "libgcc" / "config" / "sh" / "lib1funcs.S"),
              "-o", str(out / f"_{name}.o")] for name in ("movmem_i4", "div_table")]
    for argv in jobs:
        r = subprocess.run(argv, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return [argv[-1] for argv in jobs]


def build(name, out, libgcc):
    """tests/sh4_unwind.c for target `name`, linked with the objects or archives `libgcc`."""
    argv = freestanding_argv(load_target(name), out.parent, [PROGRAM], out)
    # libgcc has gcc's division helpers, which arch/sh/udivsi3.S stands in for in the harness
    argv = [a for a in argv if not a.endswith("/udivsi3.S")]
    # a static link gets no .eh_frame_hdr unless asked: _dl_find_object hands it to libgcc
    argv += ["-fasynchronous-unwind-tables", "-Wl,--eh-frame-hdr", *(str(p) for p in libgcc)]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """program(name) -> the unwinding program of target `name`, built once."""
    out = tmp_path_factory.mktemp("sh4-unwind")
    done = {}

    def get(name):
        if name not in done:
            if name == "sh4":
                libgcc = [cached(LIBGCC / "libgcc_eh.a"), cached(LIBGCC / "libgcc.a")]
            else:
                libgcc = libgcc_from_source(out / f"libgcc-{name}", ["-mb", "-O0"])
            done[name] = build(name, out / name, libgcc)
        return done[name]
    return get


def unwind(name, program, image, qemu=QEMU):
    """The program's run with `image` as its vDSO, under the qemu of directory `qemu`."""
    syms = dynsym(image)
    offsets = [hex(syms[t]["st_value"]) for t in TRAMPOLINES]
    runs = load_target(name).toolchain.qemu
    return vdsogen("run", f"--arch={name}", f"--image={image}", "--", str(program), *offsets,
                   env={"VDSOGEN_QEMU": str(cached(qemu / f"qemu-{runs}").parent)})


@pytest.mark.parametrize("name", TARGETS)
def test_libgcc_unwinds_through_each_trampoline(name, program, built):
    _, so, _ = built(name)
    r = unwind(name, program(name), so)
    assert r.returncode == 0 and "4 passed, 0 failed\n" in r.stdout, r.stdout + r.stderr
    for t in TRAMPOLINES:
        assert f"ok unwind.{t}\n" in r.stdout and f"ok sigreturn.{t}\n" in r.stdout, r.stdout


BREAKAGES = {
    # The CFA from sc_regs[14]'s slot, not sc_regs[15]'s.
    "cfa": ("{% set SC_R15 = 64 %}", "{% set SC_R15 = 60 %}", "CFA is 0x6e, not the interrupted r15"),
    # r3 from r4's slot.
    "register": ('("r3", 3, 16)', '("r3", 3, 20)', "DWARF register 3 unwinds to"),
    # The pc (the return column) from sc_pr.
    "pc": ('("pc", 16, 68)', '("pc", 16, 72)', ", not the interrupted pc"),
    # No "S" augmentation: the interrupted pc taken for a return address.
    "no-signal-frame": ("\t.cfi_signal_frame\n", "", " as a return address, not the interrupted pc"),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
@pytest.mark.parametrize("name", TARGETS)
def test_a_broken_cfi_fails_to_unwind(name, case, program, tmp_path):
    old, new, words = BREAKAGES[case]
    specs = tmp_path / "specs"
    (specs / "arch" / "sh").mkdir(parents=True)
    (specs / f"{name}.toml").write_text((ROOT / "specs" / f"{name}.toml").read_text())
    assert CFI.count(old) == 1, old
    (specs / "arch" / "sh" / "sigframe-cfi.S.j2").write_text(CFI.replace(old, new))
    r = vdsogen("build", "-q", f"--specs={specs}", f"--arch={name}", f"--out={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    r = unwind(name, program(name), tmp_path / "out" / "vdso.so")
    assert r.returncode == 1 and "2 passed, 2 failed\n" in r.stdout, r.stdout + r.stderr
    for t in TRAMPOLINES:
        assert re.search(f"^FAIL unwind.{t}: .*{re.escape(words)}", r.stdout, re.M), r.stdout
        assert f"ok sigreturn.{t}\n" in r.stdout, r.stdout


@pytest.mark.parametrize("name", TARGETS)
def test_qemu_7_2_rt_frame_is_not_linuxs(name, program, built, tmp_path):
    """Under the host's qemu 7.2 the sigreturn frame unwinds, the rt frame does not (the
    handler dies in the unwinder, which reads the registers 8 bytes off).  When this fails,
    Debian 12's qemu is fixed, and the tests can run under it."""
    _, so, _ = built(name)
    runs = load_target(name).toolchain.qemu
    (tmp_path / f"qemu-{runs}").symlink_to(shutil.which(f"qemu-{runs}-static"))
    r = unwind(name, program(name), so, tmp_path)
    assert "ok unwind.__kernel_sigreturn\n" in r.stdout, r.stdout + r.stderr
    assert "unwind.__kernel_rt_sigreturn" not in r.stdout and r.returncode != 0, r.stdout + r.stderr


def test_gcc_12_miscompiles_the_unwinder_from_O1(built, tmp_path):
    """GCC 12.2's libgcc unwinder, built by Debian 12's sh4 gcc: at -O2 (as Debian builds
    libgcc) the first lookup of the trampoline's FDE already fails, at -O0 it unwinds."""
    _, so, _ = built("sh4")
    out = {}
    for opt in ("-O0", "-O2"):
        libgcc = libgcc_from_source(tmp_path / f"libgcc{opt}", [opt])
        out[opt] = unwind("sh4", build("sh4", tmp_path / f"sh4_unwind{opt}", libgcc), so)
    assert out["-O0"].returncode == 0 and "4 passed, 0 failed\n" in out["-O0"].stdout, out["-O0"].stdout
    assert out["-O2"].returncode != 0, out["-O2"].stdout
    assert "FAIL unwind.__kernel_sigreturn: no FDE of the image covers" in out["-O2"].stdout, out["-O2"].stdout


def _uw_frame_state_for(archive):
    """The instructions of libgcc_eh's uw_frame_state_for from its first call (the memset of the
    frame state) to the first branch after it, and that branch's delay slot."""
    text = subprocess.run(["sh4-linux-gnu-objdump", "-d", str(archive)], capture_output=True, text=True,
                          check=True).stdout
    body = text.split("<uw_frame_state_for>:\n", 1)[1].split("\n\n", 1)[0]
    insns = [" ".join(f.strip() for f in line.split("\t")[2:4]) for line in body.splitlines()
             if line.count("\t") >= 2]
    call = next(i for i, s in enumerate(insns) if s.startswith("bsrf"))
    branch = next(i for i in range(call, len(insns)) if re.match(r"b[tf]", insns[i]))
    return insns[call:branch + 2]


def test_bookworm_libgcc_eh_branches_on_a_stale_t_bit():
    """Debian 12's: after memset returns, `bf.s` with context->ra's load in its delay slot and
    no `tst` before: the branch reads T as memset left it.  Trixie's tests r4, the loaded ra,
    first.  When this fails, Debian 12's libgcc is fixed, and can take trixie's place."""
    old = _uw_frame_state_for(cached(BOOKWORM_LIBGCC / "libgcc_eh.a"))
    new = _uw_frame_state_for(cached(LIBGCC / "libgcc_eh.a"))
    assert not [s for s in old[:-2] if s.startswith(("tst", "cmp"))], old
    assert old[-2].startswith("bf.s") and re.match(r"mov\.l @\(48,r\d+\),r4", old[-1]), old
    assert "tst r4,r4" in new and new.index("tst r4,r4") < len(new) - 2, new


def test_debian_has_no_big_endian_libgcc():
    """Debian's sh4 gcc has no big-endian multilib, and its libgcc (12's, trixie's 14) is
    little-endian only: sh4eb's unwinder is built from source."""
    libs = subprocess.run(["sh4-linux-gnu-gcc", "-print-multi-lib"], capture_output=True, text=True,
                          check=True).stdout.split()
    assert libs == [".;", "m4-nofpu;@m4-nofpu"], libs
    for lib in (BOOKWORM_LIBGCC, LIBGCC):
        header = subprocess.run(["sh4-linux-gnu-readelf", "-h", str(cached(lib / "libgcc_eh.a"))],
                                capture_output=True, text=True, check=True).stdout
        assert "little endian" in header and "big endian" not in header, header
