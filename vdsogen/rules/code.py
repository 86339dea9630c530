"""Rules that read the code itself."""

from vdsogen.elf import SHF_EXECINSTR
from vdsogen.rules import rule

EM_PPC, EM_PPC64 = 20, 21
BCL_20_31_NEXT = 0x429F0005   # bcl 20,31,.+4


def code_words(img):
    """(file offset, 32-bit word) of every aligned word in executable sections."""
    for sec in img.sections:
        if sec.flags & SHF_EXECINSTR and sec.type != 8:   # SHT_NOBITS holds no code
            data = img.data[sec.offset:sec.offset + sec.size]
            for i in range(0, len(data) - 3, 4):
                yield sec.offset + i, int.from_bytes(data[i:i + 4], img.endian)


@rule("K001", "error", "powerpc: every bcl must be `bcl 20,31,.+4`, the form that spares the link-stack predictor",
      """Getting the address of the data page needs the program counter; on
      powerpc `bcl 20,31,.+4` followed by mflr is the one branch-and-link
      form that processors treat as not-a-call, leaving the return-address
      predictor intact.  Any other bcl unbalances it and every return after
      it mispredicts.""")
def powerpc_bcl(ctx):
    img = ctx.image
    if img.e_machine not in (EM_PPC, EM_PPC64):
        return
    for off, word in code_words(img):
        # opcode 16 (bc) with LK set and AA clear is a bcl.
        if word & 0xFC000003 == 0x40000001 and word != BCL_20_31_NEXT:
            bo, bi, bd = (word >> 21) & 31, (word >> 16) & 31, word & 0xFFFC
            yield f"@0x{off:x}", f"bcl {bo},{bi},.{'+' if bd < 0x8000 else '-'}{bd if bd < 0x8000 else 0x10000 - bd}"
