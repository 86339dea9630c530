"""Audit the real-image corpus against its expectation file.

scripts/fetch-real-vdso.sh carves Debian's kernel and QEMU vDSO images into
a cache outside the repository and lists them in its manifest.json
(vdsogen.audit.carve); this module audits every image the manifest lists
and compares what it finds with the expectation file kept in the
repository (tests/real-vdso-expect.toml), written by hand after reading
each finding.  One entry per image, keyed by its path in the cache less
".so" ("sid/amd64/x86_64", "trixie/qemu-user/qemu-aarch64"):

    ["sid/amd64/x86_64"]
    linux = "7.2.13"                   # the version note the entry was written for
    profile = "linux"                  # default: qemu-user for QEMU's images, else linux
    findings = ["P013 info"]           # "RULE severity", one per rule and severity
    consumers = {musl = "degraded"}    # verdicts other than works and n/a
    why = "..."                        # what the findings mean, each error explained

An image matches when its set of (rule, severity) and its consumer
verdicts are the expected ones; the exit status is 1 when any image does
not match or has no entry.  --draft prints entries for images without one,
to be read and completed by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from vdsogen.audit import carve
from vdsogen.audit.era import version_of
from vdsogen.audit.report import Report
from vdsogen.audit.run import audit_path
from vdsogen.spec.toml import load_toml

DEFAULT_EXPECT = Path(__file__).resolve().parents[2] / "tests" / "real-vdso-expect.toml"
QUIET = ("works", "n/a")


def key_of(entry: dict[str, Any]) -> str:
    return entry["path"][:-3] if entry["path"].endswith(".so") else entry["path"]


def profile_of(entry: dict[str, Any], expect: dict[str, Any]) -> str:
    return expect.get("profile", "qemu-user" if entry["kind"] == "qemu" else "linux")


def judge(cache: str | os.PathLike, entry: dict[str, Any],
          expect: dict[str, Any]) -> tuple[Report, set[str], dict[str, str]]:
    """(report, findings set, verdicts) of one image under its profile; the
    entry's "linux" is the era audit reads from the image."""
    arch = entry["abi"] if entry["abi"] == "arm64-compat" else None
    report = audit_path(str(Path(cache) / "images" / entry["path"]), arch, profile_of(entry, expect))
    found = {f"{f.rule} {f.severity}" for f in report.findings}
    verdicts = {c.consumer: c.verdict for c in report.consumers if c.verdict not in QUIET}
    era = version_of(report.image) if report.image is not None else None
    entry["linux"] = ".".join(map(str, era)) if era else None
    return report, found, verdicts


def compare(found: set[str], verdicts: dict[str, str], expect: dict[str, Any]) -> list[str]:
    """What differs from the expectation, as lines (empty: it matches)."""
    out = []
    want = set(expect.get("findings", []))
    for f in sorted(found - want):
        out.append(f"unexpected {f}")
    for f in sorted(want - found):
        out.append(f"missing {f}")
    want_v = dict(expect.get("consumers", {}))
    for c in sorted(set(verdicts) | set(want_v)):
        if verdicts.get(c, "works") != want_v.get(c, "works"):
            out.append(f"{c} {verdicts.get(c, 'works')}, expected {want_v.get(c, 'works')}")
    return out


def kind_of(report: Report) -> str:
    if report.status == "unusable":
        return "unusable"
    if report.count("error"):
        return "errors"
    return "warnings" if report.count("warning") else "clean"


def draft(entry: dict[str, Any], report: Report, found: set[str], verdicts: dict[str, str]) -> str:
    lines = [f'["{key_of(entry)}"]'] + ([f'linux = "{entry["linux"]}"'] if entry["linux"] else [])
    if entry["kind"] == "qemu":
        lines.append('profile = "qemu-user"')
    lines.append("findings = [" + ", ".join(f'"{f}"' for f in sorted(found)) + "]")
    if verdicts:
        lines.append("consumers = {" + ", ".join(f'{c} = "{v}"' for c, v in sorted(verdicts.items())) + "}")
    lines.append('why = """')
    for f in report.findings:
        lines.append(f"    {f.rule} {f.severity} {f.where}: {f.message}")
    lines.append('"""')
    return "\n".join(lines) + "\n"


def _compared(key, summary, entry, found, verdicts, expect, stream):
    diff = compare(found, verdicts, expect)
    drift = "" if expect.get("linux", entry["linux"]) == entry["linux"] else \
        f" (the entry is for Linux {expect.get('linux')}, the cache has {entry['linux']})"
    if diff:
        print(f"MISMATCH  {key}: {summary}{drift}: " + "; ".join(diff), file=stream)
    else:
        print(f"ok        {key}: {summary}{drift}", file=stream)


def run(cache: str | os.PathLike, expect_path: str | os.PathLike, verbose: bool = False,
        drafts: list[str] | None = None, stream: TextIO = sys.stdout) -> int:
    """Audit every image of the manifest; the exit status."""
    entries = carve.load_manifest(cache)
    expectations = load_toml(expect_path) if Path(expect_path).exists() else {}
    start = time.monotonic()
    counts = {"clean": 0, "warnings": 0, "errors": 0, "unusable": 0}
    bad = 0
    for entry in entries:
        key = key_of(entry)
        expect = expectations.get(key)
        report, found, verdicts = judge(cache, entry, expect or {})
        counts[kind_of(report)] += 1
        where = f"{entry['suite']}/{entry['arch']} {entry['kind']} {entry['package']} {entry['version']}"
        summary = (f"{report.count('error')} error(s), {report.count('warning')} warning(s), "
                   f"{report.count('info')} info ({profile_of(entry, expect or {})})")
        if report.status == "unusable":
            summary = f"unusable: {report.error}"
        if expect is None:
            bad += 1
            print(f"NEW       {key}: {summary}; no entry in {expect_path} [{where}]", file=stream)
            if drafts is not None:
                drafts.append(draft(entry, report, found, verdicts))
        else:
            _compared(key, summary, entry, found, verdicts, expect, stream)
            bad += bool(compare(found, verdicts, expect))
        if verbose:
            for f in report.findings:
                print(f"          {f.rule} {f.severity} {f.where}: {f.message}", file=stream)
            for c in report.consumers:
                if c.verdict not in QUIET:
                    print(f"          {c.title} {c.verdict}: {c.reason}", file=stream)
    missing = sorted(set(expectations) - {key_of(e) for e in entries})
    for key in missing:
        print(f"absent    {key}: in the expectation file, not in the cache", file=stream)
    total = len(entries)
    print(f"{total} images: {counts['clean']} clean, {counts['warnings']} with warnings only, "
          f"{counts['errors']} with errors, {counts['unusable']} unusable; "
          f"{total - bad} match the expectations, {bad} do not "
          f"({time.monotonic() - start:.1f} s)", file=stream)
    return 1 if bad or not total else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdsogen.audit.corpus",
                                description="audit the real-image cache against the expectation file")
    p.add_argument("--cache", required=True)
    p.add_argument("--expect", default=str(DEFAULT_EXPECT))
    p.add_argument("-v", "--verbose", action="store_true", help="print every finding")
    p.add_argument("--draft", metavar="FILE", help="write draft entries for images without one to FILE")
    args = p.parse_args(argv)
    if not (Path(args.cache) / "manifest.json").exists():
        print(f"{args.cache}: no manifest.json: run scripts/fetch-real-vdso.sh first", file=sys.stderr)
        return 2
    drafts: list[str] | None = [] if args.draft else None
    status = run(args.cache, args.expect, args.verbose, drafts)
    if args.draft:
        Path(args.draft).write_text("\n".join(drafts))
        print(f"{len(drafts)} draft entries in {args.draft}")
    return status


if __name__ == "__main__":
    sys.exit(main())
