"""Dynamic section and relocation rules."""

from vdsogen import isa
from vdsogen.elf.consts import (DF_1_NOW, DF_BIND_NOW, DF_SYMBOLIC, DF_TEXTREL, DT, DT_MIPS, DT_NAMES, EM_MIPS,
                                SHT_REL, SHT_RELA, SHT_RELR)
from vdsogen.elf.reader import Unreadable
from vdsogen.audit.rules import Context, Findings, rule

REQUIRED_OR_ALLOWED = {"NULL", "SONAME", "SYMTAB", "STRTAB", "STRSZ", "SYMENT", "VERSYM", "VERDEF", "VERDEFNUM",
                       "HASH", "GNU_HASH", "SYMBOLIC", "FLAGS", "FLAGS_1", "BIND_NOW", "PLTGOT"}
FORBIDDEN = ("NEEDED", "RPATH", "VERNEED", "VERNEEDNUM", "INIT", "FINI", "INIT_ARRAY", "INIT_ARRAYSZ",
             "FINI_ARRAY", "FINI_ARRAYSZ", "PREINIT_ARRAY", "PREINIT_ARRAYSZ")
RELOC_TAGS = {"REL", "RELSZ", "RELENT", "RELA", "RELASZ", "RELAENT", "RELR", "RELRSZ", "RELRENT", "JMPREL",
              "PLTREL", "PLTRELSZ", "TEXTREL", "RELCOUNT", "RELACOUNT"}
RELOC_TABLES = (("REL", "RELSZ"), ("RELA", "RELASZ"), ("RELR", "RELRSZ"), ("JMPREL", "PLTRELSZ"))


def dynamic_tag_name(tag: int) -> str:
    return "DT_" + DT_NAMES.get(tag, DT_MIPS.get(tag, f"0x{tag:x}"))


def _where(img, tag_name):
    off = img.dyn_offset(tag_name)
    return f"DT_{tag_name} @0x{off:x}" if off is not None else "dynamic"


@rule("D001", "error", "DT_SONAME must name the vDSO as the target ABI does",
      """glibc registers the vDSO under its soname (linux-vdso.so.1,
      linux-gate.so.1, linux-vdso32.so.1, linux-vdso64.so.1); that is how
      dlopen("linux-vdso.so.1") finds it.""", needs=("soname",))
def soname(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    allowed = (ctx.expect.soname,) if isinstance(ctx.expect.soname, str) else tuple(ctx.expect.soname)
    expected = " or ".join(repr(s) for s in allowed)
    value = img.dyn("SONAME")
    if value is None:
        yield "dynamic", f"no DT_SONAME, expected {expected}"
    elif (name := img.dynstr(value)) not in allowed:
        yield _where(img, "SONAME"), f"soname {name!r}, expected {expected}"


@rule("D002", "error", "DT_SYMTAB, DT_STRTAB, DT_STRSZ and DT_SYMENT must be present: every lookup needs them")
def required_tags(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    for name in ("SYMTAB", "STRTAB", "STRSZ", "SYMENT"):
        if img.dyn(name) is None:
            yield "dynamic", f"no DT_{name}"
    syment = img.dyn("SYMENT")
    if syment is not None and syment != img.symsize:
        yield _where(img, "SYMENT"), f"DT_SYMENT {syment}, expected {img.symsize}"


@rule("D003", "error", "no DT_NEEDED, DT_RPATH, DT_VERNEED or initialisers: nothing loads dependencies or runs code",
      """The kernel maps the vDSO and no loader ever opens its dependencies,
      searches its RPATH, checks its version needs or runs DT_INIT/FINI or
      the init arrays; QEMU's gen-vdso rejects such "external
      dependencies".  Each of them means the image relies on something that
      will not happen.""")
def forbidden_tags(ctx: Context) -> Findings:
    img = ctx.image
    for name in FORBIDDEN:
        for value in img.dyn_all(name):
            detail = ""
            if name in ("NEEDED", "RPATH"):
                try:
                    detail = f" {img.dynstr(value)!r}"
                except Unreadable:
                    detail = f" (string offset {value})"
            yield _where(img, name), f"DT_{name}{detail}"


@rule("D004", "warning", "DT_RUNPATH is ignored without DT_NEEDED, but marks an image from a wrapped linker",
      """A kernel built under a Nix ld wrapper carries a DT_RUNPATH with a
      store path.  With no DT_NEEDED nothing searches it, so it is harmless;
      QEMU's gen-vdso would still reject it.""")
def runpath(ctx: Context) -> Findings:
    img = ctx.image
    for value in img.dyn_all("RUNPATH"):
        try:
            path = repr(img.dynstr(value))
        except Unreadable:
            path = f"(string offset {value})"
        yield _where(img, "RUNPATH"), f"DT_RUNPATH {path}"


FILTERS = {0x7FFFFFFD: "DT_AUXILIARY", 0x7FFFFFFF: "DT_FILTER"}


def _arch_tags(img):
    machine = isa.for_machine(img.e_machine)
    return machine.dynamic_tags.get(img.e_machine, {}) if machine else {}


@rule("D005", "warning", "only dynamic tags a vDSO needs, or an arch's known extras, should appear",
      """QEMU's gen-vdso treats every tag it does not know as an error, and a
      loader that meets a tag it does not understand may ignore what it
      means.  Known extras: MIPS's DT_MIPS_* GOT tags, ppc64's DT_PPC64_OPT,
      ppc32's DT_PPC_GOT.""")
def unknown_tags(ctx: Context) -> Findings:
    img = ctx.image
    known = {DT[n] for n in REQUIRED_OR_ALLOWED | RELOC_TAGS | set(FORBIDDEN) | {"RUNPATH"}}
    arch = _arch_tags(img)
    for tag, val, off in img.dynamic or ():
        if tag not in known and tag not in arch:
            name = FILTERS.get(tag)
            detail = ""
            if name:
                try:
                    detail = f" {name} {img.dynstr(val)!r} (a filter library name; no vDSO consumer loads filtees)"
                except Unreadable:
                    detail = f" {name}"
            yield f"dynamic @0x{off:x}", f"unexpected tag {dynamic_tag_name(tag)}{detail}"


@rule("D006", "warning", "DT_FLAGS may carry only SYMBOLIC and BIND_NOW, DT_FLAGS_1 only NOW",
      """These are what kernel images carry; other flags (ORIGIN, STATIC_TLS,
      NODELETE, PIE...) ask a loader for behaviour a vDSO never gets.
      DF_TEXTREL is a relocation and R001 reports it.""")
def flag_bits(ctx: Context) -> Findings:
    img = ctx.image
    for name, allowed in (("FLAGS", DF_SYMBOLIC | DF_BIND_NOW | DF_TEXTREL), ("FLAGS_1", DF_1_NOW)):
        for value in img.dyn_all(name):
            if value & ~allowed:
                yield _where(img, name), f"DT_{name} 0x{value:x} has bits 0x{value & ~allowed:x} set"


@rule("D007", "warning", "zero-sized relocation tables should be left out",
      """A RISC-V toolchain quirk emits DT_RELA with DT_RELASZ 0; it holds
      nothing (QEMU's gen-vdso tolerates it) but shows a link that expected
      relocations.""")
def empty_reloc_tables(ctx: Context) -> Findings:
    img = ctx.image
    for addr, size in RELOC_TABLES:
        if img.dyn(addr) is not None and not img.dyn(size):
            yield _where(img, addr), f"DT_{addr} with DT_{size} {img.dyn(size) or 0}"


def _section_reloc_entries(img, sec):
    """(offset, is_none) for each entry of a REL or RELA section."""
    w = img.wsize
    entsize = {SHT_REL: 2 * w, SHT_RELA: 3 * w}[sec.type]
    count = min(sec.size // entsize, 1 << 16)
    img.charge(count)
    for i in range(count):
        off = sec.offset + i * entsize
        if off + entsize > len(img.data):
            return
        yield off, img._reloc(sec.name, off).type == 0


@rule("R001", "error", "no dynamic relocations: nothing ever relocates a vDSO (R_*_NONE is tolerated)",
      """The kernel maps the image as it is; glibc, musl and Go never apply
      relocations to it.  Linux's cmd_vdso_check fails the build on any
      relocation other than R_*_NONE, and vdso2c rejects DT_REL/DT_RELA.""")
def no_relocations(ctx: Context) -> Findings:
    img = ctx.image
    relocs = [r for r in img.dynamic_relocs() if r.type]
    reported = set()
    for rel in relocs:
        if rel.table not in reported:
            reported.add(rel.table)
            n = sum(1 for r in relocs if r.table == rel.table)
            types = sorted({r.type for r in relocs if r.table == rel.table})
            yield (f"{rel.table} @0x{rel.offset:x}",
                   f"{n} dynamic relocation(s), type(s) {', '.join(str(t) for t in types[:4])}")
    for sec in img.sections:
        if sec.type in (SHT_REL, SHT_RELA) and not reported:
            live = [off for off, none in _section_reloc_entries(img, sec) if not none]
            if live:
                yield f"{sec.name} @0x{live[0]:x}", f"{len(live)} dynamic relocation(s) in {sec.name}"
        elif sec.type == SHT_RELR and sec.size:
            yield f"{sec.name} @0x{sec.offset:x}", f"RELR relocations in {sec.name}"
    for tag in ("TEXTREL",):
        if img.dyn(tag) is not None:
            yield _where(img, tag), f"DT_{tag} present"
    if any(v & DF_TEXTREL for v in img.dyn_all("FLAGS")):
        yield _where(img, "FLAGS"), "DT_FLAGS has DF_TEXTREL"
    if img.dyn("RELRSZ"):
        yield _where(img, "RELRSZ"), f"DT_RELRSZ = {img.dyn('RELRSZ')}"


@rule("R002", "error", "MIPS: the GOT may hold only the 2 reserved entries (DT_MIPS_LOCAL_GOTNO 2, GOTSYM = SYMTABNO)",
      """A MIPS loader relocates local GOT entries beyond the reserved two and
      every global entry implicitly, without relocation records.  Nothing
      does that for a vDSO: code that reaches data through such an entry
      (plain C `&symbol`) reads an unrelocated address.""")
def mips_got(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine != EM_MIPS or img.dynamic is None:
        return
    local = _mips(img, 0x7000000A)
    if local is not None and local > 2:
        yield "DT_MIPS_LOCAL_GOTNO", f"{local} local GOT entries, expected the 2 reserved ones"
    gotsym, symtabno = _mips(img, 0x70000013), _mips(img, 0x70000011)
    if gotsym is not None and symtabno is not None and gotsym != symtabno:
        yield "DT_MIPS_GOTSYM", f"{symtabno - gotsym} global GOT entries (GOTSYM {gotsym}, SYMTABNO {symtabno})"


def _mips(img, tag):
    for t, val, _off in img.dynamic or ():
        if t == tag:
            return val
    return None


@rule("R003", "info", "R_*_NONE relocation entries are harmless leftovers",
      """GNU ld leaves one R_MIPS_NONE in MIPS images and powerpc ld has
      emitted spurious NONE entries; Linux's cmd_vdso_check accepts them.""")
def none_relocations(ctx: Context) -> Findings:
    img = ctx.image
    for rel in img.dynamic_relocs():
        if rel.type == 0:
            yield f"{rel.table} @0x{rel.offset:x}", "R_*_NONE entry"


@rule("R004", "error", "no .opd: ppc64 ELFv1 function descriptors need R_PPC64_RELATIVE relocations",
      """An ELFv1 export written in C points into .opd, whose descriptors
      hold absolute addresses that only a loader fills in.  Linux discards
      .opd and exports plain code labels; lld's zero-filled .opd crashes at
      run time.""")
def no_opd(ctx: Context) -> Findings:
    sec = ctx.image.section(".opd")
    if sec is not None and sec.size:
        yield f".opd @0x{sec.offset:x}", f".opd section of {sec.size} bytes"
