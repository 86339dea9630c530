"""Rules that compare an image with what its target spec promises."""

from vdsogen.elf import decode
from vdsogen.elf.consts import EM_ARM
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.audit.rules import Context, Findings, rule
from vdsogen.audit.rules.code import code_regions


def _uleb(data, at):
    value = shift = 0
    while at < len(data):
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return value, at


def _pointer(data, at, enc, img, field_addr):
    """(value, next offset) of a DW_EH_PE-encoded pointer, or (None, at) for
    an encoding this reader does not follow."""
    fmt = enc & 0x0F
    sizes = {0x00: img.wsize, 0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}
    if fmt == 0x01:
        value, end = _uleb(data, at)
    elif fmt in sizes:
        end = at + sizes[fmt]
        value = int.from_bytes(data[at:end], img.endian, signed=fmt >= 0x08)
    else:
        return None, at
    if enc & 0x70 == 0x10:
        value += field_addr
    elif enc & 0x70:
        return None, end
    return value & ((1 << (8 * img.wsize)) - 1), end


def signal_frames(img: ElfImage) -> list[tuple[int, int]]:
    """[start, end) of every .eh_frame FDE whose CIE marks a signal frame
    (augmentation "S"): unwinders that find one unwind through the frame by
    its CFI, whatever the trampoline's bytes.  Computed once per image."""
    return img._cached("signal_frames", lambda: _signal_frames(img))


def _signal_frames(img):
    sec = img.section(".eh_frame")
    if sec is None:
        return []
    data = bytes(img.section_bytes(sec))
    out: list[tuple[int, int]] = []
    try:
        _walk_frames(img, sec, data, out)
    except IndexError:
        pass                                     # a truncated record ends the walk: keep what it found
    return out


def _walk_frames(img, sec, data, out):
    cies: dict[int, tuple[bool, int]] = {}       # offset -> (signal frame, pointer encoding)
    at = 0
    while at + 8 <= len(data):
        img.charge()
        length = int.from_bytes(data[at:at + 4], img.endian)
        if length in (0, 0xFFFFFFFF):
            break                                # the terminator, or 64-bit DWARF (no vDSO has it)
        body, end = at + 4, at + 4 + length
        cie_id = int.from_bytes(data[body:body + 4], img.endian)
        if cie_id == 0:
            aug_end = data.find(b"\0", body + 5, end)
            aug = data[body + 5:aug_end].decode("ascii", "replace") if aug_end > 0 else ""
            enc, p = 0, aug_end + 1
            if aug.startswith("z"):
                _, p = _uleb(data, p)                 # code alignment
                _, p = _uleb(data, p)                 # data alignment (as unsigned: skipped)
                p += 1 if data[body + 4] == 1 else _uleb(data, p)[1] - p   # return column
                _, p = _uleb(data, p)                 # augmentation length
                for c in aug[1:]:
                    if c == "R":
                        enc = data[p]
                        p += 1
                    elif c == "P":
                        _, p = _pointer(data, p + 1, data[p], img, sec.addr + p + 1)
                    elif c == "L":
                        p += 1
            cies[at] = ("S" in aug, enc)
        else:
            signal, enc = cies.get(body - cie_id, (False, 0))
            if signal:
                start, p = _pointer(data, body + 4, enc, img, sec.addr + body + 4)
                size, _ = _pointer(data, p, enc & 0x0F, img, 0)
                if start is not None and size is not None:
                    out.append((start, start + size))
        at = end


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
