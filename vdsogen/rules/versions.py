"""Symbol versioning rules: glibc and Go look every symbol up by name@version."""

from vdsogen.elf import VER_FLG_BASE, elf_hash
from vdsogen.rules import rule
from vdsogen.rules.symbols import exported


@rule("V001", "error", "DT_VERSYM and DT_VERDEF must be present and consistent",
      """glibc needs versions for its lookups and the Go runtime dereferences
      verdef without a check: an image without DT_VERDEF crashes Go programs
      at start-up.  The first verdef is the BASE entry named after the soname;
      every versym index must name a defined version.""")
def versions_present(ctx):
    img = ctx.image
    if img.dynamic is None:
        return
    verdefs = img.verdefs()
    if verdefs is None:
        yield "dynamic", "no DT_VERDEF"
    versym = img.versym(len(img.dynsym)) if img.dynsym else None
    if img.dyn("VERSYM") is None:
        yield "dynamic", "no DT_VERSYM"
    if not verdefs:
        return
    base = verdefs[0]
    if not base.flags & VER_FLG_BASE or base.index != 1:
        yield f"verdef @0x{base.offset:x}", "first verdef is not the BASE entry (index 1, VER_FLG_BASE)"
    soname = img.dyn("SONAME")
    if soname is not None and base.name != img.dynstr(soname):
        yield f"verdef @0x{base.offset:x}", f"BASE verdef names {base.name!r}, not the soname"
    declared = img.dyn("VERDEFNUM")
    if declared is not None and declared != len(verdefs):
        yield "DT_VERDEFNUM", f"DT_VERDEFNUM {declared}, but the chain has {len(verdefs)} entries"
    defined = {v.index for v in verdefs}
    for i, v in enumerate(versym or ()):
        ndx = v & 0x7FFF
        if ndx > 1 and ndx not in defined:
            yield f".gnu.version[{i}]", f"{img.dynsym[i].name} has version index {ndx}, which no verdef defines"


@rule("V002", "error", "each export must be bound to its version node as the default version",
      needs=("exports",))
def export_versions(ctx):
    img = ctx.image
    verdefs = img.verdefs() if img.dynamic is not None else None
    if not verdefs or img.dyn("VERSYM") is None:
        return  # V001 reports it
    names = {v.index: v.name for v in verdefs}
    versym = img.versym(len(img.dynsym))
    for sym in exported(img):
        want = ctx.expect.exports.get(sym.name)
        if want is None:
            continue
        v = versym[sym.index]
        have = names.get(v & 0x7FFF, f"index {v & 0x7FFF}")
        if have != want[0]:
            yield f".gnu.version[{sym.index}]", f"{sym.name} is bound to {have}, expected {want[0]}"
        elif v & 0x8000:
            yield f".gnu.version[{sym.index}]", f"{sym.name}@{have} is hidden, not the default version"


@rule("V003", "error", "each verdef's vd_hash must be the ELF hash of its name",
      """The Go runtime and the kernel selftest parser compare vd_hash before
      the name: a wrong hash makes the version, and every symbol in it,
      invisible to them.""")
def verdef_hash(ctx):
    img = ctx.image
    if img.dynamic is None:
        return
    for v in img.verdefs() or ():
        if v.hash != elf_hash(v.name):
            yield f"verdef @0x{v.offset:x}", f"vd_hash 0x{v.hash:x} for {v.name!r}, expected 0x{elf_hash(v.name):x}"
