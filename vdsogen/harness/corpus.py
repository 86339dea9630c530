"""The harness on the real-image corpus: every Linux image scripts/fetch-real-vdso.sh
carved (kernel and kernel debug packages; QEMU's own images are not a
kernel's), run by `vdsogen test --image` with the target of its ABI, one
row each: the image, its Linux version, the layout the harness played (and
the page size, when the image's code said another than the spec's), the
checks passed and failed, the failed checks' names.

An ABI whose harness cannot read the counter under qemu-user ([harness]
injected_counter: arm, arm64-compat, MIPS) runs a test build only, which a
kernel's image is not: its row says so, and scripts/kernel-harness.sh
(a booted kernel) is where it runs; so does an ABI no qemu-user runs at
all ([harness] booted: s390, the 31-bit compat vDSO of 6.1's and 6.12's
s390x kernels, whose target is s390-compat).  The booted results are
kept beside the table in docs/measurements.rst.

    python -m vdsogen.harness.corpus [--cache DIR] [--only TEXT] [--timeout S] [--format=rst]

Exit 0 when every image that ran passed, else 1.  Minutes (one harness
build and run per image): by hand, like scripts/audit-corpus.sh.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from vdsogen.errors import VdsogenError

DEFAULT_CACHE = Path(os.environ.get("VDSOGEN_REAL_VDSO", Path.home() / ".cache" / "vdsogen" / "real-vdso"))
KINDS = ("kernel", "dbg")


@dataclass
class Row:
    image: str                  # its path in the cache, less .so
    linux: str                  # the version note's
    layout: str = "-"           # the layout played (name, and the page size when the image's)
    passed: int | None = None
    failed: int | None = None
    failures: list[str] = field(default_factory=list)
    note: str = ""              # why it did not run, or what stopped it

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.note


def images(cache: Path, only: str | None = None) -> list[dict]:
    """The manifest's kernel images, by suite then path."""
    path = cache / "manifest.json"
    if not path.is_file():
        raise VdsogenError(f"{path}: no corpus: run scripts/fetch-real-vdso.sh first (or set VDSOGEN_REAL_VDSO)")
    entries = [e for e in json.loads(path.read_text()) if e["kind"] in KINDS]
    order = {"bookworm": 0, "trixie": 1, "sid": 2}
    entries.sort(key=lambda e: (order.get(e["suite"], 9), e["path"]))
    return [e for e in entries if only is None or only in e["path"]]


# Images the host's qemu-user (Debian 12's 7.2) cannot run, by their carved
# name, and why: they run under the qemu 10 that scripts/fetch-consumers.sh
# keeps, on its `max` CPU.  Linux 7.2's riscv64-cfi image (the one its kernel
# maps on a CPU with Zicfilp and Zicfiss) begins each function with an lpad
# and an sspush, which qemu 7.2 does not decode (SIGILL).
NEWER_QEMU = {"riscv64-cfi": "qemu 10 -cpu max: Zicfilp, Zicfiss"}
CONSUMERS = Path(os.environ.get("VDSOGEN_CONSUMERS", Path.home() / ".cache" / "vdsogen" / "consumers"))


def target_of(abi: str):
    """The target that runs an image of ABI `abi`: the spec of that name, else
    the one spec of that ABI (s390: s390-compat); None when there is none."""
    from vdsogen.spec.model import list_targets, load_target

    names = list_targets()
    if abi in names:
        return load_target(abi)
    of_abi = [t for t in map(load_target, names) if t.abi.name == abi]
    return of_abi[0] if len(of_abi) == 1 else None


def run_one(cache: Path, entry: dict, workdir: Path, timeout: float) -> Row:
    from vdsogen.harness.driver import run_tests_full
    from vdsogen.build.toolchain import Builder

    key = entry["path"][:-3]
    row = Row(key, entry.get("linux") or "-")
    try:
        target = target_of(entry["abi"])
    except VdsogenError:
        target = None
    if target is None:
        row.note = f"no target of the {entry['abi']} ABI"
        return row
    if target.harness.injected_counter:
        row.note = "qemu-user cannot read its counter: scripts/kernel-harness.sh"
        return row
    if target.harness.booted:
        row.note = f"qemu-user runs no {entry['abi']} code: scripts/kernel-harness.sh {target.name}"
        return row
    out = io.StringIO()
    newer = NEWER_QEMU.get(key.rsplit("/", 1)[-1])
    if newer is not None:
        qemu_dir = CONSUMERS / "root" / "usr" / "bin"
        if not (qemu_dir / f"qemu-{target.toolchain.qemu}").is_file():
            row.note = f"needs the qemu of scripts/fetch-consumers.sh ({newer}): not in {qemu_dir}"
            return row
        os.environ.update(VDSOGEN_QEMU=str(qemu_dir), QEMU_CPU="max")
    try:
        status, outcome = run_tests_full(target, cache / "images" / entry["path"], workdir=workdir,
                                         stream=out, builder=Builder(target, stream=out), timeout=timeout)
    except VdsogenError as e:
        row.note = str(e).replace(str(cache / "images") + "/", "")
        return row
    finally:
        if newer is not None:
            del os.environ["VDSOGEN_QEMU"], os.environ["QEMU_CPU"]
    line = outcome.layout or ""
    if line.startswith("# layout: "):
        name = line[len("# layout: "):].split(" ", 1)[0]
        size = line.split("data pages of ")[1].split(" ")[0] if "data pages of " in line else ""
        row.layout = f"{name} ({int(size) // 1024} KiB pages)" if size else name
    row.passed, row.failed = len(outcome.passed), outcome.fail_lines
    row.failures = [name for name, (verdict, _) in outcome.checks.items() if verdict == "failed"]
    if outcome.timed_out:
        row.note = "stopped at the timeout"
    return row


def table(rows: list[Row]) -> list[str]:
    """The rows as a reStructuredText table."""
    cells = [["image", "Linux", "layout", "passed", "failed", "failed checks, or why not run"]]
    for r in rows:
        cells.append([r.image, r.linux, r.layout, "-" if r.passed is None else str(r.passed),
                      "-" if r.failed is None else str(r.failed), r.note or ", ".join(r.failures) or "-"])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    rule = "  ".join("=" * w for w in widths)
    fmt = lambda c: "  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip()  # noqa: E731
    return [rule, fmt(cells[0]), rule, *(fmt(c) for c in cells[1:]), rule]


def run(cache: Path, only: str | None = None, timeout: float = 120, stream: TextIO | None = None,
        rst: bool = False) -> tuple[int, list[Row]]:
    from vdsogen.fsutil import scratch_dir

    stream = stream or sys.stdout
    rows = []
    with scratch_dir("harness-corpus") as work:
        for i, entry in enumerate(images(cache, only)):
            row = run_one(cache, entry, Path(work) / str(i), timeout)
            rows.append(row)
            if not rst:
                verdict = "ok  " if row.ok else "SKIP" if row.passed is None else "FAIL"
                counts = "" if row.passed is None else f"{row.passed} passed, {row.failed} failed"
                print(f"{verdict}  {row.image:34} {row.linux:9} {row.layout:40} {counts}"
                      f"{'  ' + row.note if row.note else ''}"
                      f"{'  [' + ', '.join(row.failures) + ']' if row.failures else ''}", file=stream, flush=True)
    if rst:
        print("\n".join(table(rows)), file=stream)
    ran = [r for r in rows if r.passed is not None]
    if not rst:
        print(f"{len(rows)} images: {sum(r.ok for r in ran)} passed every check, "
              f"{sum(not r.ok for r in ran)} with failures, {len(rows) - len(ran)} not run here", file=stream)
    return (0 if all(r.ok for r in ran) else 1), rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdsogen.harness.corpus",
                                description="Run the harness on every kernel image of the real-image corpus.")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the corpus (default: $VDSOGEN_REAL_VDSO)")
    p.add_argument("--only", help="only the images whose path contains TEXT")
    p.add_argument("--timeout", type=float, default=120, help="seconds each harness run may take")
    p.add_argument("--format", choices=("text", "rst"), default="text", help="one line per image, or a table")
    a = p.parse_args(argv)
    try:
        status, _ = run(a.cache, a.only, a.timeout, rst=a.format == "rst")
    except VdsogenError as e:
        print(f"vdsogen: {e}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
