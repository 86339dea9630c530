"""`vdsogen bench`: build, run the harness's benchmark, count hot paths, report.

Timings come from the harness (harness/bench.c) running natively, or under
qemu-user for foreign targets, where they describe the emulator more than
the hardware.  Natively it also times the running kernel's own vDSO
(--live) and dumps it, so its hot paths are counted too.  Hot-path counts
(hotpath.py) put the image next to real Linux images of its ABI: the
`--reference` files, else every vDSO image of that ABI found under the
directories of $VDSOGEN_BENCH_REFERENCES (separated by ':'), by default
/var/tmp/vdso-cache (where scripts/fetch-real-vdso.sh-style carving leaves
Debian's).
"""

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from vdsogen.bench import hotpath, results
from vdsogen.build.toolchain import Builder
from vdsogen.errors import HarnessError, ImageError, VdsogenError
from vdsogen.fsutil import scratch_dir

DEFAULT_ROUNDS = 31
DEFAULT_BATCH_US = 500
REFERENCE_DIRS = ("/var/tmp/vdso-cache",)
MAX_REFERENCE = 1 << 20       # a vDSO is tens of KiB; kernels and packages are skipped
RUN_TIMEOUT = 300            # seconds (`vdsogen bench --timeout`); a run takes seconds, under qemu-user too


def reference_dirs():
    env = os.environ.get("VDSOGEN_BENCH_REFERENCES")
    return [d for d in env.split(os.pathsep) if d] if env is not None else list(REFERENCE_DIRS)


def _image(path):
    from vdsogen.elf.reader import ElfImage

    try:
        return ElfImage(path)
    except (ImageError, OSError, ValueError):
        return None


def _abi_of(img):
    from vdsogen.spec import abi

    d = abi.detect(img)
    return d.abi.name if d.abi else None


def _identity(img):
    """One image, whatever was done to its section headers since: its GNU build-id, else its loaded bytes."""
    for n in getattr(img, "notes", None) or ():
        if n.name == "GNU" and n.type == 3 and n.desc:
            return ("build-id", bytes(n.desc))
    loaded = b"".join(img.data[s.offset:s.offset + s.filesz] for s in img.loads)
    return ("sha256", hashlib.sha256(loaded).digest())


def find_references(target, files=None, dirs=None):
    """[(path, ElfImage)] of real vDSO images of the target's ABI: the given
    files, else those found under `dirs` (one of each content)."""
    found, seen = [], set()
    if files:
        for f in files:
            img = _image(f)
            if img is None:
                raise VdsogenError(f"{f}: not an ELF image vdsogen can read")
            abi = _abi_of(img)
            if abi != target.abi.name:
                raise VdsogenError(f"{f}: a vDSO of the {abi or 'unknown'} ABI, not of {target.abi.name}: "
                                   f"its instructions cannot be counted against the {target.name} image's")
            found.append((str(f), img))
        return found
    for d in dirs if dirs is not None else reference_dirs():
        root = Path(d)
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.so")):
            try:
                if not path.is_file() or path.stat().st_size > MAX_REFERENCE:
                    continue
            except OSError:
                continue
            img = _image(path)
            if img is None or _abi_of(img) != target.abi.name:
                continue
            key = _identity(img)
            if key in seen:
                continue
            seen.add(key)
            found.append((str(path), img))
    return found


def linux_label(img, fallback):
    """"Linux 6.1.176 (6.1.0-50-arm64)" from the image's Linux notes, else `fallback`."""
    version = release = None
    for n in getattr(img, "notes", None) or ():
        if n.name != "Linux":
            continue
        desc = bytes(n.desc)
        if n.type == 0 and len(desc) == 4:
            code = int.from_bytes(desc, "big" if img.endian == "big" else "little")
            version = f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"
        elif desc.endswith(b"\0") and desc[:-1] and desc[:-1].isascii() and desc[:-1].decode().isprintable():
            release = desc[:-1].decode()
    if not version and not release:
        return fallback
    return "Linux " + " ".join(filter(None, (version, release and f"({release})")))


def _comment(img):
    sec = img.section(".comment") if img else None
    if sec is None:
        return None
    text = bytes(img.section_bytes(sec)).split(b"\0")
    return ", ".join(t.decode("utf-8", "replace") for t in text if t) or None


def _symbols_for(image):
    """The unstripped image beside `image` (vdsogen writes vdso.so.dbg), for its cold functions."""
    image = Path(image)
    for cand in (image.with_name(image.name + ".dbg"), image.with_name("vdso.so.dbg")):
        if cand.is_file():
            img = _image(cand)
            if img is not None and img.symtab:
                return img
    return None


def hot_paths(target, image, live=None, references=()):
    """HotPaths of the target's exports: the image, the live vDSO (a dump), the references."""
    hot = results.HotPaths()
    columns = [("generated", image, _image(image))]
    if live:
        columns.append(("live kernel", live, _image(live)))
    for path, img in references:
        columns.append((linux_label(img, Path(path).name), path, img))
    avoid = {}
    for label, path, img in columns:
        if img is None:
            hot.notes.append(f"{path}: not readable, no counts")
            continue
        sym = _symbols_for(path) if label == "generated" else img
        avoid[label] = hotpath.cold_ranges(sym) if sym is not None else []
        if label == "generated" and sym is None:
            hot.notes.append(f"{path}: no symbols beside it (vdso.so.dbg): its cold functions count as hot")
    hot.columns = [(label, path) for label, path, _ in columns]
    for f in target.functions:
        # The hot-path classes of each function, with the counter reads each may make
        # (functions.toml [NAME.harness.bench]); the fewest instructions over them count.
        bench = f.harness.bench if f.harness else None
        if bench is None:
            continue
        name = next((e.name for e in target.exports if e.function is f), None)
        if name is None:
            continue
        for cls, reads in bench.hot_paths:
            counts = {}
            for label, _path, img in columns:
                found = [] if img is None else [hotpath.export_hot_path(img, name, n, avoid.get(label, ()))
                                                for n in reads]
                counts[label] = min((c for c in found if c is not None), default=None)
            hot.rows.append((f"{f.name} ({cls})" if cls else f.name, counts))
    return hot


def _run(argv, timeout):
    """The harness's output; past `timeout` its whole process group is killed."""
    from vdsogen.harness.driver import die_with_parent
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True, preexec_fn=die_with_parent)
    except OSError as e:
        raise HarnessError(f"{argv[0]}: cannot start: {e.strerror}") from None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"the benchmark did not finish within {timeout:g} s (--timeout={timeout:g}); "
                           f"it was killed") from None
    finally:
        if proc.returncode is None:      # not reaped: the group id is still the harness's
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-10:])
        raise HarnessError(f"the benchmark harness exited with status {proc.returncode}:\n{tail}")
    return out


def run_bench(target, image=None, workdir=None, *, fmt="text", rounds=DEFAULT_ROUNDS,
              batch_us=DEFAULT_BATCH_US, cpu=None, references=None, stream=None, timeout=RUN_TIMEOUT):
    """`vdsogen bench`: 0 once the report is written (a benchmark asserts nothing)."""
    from vdsogen.harness.driver import runner

    stream = stream or sys.stdout
    builder = Builder(target, stream=sys.stderr)     # progress apart from the report
    if image is not None and not Path(image).is_file():
        raise HarnessError(f"{image}: no such image")
    if target.datapage is None:
        raise HarnessError(f"{target.path}: no time data (no [counter], no [datapage]): nothing to benchmark")
    prefix = runner(target)
    native = not prefix
    try:
        with _workdir(target, workdir) as workdir:
            return _bench(target, image, workdir, builder, prefix, native, fmt, rounds, batch_us, cpu,
                          references, stream, timeout)
    except OSError as e:
        raise HarnessError(f"{e.filename or 'bench'}: {e.strerror}") from None


@contextlib.contextmanager
def _workdir(target, workdir):
    """`workdir` made if need be, or a temporary directory removed afterwards."""
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        yield Path(workdir)
        return
    with scratch_dir(f"bench-{target.name}") as tmp:
        yield Path(tmp)


def _bench(target, image, workdir, builder, prefix, native, fmt, rounds, batch_us, cpu, references, stream,
           timeout):
    from vdsogen.harness.driver import _build_image, _test_build, build_harness

    built_by = None
    counted = image
    if image is None and target.harness.injected_counter and not target.test_counter:
        # qemu-user cannot read this counter: time the test build, whose
        # counter the harness injects, and count the real build's hot paths.
        counted = workdir / "image" / "vdso.so"
        target, image = _test_build(target, None, workdir, builder, io.StringIO())
        built_by = builder.tools.describe
    elif image is None:
        image = counted = _build_image(target, workdir / "image", builder)
        built_by = builder.tools.describe
    image = Path(image).resolve()
    exe = build_harness(target, workdir, builder)
    argv = [*prefix, str(exe), "--bench", "--rounds", str(rounds), "--batch-us", str(batch_us)]
    if cpu is not None:
        argv += ["--cpu", str(cpu)]
    live_dump = workdir / "live-vdso.so"
    if native:
        argv += ["--live", "--dump-live", str(live_dump)]
    argv.append(str(image))
    builder.log("BENCH", image, argv)
    run = results.parse(_run(argv, timeout))
    refs = find_references(target, references)
    hot = hot_paths(target, str(counted), run.live_dump if native else None, refs)
    if Path(counted).resolve() != image:
        hot.notes.append(f"timed: the test build {image} (qemu-user cannot read the {target.name} counter; the "
                         f"harness injects it); counted: the real build {counted}")
    if not refs:
        hot.notes.append(f"no real Linux image of the {target.abi.name} ABI: pass --reference FILE, or put "
                         f"one under {', '.join(reference_dirs()) or '$VDSOGEN_BENCH_REFERENCES'}")
    # The stripped image may have lost its .comment; vdso.so.dbg beside it keeps it.
    toolchain = built_by or _comment(_image(image)) or _comment(_symbols_for(image)) or "unknown toolchain"
    meta = {"schema": "vdsogen-bench/1", "target": target.name, "abi": target.abi.name, "image": str(image), "toolchain": toolchain,
            "native": native, "kernel": os.uname().release if native else None,
            "rounds": rounds, "batch_us": batch_us}
    if fmt == "json":
        json.dump(results.document(meta, run, hot), stream, indent=1)
        stream.write("\n")
    else:
        stream.write(results.table(_header(meta, run), run, hot))
    stream.flush()
    return 0


def _header(meta, run):
    where = (f"natively, against this machine's kernel ({meta['kernel']}) and its vDSO" if meta["native"]
             else "under qemu-user (the figures describe the emulator; no kernel of this ABI runs here)")
    data = {"live": "the image reads a copy of the kernel's time page, refreshed before each of its batches",
            "synthetic": "the image reads the harness's own timekeeper's page"}.get(run.data, "")
    return [f"vdsogen bench {meta['target']}: {meta['image']} ({meta['toolchain']})",
            f"  {where}; {data}",
            f"  pinned to CPU {run.cpu}; {meta['rounds']} rounds of interleaved batches of about "
            f"{meta['batch_us']} us; ns per call as median [first-third quartile]; ratios per round",
            *(["  gen/live: the batch method (the answer stored out of the way, never read); caller gen/live: "
               "the answer in the caller's frame, read back after every call"]
              if any("image.caller" in ln.samples for ln in run.calls) else []),
            ""]


__all__ = ["run_bench", "find_references", "hot_paths", "linux_label", "reference_dirs"]
