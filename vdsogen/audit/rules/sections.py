"""Section rules: the section table as binutils and debuggers read it."""

from vdsogen.elf.consts import (SHF_ALLOC, SHF_WRITE, SHT_DYNAMIC, SHT_DYNSYM, SHT_GNU_HASH, SHT_GNU_VERDEF,
                                SHT_GNU_VERSYM, SHT_HASH, SHT_NOBITS)
from vdsogen.audit.era import show
from vdsogen.audit.rules import Context, Findings, rule

WRITABLE_DATA = (".data", ".bss", ".sdata", ".sbss", ".tdata", ".tbss")
# Writable flags on these are a known quirk of x86 images (eu-elflint: "wrong flags").
TOLERATED_WA = (".rodata", ".dynamic", ".got", ".got.plt", ".toc")


def _at(sec):
    return f"{sec.name or f'section {sec.index}'} @0x{sec.hdr_offset:x}"


@rule("C001", "error", "every SHF_ALLOC section must lie inside the PT_LOAD, at its file offset",
      """The kernel maps only the PT_LOAD's bytes; an allocated section outside
      it (or whose file offset and address disagree with the load) is
      content the running image does not have where its address says.""")
def alloc_inside_load(ctx: Context) -> Findings:
    img = ctx.image
    if not img.loads:
        return
    for sec in img.sections:
        if not sec.flags & SHF_ALLOC or not sec.size or sec.type == SHT_NOBITS:
            continue
        load = next((s for s in img.loads if s.contains(sec.addr, sec.size)), None)
        if load is None:
            yield _at(sec), f"{sec.name} 0x{sec.addr:x}+0x{sec.size:x} is outside the PT_LOAD"
        elif sec.offset - load.offset != sec.addr - load.vaddr:
            yield _at(sec), f"{sec.name} at file offset 0x{sec.offset:x} but address 0x{sec.addr:x}"


# 2.6 and 3.x vDSOs could carry a few bytes of .data that nothing writes
# once the image is mapped (unverified which ones: seen in vendor images).
OLD_DATA_UNTIL = "4.0"


@rule("C002", "error", "no writable data: no non-empty .data, .bss or other writable allocated section",
      """Linux maps the vDSO read-only and shares one copy between all
      processes: writable data would be neither writable nor private, and
      .bss is not even in the file.  The writable flag on .rodata or
      .dynamic inside the R+X load is a tolerated quirk of x86 images.""",
      relief=f"""A warning for initialised data (not .bss) in an image whose
      version note predates Linux {OLD_DATA_UNTIL}: some 2.6 and 3.x vDSOs
      carry a few bytes of .data that nothing writes once the image is
      mapped, and they ran with every libc of their time.  Information
      under qemu-user: QEMU maps its vDSO as one private, writable copy
      per process, and its images keep a little .data.""", qemu_user="info")
def no_writable_data(ctx: Context) -> Findings:
    old = ctx.before(OLD_DATA_UNTIL)
    for sec in ctx.image.sections:
        if not sec.size or not sec.flags & SHF_ALLOC:
            continue
        named = any(sec.name == n or sec.name.startswith(n + ".") for n in WRITABLE_DATA)
        writable = sec.flags & SHF_WRITE and sec.name and sec.name not in TOLERATED_WA
        if sec.type == SHT_NOBITS:
            yield _at(sec), f"{sec.name} holds {sec.size} bytes of zeroed data"
        elif named or writable:
            yield _at(sec), (f"{sec.name} holds {sec.size} bytes of writable data" +
                             (f" (a Linux {show(ctx.era)} image: read-only once mapped)" if old else "")), \
                ("warning" if old else None)


TAG_SECTIONS = ((SHT_DYNSYM, "SYMTAB"), (SHT_HASH, "HASH"), (SHT_GNU_HASH, "GNU_HASH"),
                (SHT_GNU_VERSYM, "VERSYM"), (SHT_GNU_VERDEF, "VERDEF"))


@rule("C003", "error", "the section headers must agree with the dynamic tags and PT_DYNAMIC",
      """binutils and debuggers read .dynsym, .hash, .gnu.version and the
      rest through the section headers; loaders read the same tables
      through the dynamic tags.  When both exist they must name the same
      bytes, or the tools show a different image than the one that runs.""")
def sections_match_tags(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    for sh_type, tag in TAG_SECTIONS:
        value = img.dyn(tag)
        for sec in img.sections_of_type(sh_type):
            if value is not None and sec.flags & SHF_ALLOC and sec.addr != value:
                yield _at(sec), f"{sec.name} is at 0x{sec.addr:x}, DT_{tag} says 0x{value:x}"
    dyn = img.segments_of_type(2)[0]
    for sec in img.sections_of_type(SHT_DYNAMIC):
        if sec.addr != dyn.vaddr:
            yield _at(sec), f"{sec.name} is at 0x{sec.addr:x}, PT_DYNAMIC at 0x{dyn.vaddr:x}"
    if img.dynsym_from_sections and img.dyn("SYMTAB") is not None:
        sec = img.sections_of_type(SHT_DYNSYM)[0]
        strtab = img.dyn("STRTAB")
        link = img.sections[sec.link] if 0 < sec.link < len(img.sections) else None
        if strtab is not None and link is not None and link.addr != strtab:
            yield _at(link), f"{link.name} (the .dynsym strings) is at 0x{link.addr:x}, DT_STRTAB says 0x{strtab:x}"
