"""`vdsogen check`: the rule engine plus the target spec's own expectations."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from vdsogen.audit import report, rules
from vdsogen.audit.report import Report
from vdsogen.audit.rules.notes import test_build
from vdsogen.audit.run import judge
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import ImageError
from vdsogen.spec import abi

if TYPE_CHECKING:
    from vdsogen.spec.layout import Layout
    from vdsogen.spec.model import Target


def expect_from_target(target: Target) -> rules.Expect:
    """Everything the spec promises, beside its ABI's catalogue entry."""
    exports = {name: (version, binding) for name, version, binding in target.symbols()}
    dp = target.datapage            # None: no time data (Target.counter)
    return rules.Expect(
        abi=target.abi.name, elf_class=target.elf.elf_class, endian=target.elf.endian,
        machine=target.elf.machine, soname=target.soname, versions=target.versions,
        exports=exports,
        trampolines=tuple((t.name, t.lead, t.words) for t in target.trampolines),
        counter_words=None if target.test_counter or not target.counter else target.counter.words,
        page_size=target.page_size, data_pages=dp.pages if dp else 0,
        flags=(abi.FlagRule(0xFFFFFFFF, (target.elf.flags,), f"0x{target.elf.flags:x} as the spec says"),),
        abi_info=target.abi, generated=True,
        layout_note=dp.note if dp else None, layout_not_own=layout_not_own(dp.layout) if dp else None)


def layout_not_own(layout: Layout) -> str | None:
    """Why `layout` is not vdsogen's own layout of its name, or None: it is
    that layout, lays out the same data, or has a name of its own."""
    from vdsogen.errors import SpecError
    from vdsogen.spec.layout import layout_path, load_layout

    if not layout_path(layout.name).is_file():
        return None
    try:
        own = load_layout(layout.name)
    except SpecError:
        return None
    if own.digest() == layout.digest():
        return None
    mine, theirs = layout.shape(), own.shape()
    first = next((a for a, b in zip(mine, theirs) if a != b), None) or (mine + theirs)[min(len(mine), len(theirs))]
    return (f"layout {layout.name} ({layout.path}) is not vdsogen's {layout.name} ({own.path}): it has "
            f"'{first}'; a layout of your own needs a name of its own")


def check_report(target: Target, path: str | os.PathLike, profile: str = "linux") -> Report:
    """The report on one image checked against its target: ImageError when unreadable."""
    detection = abi.Detection(target.abi, f"spec {target.name}")
    img = ElfImage(path)
    if test_build(img) is not None:
        target = target.test_build()    # the counter read is injected: N006 says so
    return judge(img, detection, expect_from_target(target), profile, status="checked")


def check_image(target: Target, path: str | os.PathLike, profile: str = "linux") -> list[rules.Finding]:
    return check_report(target, path, profile).findings


def build_validator(target: Target, so: str | os.PathLike, dbg: str | os.PathLike) -> list[str]:
    """Error lines for a freshly built image (stripped and unstripped)."""
    out = []
    for path in (so, dbg):
        out += [f"{path}: {report.finding_line(f)}" for f in check_image(target, path) if f.severity == "error"]
    return out


def check_file(target: Target, path: str | os.PathLike, fmt: str = "text", profile: str = "linux",
               quiet: bool = False) -> int:
    """Exit status: 0 clean, 1 errors, 2 unusable (the error is printed on
    standard error; with --format=json the document says so too)."""
    try:
        r = check_report(target, path, profile)
    except ImageError as err:
        if err.path != str(path):
            raise
        r = Report(str(path), status="unusable", error=err)
    return report.render([r], profile, fmt, command="check", quiet=quiet)
