"""The data-page layout a harness run plays (`vdsogen test --layout`, `--image`).

A layout says which Linux versions it describes and which ABIs read it then
(its `linux` and `abis` keys).  Given an image with a Linux version note,
`vdsogen test` plays the layout of that kernel: among the layouts of the
target's directories that list its ABI and cover the version, the spec's own
if it is one of them, else the only one.  `--layout=NAME` names it instead;
an image without a note keeps the spec's.  The spec's page size stays (an
image's p_align does not say the kernel's: Debian links arm64's at 16 bytes
and loongarch64's at 64 KiB for 16 KiB pages); the page count becomes the
layout's.
"""

from dataclasses import dataclass, replace
from pathlib import Path

from vdsogen import paths
from vdsogen.audit import era
from vdsogen.errors import HarnessError, VdsogenError
from vdsogen.spec.layout import Layout, layout_path, load_layout
from vdsogen.spec.model import Target
from vdsogen.spec.toml import did_you_mean


@dataclass(frozen=True)
class Choice:
    """The layout a run plays, and why, for the run's output."""
    target: Target      # the target with that layout
    why: str

    @property
    def line(self) -> str:
        dp = self.target.datapage
        assert dp is not None           # a target without time data has no layout to choose
        span = f" (Linux {dp.layout.versions})" if dp.layout.versions else ""
        return f"# layout: {dp.layout.name}{span}, {self.why}; {dp.pages} data pages"


def layout_dirs(target) -> tuple[Path, ...]:
    """Where the target's layouts come from: DIR/layouts of --specs=DIR, then vdsogen's."""
    roots = [Path(r) for r in target.fragment_roots if Path(r).resolve() != paths.ROOT.resolve()]
    return (*(r / "layouts" for r in roots if (r / "layouts").is_dir()), paths.LAYOUTS)


def known(target) -> list[str]:
    dirs = layout_dirs(target)
    return sorted({p.stem for d in dirs for p in d.glob("*.toml")})


def for_abi(target) -> list[Layout]:
    """Every layout of the target's directories that lists its ABI, oldest first."""
    dirs = layout_dirs(target)
    out = [load_layout(name, dirs) for name in known(target)]
    return sorted((lay for lay in out if target.abi.name in lay.abis), key=lambda lay: lay.linux)


def with_layout(target, layout: Layout):
    """The target with `layout` for its data pages, as many as it has."""
    return replace(target, datapage=replace(target.datapage, layout=layout, pages=layout.page_count))


def named(target, name: str) -> Choice:
    """--layout=NAME."""
    dirs = layout_dirs(target)
    if not layout_path(name, dirs).is_file():
        raise HarnessError(f"--layout={name}: no such layout in {', '.join(map(str, dirs))}"
                           f"{did_you_mean(name, known(target))}")
    return Choice(with_layout(target, load_layout(name, dirs)), "as --layout says")


def of_image(target, image) -> Choice:
    """The layout of the kernel the image's version note names."""
    from vdsogen.elf.reader import ElfImage

    own = target.datapage.layout
    try:
        version = era.version_of(ElfImage(str(image)))
    except VdsogenError:
        version = None          # the harness's image check says what is wrong with it
    if version is None:
        return Choice(target, "the spec's: the image has no Linux version note")
    shown = f"the image's version note says Linux {era.show(version)}"
    layouts = for_abi(target)
    fits = [lay for lay in layouts if lay.covers(version)]
    if any(lay.name == own.name for lay in fits):
        return Choice(target, f"the spec's: {shown}")
    if len(fits) == 1:
        return Choice(with_layout(target, fits[0]), shown)
    have = ", ".join(f"{lay.name} ({lay.versions})" for lay in layouts) or "none"
    if fits:
        raise HarnessError(f"{image}: Linux {era.show(version)}: layouts {', '.join(lay.name for lay in fits)} "
                           f"all cover it for the {target.abi.name} ABI; say which with --layout=NAME")
    raise HarnessError(f"{image}: Linux {era.show(version)}: no layout of the {target.abi.name} ABI covers it "
                       f"(its layouts: {have}); give one with --layout=NAME")


def choose(target, image=None, layout: str | None = None) -> Choice | None:
    """The layout to play: --layout's, else the image's kernel's; None for the spec's own build."""
    if layout is not None:
        return named(target, layout)
    if image is not None:
        return of_image(target, image)
    return None


__all__ = ["Choice", "choose", "for_abi", "with_layout", "layout_dirs"]
