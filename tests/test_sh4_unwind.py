"""sh4's signal-frame CFI proven by unwinding: libgcc's unwinder, in a
program under qemu-sh4 with the image as its vDSO (`vdsogen run`), goes
from a SIGSEGV handler through each trampoline (installed as the restorer,
as a C library does) to the interrupted function, at the faulting
instruction, with every register as the sigcontext holds it
(tests/sh4_unwind.c says what is checked); a CFI broken in any of the ways
below fails it.

Two pieces come from Debian trixie (scripts/fetch-consumers.sh):
  - libgcc 14's libgcc_eh.a and libgcc.a: bookworm's are built by its gcc
    12.2, whose SH-only pass sh_treg_combine (seen with -fdump-rtl-all: its
    second run takes `r = *p; T = (r == 0)` before a branch on T for an
    inverted cstore and removes both) drops the load and the `tst` that feed
    a branch.  In libgcc_eh's uw_frame_state_for that is the test of
    context->ra after the memset: the branch reads whatever T memset left,
    every _Unwind_Backtrace ends at once (test_bookworm_libgcc_eh_branches_
    on_a_stale_t_bit).  The program itself is built by bookworm's gcc, at
    the harness's -O0, with harness/freestanding/ (Debian's sh4 glibc does
    not start under qemu-sh4 7.2).
  - qemu 10's qemu-sh4: qemu 7.2's rt frame puts the ucontext's uc_mcontext
    8 bytes off Linux's (its uc_link is a host pointer, 8 bytes on x86-64),
    so an unwinder that reads the frame as Linux lays it out, as the CFI
    does, reads the wrong words there (test_qemu_7_2_rt_frame_is_not_linuxs).

sh4eb is not unwound: Debian has no big-endian SuperH libgcc (its sh4 gcc's
multilibs are the little-endian m4 and m4-nofpu, trixie's and unstable's
libgcc-1N-dev-sh4-cross too; test_no_big_endian_libgcc).  Its .eh_frame is
the same CFI in the other byte order, whose rules tests/test_sh4.py reads
as Linux's frame for both."""

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
QEMU = CACHE / "root" / "usr" / "bin"
BOOKWORM_LIBGCC = Path("/usr/lib/gcc-cross/sh4-linux-gnu/12")
PROGRAM = ROOT / "tests" / "sh4_unwind.c"
TRAMPOLINES = ("__kernel_sigreturn", "__kernel_rt_sigreturn")
SPEC = (ROOT / "specs" / "sh4.toml").read_text()
CFI = (ROOT / "arch" / "sh" / "sigframe-cfi.S.j2").read_text()


def cached(path):
    """`path`, which scripts/fetch-consumers.sh leaves: an error (not a skip) when it is missing."""
    if not path.exists():
        pytest.fail(f"{path}: missing; scripts/setup.sh runs scripts/fetch-consumers.sh, which fetches it")
    return path


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("sh4-unwind")
    argv = freestanding_argv(load_target("sh4"), out, [PROGRAM], out / "sh4_unwind")
    # libgcc.a has gcc's division helpers, which arch/sh/udivsi3.S stands in for in the harness
    argv = [a for a in argv if not a.endswith("/udivsi3.S")]
    # a static link gets no .eh_frame_hdr unless asked: _dl_find_object hands it to libgcc
    argv += ["-fasynchronous-unwind-tables", "-Wl,--eh-frame-hdr",
             str(cached(LIBGCC / "libgcc_eh.a")), str(cached(LIBGCC / "libgcc.a"))]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out / "sh4_unwind"


def unwind(program, image, qemu=QEMU):
    """The program's run with `image` as its vDSO, under the qemu-sh4 of directory `qemu`."""
    syms = dynsym(image)
    offsets = [hex(syms[t]["st_value"]) for t in TRAMPOLINES]
    return vdsogen("run", "--arch=sh4", f"--image={image}", "--", str(program), *offsets,
                   env={"VDSOGEN_QEMU": str(cached(qemu / "qemu-sh4").parent)})


def test_libgcc_unwinds_through_each_trampoline(program, built):
    _, so, _ = built("sh4")
    r = unwind(program, so)
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
def test_a_broken_cfi_fails_to_unwind(case, program, tmp_path):
    old, new, words = BREAKAGES[case]
    specs = tmp_path / "specs"
    (specs / "arch" / "sh").mkdir(parents=True)
    (specs / "sh4.toml").write_text(SPEC)
    assert CFI.count(old) == 1, old
    (specs / "arch" / "sh" / "sigframe-cfi.S.j2").write_text(CFI.replace(old, new))
    r = vdsogen("build", "-q", f"--specs={specs}", "--arch=sh4", f"--out={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    r = unwind(program, tmp_path / "out" / "vdso.so")
    assert r.returncode == 1 and "2 passed, 2 failed\n" in r.stdout, r.stdout + r.stderr
    for t in TRAMPOLINES:
        assert re.search(f"^FAIL unwind.{t}: .*{re.escape(words)}", r.stdout, re.M), r.stdout
        assert f"ok sigreturn.{t}\n" in r.stdout, r.stdout


def test_qemu_7_2_rt_frame_is_not_linuxs(program, built, tmp_path):
    """Under the host's qemu-sh4 7.2 the sigreturn frame unwinds, the rt frame does not (the
    handler dies in the unwinder, which reads the registers 8 bytes off).  When this fails,
    Debian 12's qemu is fixed, and the test can run under it."""
    _, so, _ = built("sh4")
    (tmp_path / "qemu-sh4").symlink_to(shutil.which("qemu-sh4-static"))
    r = unwind(program, so, tmp_path)
    assert "ok unwind.__kernel_sigreturn\n" in r.stdout, r.stdout + r.stderr
    assert "unwind.__kernel_rt_sigreturn" not in r.stdout and r.returncode != 0, r.stdout + r.stderr


def _uw_frame_state_for(archive):
    """The instructions of libgcc_eh's uw_frame_state_for from its start to its first branch
    after the first call (memset of the frame state), then that branch's delay slot."""
    text = subprocess.run(["sh4-linux-gnu-objdump", "-d", str(archive)], capture_output=True, text=True,
                          check=True).stdout
    body = text.split("<uw_frame_state_for>:\n", 1)[1].split("\n\n", 1)[0]
    insns = [line.split("\t")[2] + " " + (line.split("\t") + [""])[3] for line in body.splitlines()
             if line.count("\t") >= 2]
    call = next(i for i, s in enumerate(insns) if s.startswith("bsrf"))
    branch = next(i for i in range(call, len(insns)) if re.match(r"b[tf]", insns[i]))
    return insns[call:branch + 2]


def test_bookworm_libgcc_eh_branches_on_a_stale_t_bit():
    """Bookworm's: after memset returns, `bf.s` with context->ra's load in its delay slot and no
    `tst` before: the branch reads T as memset left it.  Trixie's tests r4, the loaded ra.
    When this fails, Debian 12's libgcc is fixed, and can take trixie's place."""
    old = _uw_frame_state_for(cached(BOOKWORM_LIBGCC / "libgcc_eh.a"))
    new = _uw_frame_state_for(cached(LIBGCC / "libgcc_eh.a"))
    assert not [s for s in old[:-2] if s.startswith(("tst", "cmp"))], old
    assert old[-2].startswith("bf.s") and re.match(r"mov\.l @\(48,r\d+\),r4", old[-1]), old
    assert "tst r4,r4" in new and new.index("tst r4,r4") < len(new) - 2, new


def test_no_big_endian_libgcc():
    """Debian's sh4 gcc has no big-endian multilib, and its libgcc is little-endian only:
    nothing to link an sh4eb unwinding program with."""
    libs = subprocess.run(["sh4-linux-gnu-gcc", "-print-multi-lib"], capture_output=True, text=True,
                          check=True).stdout.split()
    assert libs == [".;", "m4-nofpu;@m4-nofpu"], libs
    header = subprocess.run(["sh4-linux-gnu-readelf", "-h", str(cached(LIBGCC / "libgcc_eh.a"))],
                            capture_output=True, text=True, check=True).stdout
    assert "little endian" in header and "big endian" not in header, header
