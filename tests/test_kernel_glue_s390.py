"""The s390 glue (docs/kernel/s390/Makefile.vdsogen,
docs/kernel/linux-6.12/s390x.toml) run by a miniature of
arch/s390/kernel/vdso64/Makefile (v6.12), without a kernel build.

The miniature keeps the shape the fragment meets: vdso64.so.dbg linked
from the kernel's own objects by cmd_vdso_and_check, vdso64.so its
objcopy -S (which vdso64_wrapper.S assembles in),
include/generated/vdso64-offsets.h made from vdso64.so.dbg by
cmd_vdsosym, the fragment included last, and `make vdso_install`
installing vdso64.so.dbg as vdso64.so.  A program compiled against the
generated header with the kernel's VDSO64_SYMBOL() (asm/vdso-symbols.h:
vdso_base + vdso64_offset_NAME) computes where signal.c sends a task
after a handler and a restarted syscall; the image must hold the
trampoline's `svc NR` there, and the offsets must be the image's.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from test_kbuild import TOOLCHAIN_AND_QUIET
from vdsogen.elf.reader import ElfImage
from vdsogen.harness.layouts import with_layout
from vdsogen.spec.model import load_target

VDSO = "arch/s390/kernel/vdso64"

KBUILD = r"""
srctree := $(CURDIR)
objtree := $(CURDIR)
obj := arch/s390/kernel/vdso64
src := $(srctree)/$(obj)
all: $(obj)/vdso64.so include/generated/vdso64-offsets.h
include $(objtree)/.config

""" + TOOLCHAIN_AND_QUIET + r"""
$(obj)/vdso64.so.dbg: $(obj)/vdso64_generic.o
	$(call cmd,vdso_and_check)
$(obj)/vdso64_generic.o:
	@echo 'the kernel own vDSO object' > $@
$(obj)/%.so: $(obj)/%.so.dbg
	$(call cmd,objcopy)
quiet_cmd_objcopy = OBJCOPY $@
      cmd_objcopy = $(OBJCOPY) -S $< $@
quiet_cmd_vdso_and_check = VDSO    $@
      cmd_vdso_and_check = false
include/generated/vdso64-offsets.h: $(obj)/vdso64.so.dbg
	@mkdir -p $(dir $@)
	$(call cmd,vdsosym)
quiet_cmd_vdsosym = VDSOSYM $@
      cmd_vdsosym = false

vdso-install-y += $(obj)/vdso64.so.dbg
vdso_install:
	@mkdir -p $(MODLIB)/vdso && cp $(vdso-install-y) $(MODLIB)/vdso/vdso64.so

include $(src)/Makefile.vdsogen
.PHONY: all vdso_install
"""

# What signal.c computes (VDSO64_SYMBOL(current, NAME)), for a vDSO at 0.
CHECK_C = r"""
#include <stdio.h>
#include <generated/vdso64-offsets.h>

#define VDSO64_SYMBOL(base, name) ((base) + (vdso64_offset_##name))

int main(void)
{
	unsigned long base = 0;

	printf("%lu %lu %lu\n", (unsigned long)VDSO64_SYMBOL(base, restart_syscall),
	       (unsigned long)VDSO64_SYMBOL(base, sigreturn), (unsigned long)VDSO64_SYMBOL(base, rt_sigreturn));
	return 0;
}
"""

# s390x's syscall numbers (arch/s390/kernel/syscalls/syscall.tbl): each
# trampoline is `svc NR`, the bytes 0x0a NR.
SVC = {"restart_syscall": 7, "sigreturn": 119, "rt_sigreturn": 173}


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "linux"
    (t / VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "kernel" / "s390" / "Makefile.vdsogen", t / VDSO / "Makefile.vdsogen")
    (t / "arch" / "s390" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "s390x.toml", t / "arch" / "s390" / "vdsogen")
    (t / "Makefile").write_text(KBUILD)
    (t / ".config").write_text("CONFIG_S390=y\nCONFIG_HZ=250\nCONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
    return t


def make(tree, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "LD", "OBJCOPY", "LLVM", "CROSS_COMPILE",
                                                            "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(["make", "-C", str(tree), "--no-print-directory",
                           f"VDSOGEN={sys.executable} -m vdsogen", "CROSS_COMPILE=s390x-linux-gnu-", *args],
                          env=env, capture_output=True, text=True, timeout=600)


def built(tree, *args):
    proc = make(tree, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_the_kernel_maps_vdsogens_image(tree, tmp_path):
    built(tree)
    out = tree / VDSO / "vdsogen"
    assert (tree / VDSO / "vdso64.so.dbg").read_bytes() == (out / "vdso.so.dbg").read_bytes()
    image = ElfImage(str(tree / VDSO / "vdso64.so"))
    assert image.section(".debug_info") is None
    assert "GCC:" in bytes(image.section_bytes(image.section(".comment"))).decode(errors="replace")
    lib = tmp_path / "modlib"
    built(tree, "vdso_install", f"MODLIB={lib}")
    assert (lib / "vdso" / "vdso64.so").read_bytes() == (out / "vdso.so.dbg").read_bytes()


def test_signal_code_returns_to_the_trampolines(tree, tmp_path):
    """The offsets signal.c adds to the vDSO's base are the image's
    __kernel_ trampolines, each an `svc` of its syscall."""
    built(tree)
    header = tree / "include" / "generated" / "vdso64-offsets.h"
    assert all(line.startswith("#define vdso64_offset_") for line in header.read_text().splitlines())
    main = tmp_path / "check.c"
    main.write_text(CHECK_C)
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main), "-o", str(exe)], check=True)
    got = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    image = ElfImage(str(tree / VDSO / "vdso64.so"))
    dynsym = {s.name: s.value for s in image.dynsym}
    assert got == [dynsym[f"__kernel_{n}"] for n in SVC]
    text = image.section(".text")
    code = bytes(image.section_bytes(text))
    for name, at in zip(SVC, got):
        assert code[at - text.addr:at - text.addr + 2] == bytes([0x0a, SVC[name]]), name


def test_make_after_make_runs_nothing(tree):
    built(tree)
    again = make(tree)
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout + again.stderr
    assert make(tree, "-q").returncode == 0
    assert make(tree, "-s").stdout == ""


def test_the_6_12_spec_keeps_getrandom_on_its_pages():
    """v6.12's s390 exports __kernel_getrandom: the spec keeps it on
    linux-5.6-s390, two data pages, the state at +768 of the first."""
    target = load_target("s390x", ROOT / "docs" / "kernel" / "linux-6.12")
    kept = with_layout(target, target.datapage.layout)
    assert "__kernel_getrandom" in {e.name for e in kept.exports}
    assert (target.datapage.layout.name, target.datapage.pages) == ("linux-5.6-s390", 2)
