"""Symbol versioning rules: glibc and Go look every symbol up by name@version."""

from vdsogen.elf.consts import VER_FLG_BASE
from vdsogen.audit.era import show
from vdsogen.audit.rules import Context, Findings, rule
from vdsogen.audit.rules.symbols import exported


@rule("V001", "error", "DT_VERSYM and DT_VERDEF must be present and consistent",
      """glibc needs versions for its lookups and the Go runtime dereferences
      verdef without a check: an image without DT_VERDEF crashes Go programs
      at start-up.  The first verdef is the BASE entry named after the soname;
      every versym index must name a defined version.""")
def versions_present(ctx: Context) -> Findings:
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
        if ndx > 1 and ndx not in defined and img.dynsym[i].defined:   # D003 reports version needs
            yield f".gnu.version[{i}]", f"{img.dynsym[i].name} has version index {ndx}, which no verdef defines"


@rule("V002", "error", "each export must be bound to its version node as the default version",
      needs=("exports",))
def export_versions(ctx: Context) -> Findings:
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
def verdef_hash(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    for v in img.verdefs() or ():
        want = img.elf_hash(v.name)
        if v.hash != want:
            yield f"verdef @0x{v.offset:x}", f"vd_hash 0x{v.hash:x} for {v.name!r}, expected 0x{want:x}"


@rule("V004", "error", "the version nodes must be the target ABI's (after the BASE entry)",
      """Every consumer asks for its symbols at the node its ABI defines
      (LINUX_2.6 on x86, LINUX_2.6.39 on arm64, LINUX_2.6.15 on powerpc...);
      a node missing or renamed hides every symbol in it from versioned
      lookups.  An extra node is harmless to lookups but not what any
      kernel emits.""", needs=("versions",),
      relief="""Only information when the image's era had no such node: a node
      that holds none of the exports a kernel of that Linux version has
      (i386 images before 3.15 have only LINUX_2.5: their time functions,
      and LINUX_2.6 with them, came in 3.15) hides nothing from a libc of
      its time.  The eras come from the ABI catalogue's `exports`.  Where
      each kernel of the ABI defines one node, a later one renaming it
      (`one_node`: parisc's LINUX_5.18 became LINUX_6.11 in 6.11), an image
      without a version note that has one of them has its era's.""")
def version_nodes(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    verdefs = img.verdefs()
    if not verdefs:
        return   # V001 reports it
    have = [v.name for v in verdefs if not v.flags & VER_FLG_BASE]
    want = list(ctx.expect.versions)
    info = ctx.expect.abi_info
    of_era = info.versions_for(ctx.era) if info is not None and not ctx.expect.generated else want
    renamed = ctx.era is None and info is not None and info.one_node and set(have) & set(want)
    for name in want:
        if name not in have:
            if renamed:
                yield "verdef", (f"no version node {name}: each {info.name} kernel defines one of "
                                 f"{', '.join(want)}, and this image's is {', '.join(have)}"), "info"
            elif name in of_era:
                yield "verdef", f"no version node {name}"
            else:
                yield "verdef", (f"no version node {name}, as no {info.name} kernel of its era "
                                 f"(Linux {show(ctx.era)}) had: it held no export then"), "info"
    for v in verdefs:
        if not v.flags & VER_FLG_BASE and v.name not in want:
            yield f"verdef @0x{v.offset:x}", f"unexpected version node {v.name!r} (expected {', '.join(want)})"


@rule("V005", "error", "every export must be bound to a version node, as its default version",
      """glibc, Go and the reference parser look every symbol up at a version
      node; an export at index 0/1 (local or the BASE entry) or with the
      hidden bit is invisible to those lookups.  GNU ld's version-node
      marker symbols are not exports.""")
def exports_versioned(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None or img.dyn("VERSYM") is None or not img.verdefs():
        return   # V001 reports it
    versym = img.versym(len(img.dynsym))
    base = {v.index for v in img.verdefs() if v.flags & VER_FLG_BASE}
    for sym in exported(img):
        v = versym[sym.index]
        if v & 0x7FFF in {0, 1} | base:
            yield f".gnu.version[{sym.index}]", f"{sym.name} has version index {v & 0x7FFF}, not a version node"
        elif v & 0x8000:
            yield f".gnu.version[{sym.index}]", f"{sym.name} is hidden (versym 0x{v:x}): not the default version"
