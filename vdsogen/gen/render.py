"""Writers: the model rendered through templates/ and arch/ into sources.

One template per output; arch fragments are included by name from the
spec.  Only the model's public attributes reach the templates.
"""

import os

import jinja2

from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.spec import functions


# Files of templates/ copied into every build as they are: plain C.
STATIC = ("vdso_types.h", "vdso_core.h")


def _relpath(p, roots):
    """A path as generated comments show it: relative to the tree it is in."""
    for root in roots:
        try:
            rel = os.path.relpath(p, root)
        except ValueError:
            continue
        if not rel.startswith(".."):
            return rel
    return str(p)


def environment(target):
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(paths.TEMPLATES), *target.fragment_roots]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    shown = [*reversed(target.fragment_roots), os.path.dirname(target.path)]
    env.filters["relpath"] = lambda p: _relpath(p, shown)

    def fail(key, message):
        raise SpecError(target.path, key, message)

    env.globals["fail"] = fail
    return env


def _context(target):
    dp = target.datapage
    return {
        "target": target,
        "dp": dp,
        "layout": dp.layout,
        "params": target.counter.params,   # checked by the model against arch/ARCH/contract.toml
        "declared": tuple(functions.catalogue().values()),
    }


def sources(target):
    """[(file name, text)] for one target, in build order."""
    env = environment(target)
    ctx = _context(target)

    def render(name, **extra):
        try:
            return env.get_template(name).render(**ctx, **extra)
        except jinja2.TemplateError as e:
            where = getattr(e, "filename", None) or name
            line = getattr(e, "lineno", None)
            raise SpecError(env.filters["relpath"](where) + (f":{line}" if line else ""), None,
                            f"template error: {e.message}") from None

    out = [(name, (paths.TEMPLATES / name).read_text()) for name in STATIC]
    out += [
        ("vdso_config.h", render("vdso_config.h.j2")),
        ("datapage.h", render("datapage.h.j2")),
        ("vdso_arch.h", render("vdso_arch.h.j2")),
        ("vdso.c", render("vdso.c.j2")),
        ("note.S", render("note.S.j2")),
    ]
    if target.entry_style == "asm":
        out.append(("entry.S", render(target.fragment("entry.S.j2"))))
    for e in target.arch_exports:
        out.append((f"impl-{e.impl}.S", render(target.fragment(f"impl-{e.impl}.S.j2"), e=e)))
    for t in target.trampolines:
        out.append((f"{t.fragment}.S", render(target.fragment(f"{t.fragment}.S.j2"), t=t,
                                              nr=target.syscall(t.syscall))))
    out.append(("vdso.lds", render("vdso.lds.j2")))
    return out

