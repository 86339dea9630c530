"""The one report renderer of `vdsogen check` and `vdsogen audit`.

A Report is what the rules and the consumers' simulation said of one image
(or why it could not be read); `render()` prints reports as text, one line
per finding and consumer, or as one JSON document (docs/audit.rst gives its
schema).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from vdsogen import __version__
from vdsogen.audit import rules
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import ImageError
from vdsogen.spec import abi

SCHEMA_VERSION = 1


@dataclass
class Report:
    path: str
    status: str = "audited"              # "checked" against a spec, or "unusable"
    error: ImageError | None = None
    image: ElfImage | None = None
    detection: abi.Detection | None = None
    findings: list = field(default_factory=list)
    consumers: list = field(default_factory=list)
    work: int = 0                        # units of the work budget used (vdsogen.elf.Budget)
    exports: Any = None                  # vdsogen.audit.exportset.ExportSet, where the catalogue dates the ABI's

    def count(self, severity: str) -> int:
        return sum(f.severity == severity for f in self.findings)

    @property
    def exit_code(self) -> int:
        if self.status == "unusable":
            return 2
        return 1 if self.count("error") else 0


def size_of(img: ElfImage, a: abi.Abi | None) -> dict[str, int]:
    page = a.page_size if a else 4096
    load = img.image_end if img.loads else 0
    return {"file": len(img.data), "load": load, "pages": -(-max(load, 1) // page), "page_size": page}


def elf_summary(img: ElfImage) -> dict[str, Any]:
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


def report_dict(r: Report) -> dict[str, Any]:
    doc = {"file": r.path, "status": r.status, "error": None, "abi": None, "elf": None, "size": None,
           "findings": [f.as_dict() for f in r.findings], "consumers": [c.as_dict() for c in r.consumers],
           "counts": {s: r.count(s) for s in rules.SEVERITIES},
           "exports": r.exports.as_dict() if r.exports is not None else None}
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


def error_message(err: ImageError) -> str:
    """An ImageError's message without the file and offset it starts with."""
    where = err.path if err.offset is None else f"{err.path} @0x{err.offset:x}"
    text = str(err)
    return text[len(where) + 2:] if text.startswith(where + ": ") else text


def render_json(reports: Sequence[Report], profile: str, stream: TextIO | None = None,
                command: str = "audit") -> None:
    """`command` ("audit" or "check") names the schema, vdsogen-COMMAND/1, as every command's JSON does;
    schema_version stays for readers of the first documents."""
    stream = stream or sys.stdout
    doc = {"schema": f"vdsogen-{command}/{SCHEMA_VERSION}", "schema_version": SCHEMA_VERSION, "tool": f"vdsogen {__version__}", "profile": profile,
           "exit_code": exit_code(reports), "images": [report_dict(r) for r in reports]}
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def _abi_line(r: Report) -> str:
    d, e = r.detection, elf_summary(r.image)
    ident = f"ELF{e['class']} {e['endian']}-endian {e['machine_name']}, e_flags 0x{e['flags']:x}"
    if d.abi is None:
        return f"ABI unknown ({ident})"
    also = f"; also fits {', '.join(d.also)}" if d.also else ""
    nodes = ", ".join(e["versions"]) or "no version nodes"
    return f"ABI {d.abi.name} ({d.source}{also}): {ident}, soname {e['soname']!r}, {nodes}"


def finding_line(f: rules.Finding) -> str:
    return f"{f.rule} {f.severity:<7} {f.where}: {f.message}"


def _counts(r: Report, profile: str) -> str:
    return f"{r.count('error')} error(s), {r.count('warning')} warning(s), {r.count('info')} info (profile {profile})"


def render_text(reports: Sequence[Report], profile: str, stream: TextIO | None = None, verbose: bool = False,
                err_stream: TextIO | None = None, quiet: bool = False) -> None:
    """`quiet` (-q): of each image, only its error findings and its last line, the counts."""
    stream = stream or sys.stdout
    err_stream = err_stream or sys.stderr
    for r in reports:
        p = r.path
        if r.status == "unusable":
            print(f"vdsogen: {r.error}", file=err_stream)
            continue
        if quiet:
            for f in r.findings:
                if f.severity == "error":
                    print(f"{p}: {finding_line(f)}", file=stream)
            print(f"{p}: {_counts(r, profile)}", file=stream)
            continue
        size = size_of(r.image, r.detection.abi)
        print(f"{p}: {_abi_line(r)}", file=stream)
        if verbose and r.detection.abi is not None and r.detection.abi.notes:
            print(f"{p}:     {r.detection.abi.name}: {r.detection.abi.notes}", file=stream)
        print(f"{p}: size {size['file']} bytes in the file, {size['load']} loaded: "
              f"{size['pages']} page(s) of {size['page_size']}", file=stream)
        for f in r.findings:
            print(f"{p}: {finding_line(f)}", file=stream)
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
        if r.exports is not None:
            print(f"{p}: exports: {r.exports.line()}", file=stream)
        print(f"{p}: {_counts(r, profile)}", file=stream)


def exit_code(reports: Sequence[Report]) -> int:
    return max((r.exit_code for r in reports), default=0)


def render(reports: Sequence[Report], profile: str, fmt: str = "text", verbose: bool = False,
           command: str = "audit", quiet: bool = False) -> int:
    """Print the reports; returns the exit status they call for."""
    if fmt == "json":
        render_json(reports, profile, command=command)
        for r in reports:
            if r.status == "unusable":
                print(f"vdsogen: {r.error}", file=sys.stderr)
    else:
        render_text(reports, profile, verbose=verbose, quiet=quiet)
    return exit_code(reports)
