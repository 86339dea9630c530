"""`vdsogen audit`: judge any vDSO image for the loaders and libraries that use it.

The same rule engine as `vdsogen check`, with the expectations taken from
the ABI the image is for (detected, or named with --arch) instead of a
target spec, plus the consumer simulation (vdsogen.consumers).  An image
that cannot be read is reported as unusable (exit 2); one with errors
under the profile exits 1.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterable

from vdsogen.audit import report, rules
from vdsogen.audit.consumers import simulate
from vdsogen.audit.exportset import export_set
from vdsogen.audit.report import Report
from vdsogen.spec import abi
from vdsogen.elf.consts import AT_SYSINFO_EHDR, AUXV
from vdsogen.elf.reader import Budget, ElfImage, Unreadable
from vdsogen.errors import ImageError

LIVE_NAME = "[vdso]"


def expect_for(img: ElfImage, detection: abi.Detection) -> rules.Expect:
    a = detection.abi
    if a is None:
        return rules.Expect(abi_problem=detection.reason)
    return rules.Expect(
        abi=a.name, elf_class=a.elf_class, endian=img.endian if img.endian in a.endians else a.endians[0],
        machine=a.machine, soname=a.sonames, versions=a.versions,
        # (name, lead, words, match); leads: vdsogen's own images only
        trampolines=tuple((t.name, (), t.words, t.match) for t in a.trampolines),
        page_size=a.page_size, flags=a.flags, abi_info=a)


def audit_image(img: ElfImage, arch: str | None = None, profile: str = "linux") -> Report:
    """Report for one readable image; ImageError when a structure the rules
    must follow is damaged."""
    detection = abi.chosen(img, arch)
    return judge(img, detection, expect_for(img, detection), profile)


def judge(img: ElfImage, detection: abi.Detection, expect: rules.Expect, profile: str,
          status: str = "audited") -> Report:
    """Run the rules and the consumers' simulation: the report of one image."""
    ctx = rules.Context(img, expect, profile)
    findings = rules.run(ctx)
    consumers: list = []
    if detection.abi is not None:
        consumers = ctx.cache.get("consumers")
        if consumers is None:
            try:
                consumers = simulate(img, detection.abi)
            except Unreadable as err:
                raise ImageError(img.path, str(err), err.offset) from None
    img.budget.disarm()                # the report may read a little more
    exports = export_set(img, detection.abi) if detection.abi is not None else None
    return Report(img.path, status=status, image=img, detection=detection, findings=findings,
                  consumers=consumers, work=img.budget.used, exports=exports)


def audit_bytes(name: str | os.PathLike, data: bytes | None, arch: str | None = None,
                profile: str = "linux") -> Report:
    """Report for one file's bytes (None: read the file `name`); never raises
    for a damaged image."""
    budget = Budget(name)
    try:
        return audit_image(ElfImage(name, data, budget), arch, profile)
    except ImageError as err:
        if err.path != str(name):
            raise                      # not about this image (the ABI catalogue)
        return Report(str(name), status="unusable", error=err, work=budget.used)


def audit_path(path: str | os.PathLike, arch: str | None = None, profile: str = "linux") -> Report:
    return audit_bytes(path, None, arch, profile)


# -- the vDSO of this process ------------------------------------------------------

def live_bytes(auxv: str = "/proc/self/auxv", maps: str = "/proc/self/maps", mem: str = "/proc/self/mem") -> bytes:
    """The vDSO mapped into this process: AT_SYSINFO_EHDR, its mapping, its bytes."""
    try:
        with open(auxv, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ImageError(LIVE_NAME, f"cannot read {auxv}: {e.strerror}") from None
    elf_class = 8 * struct.calcsize("P")          # this process's: the auxv is in its word size and byte order
    size = AUXV.size(elf_class)
    base = None
    for i in range(0, len(raw) - size + 1, size):
        tag, value = AUXV.unpack(raw, i, elf_class, sys.byteorder)
        if tag == AT_SYSINFO_EHDR:
            base = value
    if not base:
        raise ImageError(LIVE_NAME, "this process has no vDSO (no AT_SYSINFO_EHDR in its auxiliary vector)")
    end = None
    try:
        with open(maps) as f:
            for line in f:
                lo, _, hi = line.split()[0].partition("-")
                if int(lo, 16) <= base < int(hi, 16):
                    end = int(hi, 16)
                    break
    except (OSError, ValueError) as e:
        raise ImageError(LIVE_NAME, f"cannot read {maps}: {e}") from None
    if end is None:
        raise ImageError(LIVE_NAME, f"AT_SYSINFO_EHDR 0x{base:x} is in no mapping of {maps}")
    try:
        with open(mem, "rb") as f:
            f.seek(base)
            return f.read(end - base)
    except OSError:
        import ctypes
        return ctypes.string_at(base, end - base)


def audit_live(arch: str | None = None, profile: str = "linux") -> Report:
    try:
        data = live_bytes()
    except ImageError as err:
        return Report(LIVE_NAME, status="unusable", error=err)
    return audit_bytes(LIVE_NAME, data, arch, profile)


def main(files: Iterable[str | os.PathLike], live: bool = False, arch: str | None = None, profile: str = "linux",
         fmt: str = "text", verbose: bool = False, quiet: bool = False) -> int:
    reports = []
    if live:
        reports.append(audit_live(arch, profile))
    reports += [audit_path(os.fspath(f), arch, profile) for f in files]
    return report.render(reports, profile, fmt, verbose=verbose, quiet=quiet)
