"""powerpc's images do what Linux's do where a CPU or a kernel differs (issue 19, point 4).

  - ppc32 reads the seqcount with sync, never lwsync: e500 cores
    (powerpcspe) trap lwsync, and Linux's 32-bit smp_rmb() is sync (on
    e500 builds a sync the kernel patches to lwsync where the core has it);
    the 64-bit images keep lwsync, as Linux's do.
"""

import pytest

from conftest import elf
from vdsogen.elf.consts import SHF_EXECINSTR

LWSYNC, SYNC = 0x7C2004AC, 0x7C0004AC


def code_words(path):
    """Every aligned 32-bit word of the image's executable sections."""
    image = elf(path)
    order = "little" if image.little_endian else "big"
    words = []
    for sec in image.iter_sections():
        if sec["sh_flags"] & SHF_EXECINSTR and sec["sh_type"] != "SHT_NOBITS":
            data = sec.data()
            words += [int.from_bytes(data[i:i + 4], order) for i in range(0, len(data) - 3, 4)]
    return words


def test_ppc32_reads_with_sync(built):
    _t, so, _dbg = built("ppc32")
    words = code_words(so)
    assert LWSYNC not in words, f"{words.count(LWSYNC)} lwsync in ppc32's code"
    assert SYNC in words


@pytest.mark.parametrize("name", ["ppc64", "ppc64le"])
def test_ppc64_reads_with_lwsync(built, name):
    _t, so, _dbg = built(name)
    assert LWSYNC in code_words(so)
