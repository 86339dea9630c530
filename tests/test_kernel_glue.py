"""The kernel glue of docs/kernel/ (docs/kernel.rst) against what the kernel reads."""

import shutil
import subprocess

import pytest

from conftest import ROOT, dynsym, elf, vdsogen
from vdsogen.spec.model import load_target

GLUE = ROOT / "docs" / "kernel"


# --- powerpc: what arch/powerpc/kernel/vdso.c reads through VDSO64_SYMBOL() --

FIXUP_TABLES = ("ftr_fixup", "mmu_ftr_fixup", "lwsync_fixup", "fw_ftr_fixup")


@pytest.mark.parametrize("target", ["ppc64", "ppc64le"])
def test_powerpc_offsets_header(tmp_path, target):
    """The lines docs/kernel/powerpc/Makefile.vdsogen writes to vdso64-offsets.h from the
    v6.12 spec's image: the sigtramp_rt64 label at the bctrl before the trampoline, and
    each fixup table's bounds as the image's section headers give them (0 and 0 for a
    table it lacks), __ftr_fixup holding whole entries whose code lies in the text."""
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(GLUE / "linux-6.12" / f"{target}.toml", specs)
    out = tmp_path / "out"
    proc = vdsogen("build", f"--arch={target}", f"--specs={specs}", "--emit=lds-offsets", "--emit-name=vdso64",
                   f"--out={out}", "-q")
    assert proc.returncode == 0, proc.stderr
    dbg = out / "vdso.so.dbg"
    sections = subprocess.run([f"{load_target(target).toolchain.gnu_triple}-readelf", "-SW", str(dbg)],
                              capture_output=True, text=True, check=True).stdout
    fixups = subprocess.run(["sh", str(GLUE / "powerpc" / "vdsogen-fixups.sh"), "vdso64"], input=sections,
                            capture_output=True, text=True, check=True).stdout
    lines = [line.split("\t") for line in fixups.splitlines()]
    got = {name.removeprefix("#define vdso64_offset_"): int(value, 16) for name, value in lines}
    image = elf(dbg)
    for table in FIXUP_TABLES:
        sec = image.get_section_by_name(f"__{table}")
        want = (sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]) if sec else (0, 0)
        assert (got[f"{table}_start"], got[f"{table}_end"]) == want, table
    assert len(got) == 2 * len(FIXUP_TABLES)
    # struct fixup_entry: mask, value, then the body's and the alternative's bounds relative to the entry.
    start, end = got["ftr_fixup_start"], got["ftr_fixup_end"]
    assert end > start and (end - start) % 48 == 0
    text = image.get_section_by_name(".text")
    table = image.get_section_by_name("__ftr_fixup").data()
    order = "big" if target == "ppc64" else "little"
    for entry in range(0, len(table), 48):
        words = [int.from_bytes(table[entry + 8 * i:entry + 8 * i + 8], order, signed=True) for i in range(6)]
        body_start, body_end = start + entry + words[2], start + entry + words[3]
        assert text["sh_addr"] <= body_start < body_end <= text["sh_addr"] + text["sh_size"], words
    header = (out / "vdso-offsets.h").read_text()
    trampoline = dynsym(dbg)["__kernel_sigtramp_rt64"]["st_value"]
    assert f"#define vdso64_offset_sigtramp_rt64\t{trampoline - 4:#x}\t" in header
