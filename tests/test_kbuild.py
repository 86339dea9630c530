"""vdsogen inside a kernel build: the x86 glue (docs/Makefile.vdsogen,
docs/kernel/vdsogen-image-64.c, docs/kernel/linux-6.12/x86_64.toml) and the
arm64 glue (docs/kernel/arm64/) run by a miniature Kbuild.

The miniature keeps what Kbuild does that vdsogen meets: CC, LD and OBJCOPY
chosen and exported as Kbuild's top Makefile chooses them (the GNU toolchain
under CROSS_COMPILE=, LLVM=1 or LLVM=-N for clang); quiet, silent (make -s,
found in the first word of MAKEFLAGS) and V=1 command echoing through
$(call cmd,...); an O=-less tree with obj and src (v6.10 on: the source
directory's full path); the arch vDSO Makefiles' shape; and `make vdso_install`
as a separate make that copies the listed NAME.so.dbg files, unbuilt, to
NAME.so.  Stub headers give the glue x86's struct vdso_image (v6.12) and
__ro_after_init; a host program linked with the glue's object checks what
the kernel's vma.c and init_vdso_image() rely on.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from vdsogen.elf.reader import ElfImage

VDSO = "arch/x86/entry/vdso"

# What every miniature shares: CC, LD and OBJCOPY chosen and exported as
# Kbuild's top Makefile chooses them, and its quiet, silent and V=1 echoing.
TOOLCHAIN_AND_QUIET = r"""
# The toolchain, as Kbuild's top Makefile chooses and exports it.
ifneq ($(LLVM),)
ifneq ($(filter %/,$(LLVM)),)
LLVM_PREFIX := $(LLVM)
else ifneq ($(filter -%,$(LLVM)),)
LLVM_SUFFIX := $(LLVM)
endif
CC	= $(LLVM_PREFIX)clang$(LLVM_SUFFIX)
LD	= $(LLVM_PREFIX)ld.lld$(LLVM_SUFFIX)
OBJCOPY	= $(LLVM_PREFIX)llvm-objcopy$(LLVM_SUFFIX)
else
CC	= $(CROSS_COMPILE)gcc
LD	= $(CROSS_COMPILE)ld
OBJCOPY	= $(CROSS_COMPILE)objcopy
endif
export CC LD OBJCOPY CROSS_COMPILE

# make -s: silent; V=1: the commands; else the quiet_cmd_ lines.
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
quiet := silent_
else ifeq ($(V),1)
quiet :=
else
quiet := quiet_
endif
cmd = @$(if $($(quiet)cmd_$(1)),echo '  $($(quiet)cmd_$(1))';) $(cmd_$(1))
"""

KBUILD = r"""
srctree := $(CURDIR)
objtree := $(CURDIR)
obj := arch/x86/entry/vdso
src := $(srctree)/$(obj)
all:
include $(objtree)/.config	# Kbuild's include/config/auto.conf

""" + TOOLCHAIN_AND_QUIET + r"""
quiet_cmd_cc_o_c = CC      $@
      cmd_cc_o_c = $(CC) -c -O2 -fno-pic -Wall -Werror -I$(srctree)/include -I$(obj) -o $@ $<

obj-y :=
include $(src)/Makefile.vdsogen

all: $(addprefix $(obj)/,$(obj-y))
$(obj)/%.o: $(src)/%.c
	$(call cmd,cc_o_c)

vdso-install-$(CONFIG_X86_64) += $(obj)/vdso64.so.dbg
vdso-install-$(CONFIG_X86_X32_ABI) += $(obj)/vdsox32.so.dbg
vdso-install-$(CONFIG_COMPAT_32) += $(obj)/vdso32.so.dbg
vdso_install:
	@$(foreach f,$(vdso-install-y),$(MAKE) -f $(srctree)/vdsoinst.mk INSTALL_FILES=$(f) &&) true

.PHONY: all vdso_install
"""

# As Makefile.vdsoinst: every listed file, which the build made, to MODLIB/vdso/ without .dbg.
VDSOINST = r"""
dest := $(MODLIB)/vdso/$(patsubst %.dbg,%,$(notdir $(INSTALL_FILES)))
$(dest): $(INSTALL_FILES) FORCE
	@mkdir -p $(dir $@); cp $< $@
FORCE:
"""

# Facts from Linux v6.12: arch/x86/include/asm/vdso.h, include/linux/cache.h.
VDSO_H = """
struct vdso_image {
	void *data;
	unsigned long size;
	unsigned long alt, alt_len;
	unsigned long extable_base, extable_len;
	const void *extable;
	long sym_vvar_start;
	long sym_vvar_page;
	long sym_pvclock_page;
	long sym_hvclock_page;
	long sym_timens_page;
	long sym_VDSO32_NOTE_MASK;
	long sym___kernel_sigreturn;
	long sym___kernel_rt_sigreturn;
	long sym___kernel_vsyscall;
	long sym_int80_landing_pad;
	long sym_vdso32_sigreturn_landing_pad;
	long sym_vdso32_rt_sigreturn_landing_pad;
};
"""
CACHE_H = '#define __ro_after_init __attribute__((__section__(".data..ro_after_init")))\n'

# What vma.c and init_vdso_image() rely on: whole pages, page-aligned, the
# bytes of vdso.so, the data pages below, the alternatives; and a writable
# array (init_vdso_image() patches it).
CHECK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/vdso.h>

extern const struct vdso_image vdso_image_64;

int main(int argc, char **argv)
{
	const struct vdso_image *im = &vdso_image_64;
	static unsigned char file[1 << 20];
	FILE *f = fopen(argv[1], "rb");
	size_t n = fread(file, 1, sizeof(file), f);
	unsigned char *data = im->data;

	if (im->size % 4096 || (unsigned long)im->data % 4096 || n > im->size || memcmp(data, file, n))
		return 1;
	if (im->sym_vvar_start != strtol(argv[2], 0, 0) || im->sym_vvar_page != im->sym_vvar_start ||
	    im->sym_timens_page != -4096 || im->alt != strtoul(argv[3], 0, 0) ||
	    im->alt_len != strtoul(argv[4], 0, 0) || im->extable_len)
		return 2;
	data[im->alt] ^= 0xff;		/* as apply_alternatives() writes */
	data[im->alt] ^= 0xff;
	puts("ok");
	return 0;
}
"""


@pytest.fixture
def tree(tmp_path):
    """A miniature kernel tree with the x86 glue copied in as docs/kernel.rst says."""
    t = tmp_path / "linux"
    (t / VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "Makefile.vdsogen", t / VDSO / "Makefile.vdsogen")
    shutil.copy(ROOT / "docs" / "kernel" / "vdsogen-image-64.c", t / VDSO / "vdsogen-image-64.c")
    (t / "arch" / "x86" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "x86_64.toml", t / "arch" / "x86" / "vdsogen")
    (t / "include" / "asm").mkdir(parents=True)
    (t / "include" / "linux").mkdir()
    (t / "include" / "asm" / "vdso.h").write_text(VDSO_H)
    (t / "include" / "linux" / "cache.h").write_text(CACHE_H)
    (t / "Makefile").write_text(KBUILD)
    (t / "vdsoinst.mk").write_text(VDSOINST)
    (t / ".config").write_text("CONFIG_X86_64=y\nCONFIG_HZ=250\nCONFIG_GENERIC_GETTIMEOFDAY=y\n"
                               "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT=y\nCONFIG_TIME_NS=y\n")
    return t


def make(tree, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "LD", "OBJCOPY", "LLVM", "CROSS_COMPILE",
                                                            "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(["make", "-C", str(tree), "--no-print-directory",
                           f"VDSOGEN={sys.executable} -m vdsogen", *args],
                          env=env, capture_output=True, text=True, timeout=600)


def built(tree, *args):
    proc = make(tree, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_make_after_make_runs_nothing(tree):
    built(tree)
    again = make(tree)
    assert again.returncode == 0 and "VDSOGEN" not in again.stdout + again.stderr, again.stdout + again.stderr
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout
    question = make(tree, "-q")
    assert question.returncode == 0, "make -q: out of date after a full build\n" + question.stdout


def test_a_touched_input_runs_vdsogen_once(tree):
    """An input touched with its bytes the same (a spec copied in again, a
    file made and removed in the spec directory) is out of date for make: the
    next `make` runs vdsogen, which writes nothing but gives the outputs the
    time of now, and the one after runs nothing."""
    built(tree)
    spec = tree / "arch" / "x86" / "vdsogen" / "x86_64.toml"
    image = tree / VDSO / "vdsogen" / "vdso.so"
    while spec.stat().st_mtime_ns <= image.stat().st_mtime_ns:
        os.utime(spec)      # touch
    data = image.read_bytes()
    assert "VDSOGEN" in built(tree).stdout
    assert image.read_bytes() == data
    again = make(tree)
    assert "VDSOGEN" not in again.stdout + again.stderr, again.stdout + again.stderr
    assert make(tree, "-q").returncode == 0


def test_every_prerequisite_in_the_depfile_exists(tree):
    built(tree)
    text = (tree / VDSO / "vdsogen" / ".vdso.d").read_text()
    rule = text.split("\n\n")[0].split(":", 1)[1]
    deps = [d.strip(" \\") for d in rule.splitlines() if d.strip(" \\")]
    assert str(tree / "arch" / "x86" / "vdsogen") in deps       # the spec directory: a layouts/ made there
    assert [d for d in deps if not os.path.exists(d)] == []


def test_make_s_is_silent(tree):
    proc = built(tree, "-s")
    assert (proc.stdout, proc.stderr) == ("", "")
    assert (tree / VDSO / "vdsogen-image-64.o").is_file()


def test_quiet_and_verbose_lines(tree):
    proc = built(tree)
    assert f"  VDSOGEN {VDSO}/vdsogen/vdso-image.c" in proc.stdout
    assert "  LD      " in proc.stderr and " -nostdlib " not in proc.stderr
    (tree / ".config").write_text((tree / ".config").read_text().replace("HZ=250", "HZ=1000"))
    verbose = built(tree, "V=1")
    assert " -nostdlib " in verbose.stderr and "  LD      " not in verbose.stderr


def producer(tree, vdso=VDSO):
    image = ElfImage(str(tree / vdso / "vdsogen" / "vdso.so.dbg"))
    return bytes(image.section_bytes(image.section(".comment"))).decode(errors="replace")


def commands(proc):
    """The programs vdsogen ran under V=1: each command line's first word."""
    return {line.split()[0] for line in proc.stderr.splitlines() if line.strip()}


@pytest.mark.parametrize("args, cc, ld, compiler", [
    ((), "gcc", None, "GCC:"),
    (("CROSS_COMPILE=x86_64-linux-gnu-",), "x86_64-linux-gnu-gcc", None, "GCC:"),
    (("LLVM=1",), "clang", "--ld-path=ld.lld", "clang version"),
    (("LLVM=-19",), "clang-19", "--ld-path=ld.lld-19", "clang version 19"),
    (("CC=clang-19", "LD=ld.lld-19", "OBJCOPY=llvm-objcopy-19"), "clang-19", "--ld-path=ld.lld-19", "clang version 19"),
    (("LD=ld.bfd",), "gcc", None, "GCC:"),
])
def test_the_kernels_toolchain(tree, args, cc, ld, compiler):
    """Kbuild's CC and LD build the image: gcc by default, clang with LLVM=."""
    proc = built(tree, "V=1", *args)
    assert cc in commands(proc), proc.stderr
    link = [line for line in proc.stderr.splitlines() if " -nostdlib " in line]
    assert link and all(line.split()[0] == cc for line in link)
    if ld:
        assert all(ld in line.split() for line in link), link
    assert compiler in producer(tree)


def test_a_gnu_compiler_with_an_unknown_linker_is_one_line(tree):
    proc = make(tree, "LD=mold-or-other")
    assert proc.returncode != 0
    assert "vdsogen: LD=mold-or-other: a GNU compiler (CC=) links through itself" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_array_is_what_the_kernel_maps_and_patches(tree, tmp_path):
    built(tree)
    out = tree / VDSO / "vdsogen"
    obj = tree / VDSO / "vdsogen-image-64.o"
    section = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True, check=True).stdout
    line = next(x for x in section.splitlines() if x.endswith(" vdso_start"))
    assert ".data..ro_after_init" in line, line
    main = tmp_path / "check.c"
    main.write_text(CHECK_C)
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-no-pie", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main), str(obj),
                    "-o", str(exe)], check=True)
    image = ElfImage(str(out / "vdso.so"))
    alt = image.section(".altinstructions")
    run = subprocess.run([str(exe), str(out / "vdso.so"), str(-4 * 4096), str(alt.offset), str(alt.size)],
                         capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (0, "ok\n")


def test_vdso_install_installs_the_unstripped_image(tree, tmp_path):
    built(tree)
    lib = tmp_path / "modlib"
    built(tree, "vdso_install", f"MODLIB={lib}")
    installed = lib / "vdso" / "vdso64.so"
    assert installed.read_bytes() == (tree / VDSO / "vdsogen" / "vdso.so.dbg").read_bytes()
    assert ElfImage(str(installed)).section(".debug_info") is not None


# arch/arm64/kernel/vdso/Makefile's shape (v6.12): vdso.so.dbg linked from
# the kernel's objects, vdso.so its objcopy -S (which vdso-wrap.S
# assembles in), include/generated/vdso-offsets.h from its VDSO_ symbols;
# the fragment is included last.
ARM64_VDSO = "arch/arm64/kernel/vdso"
ARM64 = KBUILD.split("obj := ")[0] + r"""obj := arch/arm64/kernel/vdso
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

include $(src)/Makefile.vdsogen
"""


@pytest.fixture
def arm64_tree(tmp_path):
    t = tmp_path / "linux"
    (t / ARM64_VDSO).mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "kernel" / "arm64" / "Makefile.vdsogen", t / ARM64_VDSO / "Makefile.vdsogen")
    (t / "arch" / "arm64" / "vdsogen").mkdir()
    shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / "arm64.toml", t / "arch" / "arm64" / "vdsogen")
    (t / "Makefile").write_text(ARM64)
    (t / ".config").write_text("CONFIG_ARM64=y\nCONFIG_HZ=250\nCONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
    return t


def test_arm64_glue_replaces_the_image_and_its_offsets(arm64_tree):
    t = arm64_tree
    built(t, "CROSS_COMPILE=aarch64-linux-gnu-")
    out = t / ARM64_VDSO / "vdsogen"
    assert (t / ARM64_VDSO / "vdso.so.dbg").read_bytes() == (out / "vdso.so.dbg").read_bytes()
    image = ElfImage(str(t / ARM64_VDSO / "vdso.so"))
    assert image.section(".debug_info") is None and "GCC:" in producer(t, ARM64_VDSO)
    offsets = {line.split()[1]: int(line.split()[2], 16)
               for line in (t / "include" / "generated" / "vdso-offsets.h").read_text().splitlines()}
    rt_sigreturn = next(s.value for s in image.dynsym if s.name == "__kernel_rt_sigreturn")
    assert offsets["vdso_offset_sigtramp"] == rt_sigreturn == offsets["vdso_offset___kernel_rt_sigreturn"]
    assert all(name.startswith("vdso_offset_") for name in offsets)
    again = make(t, "CROSS_COMPILE=aarch64-linux-gnu-")
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout + again.stderr
    assert make(t, "-q", "CROSS_COMPILE=aarch64-linux-gnu-").returncode == 0


# What the 32-bit kernel code reads of vdso_image_32 (vdso32-setup.c, the
# 32-bit signal frames, the int $0x80 return path).
CHECK32_C = r"""
#include <stdio.h>
#include <asm/vdso.h>

extern const struct vdso_image vdso_image_32, vdso_image_x32;

int main(void)
{
	const struct vdso_image *i = &vdso_image_32, *x = &vdso_image_x32;

	printf("%ld %ld %ld %ld %ld %ld %ld %lu %lu\n", i->sym___kernel_vsyscall, i->sym_int80_landing_pad,
	       i->sym___kernel_sigreturn, i->sym___kernel_rt_sigreturn, i->sym_vdso32_sigreturn_landing_pad,
	       i->sym_vdso32_rt_sigreturn_landing_pad, x->sym_vvar_start, i->size % 4096 + x->size % 4096,
	       ((unsigned long)i->data | (unsigned long)x->data) % 4096);
	return 0;
}
"""


def test_compat_images_x32_and_i386(tree, tmp_path):
    """CONFIG_X86_X32_ABI and CONFIG_COMPAT_32: vdsogen's x32 and i386 images,
    built with the 64-bit kernel's gcc, their struct vdso_image, vdso_install."""
    config = tree / ".config"
    config.write_text(config.read_text() + "CONFIG_X86_X32_ABI=y\nCONFIG_COMPAT_32=y\n")
    for spec in ("x32", "i386"):
        shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / f"{spec}.toml", tree / "arch" / "x86" / "vdsogen")
    for image in ("32", "x32"):
        shutil.copy(ROOT / "docs" / "kernel" / f"vdsogen-image-{image}.c", tree / VDSO)
    built(tree)
    main = tmp_path / "check32.c"
    main.write_text(CHECK32_C)
    exe = tmp_path / "check32"
    subprocess.run(["gcc", "-no-pie", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main),
                    str(tree / VDSO / "vdsogen-image-32.o"), str(tree / VDSO / "vdsogen-image-x32.o"),
                    "-o", str(exe)], check=True)
    got = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    i386 = ElfImage(str(tree / VDSO / "vdsogen32" / "vdso.so.dbg"))
    assert b"GCC:" in bytes(i386.section_bytes(i386.section(".comment")))
    sym = {s.name: s.value for s in i386.symtab if s.defined}
    assert got[:6] == [sym[n] for n in ("__kernel_vsyscall", "int80_landing_pad", "__kernel_sigreturn",
                                         "__kernel_rt_sigreturn", "vdso32_sigreturn_landing_pad",
                                         "vdso32_rt_sigreturn_landing_pad")]
    assert got[6:] == [-4 * 4096, 0, 0]
    lib = tmp_path / "modlib"
    built(tree, "vdso_install", f"MODLIB={lib}")
    for name, out in (("vdso64.so", "vdsogen"), ("vdsox32.so", "vdsogenx32"), ("vdso32.so", "vdsogen32")):
        assert (lib / "vdso" / name).read_bytes() == (tree / VDSO / out / "vdso.so.dbg").read_bytes(), name
