"""ELF header rules."""

from vdsogen.elf import ET_DYN
from vdsogen.rules import rule


@rule("H001", "error", "e_type must be ET_DYN: loaders treat the vDSO as a shared object",
      """Linux's vdso2c and every consumer (glibc, musl, Go) treat the image as a
      shared object; an ET_EXEC or ET_REL image is not one.""")
def e_type(ctx):
    img = ctx.image
    if img.e_type != ET_DYN:
        yield "e_type @0x10", f"e_type is {img.e_type}, expected ET_DYN (3)"


@rule("H002", "error", "ELF class must match the target ABI", needs=("elf_class",))
def elf_class(ctx):
    if ctx.image.elf_class != ctx.expect.elf_class:
        yield "e_ident[EI_CLASS] @0x4", f"ELFCLASS{ctx.image.elf_class}, expected ELFCLASS{ctx.expect.elf_class}"


@rule("H003", "error", "e_machine must match the target ABI", needs=("machine",))
def machine(ctx):
    if ctx.image.e_machine != ctx.expect.machine:
        yield "e_machine @0x12", f"e_machine is {ctx.image.e_machine}, expected {ctx.expect.machine}"


@rule("H004", "error", "byte order must match the target ABI", needs=("endian",))
def endian(ctx):
    if ctx.image.endian != ctx.expect.endian:
        yield "e_ident[EI_DATA] @0x5", f"{ctx.image.endian}-endian, expected {ctx.expect.endian}-endian"


@rule("H005", "error", "the section header table must be kept (strip with objcopy -S, not --strip-sections)",
      """Go runtimes of 2012-2014 found .dynsym through its section header, and
      binutils finds the build-id through SHT_NOTE; e_shoff, e_shnum and
      e_shstrndx must all be set.""")
def section_headers(ctx):
    img = ctx.image
    if not img.e_shoff or not img.e_shnum or not img.e_shstrndx:
        yield "e_shoff", (f"no usable section header table (e_shoff 0x{img.e_shoff:x}, "
                          f"e_shnum {img.e_shnum}, e_shstrndx {img.e_shstrndx})")
