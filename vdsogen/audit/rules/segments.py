"""Program header rules: one R+X mapping from offset 0, as the kernel maps it."""

from vdsogen import isa
from vdsogen.elf.consts import (EM_MIPS, EM_RISCV, PF_R, PF_W, PF_X, PT_DYNAMIC, PT_GNU_EH_FRAME, PT_GNU_PROPERTY,
                                PT_GNU_RELRO, PT_GNU_STACK, PT_INTERP, PT_LOAD, PT_MIPS_ABIFLAGS, PT_NOTE, PT_NULL,
                                PT_PHDR, PT_RISCV_ATTRIBUTES, PT_TLS)
from vdsogen.audit.rules import Context, Findings, rule


def _at(seg):
    return f"phdr[{seg.index}] @0x{seg.hdr_offset:x}"


def _flags(f):
    return "".join(c if f & bit else "-" for c, bit in (("R", PF_R), ("W", PF_W), ("X", PF_X)))


@rule("P001", "error", "exactly one PT_LOAD: the kernel maps the image as one piece",
      """vdso2c rejects images with several PT_LOAD segments, and tools such as
      DynamoRIO or rr assume a single mapping.""")
def one_load(ctx: Context) -> Findings:
    loads = ctx.image.loads
    if len(loads) != 1:
        yield "program headers", f"{len(loads)} PT_LOAD segments, expected exactly 1"


@rule("P002", "error", "the PT_LOAD must be readable and executable",
      qemu_user="warning")
def load_rx(ctx: Context) -> Findings:
    for seg in ctx.image.loads:
        if seg.flags & (PF_R | PF_X) != PF_R | PF_X:
            yield _at(seg), f"PT_LOAD flags {_flags(seg.flags)}, expected R-X"


# Until this Linux some architectures linked the vDSO at a fixed address
# (x86_64 at 0xffffffffff700000 in 2.6 and early 3.x kernels, powerpc at
# 0x100000 until 5.10, unverified); every loader takes the base from the
# PT_LOAD.
LINKED_AT_ZERO_SINCE = "5.11"


@rule("P003", "error", "the PT_LOAD must start at file offset 0 and address 0",
      """Consumers treat st_value as an offset from the start of the mapping,
      which begins with the ELF header; Linux's build checks (vdso2c) reject
      any other link address.""",
      relief="""A warning for an image whose version note predates Linux 5.11:
      kernels linked their vDSOs at a fixed address then (x86_64 at
      0xffffffffff700000 in 2.6 and early 3.x kernels, powerpc at 0x100000),
      and glibc, musl, Go and the reference parser all take the load base
      from the PT_LOAD, so the loaders of that era handle it.""")
def load_at_zero(ctx: Context) -> Findings:
    for seg in ctx.image.loads[:1]:
        if seg.offset != 0 or seg.vaddr != 0:
            old = seg.offset == 0 and ctx.before(LINKED_AT_ZERO_SINCE)
            yield _at(seg), (f"PT_LOAD at offset 0x{seg.offset:x}, vaddr 0x{seg.vaddr:x}; expected 0 and 0" +
                             (f" (a fixed link address, as kernels before {LINKED_AT_ZERO_SINCE} had: "
                              "loaders take the base from the PT_LOAD)" if old else "")), \
                ("warning" if old else None)


@rule("P004", "error", "PT_LOAD p_filesz must equal p_memsz: the kernel maps file pages only")
def load_no_bss(ctx: Context) -> Findings:
    for seg in ctx.image.loads:
        if seg.filesz != seg.memsz:
            yield _at(seg), f"p_filesz 0x{seg.filesz:x} != p_memsz 0x{seg.memsz:x}"


@rule("P005", "error", "PT_DYNAMIC must be present and inside the PT_LOAD",
      """glibc, musl, Go and every other consumer start from PT_DYNAMIC;
      vdso2c rejects an image whose dynamic section lies outside the load.""")
def dynamic_inside(ctx: Context) -> Findings:
    dyns = ctx.image.segments_of_type(PT_DYNAMIC)
    if not dyns:
        yield "program headers", "no PT_DYNAMIC"
        return
    for seg in dyns:
        if not any(load.contains(seg.vaddr, seg.filesz) and
                   seg.offset - load.offset == seg.vaddr - load.vaddr for load in ctx.image.loads):
            yield _at(seg), f"PT_DYNAMIC 0x{seg.vaddr:x}+0x{seg.filesz:x} is not inside the PT_LOAD"


FORBIDDEN = {PT_INTERP: "PT_INTERP", PT_TLS: "PT_TLS", PT_GNU_RELRO: "PT_GNU_RELRO"}


@rule("P006", "error", "no PT_INTERP, PT_TLS or PT_GNU_RELRO: nothing loads or relocates a vDSO",
      """glibc asserts that the vDSO has no PT_TLS; an interpreter or RELRO
      segment asks for a loader the vDSO never gets.  PT_GNU_PROPERTY is
      P013's.""")
def forbidden_segments(ctx: Context) -> Findings:
    for seg in ctx.image.segments:
        if seg.type in FORBIDDEN:
            yield _at(seg), f"{FORBIDDEN[seg.type]} segment"


@rule("P013", "info", "a PT_GNU_PROPERTY segment is information only: no vDSO consumer reads it",
      """Linux 7.x x86 images carry a PT_GNU_PROPERTY segment (empty, or over
      the shadow-stack and IBT property note) to mark what the code supports;
      the kernel maps the vDSO itself and glibc's, musl's and Go's vDSO
      set-up never read it.  What matters is that the 8-byte-aligned note
      stays out of PT_NOTE (N004).  Today's conventions before 7.x had no
      such segment: an error in the strict profile.""", strict="error")
def gnu_property_segment(ctx: Context) -> Findings:
    for seg in ctx.image.segments_of_type(PT_GNU_PROPERTY):
        what = "empty" if not seg.filesz else f"{seg.filesz} bytes at 0x{seg.offset:x}"
        yield _at(seg), f"PT_GNU_PROPERTY segment ({what})"


@rule("P007", "error", "no writable segment: Linux maps the image read-only",
      qemu_user="info")
def no_writable(ctx: Context) -> Findings:
    for seg in ctx.image.segments:
        if seg.flags & PF_W and seg.type in (PT_LOAD, PT_DYNAMIC, PT_NOTE):
            yield _at(seg), f"segment type 0x{seg.type:x} is writable ({_flags(seg.flags)})"


@rule("P008", "error", "PT_NOTE must be present: the build-id and version notes are found through it")
def has_note(ctx: Context) -> Findings:
    if not ctx.image.segments_of_type(PT_NOTE):
        yield "program headers", "no PT_NOTE"


@rule("P009", "error", "the PT_LOAD must cover the ELF header and the program headers",
      """Consumers find the program headers through the mapped ELF header
      (AT_SYSINFO_EHDR), so both must lie inside the one mapping.""")
def load_covers_headers(ctx: Context) -> Findings:
    img = ctx.image
    if not img.loads:
        return
    seg = img.loads[0]
    phsize = 32 if img.elf_class == 32 else 56
    end = max(52 if img.elf_class == 32 else 64, img.e_phoff + img.e_phnum * phsize)
    if seg.offset == 0 and seg.filesz < end:
        yield _at(seg), (f"PT_LOAD covers file bytes 0x{seg.offset:x}-0x{seg.offset + seg.filesz:x}, "
                         f"headers need 0-0x{end:x}")


COMMON = {PT_LOAD, PT_DYNAMIC, PT_NOTE, PT_GNU_EH_FRAME, PT_GNU_STACK, PT_PHDR, PT_GNU_PROPERTY} | set(FORBIDDEN)


def arch_phdrs(e_machine: int) -> frozenset[int]:
    """The processor program header types the machine's vDSOs carry (its ISA module's segment_types)."""
    machine = isa.for_machine(e_machine)
    return machine.segment_types.get(e_machine, frozenset()) if machine else frozenset()


@rule("P010", "error", "file layout must equal memory layout: every segment's p_vaddr - p_offset is the PT_LOAD's",
      """The kernel maps the file as it is, so an address is always its file
      offset (plus the load's).  musl and Go locate PT_DYNAMIC by p_offset,
      glibc by p_vaddr: when the two disagree, they read different bytes.
      gVisor's vDSO checker encodes the same rule.""")
def layout_matches(ctx: Context) -> Findings:
    img = ctx.image
    if not img.loads:
        return
    delta = img.loads[0].vaddr - img.loads[0].offset
    for seg in img.segments:
        if seg.type == PT_NULL or not seg.filesz:
            continue
        if img.e_machine == EM_RISCV and seg.type == PT_RISCV_ATTRIBUTES:
            continue    # describes .riscv.attributes, which is not loaded: its address means nothing
        if seg.vaddr - seg.offset != delta:
            yield _at(seg), (f"segment type 0x{seg.type:x} at offset 0x{seg.offset:x}, vaddr 0x{seg.vaddr:x}: "
                             f"vaddr - offset is 0x{(seg.vaddr - seg.offset) & (1 << img.elf_class) - 1:x}, "
                             f"the load's is 0x{delta & (1 << img.elf_class) - 1:x}")


@rule("P011", "warning", "program headers should be the usual ones, and arch extras the known ones",
      """Besides PT_LOAD, PT_DYNAMIC, PT_NOTE and PT_GNU_EH_FRAME, real images
      carry PT_ARM_EXIDX (arm), PT_MIPS_ABIFLAGS (first), PT_MIPS_REGINFO and
      PT_NULL leftovers (MIPS GNU ld), PT_RISCV_ATTRIBUTES (both linkers), a
      non-executable PT_GNU_STACK.  Anything else is a header no consumer
      expects.""")
def known_phdrs(ctx: Context) -> Findings:
    img = ctx.image
    allowed = COMMON | arch_phdrs(img.e_machine)
    for seg in img.segments:
        if seg.type not in allowed:
            yield _at(seg), f"unexpected program header type 0x{seg.type:x}"
        elif seg.type == PT_GNU_STACK and seg.flags & PF_X:
            yield _at(seg), "PT_GNU_STACK asks for an executable stack"
        elif (img.e_machine == EM_MIPS and seg.type == PT_MIPS_ABIFLAGS and img.segments[0].type != seg.type):
            yield _at(seg), "PT_MIPS_ABIFLAGS must be the first program header"


@rule("P012", "warning", ".eh_frame should come with PT_GNU_EH_FRAME, through which unwinders find it",
      """Unwinders (libgcc, libunwind, gdb) find a shared object's FDEs through
      PT_GNU_EH_FRAME and .eh_frame_hdr; an .eh_frame without them is dead
      weight, and signal frames through the vDSO cannot be unwound.""")
def eh_frame_hdr(ctx: Context) -> Findings:
    img = ctx.image
    sec = img.section(".eh_frame")
    if sec is not None and sec.size and not img.segments_of_type(PT_GNU_EH_FRAME):
        yield f".eh_frame @0x{sec.offset:x}", f".eh_frame of {sec.size} bytes, but no PT_GNU_EH_FRAME"
