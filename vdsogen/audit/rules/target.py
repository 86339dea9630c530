"""Rules that compare an image with what its target spec promises."""

from vdsogen.elf import decode
from vdsogen.elf.cfi import fde_ranges
from vdsogen.elf.consts import EM_ARM
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.audit.rules import Context, Findings, rule
from vdsogen.audit.rules.code import code_regions


def signal_frames(img: ElfImage) -> list[tuple[int, int]]:
    """[start, end) of every .eh_frame FDE whose CIE marks a signal frame
    (augmentation "S"): unwinders that find one unwind through the frame by
    its CFI, whatever the trampoline's bytes."""
    return [(lo, hi) for lo, hi, signal in fde_ranges(img) if signal]


def _words(img, addr, count):
    raw = img.bytes_at(addr, 4 * count)
    return [int.from_bytes(raw[i:i + 4], img.code_endian) for i in range(0, len(raw), 4)]


@rule("T001", "error", "signal trampolines must be the exact instruction sequences unwinders match",
      """libgcc, gdb and libunwind recognise a signal frame by the bytes at
      the return address, and some look at the word before it too; the ABI
      catalogue (vdsogen/spec/abi.toml) lists each ABI's sequences, and how
      many of their bytes unwinders compare (`match`: i386's rt_sigreturn is
      7 bytes, whatever follows its `int $0x80`).  Any other encoding leaves
      signal frames un-unwindable by the unwinders that match bytes.  A
      trampoline shorter than the bytes compared (its symbol's size, or the
      end of the image) is reported as such.""", needs=("trampolines",),
      relief="""A warning when the image's .eh_frame has an FDE marked as a
      signal frame (augmentation "S") that covers the trampoline: libgcc,
      gdb and libunwind look the return address up in the CFI first and
      unwind the frame by it, so only an unwinder without CFI support
      (gdb's byte matchers on their own, libgcc's fallback when the
      .eh_frame is not registered) misses it.""")
def trampolines(ctx: Context) -> Findings:
    img = ctx.image
    syms = {s.name: s for s in img.dynsym if s.defined}
    for name, lead, words, *rest in ctx.expect.trampolines:
        match = rest[0] if rest and rest[0] else 4 * len(words)
        sym = syms.get(name)
        if sym is None:
            continue   # S002 reports a missing export
        addr, _ = decode.entry(img, sym.value)    # a Thumb symbol is odd
        cfi = next((f for f in signal_frames(img) if f[0] <= addr < f[1]), None)
        low = "warning" if cfi else None
        covered = f" (signal-frame CFI at 0x{cfi[0]:x}-0x{cfi[1]:x} covers it: unwinders use that first)" if cfi else ""
        short = (f"{name} is {sym.size} bytes, shorter than the {match} unwinders compare" if 0 < sym.size < match
                 else "")
        try:
            have = img.bytes_at(addr, match)
            before = _words(img, addr - 4 * len(lead), len(lead)) if lead else []
        except Unreadable:
            left = max(0, img.image_end - addr)
            if 0 <= addr < img.image_end:
                yield name, (f"{short or name}: only {left} bytes from 0x{addr:x} to the end of the image, "
                             f"{match} compared" + covered), low
            else:
                yield name, f"{name} at 0x{addr:x} is outside the image", None
            continue
        want = b"".join(w.to_bytes(4, img.code_endian) for w in words)[:match]
        if have != want:
            yield f"{name} @0x{addr:x}", ((f"{short}: " if short else "") +
                                          f"{_show(img, have, match)}, expected {_show(img, want, match)}" +
                                          (f" (the {match} bytes unwinders compare)" if match % 4 else "") +
                                          covered), low
        if before != list(lead):
            yield f"{name} @0x{addr - 4 * len(lead):x}", ("preceded by " + " ".join(f"{w:08x}" for w in before) +
                                                         ", expected " + " ".join(f"{w:08x}" for w in lead) +
                                                         covered), low


def _show(img, raw, match):
    """Words as the catalogue writes them, or bytes when the match is not whole words."""
    if match % 4:
        return "bytes " + raw.hex(" ")
    return "words " + " ".join(f"{int.from_bytes(raw[i:i + 4], img.code_endian):08x}" for i in range(0, len(raw), 4))


def _encodings(img, words):
    """The byte strings `words` may be in the code: whole words in the code's
    byte order; on ARM also as Thumb-2, each word two halfwords, the first
    (the word's high half) at the lower address."""
    out = [b"".join(w.to_bytes(4, img.code_endian) for w in words)]
    if img.e_machine == EM_ARM:
        out.append(b"".join((w >> 16).to_bytes(2, img.code_endian) + (w & 0xFFFF).to_bytes(2, img.code_endian)
                            for w in words))
    return out


@rule("T002", "error", "the counter read must be the spec's instruction words",
      """A spec may list its counter read as instruction words ([counter]
      words): the ordering barriers around the read are part of it, and
      where qemu-user cannot execute the read (arm's mrrc of CNTVCT, mips's
      rdhwr), the harness runs a test build with an injected counter and
      this is how the real build's read is verified.  The words must occur
      in the code, in order and together; on ARM as ARM or Thumb-2
      instructions.  A test build (N006) reads no counter: not checked.""",
      needs=("counter_words",))
def counter_words(ctx: Context) -> Findings:
    img = ctx.image
    words = ctx.expect.counter_words
    if not words:
        return
    forms = _encodings(img, words)
    for _addr, code, _off in code_regions(img):
        if any(bytes(code).find(f) >= 0 for f in forms):
            return
    yield "code", "the counter read " + " ".join(f"{w:08x}" for w in words) + " is nowhere in the code"
