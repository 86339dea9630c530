"""Program header rules: one R+X mapping from offset 0, as the kernel maps it."""

from vdsogen.elf import (PF_R, PF_W, PF_X, PT_DYNAMIC, PT_GNU_PROPERTY, PT_GNU_RELRO, PT_INTERP,
                         PT_LOAD, PT_NOTE, PT_TLS)
from vdsogen.rules import rule


def _at(seg):
    return f"phdr[{seg.index}] @0x{seg.hdr_offset:x}"


def _flags(f):
    return "".join(c if f & bit else "-" for c, bit in (("R", PF_R), ("W", PF_W), ("X", PF_X)))


@rule("P001", "error", "exactly one PT_LOAD: the kernel maps the image as one piece",
      """vdso2c rejects images with several PT_LOAD segments, and tools such as
      DynamoRIO or rr assume a single mapping.""")
def one_load(ctx):
    loads = ctx.image.loads
    if len(loads) != 1:
        yield "program headers", f"{len(loads)} PT_LOAD segments, expected exactly 1"


@rule("P002", "error", "the PT_LOAD must be readable and executable",
      qemu_user="warning")
def load_rx(ctx):
    for seg in ctx.image.loads:
        if seg.flags & (PF_R | PF_X) != PF_R | PF_X:
            yield _at(seg), f"PT_LOAD flags {_flags(seg.flags)}, expected R-X"


@rule("P003", "error", "the PT_LOAD must start at file offset 0 and address 0",
      """Consumers treat st_value as an offset from the start of the mapping,
      which begins with the ELF header.""")
def load_at_zero(ctx):
    for seg in ctx.image.loads[:1]:
        if seg.offset != 0 or seg.vaddr != 0:
            yield _at(seg), f"PT_LOAD at offset 0x{seg.offset:x}, vaddr 0x{seg.vaddr:x}; expected 0 and 0"


@rule("P004", "error", "PT_LOAD p_filesz must equal p_memsz: the kernel maps file pages only")
def load_no_bss(ctx):
    for seg in ctx.image.loads:
        if seg.filesz != seg.memsz:
            yield _at(seg), f"p_filesz 0x{seg.filesz:x} != p_memsz 0x{seg.memsz:x}"


@rule("P005", "error", "PT_DYNAMIC must be present and inside the PT_LOAD",
      """glibc, musl, Go and every other consumer start from PT_DYNAMIC;
      vdso2c rejects an image whose dynamic section lies outside the load.""")
def dynamic_inside(ctx):
    dyns = ctx.image.segments_of_type(PT_DYNAMIC)
    if not dyns:
        yield "program headers", "no PT_DYNAMIC"
        return
    for seg in dyns:
        if not any(load.contains(seg.vaddr, seg.filesz) and
                   seg.offset - load.offset == seg.vaddr - load.vaddr for load in ctx.image.loads):
            yield _at(seg), f"PT_DYNAMIC 0x{seg.vaddr:x}+0x{seg.filesz:x} is not inside the PT_LOAD"


FORBIDDEN = {PT_INTERP: "PT_INTERP", PT_TLS: "PT_TLS", PT_GNU_RELRO: "PT_GNU_RELRO",
             PT_GNU_PROPERTY: "PT_GNU_PROPERTY"}


@rule("P006", "error", "no PT_INTERP, PT_TLS, PT_GNU_RELRO or PT_GNU_PROPERTY: nothing loads or relocates a vDSO",
      """glibc asserts that the vDSO has no PT_TLS; an interpreter, RELRO or
      property segment asks for a loader the vDSO never gets.""")
def forbidden_segments(ctx):
    for seg in ctx.image.segments:
        if seg.type in FORBIDDEN:
            yield _at(seg), f"{FORBIDDEN[seg.type]} segment"


@rule("P007", "error", "no writable segment: Linux maps the image read-only",
      qemu_user="info")
def no_writable(ctx):
    for seg in ctx.image.segments:
        if seg.flags & PF_W and seg.type in (PT_LOAD, PT_DYNAMIC, PT_NOTE):
            yield _at(seg), f"segment type 0x{seg.type:x} is writable ({_flags(seg.flags)})"


@rule("P008", "error", "PT_NOTE must be present: the build-id and version notes are found through it")
def has_note(ctx):
    if not ctx.image.segments_of_type(PT_NOTE):
        yield "program headers", "no PT_NOTE"
