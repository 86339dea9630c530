"""Writers: the model rendered through templates/ and arch/ into sources.

One template per output; arch fragments are included by name from the
spec.  Only the model's public attributes reach the templates.  Every
writer renders through a Renderer: the vDSO's sources (sources()), the
harness's headers and checks (vdsogen/harness/driver.py) and the --emit
outputs (vdsogen/build/emit.py) share one environment, one context and one
error wrapper, which turns a template error into a SpecError naming the
template or fragment file and line.
"""

import os

import jinja2

from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.spec import contract as contracts, functions


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


def _cnum(value: int) -> str:
    """A C constant that stays one token in any expression."""
    return f"(-{-value:#x})" if value < 0 else f"{value:#x}"


def _ldnum(value: int) -> str:
    """A linker-script constant."""
    return f"-{-value:#x}" if value < 0 else f"{value:#x}"


def environment(target) -> jinja2.Environment:
    """The one Jinja2 environment of a target: templates/, then its arch fragment trees."""
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
    env.filters["cnum"] = _cnum
    env.filters["ldnum"] = _ldnum

    def fail(key, message):
        raise SpecError(target.path, key, message)

    env.globals["fail"] = fail
    return env


class _TemplatePage:
    """A layout page as templates see it: its struct or symbol, when the
    layout gives none, is an error naming the layout file and the page."""

    def __init__(self, page, layout, target):
        self._page, self._layout, self._target = page, layout, target

    def __getattr__(self, name):
        value = getattr(self._page, name)
        if value is None and name in ("struct", "symbol"):
            raise SpecError(self._layout.path, f"page (role {self._page.role!r})",
                            f"has no {name!r}, which {self._target.name}'s fragments use")
        return value


class _TemplateLayout:
    """The layout as templates see it: page(role) of a page the layout lacks
    is an error naming the layout file, not a None that renders as C."""

    def __init__(self, layout, target):
        self._layout, self._target = layout, target

    def __getattr__(self, name):
        return getattr(self._layout, name)

    def page(self, role):
        page = self._layout.page(role)
        if page is None:
            raise SpecError(self._layout.path, "page", f"no page has role {role!r}, which "
                                                       f"{self._target.name}'s fragments use")
        return _TemplatePage(page, self._layout, self._target)


def context(target) -> dict:
    """What every template sees: the target, its data pages and layout, the
    counter fragment's parameters (checked by the model against
    arch/ARCH/contract.toml) and every declared function."""
    dp = target.datapage
    return {
        "target": target,
        "dp": dp,
        # None for a target without time data (Target.counter)
        "layout": _TemplateLayout(dp.layout, target) if dp else None,
        "params": target.counter.params if target.counter else {},
        "declared": tuple(functions.catalogue().values()),
    }


def _template_line(tb, roots):
    """(file, line) of the innermost template frame of a traceback (Jinja2
    rewrites them to the template's own file and line), or None."""
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if any(os.path.commonpath([os.path.abspath(name), r]) == r for r in roots if os.path.isabs(name)):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


class Renderer:
    """One target's templates rendered with one environment and one context.

    A template error becomes a SpecError naming the template or fragment
    file and line; a missing top-level template is "missing", with the
    caller's reason appended.
    """

    def __init__(self, target):
        self.target = target
        self.env = environment(target)
        self.context = context(target)
        self._roots = [os.path.abspath(r) for r in (paths.TEMPLATES, *target.fragment_roots)]

    def render(self, name: str, *, missing: str | None = None, **extra) -> str:
        """Template `name` (a templates/ file or target.fragment(...)) with the context and `extra`."""
        relpath = self.env.filters["relpath"]
        try:
            return self.env.get_template(name).render(**self.context, **extra)
        except jinja2.TemplateNotFound as e:
            if e.name == name:
                raise SpecError(name, None, "missing" + (f" ({missing})" if missing else "")) from None
            where, message = name, f"template error: {e.message}"
        except jinja2.TemplateError as e:
            message = f"template error: {e.message}"
            line = getattr(e, "lineno", None)
            filename = getattr(e, "filename", None)
            if line is None or filename is None:
                frame = _template_line(e.__traceback__, self._roots)
                if frame:
                    filename, line = frame
            where = relpath(filename or name) + (f":{line}" if line else "")
        raise SpecError(where, None, message)


def sources(target):
    """[(file name, text)] for one target, in build order."""
    r = Renderer(target)
    render = r.render

    if target.datapage is None:
        # No time data: no C core, only the note and the arch's assembly.
        out = [("vdso_arch.h", render("vdso_arch.h.j2")), ("note.S", render("note.S.j2"))]
    else:
        out = [(name, (paths.TEMPLATES / name).read_text()) for name in STATIC]
        out += [(f.header, (paths.TEMPLATES / f.header).read_text()) for f in target.core_functions if f.header]
        out += [
            ("vdso_config.h", render("vdso_config.h.j2")),
            ("datapage.h", render("datapage.h.j2")),
            ("vdso_arch.h", render("vdso_arch.h.j2")),
            ("vdso.c", render("vdso.c.j2", part=None)),
            ("note.S", render("note.S.j2")),
        ]
    if target.entry_style == "asm":
        out.append(("entry.S", render(target.fragment("entry.S.j2"))))
    for e in target.arch_exports:
        out.append((f"impl-{e.impl}.S", render(target.fragment(f"impl-{e.impl}.S.j2"), e=e)))
    for t in target.trampolines:
        out.append((f"{t.fragment}.S", render(target.fragment(f"{t.fragment}.S.j2"), t=t,
                                              nr=target.syscall(t.syscall))))
    # Last, after every other entry point: the core functions whose code is a header of their own
    # (getrandom) and the code they call into (its ChaCha20), which would otherwise push entries
    # onto another page (audit rule S006).
    for f in target.core_functions:
        if f.header:
            out.append((f"vdso-{f.name}.c", render("vdso.c.j2", part=f)))
    for kind in dict.fromkeys(k for f in target.core_functions for k in f.arch_fragments):
        name = contracts.kind(kind).file
        out.append((name.removesuffix(".j2"), render(target.fragment(name))))
    out.append(("vdso.lds", render("vdso.lds.j2")))
    return out
