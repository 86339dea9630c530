"""The data-page layout a harness run plays (`vdsogen test --layout`, `--image`).

A layout says which Linux versions it describes and which ABIs read it then
(its `linux` and `abis` keys).  Given an image with a Linux version note,
`vdsogen test` plays the layout of that kernel: among the layouts of the
target's directories that list its ABI and cover the version, the spec's own
if it is one of them, else the only one.  `--layout=NAME` names it instead;
an image without a note keeps the spec's.  The page count becomes the
layout's.  The page size is the one the image's code reads its data pages
at (page_size_of): an image's p_align does not say it (Debian links arm64's
at 16 bytes and loongarch64's at 64 KiB for 16 KiB pages), and one ABI's
kernels differ (Debian's ppc64el had 64 KiB pages in 6.1, 4 KiB in 7.2);
where the code's reads do not tell (an ISA whose PC-relative forms are not
decoded, reads that fit no page size), the spec's stays.
"""

from dataclasses import dataclass, replace
from pathlib import Path

from vdsogen import paths
from vdsogen.audit import era
from vdsogen.errors import HarnessError, VdsogenError
from vdsogen.spec.layout import Layout, layout_path, load_layout
from vdsogen.spec.model import Target
from vdsogen.spec.toml import did_you_mean


# The page sizes a Linux kernel of any ABI vdsogen knows may have.
PAGE_SIZES = (4096, 16384, 65536)


@dataclass(frozen=True)
class Choice:
    """The layout a run plays, and why, for the run's output."""
    target: Target      # the target with that layout
    why: str
    sized: bool = False  # the page size is the image's (page_size_of), not the spec's
    version: tuple | None = None    # the image's Linux version note, which the harness plays

    @property
    def line(self) -> str:
        dp = self.target.datapage
        assert dp is not None           # a target without time data has no layout to choose
        span = f" (Linux {dp.layout.versions})" if dp.layout.versions else ""
        size = f" of {dp.page_size} bytes, as the image's code reads them" if self.sized else ""
        return f"# layout: {dp.layout.name}{span}, {self.why}; {dp.pages} data pages{size}"


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


def with_layout(target, layout: Layout, page_size: int | None = None):
    """The target with `layout` for its data pages, as many as it has (of
    `page_size` bytes, when given), and without the exports that read a page
    it lacks (getrandom's rng page: the kernels of such a layout have no
    getrandom), and the arch-implemented ones (whose pages the function
    catalogue does not name) its kernels did not have yet (the ABI
    catalogue's `since`: riscv's hwprobe and its arch data came with v6.4)."""
    def served(e):
        f = e.function
        if e.arch_impl:
            x = target.abi.export(e.name)
            return x is None or len(layout.linux) < 2 or tuple(x.since[:2]) <= layout.linux[1]
        return not f.uses_data or f.page == "time" or layout.page(f.page) is not None
    return replace(target, datapage=replace(target.datapage, layout=layout, pages=layout.page_count,
                                            page_size=page_size or target.datapage.page_size),
                   exports=tuple(e for e in target.exports if served(e)))


def page_size_of(image, layout: Layout, target) -> int | None:
    """The page size Linux mapped the image's data pages with, from the
    addresses its code reads below the image (vdsogen.audit.diff's data
    flow): the one size of PAGE_SIZES at which every read falls inside the
    layout's pages and the lowest inside its lowest page (a vDSO reads its
    lowest data page: the time page, or MIPS's GIC page); failing that, the
    one at which the lowest read is the first byte of the time page (MIPS
    without a GIC reads its time page from the seq at its start, not the
    GIC page below).  None when the reads do not say: the
    ISA's are not decoded, there are none, or no size or several fit."""
    from vdsogen.audit.diff import data_offsets
    from vdsogen.elf.reader import ElfImage

    try:
        reads = data_offsets(ElfImage(str(image)), tuple(t.name for t in target.abi.trampolines))
    except VdsogenError:
        return None
    below = [o for offsets in (reads or {}).values() for o in offsets if o < 0]
    if not below:
        return None
    n, low, time = layout.page_count, min(below), layout.page("time")
    fits = [size for size in PAGE_SIZES if -n * size <= low < -(n - 1) * size] or \
        [size for size in PAGE_SIZES if time is not None and low == -(n - time.index) * size]
    return fits[0] if len(fits) == 1 else None


def named(target, name: str) -> Choice:
    """--layout=NAME."""
    dirs = layout_dirs(target)
    if not layout_path(name, dirs).is_file():
        raise HarnessError(f"--layout={name}: no such layout in {', '.join(map(str, dirs))}"
                           f"{did_you_mean(name, known(target))}")
    return Choice(with_layout(target, load_layout(name, dirs)), "as --layout says")


def of_image(target, image) -> Choice:
    """The layout of the kernel the image's version note names; the target then
    says that version too, for what the harness renders by it (x86's
    .altinstructions entries: 12 bytes before v6.2, 14 from it), and exports
    only what that version's kernels export (the ABI catalogue's `since`:
    6.1's i386 image has no __vdso_getcpu)."""
    choice = _of_image(target, image)
    version = choice.version
    if version is None:
        return choice
    era = tuple(version[:3]) + (0,) * (3 - len(version[:3]))
    t = choice.target
    exports = tuple(e for e in t.exports if (x := t.abi.export(e.name)) is None or x.alive(era))
    return replace(choice, target=replace(t, elf=replace(t.elf, linux_version=era), exports=exports))


def _of_image(target, image) -> Choice:
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
        return Choice(target, f"the spec's: {shown}", version=version)
    if len(fits) == 1:
        return Choice(with_layout(target, fits[0]), shown, version=version)
    have = ", ".join(f"{lay.name} ({lay.versions})" for lay in layouts) or "none"
    if fits:
        raise HarnessError(f"{image}: Linux {era.show(version)}: layouts {', '.join(lay.name for lay in fits)} "
                           f"all cover it for the {target.abi.name} ABI; say which with --layout=NAME")
    raise HarnessError(f"{image}: Linux {era.show(version)}: no layout of the {target.abi.name} ABI covers it "
                       f"(its layouts: {have}); give one with --layout=NAME")


def choose(target, image=None, layout: str | None = None) -> Choice | None:
    """The layout to play: --layout's, else the image's kernel's; None for the spec's own build."""
    if layout is None and image is None:
        return None
    choice = named(target, layout) if layout is not None else of_image(target, image)
    if image is None:
        return choice
    dp = choice.target.datapage
    if dp is None:                      # a target without time data: no pages to size
        return choice
    size = page_size_of(image, dp.layout, target)
    if size is None or size == dp.page_size:
        return choice
    return replace(choice, target=with_layout(choice.target, dp.layout, size), sized=True)


__all__ = ["Choice", "choose", "for_abi", "with_layout", "layout_dirs", "page_size_of", "PAGE_SIZES"]
