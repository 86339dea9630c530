"""The arm64 compat glue (docs/kernel/arm64/Makefile.vdsogen32,
docs/kernel/linux-6.12/arm64-compat.toml) run by a miniature of
arch/arm64/kernel/vdso32/Makefile (v6.12), without a kernel build.

The miniature keeps the shape the fragment meets: the toolchain chosen and
exported as Kbuild's top Makefile chooses it (CC, LD, OBJCOPY; LLVM=), and
the directory's own CC_COMPAT and LD_COMPAT chosen as that Makefile chooses
them ($(CROSS_COMPILE_COMPAT)gcc and ld, or with CONFIG_CC_IS_CLANG and
CONFIG_LD_IS_LLD the kernel's clang --target=arm-linux-gnueabi and ld.lld);
quiet, silent (make -s) and V=1 command echoing through $(call cmd,...);
vdso.so.raw linked from the kernel's own objects by
cmd_vdsold_and_vdso_check, vdso32.so.dbg made from it by vdsomunge (here a
copy after vdsomunge's checks of e_flags), vdso.so its objcopy -S, and
`make vdso_install` installing vdso32.so.dbg as vdso32.so; the fragment
included last.  arch/arm64/kernel/vdso32-wrap.S, assembled by the 64-bit
compiler, holds vdso.so between vdso32_start and vdso32_end, what
arch/arm64/kernel/vdso.c maps above the two data pages.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from test_kbuild import TOOLCHAIN_AND_QUIET
from vdsogen.elf.reader import ElfImage

VDSO = "arch/arm64/kernel/vdso32"

KBUILD = r"""
srctree := $(CURDIR)
objtree := $(CURDIR)
obj := arch/arm64/kernel/vdso32
src := $(srctree)/$(obj)
all: $(obj)/vdso.so
include $(objtree)/.config

""" + TOOLCHAIN_AND_QUIET + r"""
# arch/arm64/kernel/vdso32/Makefile: this directory's compiler and linker.
ifeq ($(CONFIG_CC_IS_CLANG), y)
CC_COMPAT ?= $(CC)
CC_COMPAT += --target=arm-linux-gnueabi
else
CC_COMPAT ?= $(CROSS_COMPILE_COMPAT)gcc
endif
ifeq ($(CONFIG_LD_IS_LLD), y)
LD_COMPAT ?= $(LD)
else
LD_COMPAT ?= $(CROSS_COMPILE_COMPAT)ld
endif

$(obj)/vdso.so: $(obj)/vdso32.so.dbg
	$(call cmd,objcopy)
quiet_cmd_objcopy = OBJCOPY $@
      cmd_objcopy = $(OBJCOPY) -S $< $@
$(obj)/vdso32.so.dbg: $(obj)/vdso.so.raw
	$(call cmd,vdsomunge)
# vdsomunge: EABI 5, no hard-float flag; the soft-float flag cleared.
quiet_cmd_vdsomunge = MUNGE   $@
      cmd_vdsomunge = readelf -h $< | grep -q 'Flags: *0x5000000, Version5 EABI$$' && cp $< $@
$(obj)/vdso.so.raw: $(obj)/vgettimeofday.o
	$(call cmd,vdsold_and_vdso_check)
$(obj)/vgettimeofday.o:
	@echo 'the kernel own vDSO object' > $@
quiet_cmd_vdsold_and_vdso_check = LD32    $@
      cmd_vdsold_and_vdso_check = false

vdso-install-y += $(obj)/vdso32.so.dbg
vdso_install:
	@mkdir -p $(MODLIB)/vdso && cp $(vdso-install-y) $(MODLIB)/vdso/vdso32.so

include $(src)/Makefile.vdsogen
.PHONY: all vdso_install
"""

# arch/arm64/kernel/vdso32-wrap.S (v6.12), with its 4 KiB PAGE_SIZE.
WRAP_S = """
	.globl vdso32_start, vdso32_end
	.section .rodata
	.balign 4096
vdso32_start:
	.incbin "arch/arm64/kernel/vdso32/vdso.so"
	.balign 4096
vdso32_end:
"""

GNU = ("CROSS_COMPILE=aarch64-linux-gnu-", "CROSS_COMPILE_COMPAT=arm-linux-gnueabihf-")


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "linux"
    (t / VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "kernel" / "arm64" / "Makefile.vdsogen32", t / VDSO / "Makefile.vdsogen")
    (t / "arch" / "arm64" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "arm64-compat.toml", t / "arch" / "arm64" / "vdsogen")
    (t / "Makefile").write_text(KBUILD)
    (t / ".config").write_text("CONFIG_ARM64=y\nCONFIG_COMPAT=y\nCONFIG_COMPAT_VDSO=y\nCONFIG_HZ=250\n"
                               "CONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
    return t


def make(tree, *args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "LD", "OBJCOPY", "LLVM", "CROSS_COMPILE", "CROSS_COMPILE_COMPAT",
                        "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(["make", "-C", str(tree), "--no-print-directory",
                           f"VDSOGEN={sys.executable} -m vdsogen", *args],
                          env=env, capture_output=True, text=True, timeout=600)


def built(tree, *args):
    proc = make(tree, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def producer(path):
    image = ElfImage(str(path))
    return bytes(image.section_bytes(image.section(".comment"))).decode(errors="replace")


def test_the_image_is_vdsogens_between_vdso32_start_and_end(tree, tmp_path):
    """vdso.so.raw and vdso32.so.dbg are vdsogen's unstripped image byte for
    byte (vdsomunge takes its e_flags as they are); vdso.so, which
    vdso32-wrap.S assembles in, is its objcopy -S; v6.12's four exports."""
    built(tree, *GNU)
    out = tree / VDSO / "vdsogen"
    dbg = (out / "vdso.so.dbg").read_bytes()
    assert (tree / VDSO / "vdso.so.raw").read_bytes() == dbg
    assert (tree / VDSO / "vdso32.so.dbg").read_bytes() == dbg
    stripped = ElfImage(str(tree / VDSO / "vdso.so"))
    assert stripped.section(".debug_info") is None and ElfImage(str(out / "vdso.so.dbg")).section(".debug_info")
    assert sorted(s.name for s in stripped.dynsym if s.name.startswith("__")) == [
        "__vdso_clock_getres", "__vdso_clock_gettime", "__vdso_clock_gettime64", "__vdso_gettimeofday"]
    wrap = tmp_path / "vdso32-wrap.S"
    wrap.write_text(WRAP_S)
    obj = tmp_path / "vdso32-wrap.o"
    subprocess.run(["aarch64-linux-gnu-gcc", "-c", str(wrap), "-o", str(obj)], cwd=tree, check=True)
    syms = {line.split()[2]: int(line.split()[0], 16) for line in subprocess.run(
        ["aarch64-linux-gnu-nm", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines()}
    rodata = tmp_path / "rodata"
    subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", "-j", ".rodata", str(obj), str(rodata)], check=True)
    mapped = rodata.read_bytes()[syms["vdso32_start"]:syms["vdso32_end"]]
    so = (tree / VDSO / "vdso.so").read_bytes()
    assert len(mapped) % 4096 == 0 and mapped[:len(so)] == so and not mapped[len(so):].strip(b"\0")


def test_make_after_make_runs_nothing(tree):
    built(tree, *GNU)
    again = make(tree, *GNU)
    assert again.returncode == 0 and "VDSOGEN" not in again.stdout + again.stderr, again.stdout + again.stderr
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout
    question = make(tree, "-q", *GNU)
    assert question.returncode == 0, "make -q: out of date after a full build\n" + question.stdout
    text = (tree / VDSO / "vdsogen" / ".vdso.d").read_text()
    deps = [d.strip(" \\") for d in text.split("\n\n")[0].split(":", 1)[1].splitlines() if d.strip(" \\")]
    assert str(tree / "arch" / "arm64" / "vdsogen") in deps
    assert [d for d in deps if not os.path.exists(d)] == []


def test_make_s_is_silent(tree):
    proc = built(tree, "-s", *GNU)
    assert (proc.stdout, proc.stderr) == ("", "")
    assert (tree / VDSO / "vdso.so").is_file()
    quiet = built(tree, "V=0", *GNU, "-B")
    assert f"  VDSOGEN {VDSO}/vdsogen/vdso.so.dbg" in quiet.stdout, quiet.stdout
    assert f"  COPY    {VDSO}/vdso.so.raw" in quiet.stdout, quiet.stdout


@pytest.mark.parametrize("args, config, cc, link", [
    (GNU, "", ["arm-linux-gnueabihf-gcc"], None),
    (("LLVM=1",), "CONFIG_CC_IS_CLANG=y\nCONFIG_LD_IS_LLD=y\n",
     ["clang", "--target=arm-linux-gnueabi"], "--ld-path=ld.lld"),
])
def test_cc_compat_and_ld_compat(tree, args, config, cc, link):
    """vdsogen compiles and links with this directory's CC_COMPAT and LD_COMPAT,
    not the 64-bit kernel's CC and LD."""
    (tree / ".config").write_text((tree / ".config").read_text() + config)
    proc = built(tree, "V=1", *args)
    compiles = [line.split() for line in proc.stderr.splitlines() if " -c " in line]
    links = [line.split() for line in proc.stderr.splitlines() if " -nostdlib " in line]
    assert compiles and links, proc.stderr
    assert all(words[:len(cc)] == cc for words in compiles + links), proc.stderr
    if link:
        assert all(link in words for words in links), links
    else:
        assert not any(w.startswith(("-fuse-ld=", "--ld-path=")) for words in links for w in words), links
    assert ("clang version" if link else "GCC:") in producer(tree / VDSO / "vdsogen" / "vdso.so.dbg")


def test_vdso_install_installs_the_unstripped_image(tree, tmp_path):
    built(tree, *GNU)
    lib = tmp_path / "modlib"
    built(tree, "vdso_install", f"MODLIB={lib}")
    installed = lib / "vdso" / "vdso32.so"
    assert installed.read_bytes() == (tree / VDSO / "vdsogen" / "vdso.so.dbg").read_bytes()
    assert ElfImage(str(installed)).section(".debug_info") is not None
