"""`vdsogen audit`: judge any vDSO image for the loaders and libraries that use it.

The same rule engine as `vdsogen check`, with the expectations taken from
the ABI the image is for (detected, or named with --arch) instead of a
target spec, plus the consumer simulation (vdsogen.consumers).  An image
that cannot be read is reported as unusable (exit 2); one with errors
under the profile exits 1.
"""

import json
import os
import struct
import sys
from dataclasses import dataclass, field

from vdsogen import __version__
from vdsogen.audit import rules
from vdsogen.spec import abi
from vdsogen.audit.consumers import simulate
from vdsogen.elf.reader import Budget, ElfImage, Unreadable
from vdsogen.errors import ImageError

SCHEMA_VERSION = 1
AT_SYSINFO_EHDR = 33
LIVE_NAME = "[vdso]"


@dataclass
class Report:
    path: str
    status: str = "audited"              # or "unusable"
    error: ImageError | None = None
    image: ElfImage | None = None
    detection: abi.Detection | None = None
    findings: list = field(default_factory=list)
    consumers: list = field(default_factory=list)
    work: int = 0                        # units of the work budget used (vdsogen.elf.Budget)

    def count(self, severity):
        return sum(f.severity == severity for f in self.findings)

    @property
    def exit_code(self):
        if self.status != "audited":
            return 2
        return 1 if self.count("error") else 0


def expect_for(img, detection):
    a = detection.abi
    if a is None:
        return rules.Expect(abi_problem=detection.reason)
    return rules.Expect(
        abi=a.name, elf_class=a.elf_class, endian=img.endian if img.endian in a.endians else a.endians[0],
        machine=a.machine, soname=a.sonames, versions=a.versions, trampolines=tuple(t._replace(lead=()) for t in a.trampolines),
        page_size=a.page_size, flags=a.flags, abi_info=a)


def audit_image(img, arch=None, profile="linux"):
    """Report for one readable image; ImageError when a structure the rules
    must follow is damaged."""
    detection = abi.chosen(img, arch)
    ctx = rules.Context(img, expect_for(img, detection), profile)
    findings = rules.run(ctx)
    consumers = []
    if detection.abi is not None:
        consumers = ctx.cache.get("consumers")
        if consumers is None:
            try:
                consumers = simulate(img, detection.abi)
            except Unreadable as err:
                raise ImageError(img.path, str(err), err.offset) from None
    img.budget.disarm()                # the report may read a little more
    return Report(img.path, image=img, detection=detection, findings=findings, consumers=consumers,
                  work=img.budget.used)


def audit_bytes(name, data, arch=None, profile="linux"):
    """Report for one file's bytes (None: read the file `name`); never raises
    for a damaged image."""
    budget = Budget(name)
    try:
        return audit_image(ElfImage(name, data, budget), arch, profile)
    except ImageError as err:
        if err.path != str(name):
            raise                      # not about this image (the ABI catalogue)
        return Report(str(name), status="unusable", error=err, work=budget.used)


def audit_path(path, arch=None, profile="linux"):
    return audit_bytes(path, None, arch, profile)


# -- the vDSO of this process ------------------------------------------------------

def live_bytes(auxv="/proc/self/auxv", maps="/proc/self/maps", mem="/proc/self/mem"):
    """The vDSO mapped into this process: AT_SYSINFO_EHDR, its mapping, its bytes."""
    try:
        with open(auxv, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ImageError(LIVE_NAME, f"cannot read {auxv}: {e.strerror}") from None
    word = struct.calcsize("P")
    fmt = "=" + ("Q" if word == 8 else "I") * 2
    base = None
    for i in range(0, len(raw) - 2 * word + 1, 2 * word):
        tag, value = struct.unpack_from(fmt, raw, i)
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


def audit_live(arch=None, profile="linux"):
    try:
        data = live_bytes()
    except ImageError as err:
        return Report(LIVE_NAME, status="unusable", error=err)
    return audit_bytes(LIVE_NAME, data, arch, profile)


# -- reports ----------------------------------------------------------------------

def size_of(img, a):
    page = a.page_size if a else 4096
    load = img.image_end if img.loads else 0
    return {"file": len(img.data), "load": load, "pages": -(-max(load, 1) // page), "page_size": page}


def elf_summary(img):
    try:
        soname = img.dynstr(img.dyn("SONAME")) if img.dyn("SONAME") is not None else None
    except Unreadable:
        soname = None
    try:
        versions = [v.name for v in img.verdefs() or () if not v.flags & 1]
    except Unreadable:
        versions = []
    return {"class": img.elf_class, "endian": img.endian, "machine": img.e_machine,
            "machine_name": img.machine_name, "flags": img.e_flags, "soname": soname, "versions": versions}


def report_dict(r):
    doc = {"file": r.path, "status": r.status, "error": None, "abi": None, "elf": None, "size": None,
           "findings": [f.as_dict() for f in r.findings], "consumers": [c.as_dict() for c in r.consumers],
           "counts": {s: r.count(s) for s in rules.SEVERITIES}}
    if r.error is not None:
        doc["error"] = {"message": error_message(r.error), "offset": r.error.offset}
    if r.image is not None:
        d = r.detection
        doc["abi"] = {"name": d.abi.name if d.abi else None, "source": d.source, "also": list(d.also),
                      "description": d.abi.description if d.abi else d.reason,
                      "notes": d.abi.notes if d.abi else ""}
        doc["elf"] = elf_summary(r.image)
        doc["size"] = size_of(r.image, d.abi)
    return doc


def error_message(err):
    """An ImageError's message without the file and offset it starts with."""
    where = err.path if err.offset is None else f"{err.path} @0x{err.offset:x}"
    text = str(err)
    return text[len(where) + 2:] if text.startswith(where + ": ") else text


def render_json(reports, profile, stream=None):
    stream = stream or sys.stdout
    doc = {"schema_version": SCHEMA_VERSION, "tool": f"vdsogen {__version__}", "profile": profile,
           "exit_code": exit_code(reports), "images": [report_dict(r) for r in reports]}
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def _abi_line(r):
    d, e = r.detection, elf_summary(r.image)
    ident = f"ELF{e['class']} {e['endian']}-endian {e['machine_name']}, e_flags 0x{e['flags']:x}"
    if d.abi is None:
        return f"ABI unknown ({ident})"
    also = f"; also fits {', '.join(d.also)}" if d.also else ""
    nodes = ", ".join(e["versions"]) or "no version nodes"
    return f"ABI {d.abi.name} ({d.source}{also}): {ident}, soname {e['soname']!r}, {nodes}"


def render_text(reports, profile, stream=None, verbose=False, err_stream=None):
    stream = stream or sys.stdout
    err_stream = err_stream or sys.stderr
    for r in reports:
        p = r.path
        if r.status != "audited":
            print(f"vdsogen: {r.error}", file=err_stream)
            continue
        size = size_of(r.image, r.detection.abi)
        print(f"{p}: {_abi_line(r)}", file=stream)
        if verbose and r.detection.abi is not None and r.detection.abi.notes:
            print(f"{p}:     {r.detection.abi.name}: {r.detection.abi.notes}", file=stream)
        print(f"{p}: size {size['file']} bytes in the file, {size['load']} loaded: "
              f"{size['pages']} page(s) of {size['page_size']}", file=stream)
        for f in r.findings:
            print(f"{p}: {f.rule} {f.severity:<7} {f.where}: {f.message}", file=stream)
        width = max((len(c.title) for c in r.consumers), default=0)
        for c in r.consumers:
            found = sum(x.status == "found" for x in c.lookups)
            print(f"{p}: {c.title:<{width}} {c.verdict:<8} {found}/{len(c.lookups)} found: {c.reason}",
                  file=stream)
            for x in c.lookups:
                if verbose or x.status not in ("found", "absent"):
                    at = f" at 0x{x.address:x}" if x.address is not None else ""
                    detail = f": {x.detail}" if x.detail else ""
                    print(f"{p}:     {x.symbol}@{x.version} {x.status}{at}{detail}", file=stream)
        print(f"{p}: {r.count('error')} error(s), {r.count('warning')} warning(s), {r.count('info')} info "
              f"(profile {profile})", file=stream)


def exit_code(reports):
    return max((r.exit_code for r in reports), default=0)


def main(files, live=False, arch=None, profile="linux", fmt="text", verbose=False):
    reports = []
    if live:
        reports.append(audit_live(arch, profile))
    reports += [audit_path(os.fspath(f), arch, profile) for f in files]
    if fmt == "json":
        render_json(reports, profile)
        for r in reports:
            if r.status != "audited":
                print(f"vdsogen: {r.error}", file=sys.stderr)
    else:
        render_text(reports, profile, verbose=verbose)
    return exit_code(reports)
