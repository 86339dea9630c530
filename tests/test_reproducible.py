"""Reproducible builds: every target, with either toolchain, built in two
directories of different names and depths, gives byte-identical vdso.so and
vdso.so.dbg, whose debug information and build-id name neither directory."""

import io

import pytest

from conftest import TARGETS
from vdsogen.audit.check import build_validator
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.elf.consts import NT_GNU_BUILD_ID
from vdsogen.elf.reader import ElfImage
from vdsogen.gen.render import sources
from vdsogen.spec.model import load_target


def toolchain_env(kind, target):
    return {"gnu": {"CROSS_COMPILE": f"{target.toolchain.gnu_triple}-"}, "llvm": {},
            "llvm-14": {"LLVM": "-14"}}[kind]


def toolchain_kinds(name):
    """clang for every target; gcc too where the ABI has a GNU cross toolchain (LoongArch has none)."""
    return ("llvm", "gnu") if load_target(name).toolchain.gnu_triple else ("llvm",)


# clang-14 (Debian 12's LLVM=1) maps an assembler source's name and directory only when given
# them relative; x86_64 and arm64 stand for every target, which all assemble .S files.
@pytest.mark.parametrize("name,kind", [(n, k) for n in TARGETS for k in toolchain_kinds(n)] +
                         [("x86_64", "llvm-14"), ("arm64", "llvm-14")])
def test_same_bytes_in_any_directory(tmp_path, name, kind):
    target = load_target(name)
    env = toolchain_env(kind, target)
    dirs = [tmp_path / "a", tmp_path / "a-much-longer-directory" / "and" / "deeper"]
    files = sources(target)     # the same inputs for both, whatever happens to the tree meanwhile
    images = []
    for d in dirs:
        so, dbg = build_target(target, d, builder=Builder(target, env=env, stream=io.StringIO()),
                               validate=build_validator, files=files)
        images.append((so.read_bytes(), dbg.read_bytes()))
    (so_a, dbg_a), (so_b, dbg_b) = images
    assert so_a == so_b, f"{name} ({kind}): vdso.so differs between build directories"
    assert dbg_a == dbg_b, f"{name} ({kind}): vdso.so.dbg differs between build directories"
    for d in dirs:
        assert str(tmp_path).encode() not in dbg_a and str(d).encode() not in dbg_a
    notes = [n for n in ElfImage(dirs[0] / "vdso.so").notes if n.name == "GNU" and n.type == NT_GNU_BUILD_ID]
    assert len(notes) == 1 and len(notes[0].desc) == 20 and any(notes[0].desc)


def test_debug_information_is_relative(built):
    """DW_AT_comp_dir and the file names are the build directory's, mapped to "."."""
    from elftools.elf.elffile import ELFFile

    _, _, dbg = built("x86_64")
    with open(dbg, "rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        units = list(dwarf.iter_CUs())
        assert units
        for cu in units:
            top = cu.get_top_DIE()
            assert top.attributes["DW_AT_comp_dir"].value == b"."
            assert top.attributes["DW_AT_name"].value.startswith(b"./src/")
