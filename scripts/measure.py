"""Regenerate the measured sections of docs/measurements.rst.

Run by scripts/measure.sh; each section lies between two comment lines,

    .. BEGIN measure NAME
    .. END measure NAME

and is rewritten whole when NAME is measured: a stamp (the command, the
date, the commit and the machine), then the figures.  Sections not asked
for keep their text, so a cheap run leaves the figures of the long ones.

    images    vdso.so bytes of every target, default toolchain (seconds;
              deterministic: tests/test_docs.py compares it with the doc)
    harness   harness checks passed and failed per target, and the time of
              `vdsogen test` (a few minutes)
    corpus    Linux images of Debian next to vdsogen's: sizes, hot-path
              instruction counts, the audit of the corpus (needs the cache
              scripts/fetch-real-vdso.sh fills: minutes of downloads)
    bench     ns per call on this machine against the running kernel's vDSO,
              x86_64 with clang and gcc (about a minute with RUNS=7;
              meaningful on an idle machine only)
    getrandom getrandom of 16, 64, 256 and 4096 bytes through x86_64's
              image built with clang and with gcc, the running kernel's
              vDSO and the syscall (RUNS=3 runs each); also README.rst's
              "getrandom figures", between the same markers

Figures nothing here can measure (kernel boots, the test suite's run) are
in the doc's hand-kept section, outside any marker.
"""

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "measurements.rst"
DEFAULT_SECTIONS = ("images", "harness")
SECTIONS = ("images", "harness", "corpus", "bench", "getrandom")
# Sections written into other documents too, between the same markers.
ALSO_IN = {"getrandom": (ROOT / "README.rst",)}
CACHE = Path(os.environ.get("VDSOGEN_REAL_VDSO", Path.home() / ".cache" / "vdsogen" / "real-vdso"))
BENCH_TOOLCHAINS = (("clang-19", {}), ("gcc-12", {"CROSS_COMPILE": "x86_64-linux-gnu-"}))


class MeasureError(Exception):
    """A section cannot be measured here: said in one line."""


def default_env() -> dict:
    """The environment without LLVM= or CROSS_COMPILE=: each target's default toolchain."""
    return {k: v for k, v in os.environ.items() if k not in ("LLVM", "CROSS_COMPILE")}


def targets() -> list:
    return sorted(p.stem for p in (ROOT / "specs").glob("*.toml"))


def rst_table(header: list, rows: list) -> list:
    """An RST simple table, as lines."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    rule = "  ".join("=" * w for w in widths)
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [rule, line(header), rule, *(line(r) for r in rows), rule]


# -- images ------------------------------------------------------------------------------

def build_images(out: Path, names: list | None = None) -> dict:
    """{target: (toolchain, vdso.so path)}, each built with its default toolchain."""
    from vdsogen.audit.check import build_validator
    from vdsogen.build.image import build_target
    from vdsogen.build.toolchain import Builder, select_tools
    from vdsogen.spec.model import load_target

    env = default_env()
    built = {}
    for name in names or targets():
        target = load_target(name)
        so, _ = build_target(target, out / name, builder=Builder(target, env=env, stream=io.StringIO()),
                             validate=build_validator)
        built[name] = (select_tools(target, env).describe, Path(so))
    return built


def images_body(rows: list) -> list:
    """rows: (target, toolchain, bytes of vdso.so)."""
    return [
        "File bytes of each target's stripped ``vdso.so`` (``objcopy -S``: section",
        "headers kept), built with the target's default toolchain (no ``LLVM=``",
        "or ``CROSS_COMPILE=``).  Builds are reproducible, so these change only",
        "with the specs, fragments, templates or toolchain versions.",
        "",
        *rst_table(["target", "toolchain", "vdso.so bytes"], rows),
    ]


def measure_images(work: Path) -> list:
    built = build_images(work / "images")
    return images_body([(t, tc, so.stat().st_size) for t, (tc, so) in built.items()])


# -- harness -----------------------------------------------------------------------------

def measure_harness(work: Path) -> list:
    from vdsogen.build.toolchain import Builder
    from vdsogen.harness.driver import run_tests_full, runner
    from vdsogen.spec.model import load_target

    built = build_images(work / "images")
    env = default_env()
    rows = []
    for name, (_, so) in built.items():
        target = load_target(name)
        run = runner(target)
        injected = target.harness.injected_counter
        t0 = time.monotonic()
        status, outcome = run_tests_full(target, None if injected else so, work / "harness" / name,
                                         builder=Builder(target, env=env, stream=io.StringIO()),
                                         stream=io.StringIO())
        secs = time.monotonic() - t0
        passed, failed = outcome.summary or (len(outcome.passed), outcome.fail_lines)
        rows.append((name, run[0] if run else "native", "test build" if injected else "vdso.so",
                     passed, failed, "ok" if status == 0 else "FAIL", f"{secs:.1f}"))
    return [
        "``vdsogen test --arch=T`` of each target on the image above: where it runs",
        "(natively or under qemu-user), which image the harness maps (the test",
        "build, whose counter read is injected, where qemu-user cannot read the",
        "counter: ``[harness] injected_counter``), the checks passed and failed,",
        "and the seconds of the whole command (harness build included).  The counts",
        "are deterministic; the times are this machine's.",
        "",
        *rst_table(["target", "runs", "image", "passed", "failed", "verdict", "seconds"], rows),
    ]


# -- corpus ------------------------------------------------------------------------------

def _manifest() -> list:
    path = CACHE / "manifest.json"
    if not path.is_file():
        raise MeasureError(f"{path}: no corpus: run scripts/fetch-real-vdso.sh first "
                           f"(or set VDSOGEN_REAL_VDSO)")
    return json.loads(path.read_text())


def _linux_images(manifest: list, abi: str) -> list:
    """[(label, entry)] of the corpus's kernel images of one ABI, one per content, oldest first."""
    seen, out = set(), []
    key = lambda e: (tuple(int(x) for x in e["linux"].split(".")), e["flavour"])  # noqa: E731
    for e in sorted((e for e in manifest if e["abi"] == abi and e["kind"] == "kernel" and e.get("linux")),
                    key=key):
        if e["sha256"] in seen:
            continue
        seen.add(e["sha256"])
        major_minor = ".".join(e["linux"].split(".")[:2])
        stem = Path(e["path"]).stem          # riscv64-cfi beside riscv64: say which
        extra = stem[len(abi):] if stem.startswith(abi) else ""
        out.append((f"{major_minor} {e['flavour']}{extra}", e))
    return out


def measure_corpus(work: Path) -> list:
    from vdsogen.bench.run import hot_paths
    from vdsogen.elf.reader import ElfImage
    from vdsogen.spec.model import load_target

    manifest = _manifest()
    built = build_images(work / "images")
    size_rows, hot_lines = [], []
    for name, (_, so) in built.items():
        target = load_target(name)
        linux = _linux_images(manifest, target.abi.name)
        size_rows.append((name, so.stat().st_size,
                          "; ".join(f"{label}: {e['size']}" for label, e in linux) or "(none in the corpus)"))
        if not linux:
            continue
        # One reference per call: hot_paths labels its columns by the Linux
        # version note, which two flavours of one kernel share.
        table = {}                                   # call -> [vdsogen, each Linux image]
        for i, (_, e) in enumerate(linux):
            path = CACHE / "images" / e["path"]
            hot = hot_paths(target, str(so), references=[(str(path), ElfImage(path))])
            gen, ref = hot.columns[0][0], hot.columns[1][0]
            for call, counts in hot.rows:
                row = table.setdefault(call, [counts.get(gen)] + [None] * len(linux))
                row[1 + i] = counts.get(ref)
        header = [name, "vdsogen", *(label for label, _ in linux)]
        rows = [[call, *("-" if c is None else c for c in counts)] for call, counts in table.items()]
        if rows:
            hot_lines += [*rst_table(header, rows), ""]
    proc = subprocess.run([sys.executable, "-m", "vdsogen.audit.corpus", "--cache", str(CACHE),
                           "--expect", str(ROOT / "tests" / "real-vdso-expect.toml")],
                          capture_output=True, text=True, cwd=ROOT)
    audit = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not audit:
        raise MeasureError(f"the corpus audit printed nothing: {proc.stderr.strip()}")
    what = {"kernel": "from kernel packages", "qemu": "from QEMU's qemu-user", "dbg": "from kernel debug packages"}
    kinds = {}
    for e in manifest:
        kinds.setdefault(e["kind"], set()).add(e["suite"])
    return [
        f"The corpus ``scripts/fetch-real-vdso.sh`` left in ``$VDSOGEN_REAL_VDSO``: {len(manifest)} images, "
        + "; ".join(f"{sum(e['kind'] == k for e in manifest)} {what.get(k, k)} ({', '.join(sorted(s))})"
                    for k, s in sorted(kinds.items())) + ".",
        "",
        "Image sizes",
        "-----------",
        "",
        "File bytes of vdsogen's ``vdso.so`` (default toolchain) next to Debian's",
        "kernel images of the same ABI (Linux version and flavour; one column per",
        "distinct image).  Linux's newer images carry getrandom, which vdsogen does",
        "not implement.",
        "",
        *rst_table(["target", "vdsogen", "Linux (Debian)"], size_rows),
        "",
        "Hot paths",
        "---------",
        "",
        "Instructions from entry to return on the common path (the counter read",
        "once or never, no syscall; ``vdsogen/bench/hotpath.py``), vdsogen's image",
        "next to Debian's of the same ABI:",
        "",
        *hot_lines,
        "Audit of the corpus",
        "-------------------",
        "",
        "``scripts/audit-corpus.sh`` against ``tests/real-vdso-expect.toml``, its",
        "last line:",
        "",
        "::",
        "",
        "    " + audit[-1],
        "",
        *_harness_corpus(),
    ]


def _harness_corpus() -> list:
    """The harness on every kernel image of the corpus (vdsogen.harness.corpus, scripts/harness-corpus.sh)."""
    from vdsogen.harness import corpus

    out = io.StringIO()
    corpus.run(CACHE, stream=out, rst=True)
    return [
        "The harness on the corpus",
        "-------------------------",
        "",
        "``vdsogen test --image`` on each kernel image (``scripts/harness-corpus.sh``):",
        "the layout it played, picked by the image's Linux version note (and the",
        "page size where the image's code reads its pages at another than the",
        "spec's), the checks passed and failed, and each failed check.  An image",
        "vdsogen did not build is held to what its own kernel's vDSO does where",
        "vdsogen's images promise more (``vdsogen/harness/linux.toml``).  Images",
        "of an ABI whose counter qemu-user cannot read run only on a booted",
        "kernel (``scripts/kernel-harness.sh``).",
        "",
        *out.getvalue().rstrip("\n").splitlines(),
    ]


# -- bench -------------------------------------------------------------------------------

def _bench_once(env: dict) -> dict:
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "vdsogen"), "bench", "--arch=x86_64", "--format=json"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise MeasureError(f"vdsogen bench --arch=x86_64: {proc.stderr.strip() or proc.returncode}")
    return json.loads(proc.stdout)


def measure_bench(work: Path) -> list:
    runs = int(os.environ.get("RUNS", "7"))
    cols, calls, floors = {}, [], {}
    for label, extra in BENCH_TOOLCHAINS:
        env = {**default_env(), **extra, "VDSOGEN_BENCH_REFERENCES": ""}
        per_call = {}
        for _ in range(runs):
            doc = _bench_once(env)
            for ln in doc["lines"]:
                if ln["line"] == doc.get("floor"):
                    floors.setdefault(label, []).append(ln["ways"]["counter"]["median"])
                if "image_over_live" not in ln:
                    continue
                if ln["call"] not in calls:
                    calls.append(ln["call"])
                caller = ln.get("caller_image_over_live", {}).get("median")
                per_call.setdefault(ln["call"], []).append((ln["ways"]["image"]["median"],
                                                            ln["image_over_live"]["median"], caller))
        cols[label] = per_call
    rows = []
    for call in calls:
        row = [call]
        for label, _ in BENCH_TOOLCHAINS:
            got = cols[label].get(call)
            if not got:
                row += ["-", "-"]
                continue
            ns = statistics.median(g[0] for g in got)
            ratios = [g[1] for g in got]
            row.append(f"{ns:.2f} {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
            caller = [g[2] for g in got if g[2] is not None]
            row.append(f"{statistics.median(caller):.3f} [{min(caller):.3f}-{max(caller):.3f}]" if caller else "-")
        rows.append(row)
    floor = "; ".join(f"{label} {statistics.median(v):.2f} ns" for label, v in floors.items())
    return [
        f"``vdsogen bench --arch=x86_64``, {runs} run{'s' if runs != 1 else ''} of 31 rounds per toolchain.",
        "Each cell: the median ns per call through the image, the median ratio",
        "to the running kernel's own vDSO, and that ratio's range over the runs;",
        "\"caller\": the ratio again by the caller method (the answer in the",
        "caller's frame, read back after every call; ``docs/design.rst``).",
        "Only an idle machine gives figures worth comparing.",
        "",
        *rst_table(["call", *(f"{label}{way}" for label, _ in BENCH_TOOLCHAINS for way in ("", " caller"))], rows),
        "",
        f"The ordered counter read alone (the floor): {floor or 'not measured'}.",
    ]


# -- getrandom ---------------------------------------------------------------------------

GETRANDOM_SIZES = (16, 64, 256, 4096)


def measure_getrandom(work: Path) -> list:
    runs = int(os.environ.get("RUNS", "3"))
    ns: dict = {}           # (toolchain, size) -> {way: [medians]}
    for label, extra in BENCH_TOOLCHAINS:
        env = {**default_env(), **extra, "VDSOGEN_BENCH_REFERENCES": ""}
        for _ in range(runs):
            doc = _bench_once(env)
            if not doc.get("native"):
                raise MeasureError("vdsogen bench --arch=x86_64 did not run natively")
            for ln in doc["lines"]:
                size = ln["call"].removeprefix("getrandom(").removesuffix(")")
                if not ln["call"].startswith("getrandom(") or int(size) not in GETRANDOM_SIZES:
                    continue
                for way in ("image", "live", "syscall"):
                    if way in ln["ways"]:
                        ns.setdefault((label, int(size)), {}).setdefault(way, []).append(ln["ways"][way]["median"])
    if not ns:
        raise MeasureError("vdsogen bench --arch=x86_64 has no getrandom lines (the running kernel's vDSO "
                           "has no getrandom?)")
    rows = []
    for label, _ in BENCH_TOOLCHAINS:
        for size in GETRANDOM_SIZES:
            ways = ns.get((label, size), {})
            med = {w: statistics.median(v) for w, v in ways.items()}
            cells = [f"{med[w]:.1f}" if w in med else "-" for w in ("image", "live", "syscall")]
            ratio = f"{med['image'] / med['live']:.2f}x" if "image" in med and "live" in med else "-"
            rows.append([label, str(size), *cells, ratio])
    def shown(n):
        return "-" if n is None else f"{n:.0f}" if n == int(n) else f"{n:.1f}"

    counts = [[name, shown(ours), shown(linux)] for name, ours, linux in chacha_counts(work)]
    return [
        "The ChaCha20 block routine (``__arch_chacha20_blocks_nostack``), instructions executed per",
        "64-byte block: tests/chacha_driver.c calls it for 5 blocks and for 1 under qemu-user, one",
        "instruction per translation block (``-singlestep -d exec,nochain``), and the difference over 4",
        "is one block's.  vdsogen's routine is its arch's ``chacha20.S.j2`` as the image builds it;",
        "Linux 7.2's is cut from Debian's unstable image of the ABI (the corpus of",
        "``scripts/fetch-real-vdso.sh``; found as audit rule K010 finds it); \"-\": no such image.",
        "",
        *rst_table(["target", "vdsogen", "Linux 7.2"], counts),
        "",
        f"getrandom through ``vdsogen bench --arch=x86_64`` ({runs} run{'s' if runs != 1 else ''} of 31 rounds",
        "per toolchain, each cell the median of the runs' medians, ns per call): vdsogen's x86_64 image",
        "built with each toolchain, the running kernel's own vDSO getrandom, the getrandom syscall; the",
        "last column is vdsogen's over the kernel's vDSO.  Only an idle machine gives figures worth",
        "comparing.",
        "",
        *rst_table(["toolchain", "bytes", "vdsogen", "kernel vDSO", "syscall", "vdsogen/vDSO"], rows),
    ]


# The ABIs whose Linux 7.2 vDSO has getrandom's ChaCha20, the vdsogen target of each, and the
# image of each in the corpus's sid (7.2) kernels; ppc64 (big-endian) and ppc32 have none there.
CHACHA_TARGETS = ("x86_64", "arm64", "ppc32", "ppc64", "ppc64le", "s390x", "loongarch64", "riscv64")
LINUX_72 = {"x86_64": "sid/amd64/x86_64.so", "arm64": "sid/arm64/arm64.so", "ppc64le": "sid/powerpc64le/ppc64le.so",
            "s390x": "sid/s390x/s390x.so", "loongarch64": "sid/loong64/loongarch64.so",
            "riscv64": "sid/riscv64/riscv64.so"}
OBJCOPY_FORMAT = {"x86_64": "elf64-x86-64", "arm64": "elf64-littleaarch64", "ppc64le": "elf64-powerpcle",
                  "s390x": "elf64-s390", "loongarch64": "elf64-loongarch", "riscv64": "elf64-littleriscv"}
CHACHA_DRIVER = ROOT / "tests" / "chacha_driver.c"


def _e_flags(path: Path, elf_class: int, endian: str) -> int:
    head = path.read_bytes()[:52]
    return int.from_bytes(head[48:52] if elf_class == 64 else head[36:40], endian)


def _chacha_exe(target, work: Path, routine: Path) -> Path:
    """tests/chacha_driver.c (built as tests/test_chacha.py builds it) linked with `routine`, an object
    defining __arch_chacha20_blocks_nostack."""
    from vdsogen.build.toolchain import Builder
    from vdsogen.harness.driver import HARNESS_CFLAGS, compiler, freestanding_argv

    exe = work / "chacha"
    if target.harness.libc == "freestanding":
        argv = freestanding_argv(target, work, [CHACHA_DRIVER], exe)
        cc, libc = argv[:argv.index(str(CHACHA_DRIVER))], argv[argv.index(str(CHACHA_DRIVER)) + 1:]
    else:
        cc, libc = [compiler(target), *HARNESS_CFLAGS, *target.toolchain.harness_cflags], ["-o", str(exe)]
    cc += ["-fomit-frame-pointer"]
    driver = work / "driver.o"
    for argv in ([*(a for a in cc if not a.startswith("--ld-path=")), "-c", str(CHACHA_DRIVER), "-o", str(driver)],):
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode:
            raise MeasureError(f"{target.name}: the ChaCha20 driver does not build: {proc.stderr.strip()}")
    want = _e_flags(driver, target.elf.elf_class, target.elf.endian)
    if _e_flags(routine, target.elf.elf_class, target.elf.endian) != want:
        Builder(target, stream=io.StringIO()).rewrite_flags(routine, want)
    proc = subprocess.run([*cc, str(driver), str(routine), *libc], capture_output=True, text=True)
    if proc.returncode:
        raise MeasureError(f"{target.name}: the ChaCha20 driver does not link: {proc.stderr.strip()}")
    return exe


def _vdsogen_routine(target, work: Path) -> Path:
    from vdsogen.build.toolchain import Builder
    from vdsogen.gen.render import Renderer

    asm, obj = work / "chacha20.S", work / "chacha20.o"
    asm.write_text(Renderer(target).render(target.fragment("chacha20.S.j2")))
    Builder(target, stream=io.StringIO()).compile(asm, obj)
    return obj


def _linux_routine(target, image: Path, work: Path) -> Path:
    """An object of the image's loaded bytes, its ChaCha20 routine (found as audit rule K010 finds it)
    named __arch_chacha20_blocks_nostack: the PC-relative reads of its constants still land."""
    from vdsogen.audit.rules.code import chacha_routines
    from vdsogen.bench.hotpath import code_regions
    from vdsogen.elf import decode
    from vdsogen.elf.reader import ElfImage

    img = ElfImage(str(image))
    found = chacha_routines(img, decode.Regions(code_regions(img)))
    if len(found) != 1:
        raise MeasureError(f"{image}: {len(found)} ChaCha20 routines found, not one")
    entry = found[0][0]
    load = max(seg.offset + seg.filesz for seg in img.loads)
    raw = work / "linux.bin"
    raw.write_bytes(image.read_bytes()[:load])
    obj = work / "linux.o"
    for argv in (["-I", "binary", "-O", OBJCOPY_FORMAT[target.abi.name],
                  "--rename-section", ".data=.text.linux,alloc,load,readonly,code,contents", str(raw), str(obj)],
                 ["--set-section-alignment", ".text.linux=65536", "--add-symbol",
                  f"__arch_chacha20_blocks_nostack=.text.linux:{entry:#x},global,function", str(obj)]):
        proc = subprocess.run(["llvm-objcopy-19", *argv], capture_output=True, text=True)
        if proc.returncode:
            raise MeasureError(f"{image}: llvm-objcopy: {proc.stderr.strip()}")
    return obj


def _executed(target, exe: Path, blocks: int, work: Path) -> int:
    """Instructions executed in __arch_chacha20_blocks_nostack (and whatever follows it in its
    section) by one call for `blocks` blocks, from qemu-user's trace of one instruction per block."""
    from vdsogen.harness.driver import qemu_options

    nm = subprocess.run(["llvm-nm-19", "-S", "--defined-only", str(exe)], capture_output=True, text=True).stdout
    syms = {ln.split()[-1]: ln.split() for ln in nm.splitlines()}
    lo = int(syms["__arch_chacha20_blocks_nostack"][0], 16)
    after = sorted(int(f[0], 16) for f in syms.values() if int(f[0], 16) > lo and f[-2].lower() in "tw")
    hi = after[0] if after else lo + (1 << 20)
    qemu = f"qemu-{target.toolchain.qemu or 'x86_64'}-static"
    log = work / f"trace-{blocks}"
    proc = subprocess.run([qemu, *qemu_options(target), "-singlestep", "-d", "exec,nochain", "-D", str(log),
                           str(exe), str(blocks)], capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise MeasureError(f"{target.name}: the ChaCha20 driver failed under {qemu}: {proc.stderr.strip()}")
    n = 0
    for ln in log.read_text(errors="replace").splitlines():
        if ln.startswith("Trace "):
            pc = int(ln.split("[", 1)[1].split("/")[1], 16)
            n += lo <= pc < hi
    return n


def chacha_counts(work: Path) -> list:
    """[target, vdsogen's instructions per block, Linux 7.2's or None]: a call for 5 blocks less one for 1, / 4."""
    from vdsogen.spec.model import load_target

    rows = []
    for name in CHACHA_TARGETS:
        target = load_target(name)
        per = []
        for which in ("vdsogen", "linux"):
            d = work / f"chacha-{name}-{which}"
            d.mkdir(parents=True, exist_ok=True)
            if which == "vdsogen":
                routine = _vdsogen_routine(target, d)
            elif name in LINUX_72 and (CACHE / "images" / LINUX_72[name]).is_file():
                routine = _linux_routine(target, CACHE / "images" / LINUX_72[name], d)
            else:
                per.append(None)
                continue
            exe = _chacha_exe(target, d, routine)
            per.append((_executed(target, exe, 5, d) - _executed(target, exe, 1, d)) / 4)
        rows.append([name, *per])
    return rows


# -- the document ------------------------------------------------------------------------

MEASURE = {"images": measure_images, "harness": measure_harness, "corpus": measure_corpus, "bench": measure_bench,
           "getrandom": measure_getrandom}


def _machine() -> str:
    return f"{os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}"


def _commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=ROOT, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "outside git"
    return rev + (" with local changes" if dirty else "")


def stamp(name: str, seconds: float) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"*Generated by* ``sh scripts/measure.sh {name}`` *on {when}, commit {_commit()},"
            f" {_machine()}, in {seconds:.0f} s.*")


def begin(name: str) -> str:
    return f".. BEGIN measure {name}"


def end(name: str) -> str:
    return f".. END measure {name}"


def section(text: str, name: str) -> list:
    """The lines between the section's markers (stamp included)."""
    lines = text.splitlines()
    try:
        a, b = lines.index(begin(name)), lines.index(end(name))
    except ValueError:
        raise MeasureError(f"{DOC}: no '{begin(name)}' ... '{end(name)}' markers") from None
    if b < a:
        raise MeasureError(f"{DOC}: '{end(name)}' comes before '{begin(name)}'")
    return lines[a + 1:b]


def body_of(lines: list) -> list:
    """A generated section less its stamp and the blank lines around it."""
    rest = [ln for ln in lines if not ln.startswith("*Generated by*")]
    while rest and not rest[0].strip():
        rest.pop(0)
    while rest and not rest[-1].strip():
        rest.pop()
    return rest


def replace(text: str, name: str, body: list, seconds: float) -> str:
    section(text, name)          # the markers exist, in order
    lines = text.splitlines()
    a, b = lines.index(begin(name)), lines.index(end(name))
    new = ["", stamp(name, seconds), "", *body, ""]
    return "\n".join(lines[:a + 1] + new + lines[b:]) + "\n"


def main(argv: list | None = None) -> int:
    p = argparse.ArgumentParser(prog="sh scripts/measure.sh",
                                description="regenerate the measured sections of docs/measurements.rst")
    p.add_argument("sections", nargs="*", metavar="SECTION",
                   help=f"any of {', '.join(SECTIONS)} (default: {' '.join(DEFAULT_SECTIONS)})")
    args = p.parse_args(argv)
    for s in args.sections:
        if s not in SECTIONS:
            p.error(f"{s}: no such section (the sections: {', '.join(SECTIONS)})")
    text = DOC.read_text()
    status = 0
    with tempfile.TemporaryDirectory(prefix="vdsogen-measure-") as tmp:
        for name in args.sections or DEFAULT_SECTIONS:
            t0 = time.monotonic()
            try:
                body = MEASURE[name](Path(tmp))
            except MeasureError as e:
                print(f"measure {name}: {e}", file=sys.stderr)
                status = 1
                continue
            seconds = time.monotonic() - t0
            text = replace(text, name, body, seconds)
            DOC.write_text(text)
            print(f"  MEASURE {name} ({seconds:.0f} s) -> {DOC.relative_to(ROOT)}")
            for other in ALSO_IN.get(name, ()):
                other.write_text(replace(other.read_text(), name, body, seconds))
                print(f"  MEASURE {name} -> {other.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:          # a VdsogenError from a build or harness: one line, no traceback
        from vdsogen.errors import VdsogenError
        if not isinstance(e, (VdsogenError, MeasureError, OSError)):
            raise
        print(f"measure: {e}", file=sys.stderr)
        sys.exit(1)
