"""Rules that compare an image with what its target spec promises."""

from vdsogen.elf.reader import Unreadable
from vdsogen.audit.rules import rule


def _words(img, addr, count):
    raw = img.bytes_at(addr, 4 * count)
    return [int.from_bytes(raw[i:i + 4], img.code_endian) for i in range(0, len(raw), 4)]


@rule("T001", "error", "signal trampolines must be the exact instruction sequences unwinders match",
      """libgcc, gdb and libunwind recognise a signal frame by the bytes at
      the return address, and some look at the word before it too; the ABI
      catalogue (vdsogen/spec/abi.toml) lists each ABI's sequences.  Any other
      encoding leaves signal frames un-unwindable.""", needs=("trampolines",))
def trampolines(ctx):
    img = ctx.image
    syms = {s.name: s for s in img.dynsym if s.defined}
    for name, lead, words in ctx.expect.trampolines:
        sym = syms.get(name)
        if sym is None:
            continue   # S002 reports a missing export
        addr = sym.value & ~1
        try:
            have = _words(img, addr, len(words))
            before = _words(img, addr - 4 * len(lead), len(lead)) if lead else []
        except Unreadable:
            yield name, f"{name} at 0x{addr:x} is outside the image"
            continue
        if have != list(words):
            yield f"{name} @0x{addr:x}", ("words " + " ".join(f"{w:08x}" for w in have) +
                                          ", expected " + " ".join(f"{w:08x}" for w in words))
        if before != list(lead):
            yield f"{name} @0x{addr - 4 * len(lead):x}", ("preceded by " + " ".join(f"{w:08x}" for w in before) +
                                                         ", expected " + " ".join(f"{w:08x}" for w in lead))
