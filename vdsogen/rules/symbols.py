"""Symbol rules: what the vDSO exports, and that nothing is left undefined."""

from vdsogen.elf import STB_GLOBAL, STB_WEAK, STT_FUNC, STT_NOTYPE, STT_OBJECT, SHN_ABS
from vdsogen.rules import rule

BINDINGS = {STB_GLOBAL: "global", STB_WEAK: "weak"}


def exported(img):
    """Defined GLOBAL/WEAK .dynsym symbols, less GNU ld's version-node markers."""
    nodes = {v.name for v in img.verdefs() or ()} if img.dynamic is not None else set()
    out = []
    for sym in img.dynsym[1:]:
        if not sym.defined or sym.bind not in BINDINGS:
            continue
        # GNU ld adds one ABS OBJECT symbol of value 0 per version node.
        if sym.shndx == SHN_ABS and sym.type == STT_OBJECT and sym.value == 0 and sym.name in nodes:
            continue
        out.append(sym)
    return out


@rule("S001", "error", "no undefined symbols: nothing resolves references at run time",
      """An undefined symbol in .dynsym or .symtab (other than entry 0) is a
      reference nobody will resolve: typically a libgcc helper, a stack
      protector or a profiling hook.""")
def no_undefined(ctx):
    img = ctx.image
    for sym in img.dynsym[1:] + img.symtab[1:]:
        if not sym.defined:
            yield f"{sym.table}[{sym.index}]", f"undefined symbol {sym.name!r}"


@rule("S002", "error", "the exports must be exactly the target's set", needs=("exports",))
def export_set(ctx):
    have = {s.name for s in exported(ctx.image)}
    want = set(ctx.expect.exports)
    for name in sorted(want - have):
        yield ".dynsym", f"missing export {name!r}"
    for name in sorted(have - want):
        yield ".dynsym", f"unexpected export {name!r}"


@rule("S003", "error", "each export must be a function (FUNC, or NOTYPE code) with the binding the target gives it",
      needs=("exports",))
def export_kind(ctx):
    for sym in exported(ctx.image):
        want = ctx.expect.exports.get(sym.name)
        if want is None:
            continue
        _version, binding = want
        if sym.type not in (STT_FUNC, STT_NOTYPE):
            yield f".dynsym[{sym.index}]", f"{sym.name} has symbol type {sym.type}, expected STT_FUNC"
        if BINDINGS[sym.bind] != binding:
            yield f".dynsym[{sym.index}]", f"{sym.name} is {BINDINGS[sym.bind]}, expected {binding}"


@rule("S004", "warning", "exports should be STT_FUNC: FUNC-only readers (kernel selftest parser, crabc) skip NOTYPE")
def export_notype(ctx):
    for sym in exported(ctx.image):
        if sym.type == STT_NOTYPE:
            yield f".dynsym[{sym.index}]", f"{sym.name} is STT_NOTYPE"
