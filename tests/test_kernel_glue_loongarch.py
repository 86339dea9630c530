"""vdsogen inside a kernel build: the LoongArch glue
(docs/kernel/loongarch/Makefile.vdsogen, docs/kernel/linux-6.12/loongarch64.toml)
run by the miniature Kbuild of tests/test_kbuild.py, with
arch/loongarch/vdso/Makefile's shape (v6.12): vdso.so.dbg linked from the
kernel's objects by cmd_vdsold_and_vdso_check, vdso.so its objcopy -S
(which vdso.S includes between vdso_start and vdso_end),
include/generated/vdso-offsets.h made from the VDSO_ symbols of
vdso.so.dbg by cmd_vdsosym, the fragment included last, and `make
vdso_install` installing vdso.so.dbg as vdso.so.  Built with LLVM=-19, as
a LoongArch kernel is on Debian 12 (no LoongArch gcc).  A program compiled
against the generated header takes vdso_offset_sigreturn, as vdso.c's
.offset_sigreturn does (signal.c returns every handler there); the image
must hold rt_sigreturn's two instructions at it.  scripts/kernel-e2e.sh
--arch=loongarch64 boots the real one.
"""

import shutil
import struct
import subprocess

import pytest

from conftest import ROOT
from test_kbuild import KBUILD, built, make, producer
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target

VDSO = "arch/loongarch/vdso"
LLVM = "LLVM=-19"

LOONGARCH = KBUILD.split("obj := ")[0] + r"""obj := arch/loongarch/vdso
src := $(srctree)/$(obj)
all: $(obj)/vdso.so include/generated/vdso-offsets.h
""" + KBUILD.split("all:\n", 1)[1].split("obj-y :=")[0] + r"""
$(obj)/vdso.so.dbg: $(obj)/vgettimeofday.o
	$(call cmd,vdsold_and_vdso_check)
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
quiet_cmd_vdsold_and_vdso_check = LD      $@
      cmd_vdsold_and_vdso_check = false

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

# What vdso.c stores in .offset_sigreturn (a fact of arch/loongarch/kernel/vdso.c,
# written here by hand).
SIGNAL_C = r"""
#include <stdio.h>
#include <generated/vdso-offsets.h>

int main(void)
{
	printf("%lu\n", (unsigned long)vdso_offset_sigreturn);
	return 0;
}
"""

# rt_sigreturn's two instructions: li.w a7, 139 (__NR_rt_sigreturn); syscall 0.
RT_SIGRETURN = struct.pack("<II", 0x03822C0B, 0x002B0000)


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "linux"
    (t / VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "kernel" / "loongarch" / "Makefile.vdsogen", t / VDSO / "Makefile.vdsogen")
    (t / "arch" / "loongarch" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "loongarch64.toml", t / "arch" / "loongarch" / "vdsogen")
    (t / "Makefile").write_text(LOONGARCH)
    (t / "vdsoinst.mk").write_text(VDSOINST)
    (t / ".config").write_text("CONFIG_LOONGARCH=y\nCONFIG_64BIT=y\nCONFIG_HZ=250\nCONFIG_PAGE_SIZE_16KB=y\n"
                               "CONFIG_NR_CPUS=256\nCONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
    return t


def offsets(tree):
    """include/generated/vdso-offsets.h as {name: value}; every line a #define."""
    lines = (tree / "include" / "generated" / "vdso-offsets.h").read_text().splitlines()
    assert lines and all(line.split()[0] == "#define" and len(line.split()) >= 3 for line in lines), lines
    return {line.split()[1]: int(line.split()[2], 16) for line in lines}


def test_loongarch_glue_replaces_the_image_and_its_offsets(tree):
    built(tree, LLVM)
    out = tree / VDSO / "vdsogen"
    assert (tree / VDSO / "vdso.so.dbg").read_bytes() == (out / "vdso.so.dbg").read_bytes()
    image = ElfImage(str(tree / VDSO / "vdso.so"))
    assert image.section(".debug_info") is None and "clang version 19" in producer(tree, VDSO)
    dynsym = {s.name: s.value for s in image.dynsym if s.name.startswith("__vdso_")}
    assert sorted(dynsym) == ["__vdso_clock_getres", "__vdso_clock_gettime", "__vdso_getcpu",
                              "__vdso_getrandom", "__vdso_gettimeofday", "__vdso_rt_sigreturn"]
    got = offsets(tree)
    assert all(name.startswith("vdso_offset_") for name in got)
    assert got["vdso_offset_sigreturn"] == dynsym["__vdso_rt_sigreturn"]
    assert {f"vdso_offset_{name}": value for name, value in dynsym.items()}.items() <= got.items()


def test_signal_code_lands_on_rt_sigreturn(tree, tmp_path):
    """vdso.c's .offset_sigreturn from the generated header: the offset
    where the image holds rt_sigreturn's instructions."""
    built(tree, LLVM)
    main = tmp_path / "signal.c"
    main.write_text(SIGNAL_C)
    exe = tmp_path / "signal"
    subprocess.run(["gcc", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main), "-o", str(exe)], check=True)
    offset = int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    data = (tree / VDSO / "vdso.so").read_bytes()
    text = ElfImage(str(tree / VDSO / "vdso.so")).section(".text")
    assert text.addr <= offset < text.addr + text.size
    start = text.offset + offset - text.addr
    assert data[start:start + 8] == RT_SIGRETURN


def test_make_after_make_runs_nothing(tree):
    built(tree, LLVM)
    again = make(tree, LLVM)
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout + again.stderr
    assert make(tree, "-q", LLVM).returncode == 0
    assert built(tree, "-s", LLVM).stdout == ""


def test_vdso_install_installs_the_unstripped_image(tree, tmp_path):
    built(tree, LLVM)
    lib = tmp_path / "modlib"
    built(tree, LLVM, "vdso_install", f"MODLIB={lib}")
    installed = lib / "vdso" / "vdso.so"
    assert installed.read_bytes() == (tree / VDSO / "vdsogen" / "vdso.so.dbg").read_bytes()
    assert ElfImage(str(installed)).section(".debug_info") is not None


def test_the_6_12_spec_has_its_pages():
    """v6.12: getrandom exported, the v6.12 layout on four 16 KiB pages
    (generic, time namespace, the 256 per-CPU lines, getrandom's state)."""
    target = load_target("loongarch64", ROOT / "docs" / "kernel" / "linux-6.12")
    assert "__vdso_getrandom" in {e.name for e in target.exports}
    assert (target.datapage.layout.name, target.datapage.pages, target.datapage.page_size) == \
        ("linux-6.12-loongarch", 4, 16384)
