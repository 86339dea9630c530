"""The page size of a MIPS image's data pages, from the addresses its code
reads below the image (vdsogen.audit.diff's data flow): Debian's loongson-3
kernels have 16 KiB pages, its malta ones 4 KiB, and the image reads its
data a page below its code.  MIPS before release 6 has no PC-relative load:
the entries of Linux's images and vdsogen's take the address from bal over
a word holding the distance to the data (lw of it through $ra, addu $ra).
No download: the images are vdsogen's own, built here for each page size
and byte order, and a hand-made entry in Linux's words.
"""

import pytest

from conftest import ROOT, build_broken
from vdsogen.audit import diff
from vdsogen.elf import decode
from vdsogen.elf.reader import ElfImage
from vdsogen.harness import layouts
from vdsogen.isa import mips
from vdsogen.spec.model import load_target


def sized(tmp_path, base, size, datapage=""):
    """vdsogen's spec `base` with data pages of `size` bytes (and the other
    [datapage] lines given), in a --specs=DIR of its own."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for spec in (ROOT / "specs").glob("*.toml"):
        (specs / spec.name).write_text(spec.read_text())
    (specs / "sized.toml").write_text(f'extends = "{base}"\n\n[datapage]\npage_size = {size}\n{datapage}')
    return load_target("sized", specs)


@pytest.mark.parametrize("base", ["mips-o32", "mips-n32", "mips-n64", "mips-o32-be", "mips-n32-be", "mips-n64-be"])
@pytest.mark.parametrize("size", [16384, 4096])
def test_the_page_size_is_the_one_the_code_reads_at(base, size, tmp_path):
    target = sized(tmp_path, base, size)
    assert target.datapage.page_size == size
    image = build_broken(target, tmp_path / "out", {})
    data = diff.data_offsets(ElfImage(str(image)))
    assert data is not None
    start = -target.datapage.pages * size
    assert all(start <= a < 0 for offsets in data.values() for a in offsets), data
    assert layouts.page_size_of(image, target.datapage.layout, target) == size


@pytest.mark.parametrize("base", ["mips-o32", "mips-n64-be"])
def test_a_kernel_without_a_gic_reads_only_its_time_page(base, tmp_path):
    """Linux 6.1's layout has the GIC page below the time page; Debian's
    loongson-3 kernel has no GIC, and its image reads only the time page,
    from the seq at its start, a page below the code: 16 KiB, not the
    lowest of two 4 KiB pages nor inside one of 64 KiB."""
    target = sized(tmp_path, base, 16384, 'layout = "linux-5.6-mips-gic"\npages = 2\n')
    image = build_broken(target, tmp_path / "out", {})
    data = diff.data_offsets(ElfImage(str(image)))
    assert min(a for offsets in data.values() for a in offsets) == -16384
    assert layouts.page_size_of(image, target.datapage.layout, target) == 16384


def test_the_pc_word_of_linuxs_entry_is_data():
    """Linux's entry in its own words (n64, little-endian, as bookworm's
    loongson-3 image has it): bal over the word holding the distance to the
    image's start, lw of it through $ra, daddu $ra, then the time data a
    16 KiB page below (daddiu -16384 in the delay slot of a beqz whose
    target reads it); the word is data, not the store it decodes as."""
    code = [0x04110002,                 # bal .+12
            0x00000000,                 # nop
            0xFFFFFFF8,                 # .word -8: from this word to the image's start
            0x8FE60000,                 # lw a2, 0(ra)
            0x03E6302D,                 # daddu a2, ra, a2
            0x10000002,                 # b .+12
            0x64C3C000,                 # daddiu v1, a2, -16384 (the delay slot)
            0x00000000,                 # nop (not reached)
            0x8C620004,                 # lw v0, 4(v1)
            0x03E00008,                 # jr ra
            0x00000000]                 # nop
    raw = b"".join(w.to_bytes(4, "little") for w in code)
    insns = {4 * i: (mips.mips_insn(w, 4 * i), raw[4 * i:4 * i + 4]) for i, w in enumerate(code)}
    regions = decode.Regions([(0, raw)])
    # the word itself, in the image, and the time data
    assert diff._flow(insns, 0, diff._mips_transfer("little"), regions, True) == {8, -16384 + 4}
