"""Dynamic section, hash table and relocation rules."""

from vdsogen.elf import DT, SHT_REL, SHT_RELA, SHT_RELR
from vdsogen.rules import rule

EM_MIPS = 8


@rule("D001", "error", "DT_SONAME must name the vDSO as the target ABI does",
      """glibc registers the vDSO under its soname (linux-vdso.so.1,
      linux-gate.so.1, linux-vdso32.so.1, linux-vdso64.so.1); that is how
      dlopen("linux-vdso.so.1") finds it.""", needs=("soname",))
def soname(ctx):
    img = ctx.image
    if img.dynamic is None:
        return
    value = img.dyn("SONAME")
    if value is None:
        yield "dynamic", f"no DT_SONAME, expected {ctx.expect.soname!r}"
    elif (name := img.dynstr(value)) != ctx.expect.soname:
        yield "DT_SONAME", f"soname {name!r}, expected {ctx.expect.soname!r}"


@rule("D002", "error", "DT_SYMTAB, DT_STRTAB, DT_STRSZ and DT_SYMENT must be present: every lookup needs them")
def required_tags(ctx):
    img = ctx.image
    if img.dynamic is None:
        return
    for name in ("SYMTAB", "STRTAB", "STRSZ", "SYMENT"):
        if img.dyn(name) is None:
            yield "dynamic", f"no DT_{name}"
    syment = img.dyn("SYMENT")
    if syment is not None and syment != (16 if img.elf_class == 32 else 24):
        yield "DT_SYMENT", f"DT_SYMENT {syment}, expected {16 if img.elf_class == 32 else 24}"


@rule("X001", "error", "DT_HASH must be present: musl and other DT_HASH-only readers need it",
      """musl (no GNU hash support), CRIU and rustix before 2025, and the
      kernel selftest parser before it learned GNU hash all find symbols only
      through DT_HASH.  arm64 kernels v6.11+ dropped it and broke them.""")
def has_hash(ctx):
    img = ctx.image
    if img.dynamic is not None and img.dyn("HASH") is None:
        yield "dynamic", "no DT_HASH"


def _reloc_entries(img, sec):
    """(offset, is_none) for each entry of a REL or RELA section."""
    w = img.wsize
    entsize = {SHT_REL: 2 * w, SHT_RELA: 3 * w}[sec.type]
    count = min(sec.size // entsize, 1 << 16)
    for i in range(count):
        off = sec.offset + i * entsize
        raw = img.data[off + w:off + 2 * w]
        if len(raw) < w:
            return
        if img.e_machine == EM_MIPS and img.elf_class == 64:
            # r_sym (4 bytes), r_ssym, r_type3, r_type2, r_type (1 byte each)
            none = raw[5:8] == b"\0\0\0"
        else:
            info = int.from_bytes(raw, img.endian)
            none = (info & 0xFF if img.elf_class == 32 else info & 0xFFFFFFFF) == 0
        yield off, none


@rule("R001", "error", "no dynamic relocations: nothing ever relocates a vDSO (R_*_NONE is tolerated)",
      """The kernel maps the image as it is; glibc, musl and Go never apply
      relocations to it.  Linux's cmd_vdso_check fails the build on any
      relocation other than R_*_NONE, and vdso2c rejects DT_REL/DT_RELA.""")
def no_relocations(ctx):
    img = ctx.image
    for sec in img.sections:
        if sec.type in (SHT_REL, SHT_RELA):
            live = [off for off, none in _reloc_entries(img, sec) if not none]
            if live:
                yield f"{sec.name} @0x{live[0]:x}", f"{len(live)} dynamic relocation(s) in {sec.name}"
        elif sec.type == SHT_RELR and sec.size:
            yield f"{sec.name} @0x{sec.offset:x}", f"RELR relocations in {sec.name}"
    for tag in ("TEXTREL", "JMPREL"):
        if img.dyn(tag) is not None:
            yield "dynamic", f"DT_{tag} present"
    for tag in ("PLTRELSZ", "RELRSZ"):
        if img.dyn(tag):
            yield "dynamic", f"DT_{tag} = {img.dyn(tag)}"


def dynamic_tag_name(tag):
    return "DT_" + {v: k for k, v in DT.items()}.get(tag, f"0x{tag:x}")
