"""The kernel glue (docs/kernel/: the fragments, glue sources, helper scripts
and per-version specs a kernel tree copies in, docs/kernel.rst) travels in
the wheel, under vdsogen/_data/kernel/, and in the sdist, byte for byte."""

import shutil
import subprocess
import tarfile
import zipfile

import pytest

from conftest import ROOT, dynsym, elf, vdsogen
from vdsogen.spec.model import load_target

GLUE = ROOT / "docs" / "kernel"
# What the wheel and the sdist are built from: the files pyproject.toml names.
TREE = ("pyproject.toml", "README.rst", "vdsogen", "specs", "arch", "templates", "harness", "runner", "docs/kernel")


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """The wheel and the sdist, built through setuptools' PEP 517 hooks from a copy of the tree."""
    tmp = tmp_path_factory.mktemp("glue")
    src = tmp / "src"
    for name in TREE:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    out = tmp / "dist"
    out.mkdir()
    built = []
    for hook in ("build_wheel", "build_sdist"):   # one process each: setuptools keeps state between them
        proc = subprocess.run(["/usr/bin/python3", "-c", f"import sys; from setuptools import build_meta as b; "
                               f"print('DIST', b.{hook}(sys.argv[1]))", str(out)],
                              cwd=src, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        built += [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("DIST ")]
    wheel, sdist = built
    return out / wheel, out / sdist


def glue_files():
    files = {p.relative_to(GLUE).as_posix(): p.read_bytes() for p in GLUE.rglob("*") if p.is_file()}
    # Every family's glue and the v6.12 specs the end-to-end run copies in.
    for name in ("arm64/Makefile.vdsogen", "powerpc/Makefile.vdsogen", "powerpc/vdsogen-fixups.sh",
                 "linux-6.12/ppc64.toml", "linux-6.12/ppc64le.toml", "vdsogen-image-64.c",
                 "loongarch/Makefile.vdsogen", "linux-6.12/loongarch64.toml"):
        assert name in files, name
    return files


def test_wheel_carries_the_kernel_glue(dists):
    wheel, _ = dists
    with zipfile.ZipFile(wheel) as z:
        for name, data in glue_files().items():
            assert z.read(f"vdsogen/_data/kernel/{name}") == data, name


def test_sdist_carries_the_kernel_glue(dists):
    _, sdist = dists
    with tarfile.open(sdist) as t:
        top = t.getnames()[0].split("/")[0]
        for name, data in glue_files().items():
            f = t.extractfile(f"{top}/docs/kernel/{name}")
            assert f is not None and f.read() == data, name


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
