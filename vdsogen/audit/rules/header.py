"""ELF header rules."""

from vdsogen.elf.consts import ELFOSABI_GNU, EM_PARISC, ET_DYN
from vdsogen.audit.rules import Context, Findings, rule


@rule("H001", "error", "e_type must be ET_DYN: loaders treat the vDSO as a shared object",
      """Linux's vdso2c and every consumer (glibc, musl, Go) treat the image as a
      shared object; an ET_EXEC or ET_REL image is not one.""")
def e_type(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_type != ET_DYN:
        yield "e_type @0x10", f"e_type is {img.e_type}, expected ET_DYN (3)"


@rule("H002", "error", "ELF class must match the target ABI", needs=("elf_class",))
def elf_class(ctx: Context) -> Findings:
    if ctx.image.elf_class != ctx.expect.elf_class:
        yield "e_ident[EI_CLASS] @0x4", f"ELFCLASS{ctx.image.elf_class}, expected ELFCLASS{ctx.expect.elf_class}"


@rule("H003", "error", "e_machine must match the target ABI", needs=("machine",))
def machine(ctx: Context) -> Findings:
    if ctx.image.e_machine != ctx.expect.machine:
        yield "e_machine @0x12", f"e_machine is {ctx.image.e_machine}, expected {ctx.expect.machine}"


@rule("H004", "error", "byte order must match the target ABI", needs=("endian",))
def endian(ctx: Context) -> Findings:
    if ctx.image.endian != ctx.expect.endian:
        yield "e_ident[EI_DATA] @0x5", f"{ctx.image.endian}-endian, expected {ctx.expect.endian}-endian"


@rule("H005", "error", "the section header table must be kept (strip with objcopy -S, not --strip-sections)",
      """Go runtimes of 2012-2014 found .dynsym through its section header, and
      binutils finds the build-id through SHT_NOTE; e_shoff, e_shnum and
      e_shstrndx must all be set.""")
def section_headers(ctx: Context) -> Findings:
    img = ctx.image
    if not img.e_shoff or not img.e_shnum or not img.e_shstrndx:
        yield "e_shoff", (f"no usable section header table (e_shoff 0x{img.e_shoff:x}, "
                          f"e_shnum {img.e_shnum}, e_shstrndx {img.e_shstrndx})")


@rule("H006", "error", "e_flags must carry the target ABI's flags (ARM EABI 5 without float-ABI bits, MIPS ABI bits)",
      """Linux's vdsomunge rejects an ARM image marked hard-float and clears
      the soft-float bit so that both float ABIs can use one image; a MIPS
      image's ABI bits (o32, n32's EF_MIPS_ABI2, n64) must name the ABI the
      kernel maps it for.  `vdsogen check` compares e_flags with the spec's
      value exactly.""", needs=("flags",))
def e_flags(ctx: Context) -> Findings:
    flags = ctx.image.e_flags
    for f in ctx.expect.flags:
        if not f.warn and not f.ok(flags):
            yield "e_flags @0x24" if ctx.image.elf_class == 32 else "e_flags @0x30", (
                f"e_flags 0x{flags:08x}: expected {f.what} (bits 0x{flags & f.mask:x} under mask 0x{f.mask:x})")


@rule("H007", "warning", "ppc64 e_flags should name the ELF ABI version the image uses (1 for ELFv1, 2 for ELFv2)",
      """lld stamps ELFv1 (big-endian ppc64) images with EF_PPC64_ABI 2; tools
      that trust the flag then take plain code labels for ELFv2 entry points
      and the other way round.""", needs=("flags",))
def ppc64_abi_flag(ctx: Context) -> Findings:
    flags = ctx.image.e_flags
    for f in ctx.expect.flags:
        if f.warn and not f.ok(flags):
            yield "e_flags", f"e_flags 0x{flags:x}: expected {f.what}"


@rule("H008", "warning", "e_entry should be 0, except on i386 and SuperH where it is __kernel_vsyscall",
      """glibc on i386 calls e_entry as __kernel_vsyscall when the kernel
      passes no AT_SYSINFO; Linux links SuperH's image with the same entry
      (the ABI catalogue's `entry`); elsewhere nothing reads e_entry, and a
      non-zero value hints at an image linked as a program.""", needs=("abi_info",))
def e_entry(ctx: Context) -> Findings:
    img, want = ctx.image, ctx.expect.abi_info.entry
    if want is None:
        if img.e_entry:
            yield "e_entry @0x18", f"e_entry 0x{img.e_entry:x}, expected 0"
        return
    sym = next((s for s in img.dynsym if s.name == want and s.defined), None)
    if sym is None:
        yield "e_entry @0x18", f"e_entry 0x{img.e_entry:x}, and no {want} to compare with"
    elif img.e_entry != sym.value:
        yield "e_entry @0x18", f"e_entry 0x{img.e_entry:x}, but {want} is at 0x{sym.value:x}"


@rule("H009", "error", "EI_OSABI must be ELFOSABI_SYSV (0)",
      """Consumers index every structure by the System V ABI; GNU ld marks an
      object ELFOSABI_GNU when it uses GNU extensions (IFUNC, unique
      symbols) that no vDSO consumer implements.  PA-RISC is the exception:
      its GNU toolchain marks every Linux object ELFOSABI_GNU (3), to tell
      it from HP-UX.""")
def osabi(ctx: Context) -> Findings:
    if ctx.image.e_machine == EM_PARISC and ctx.image.osabi == ELFOSABI_GNU:
        return
    if ctx.image.osabi != 0:
        yield "e_ident[EI_OSABI] @0x7", f"EI_OSABI {ctx.image.osabi}, expected 0 (System V)"


@rule("H010", "warning", "the image's class, machine, byte order and flags should be those of a known Linux vDSO ABI",
      """`vdsogen audit` picks the ABI from the ELF identity; when none in its
      catalogue fits, the ABI-specific rules and the consumer checks cannot
      run.  Pass --arch to name the ABI.""")
def known_abi(ctx: Context) -> Findings:
    if ctx.expect.abi_problem:
        yield "e_machine @0x12", ctx.expect.abi_problem
