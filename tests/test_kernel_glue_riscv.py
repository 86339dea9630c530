"""vdsogen inside a kernel build: the riscv64 glue (docs/kernel/riscv/,
docs/kernel/linux-6.12/riscv64.toml) run by the miniature Kbuild of
tests/test_kbuild.py, with arch/riscv/kernel/vdso/Makefile's shape (v6.12):
vdso.so.dbg linked from the kernel's objects, vdso.so its objcopy -S (which
vdso.S includes), include/generated/vdso-offsets.h made from the symbols of
vdso.so.dbg by gen_vdso_offsets.sh ("#define __vdso_NAME_offset 0xOFF"),
which signal.c reads through VDSO_SYMBOL(base, rt_sigreturn); the fragment
is included last.  scripts/kernel-e2e.sh --arch=riscv64 boots the real one.
"""

import shutil
import struct
import subprocess

import pytest

from conftest import ROOT
from test_kbuild import KBUILD, built, make, producer
from vdsogen.elf.reader import ElfImage

VDSO = "arch/riscv/kernel/vdso"
CROSS = "CROSS_COMPILE=riscv64-linux-gnu-"

RISCV = KBUILD.split("obj := ")[0] + r"""obj := arch/riscv/kernel/vdso
src := $(srctree)/$(obj)
all: $(obj)/vdso.so include/generated/vdso-offsets.h
""" + KBUILD.split("all:\n", 1)[1].split("obj-y :=")[0] + r"""
$(obj)/vdso.so.dbg: $(obj)/vgettimeofday.o
	$(call cmd,vdsold)
$(obj)/vgettimeofday.o:
	@echo 'the kernel own vDSO object' > $@
$(obj)/%.so: $(obj)/%.so.dbg
	$(call cmd,objcopy)
quiet_cmd_objcopy = OBJCOPY $@
      cmd_objcopy = $(OBJCOPY) -S $< $@
include/generated/vdso-offsets.h: $(obj)/vdso.so.dbg
	@mkdir -p $(dir $@)
	$(call cmd,vdsosym)
quiet_cmd_vdsosym = VDSOSYM $@
      cmd_vdsosym = false
quiet_cmd_vdsold = VDSOLD  $@
      cmd_vdsold = false

vdso-install-y += $(obj)/vdso.so.dbg
vdso_install:
	@$(foreach f,$(vdso-install-y),$(MAKE) -f $(srctree)/vdsoinst.mk INSTALL_FILES=$(f) &&) true
.PHONY: vdso_install

include $(src)/Makefile.vdsogen
"""

# As Makefile.vdsoinst: every listed file, which the build made, to MODLIB/vdso/ without .dbg.
VDSOINST = r"""
dest := $(MODLIB)/vdso/$(patsubst %.dbg,%,$(notdir $(INSTALL_FILES)))
$(dest): $(INSTALL_FILES) FORCE
	@mkdir -p $(dir $@); cp $< $@
FORCE:
"""

# What signal.c computes: the vDSO's base plus __vdso_rt_sigreturn_offset
# (a fact of arch/riscv/include/asm/vdso.h, written here by hand).
SIGNAL_C = r"""
#include <stdio.h>
#include <generated/vdso-offsets.h>

int main(void)
{
	printf("%lu\n", (unsigned long)__vdso_rt_sigreturn_offset);
	return 0;
}
"""

# rt_sigreturn's two instructions: li a7, 139 (__NR_rt_sigreturn); ecall.
RT_SIGRETURN = struct.pack("<II", 0x08B00893, 0x00000073)


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "linux"
    (t / VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "kernel" / "riscv" / "Makefile.vdsogen", t / VDSO / "Makefile.vdsogen")
    (t / "arch" / "riscv" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "riscv64.toml", t / "arch" / "riscv" / "vdsogen")
    (t / "Makefile").write_text(RISCV)
    (t / "vdsoinst.mk").write_text(VDSOINST)
    (t / ".config").write_text("CONFIG_RISCV=y\nCONFIG_64BIT=y\nCONFIG_HZ=250\n"
                               "CONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
    return t


def offsets(tree):
    """include/generated/vdso-offsets.h as {name: value}; every line a #define."""
    lines = (tree / "include" / "generated" / "vdso-offsets.h").read_text().splitlines()
    assert lines and all(line.split()[0] == "#define" and len(line.split()) == 3 for line in lines), lines
    return {line.split()[1]: int(line.split()[2], 16) for line in lines}


def test_riscv_glue_replaces_the_image_and_its_offsets(tree):
    built(tree, CROSS)
    out = tree / VDSO / "vdsogen"
    assert (tree / VDSO / "vdso.so.dbg").read_bytes() == (out / "vdso.so.dbg").read_bytes()
    image = ElfImage(str(tree / VDSO / "vdso.so"))
    assert image.section(".debug_info") is None and "GCC:" in producer(tree, VDSO)
    # gen_vdso_offsets.sh's names for every __vdso_ symbol: v6.12's six exports and the trampoline.
    dynsym = {s.name: s.value for s in image.dynsym if s.name.startswith("__vdso_")}
    assert offsets(tree) == {f"{name}_offset": value for name, value in dynsym.items()}
    assert sorted(dynsym) == ["__vdso_clock_getres", "__vdso_clock_gettime", "__vdso_flush_icache",
                              "__vdso_getcpu", "__vdso_gettimeofday", "__vdso_riscv_hwprobe",
                              "__vdso_rt_sigreturn"]


def test_signal_code_lands_on_rt_sigreturn(tree, tmp_path):
    """VDSO_SYMBOL(base, rt_sigreturn) from the generated header: the
    offset where the image holds rt_sigreturn's instructions."""
    built(tree, CROSS)
    main = tmp_path / "signal.c"
    main.write_text(SIGNAL_C)
    exe = tmp_path / "signal"
    subprocess.run(["gcc", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main), "-o", str(exe)], check=True)
    offset = int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    data = (tree / VDSO / "vdso.so").read_bytes()
    image = ElfImage(str(tree / VDSO / "vdso.so"))
    text = image.section(".text")
    start = text.offset + offset - text.addr
    assert text.addr <= offset < text.addr + text.size
    assert data[start:start + 8] == RT_SIGRETURN


def test_make_after_make_runs_nothing(tree):
    built(tree, CROSS)
    again = make(tree, CROSS)
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout + again.stderr
    assert make(tree, "-q", CROSS).returncode == 0
    assert built(tree, "-s", CROSS).stdout == ""


def test_vdso_install_installs_the_unstripped_image(tree, tmp_path):
    built(tree, CROSS)
    lib = tmp_path / "modlib"
    built(tree, CROSS, "vdso_install", f"MODLIB={lib}")
    installed = lib / "vdso" / "vdso.so"
    assert installed.read_bytes() == (tree / VDSO / "vdsogen" / "vdso.so.dbg").read_bytes()
    assert ElfImage(str(installed)).section(".debug_info") is not None
