"""A kernel's .config as the source of the values an image depends on.

`vdsogen build --kconfig=FILE` builds the image for the kernel that FILE
configures.  The values the image bakes in come from there rather than from
the spec: the tick (CONFIG_HZ gives TICK_NSEC, the resolution of the coarse
clocks) and the page size (CONFIG_PAGE_SHIFT, or the arch's page-size
choice).  Options that decide the data-page layout cannot be computed, but
are checked against the layout the spec picks: a kernel with
CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT writes max_cycles into every clock
record, and one with CONFIG_TIME_NS maps time-namespace pages.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from vdsogen.spec.layout import Layout

from vdsogen.errors import SpecError

_SET = re.compile(r"(CONFIG_[A-Za-z0-9_]+)=(.*)\Z")
_UNSET = re.compile(r"# (CONFIG_[A-Za-z0-9_]+) is not set\Z")

# The page-size choices of the architectures that have one, by the size they select.
PAGE_SIZE_CHOICES = {
    4096: ("CONFIG_ARM64_4K_PAGES", "CONFIG_PPC_4K_PAGES", "CONFIG_PAGE_SIZE_4KB"),
    16384: ("CONFIG_ARM64_16K_PAGES", "CONFIG_PPC_16K_PAGES", "CONFIG_PAGE_SIZE_16KB"),
    65536: ("CONFIG_ARM64_64K_PAGES", "CONFIG_PPC_64K_PAGES", "CONFIG_PAGE_SIZE_64KB"),
}


@dataclass(frozen=True)
class Kconfig:
    path: str
    values: dict       # CONFIG_NAME -> the text after '=' ("n" for '# ... is not set')

    def enabled(self, name: str) -> bool:
        return self.values.get(name) == "y"

    def int(self, name: str, lo: int, hi: int) -> "int | None":
        """CONFIG_NAME as an integer, None when the file does not set it."""
        text = self.values.get(name)
        if text is None:
            return None
        try:
            value = int(text, 0)
        except ValueError:
            raise SpecError(self.path, name, f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise SpecError(self.path, name, f"{value} is out of range [{lo}, {hi}]")
        return value

    def datapage(self) -> dict:
        """The [datapage] values this configuration fixes: {key: (value, why)}."""
        out = {}
        hz = self.int("CONFIG_HZ", 1, 100_000)
        if hz is not None:
            # TICK_NSEC, as include/vdso/jiffies.h rounds it.
            out["tick_nsec"] = ((10**9 + hz // 2) // hz, f"CONFIG_HZ={hz}")
        shift = self.int("CONFIG_PAGE_SHIFT", 12, 20)
        if shift is not None:
            out["page_size"] = (1 << shift, f"CONFIG_PAGE_SHIFT={shift}")
        else:
            chosen = [(size, name) for size, names in PAGE_SIZE_CHOICES.items()
                      for name in names if self.enabled(name)]
            if len(chosen) > 1:
                raise SpecError(self.path, chosen[1][1], f"a second page size (with {chosen[0][1]})")
            if chosen:
                out["page_size"] = (chosen[0][0], f"{chosen[0][1]}=y")
        return out

    def check_layout(self, layout: "Layout", where: str) -> None:
        """The layout must have what this kernel writes into the data pages.

        `where` names the spec key that chose the layout, for the message."""
        if not self.enabled("CONFIG_GENERIC_GETTIMEOFDAY"):
            return   # not a generic-vDSO kernel (or a fragment): nothing to compare with
        protect = self.enabled("CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT")
        if protect != layout.has_max_cycles:
            raise SpecError(self.path, "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT",
                            f"{'y' if protect else 'not set'}, but layout {layout.name} ({where}) has "
                            f"{'no ' if protect else ''}max_cycles in its clock records: pick a layout "
                            f"of this kernel's version and architecture")
        if self.enabled("CONFIG_TIME_NS") and not layout.has_timens:
            raise SpecError(self.path, "CONFIG_TIME_NS",
                            f"y, but layout {layout.name} ({where}) has no time-namespace page")


def load_kconfig(path: "str | Path") -> "Kconfig":
    """Parse a .config: CONFIG_NAME=value lines and '# CONFIG_NAME is not set'."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SpecError(path, None, f"cannot read: {e.strerror}") from None
    values = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        m = _SET.match(line)
        if m:
            values[m[1]] = m[2].strip('"') if m[2].startswith('"') else m[2]
        elif (m := _UNSET.match(line)):
            values[m[1]] = "n"
        elif line and not line.startswith("#"):
            raise SpecError(f"{path}:{number}", None, f"not a kernel .config line: {line[:60]!r}")
    if not values:
        raise SpecError(path, None, "no CONFIG_ options: not a kernel .config")
    return Kconfig(str(path), values)
