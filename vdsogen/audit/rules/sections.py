"""Section rules: the section table as binutils and debuggers read it."""

from vdsogen.elf.consts import (SHF_ALLOC, SHF_WRITE, SHT_DYNAMIC, SHT_DYNSYM, SHT_GNU_HASH, SHT_GNU_VERDEF,
                                SHT_GNU_VERSYM, SHT_HASH, SHT_NOBITS)
from vdsogen.audit.era import show
from vdsogen.audit.rules import Context, Findings, rule
from vdsogen.audit.rules.code import code_regions
from vdsogen.isa import module_function

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
      .bss is not even in the file.  Code that stores to it faults.  The
      writable flag on .rodata or .dynamic inside the R+X load is a
      tolerated quirk of x86 images.  The decoder looks for the stores:
      where it resolves one into the section (RISC-V auipc/addi, arm64
      adrp/add, x86-64 RIP-relative and i386 absolute operands), the
      finding names it.""",
      relief=f"""A warning for initialised data (not .bss) that no store the
      decoder can resolve writes: read-only data in a writable section is
      harmless once mapped read-only (the message says how many stores go
      through registers the decoder cannot follow; on a machine whose
      decoder follows no stores it stays an error).  A warning too for
      initialised data in an image whose version note predates Linux
      {OLD_DATA_UNTIL}: some 2.6 and 3.x vDSOs carry a few bytes of .data
      that nothing writes once the image is mapped, and they ran with every
      libc of their time.  Information under qemu-user: QEMU maps its vDSO
      as one private, writable copy per process, and its images keep a
      little .data.""", qemu_user="info")
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
            head = f"{sec.name} holds {sec.size} bytes of writable data"
            if old:
                yield _at(sec), f"{head} (a Linux {show(ctx.era)} image: read-only once mapped)", "warning"
                continue
            writes, unknown = _stores_into(ctx, sec)
            if writes is None:
                yield _at(sec), f"{head} (the decoder follows no stores on this machine)", None
            elif writes:
                yield _at(sec), (f"{head}, and the code writes it: " +
                                 ", ".join(f"0x{a:x} stores to 0x{t:x}" for a, t in writes[:3]) +
                                 (f" and {len(writes) - 3} more" if len(writes) > 3 else "")), None
            else:
                why = (f"no store the decoder resolves writes it; {unknown} go through registers it cannot "
                       "follow" if unknown else "no store in the code but to the stack")
                yield _at(sec), f"{head}, read-only once mapped ({why})", "warning"


def _stores_into(ctx: Context, sec) -> tuple[list[tuple[int, int]] | None, int]:
    """([(store address, target)] of the stores the decoder resolves into
    `sec`, how many it cannot resolve); (None, 0) where the machine's decoder
    follows no stores.  The code's stores are found once per image."""
    if "stores" not in ctx.cache:
        find = module_function(ctx.image.e_machine, "store_targets")
        stores = None if find is None else []
        for addr, code, _off in code_regions(ctx.image) if find is not None else ():
            ctx.image.charge(len(code) // 4 + 1)        # one unit per instruction word swept
            stores.extend(find(ctx.image, code, addr))
        ctx.cache["stores"] = stores
    stores = ctx.cache["stores"]
    if stores is None:
        return None, 0
    lo, hi = sec.addr, sec.addr + sec.size
    return [(a, t) for a, t in stores if t is not None and lo <= t < hi], sum(1 for _a, t in stores if t is None)


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
