"""vdsogen inside a kernel build: the powerpc glue (docs/kernel/powerpc/,
docs/kernel/linux-6.12/ppc64.toml and ppc32.toml) run by the miniature
Kbuild of tests/test_kbuild.py, with arch/powerpc/kernel/vdso/Makefile's
shape (v6.12): vdso64.so.dbg and vdso32.so.dbg linked from the kernel's
objects (vdso64_wrapper.S and vdso32_wrapper.S assemble them in whole,
between vdsoNN_start and vdsoNN_end), include/generated/vdsoNN-offsets.h
made from them ("#define vdsoNN_offset_NAME 0xOFF", which VDSONN_SYMBOL()
adds to the vDSO's base), the 32-bit ones under CONFIG_VDSO32 (a 64-bit
kernel's COMPAT), VDSOCC the kernel's CC unless CROSS32_COMPILE; the
fragment is included last.  v6.12's powerpc lists no vdso-install-y: the
miniature lists both images as s390's Makefile lists its two, so that
`make vdso_install` shows what such a tree installs.
scripts/kernel-e2e.sh --arch=ppc64 boots the real one.
"""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, dynsym, elf
from test_kbuild import KBUILD, VDSOINST, built, make
from vdsogen.harness.layouts import with_layout
from vdsogen.spec import abi
from vdsogen.spec.model import load_target

VDSO = "arch/powerpc/kernel/vdso"
CROSS = "CROSS_COMPILE=powerpc64-linux-gnu-"
SPECS = ROOT / "docs" / "kernel" / "linux-6.12"

POWERPC = KBUILD.split("obj := ")[0] + r"""obj := arch/powerpc/kernel/vdso
src := $(srctree)/$(obj)
all:
""" + KBUILD.split("all:\n", 1)[1].split("obj-y :=")[0] + r"""
READELF	= $(CROSS_COMPILE)readelf
CONFIG_SHELL := sh
ifdef CROSS32_COMPILE
    VDSOCC := $(CROSS32_COMPILE)gcc
else
    VDSOCC := $(CC)
endif

all: $(obj)/vdso64.so.dbg include/generated/vdso64-offsets.h
all: $(if $(CONFIG_VDSO32),$(obj)/vdso32.so.dbg include/generated/vdso32-offsets.h)

$(obj)/vdso64.so.dbg: $(obj)/sigtramp64-64.o
	$(call cmd,vdso64ld_and_check)
$(obj)/vdso32.so.dbg: $(obj)/sigtramp32-32.o
	$(call cmd,vdso32ld_and_check)
$(obj)/%-64.o:
	@echo 'the kernel own vDSO object' > $@
$(obj)/%-32.o:
	@echo 'the kernel own vDSO object' > $@
quiet_cmd_vdso64ld_and_check = VDSO64L $@
      cmd_vdso64ld_and_check = echo 'the kernel own vdso64' > $@
quiet_cmd_vdso32ld_and_check = VDSO32L $@
      cmd_vdso32ld_and_check = echo 'the kernel own vdso32' > $@

include/generated/vdso64-offsets.h: $(obj)/vdso64.so.dbg
	@mkdir -p $(dir $@)
	$(call cmd,vdso64sym)
include/generated/vdso32-offsets.h: $(obj)/vdso32.so.dbg
	@mkdir -p $(dir $@)
	$(call cmd,vdso32sym)
quiet_cmd_vdso64sym = VDSO64SYM $@
      cmd_vdso64sym = : > $@
quiet_cmd_vdso32sym = VDSO32SYM $@
      cmd_vdso32sym = : > $@

vdso-install-y += $(obj)/vdso64.so.dbg
vdso-install-$(CONFIG_VDSO32) += $(obj)/vdso32.so.dbg
vdso_install:
	@$(foreach f,$(vdso-install-y),$(MAKE) -f $(srctree)/vdsoinst.mk INSTALL_FILES=$(f) &&) true

include $(src)/Makefile.vdsogen
.PHONY: all vdso_install
"""

CONFIG = ("CONFIG_PPC64=y\nCONFIG_CPU_BIG_ENDIAN=y\nCONFIG_PPC_4K_PAGES=y\nCONFIG_PAGE_SHIFT=12\n"
          "CONFIG_HZ=250\nCONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_TIME_NS=y\n")
COMPAT = "CONFIG_COMPAT=y\nCONFIG_VDSO32=y\n"

# What signal_32.c, perf's callchain_32.c and vdso.c compute
# (asm/vdso.h: VDSO32_SYMBOL(base, name) is base + vdso32_offset_##name),
# for a vDSO at 0.
CHECK_C = r"""
#include <stdio.h>
#include <generated/vdso32-offsets.h>

#define VDSO32_SYMBOL(base, name) ((unsigned long)(base) + (vdso32_offset_##name))

int main(void)
{
	printf("%lu %lu\n", VDSO32_SYMBOL(0, sigtramp32), VDSO32_SYMBOL(0, sigtramp_rt32));
	printf("%lu %lu %lu %lu %lu %lu %lu %lu\n",
	       VDSO32_SYMBOL(0, ftr_fixup_start), VDSO32_SYMBOL(0, ftr_fixup_end),
	       VDSO32_SYMBOL(0, mmu_ftr_fixup_start), VDSO32_SYMBOL(0, mmu_ftr_fixup_end),
	       VDSO32_SYMBOL(0, fw_ftr_fixup_start), VDSO32_SYMBOL(0, fw_ftr_fixup_end),
	       VDSO32_SYMBOL(0, lwsync_fixup_start), VDSO32_SYMBOL(0, lwsync_fixup_end));
	return 0;
}
"""

# ppc32's trampolines (vdsogen/spec/abi.toml): li r0,NR; sc.
TRAMPOLINES = {"sigtramp32": (0x38000077, 0x44000002), "sigtramp_rt32": (0x380000ac, 0x44000002)}


def miniature(t, config):
    (t / VDSO).mkdir(parents=True)
    for name in ("Makefile.vdsogen", "vdsogen-fixups.sh"):
        shutil.copy(ROOT / "docs" / "kernel" / "powerpc" / name, t / VDSO / name)
    (t / "arch" / "powerpc" / "vdsogen").mkdir()
    for spec in ("ppc64", "ppc32"):
        shutil.copy(ROOT / "docs" / "kernel" / "linux-6.12" / f"{spec}.toml", t / "arch" / "powerpc" / "vdsogen")
    (t / "Makefile").write_text(POWERPC)
    (t / "vdsoinst.mk").write_text(VDSOINST)
    (t / ".config").write_text(config)
    return t


@pytest.fixture
def tree(tmp_path):
    """A big-endian ppc64 kernel with COMPAT: vdso64 and vdso32."""
    return miniature(tmp_path / "linux", CONFIG + COMPAT)


def test_the_kernel_links_vdsogens_vdso32(tree):
    """vdso32.so.dbg, which vdso32_wrapper.S assembles in, is vdsogen's
    unstripped ppc32 image, built by the kernel's gcc with -m32; vdso64's
    is vdsogen's ppc64 one."""
    proc = built(tree, CROSS, "V=1")
    out = tree / VDSO / "vdsogen32"
    assert (tree / VDSO / "vdso32.so.dbg").read_bytes() == (out / "vdso.so.dbg").read_bytes()
    assert (tree / VDSO / "vdso64.so.dbg").read_bytes() == (tree / VDSO / "vdsogen64" / "vdso.so.dbg").read_bytes()
    image = elf(tree / VDSO / "vdso32.so.dbg")
    assert (image.elfclass, image["e_machine"]) == (32, "EM_PPC")
    assert image.get_section_by_name(".debug_info") is not None
    assert "linux-vdso32.so.1" in image.get_section_by_name(".dynstr").data().decode()
    assert any(line.startswith("powerpc64-linux-gnu-gcc ") and " -m32 " in f"{line} "
               for line in proc.stderr.splitlines() + proc.stdout.splitlines()), proc.stdout + proc.stderr


def test_the_vdso32_offsets_the_kernel_reads(tree, tmp_path):
    """include/generated/vdso32-offsets.h: only vdso32_offset_ lines, with
    the names signal_32.c and perf return through (sigtramp32 at
    __kernel_sigtramp32, sigtramp_rt32 at __kernel_sigtramp_rt32, each
    `li r0,NR; sc`) and the four fixup tables' bounds vdso.c walks."""
    built(tree, CROSS)
    header = tree / "include" / "generated" / "vdso32-offsets.h"
    lines = header.read_text().splitlines()
    assert lines and all(line.startswith("#define vdso32_offset_") for line in lines), lines
    main = tmp_path / "check.c"
    main.write_text(CHECK_C)
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-Wall", "-Werror", f"-I{tree / 'include'}", str(main), "-o", str(exe)], check=True)
    tramps, fixups = [[int(v) for v in line.split()] for line in
                      subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()]
    dbg = tree / VDSO / "vdso32.so.dbg"
    syms = dynsym(dbg)
    assert tramps == [syms[f"__kernel_{name}"]["st_value"] for name in TRAMPOLINES]
    image = elf(dbg)
    text = image.get_section_by_name(".text")
    code = text.data()
    for at, (name, words) in zip(tramps, TRAMPOLINES.items()):
        got = tuple(int.from_bytes(code[at - text["sh_addr"] + 4 * i:][:4], "big") for i in range(2))
        assert got == words, name
    for i, table in enumerate(("__ftr_fixup", "__mmu_ftr_fixup", "__fw_ftr_fixup", "__lwsync_fixup")):
        sec = image.get_section_by_name(table)
        want = [sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]] if sec else [0, 0]
        assert fixups[2 * i:2 * i + 2] == want, table


def test_make_after_make_runs_nothing(tree):
    """With vdso32 built by vdsogen, make again runs nothing, make -q says
    up to date, and make -s says nothing, from scratch too."""
    first = built(tree, CROSS, "-s")
    assert first.stdout == "" and first.stderr == "", first.stdout + first.stderr
    assert (tree / VDSO / "vdsogen32" / "vdso.so.dbg").is_file()
    again = make(tree, CROSS)
    assert again.stdout.strip() == "make: Nothing to be done for 'all'.", again.stdout + again.stderr
    assert make(tree, CROSS, "-q").returncode == 0
    assert make(tree, CROSS, "-s").stdout == ""
    # Every prerequisite vdso32's depfile names exists: the layout of the compat pages among them.
    rule = (tree / VDSO / "vdsogen32" / ".vdso.d").read_text().split("\n\n")[0].split(":", 1)[1]
    deps = [d.strip(" \\") for d in rule.splitlines() if d.strip(" \\")]
    assert any(d.endswith("/linux-6.12-powerpc32-compat.toml") for d in deps), deps
    assert [d for d in deps if not os.path.exists(d)] == []


def test_vdso_install_installs_the_unstripped_vdso32(tree, tmp_path):
    built(tree, CROSS)
    lib = tmp_path / "modlib"
    built(tree, CROSS, "vdso_install", f"MODLIB={lib}")
    assert (lib / "vdso" / "vdso32.so").read_bytes() == (tree / VDSO / "vdsogen32" / "vdso.so.dbg").read_bytes()
    assert (lib / "vdso" / "vdso64.so").read_bytes() == (tree / VDSO / "vdsogen64" / "vdso.so.dbg").read_bytes()
    assert elf(lib / "vdso" / "vdso32.so").get_section_by_name(".debug_info") is not None


def test_cross32_compile_builds_vdso32(tree):
    """CROSS32_COMPILE= names the kernel's 32-bit compiler (VDSOCC): vdsogen's vdso32 uses it."""
    proc = built(tree, CROSS, "CROSS32_COMPILE=powerpc-linux-gnu-", "V=1")
    assert any(line.startswith("powerpc-linux-gnu-gcc ") for line in proc.stderr.splitlines()), proc.stderr
    assert (tree / VDSO / "vdso32.so.dbg").read_bytes() == (tree / VDSO / "vdsogen32" / "vdso.so.dbg").read_bytes()


def test_without_compat_the_kernel_keeps_its_vdso32(tmp_path):
    """A ppc64 kernel without COMPAT has no vdso32 to replace: the fragment builds vdso64 only."""
    t = miniature(tmp_path / "linux", CONFIG)
    built(t, CROSS)
    assert not (t / VDSO / "vdsogen32").exists()
    assert (t / VDSO / "vdso64.so.dbg").read_bytes() == (t / VDSO / "vdsogen64" / "vdso.so.dbg").read_bytes()


def test_the_ppc32_spec_exports_what_v6_12s_vdso32_does():
    """vdso32.lds.S of a v6.12 64-bit kernel (the ABI catalogue's ppc32
    exports alive then: getcpu, which a 64-bit kernel keeps in USPRG3, and
    getrandom among them), each kept on the spec's layout."""
    target = load_target("ppc32", SPECS)
    linux = {e.name for e in abi.get("ppc32").exports if e.alive((6, 12, 0))}
    assert {e.name for e in target.exports} | {t.name for t in target.trampolines} == linux
    kept = with_layout(target, target.datapage.layout)
    assert {e.name for e in kept.exports} == {e.name for e in target.exports}
    assert {"__kernel_getcpu", "__kernel_getrandom"} <= linux


def test_the_compat_pages_are_the_64_bit_kernels():
    """The compat vDSO reads the 64-bit kernel's pages: the syscall map it
    answers is the compat one (asm-offsets' CFG_SYSCALL_MAP32), getrandom's
    state and the clock records where the ppc64 image finds them."""
    compat = load_target("ppc32", SPECS).datapage.layout
    native = load_target("ppc64", SPECS).datapage.layout
    assert compat.field_offset("vdso_arch_data", "syscall_map") == \
        native.field_offset("vdso_arch_data", "compat_syscall_map")
    assert compat.field_offset("vdso_rng_page", "generation") == \
        native.field_offset("vdso_rng_page", "generation") == 0xf8
    assert [(p.role, p.index) for p in compat.pages] == [(p.role, p.index) for p in native.pages]


def test_the_vdso32_fixup_entries_are_the_64_bit_kernels(tree):
    """A 64-bit kernel walks its vdso32's __ftr_fixup with its own struct
    fixup_entry: 48 bytes, the mask and value 64-bit, the four offsets
    64-bit and relative to the entry (the kernel's vdso32 is written so);
    each lands on a word of the image's code."""
    built(tree, CROSS)
    image = elf(tree / VDSO / "vdso32.so.dbg")
    table = image.get_section_by_name("__ftr_fixup")
    text = image.get_section_by_name(".text")
    data = table.data()
    assert data and len(data) % 48 == 0, len(data)
    for entry in range(0, len(data), 48):
        mask, value, *offsets = (int.from_bytes(data[entry + 8 * i:][:8], "big", signed=i >= 2) for i in range(6))
        assert mask == value == 1        # CPU_FTR_COHERENT_ICACHE: sync_dicache's short path
        start, end, alt_start, alt_end = (table["sh_addr"] + entry + o for o in offsets)
        assert text["sh_addr"] <= start < end <= text["sh_addr"] + text["sh_size"]
        assert start % 4 == 0 and end % 4 == 0 and alt_start <= alt_end and alt_start % 4 == 0
