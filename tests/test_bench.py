"""`vdsogen bench`: its plumbing and its output format.

A benchmark is never a test: nothing here asserts a timing or a ratio.  The
tests check that the harness's lines are read and summarised as documented,
that the table and the JSON document carry every export, way and ratio,
that hot paths are counted (in the image, the kernel's vDSO and reference
images) by one rule, and that the command runs natively and under qemu.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from vdsogen.bench import hotpath, results
from vdsogen.bench.run import find_references, hot_paths, linux_label
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target

HARNESS_OUTPUT = """\
# vdsogen harness for x86_64 (specs/x86_64.toml): benchmark
bench.cpu 1
ok map
ok symbol.__vdso_clock_gettime
bench.data live
bench.agree clock_gettime:MONOTONIC ok
bench.agree clock_gettime:REALTIME off: the image says 5 ns, the kernel 1 and 2 ns
bench.note something worth telling
bench.live /tmp/x/live-vdso.so 8192 bytes
bench clock_gettime:MONOTONIC image 20.0 21.0 19.0 20.5
bench clock_gettime:MONOTONIC live 22.0 22.0 21.0 22.0
bench clock_gettime:MONOTONIC syscall 240.0 250.0 245.0 246.0
bench clock_gettime:MONOTONIC_COARSE image 2.7 2.7 2.7 2.7
bench clock_gettime:MONOTONIC_COARSE live 3.0 3.0 3.0 3.0
bench time image 2.2 2.2 2.2 2.2
bench call:empty counter 2.2 2.2 2.2 2.4
bench counter:lfence;rdtsc counter 18.4 18.4 18.5 18.4
bench counter:rdtscp counter 18.1 18.1 18.1 18.2
bench broken line
4 passed, 0 failed
"""


def test_parse_reads_every_line_kind():
    run = results.parse(HARNESS_OUTPUT)
    assert run.cpu == 1 and run.data == "live" and run.live_dump == "/tmp/x/live-vdso.so"
    assert run.agree == {"clock_gettime:MONOTONIC": "ok",
                         "clock_gettime:REALTIME": "off: the image says 5 ns, the kernel 1 and 2 ns"}
    assert run.notes == ["something worth telling"]
    assert [ln.name for ln in run.calls] == ["clock_gettime:MONOTONIC", "clock_gettime:MONOTONIC_COARSE", "time"]
    assert [ln.label for ln in run.floors] == ["empty call", "lfence; rdtsc", "rdtscp"]
    assert run.counter_floor.name == "counter:lfence;rdtsc"
    mono = run.line("clock_gettime:MONOTONIC")
    assert mono.label == "clock_gettime(MONOTONIC)" and mono.reads_counter
    assert not run.line("clock_gettime:MONOTONIC_COARSE").reads_counter
    assert sorted(mono.samples) == ["image", "live", "syscall"]
    assert mono.samples["image"] == [20.0, 21.0, 19.0, 20.5]


def test_spread_and_paired_ratios():
    s = results.Spread.of([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s.median, s.q1, s.q3, s.low, s.high, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert results.Spread.of([7.0]).median == 7.0
    mono = results.parse(HARNESS_OUTPUT).line("clock_gettime:MONOTONIC")
    # Per round: 20/22, 21/22, 19/21, 20.5/22, paired as they ran.
    r = mono.ratio("image", "live")
    assert r.n == 4 and r.low == pytest.approx(19 / 21) and r.high == pytest.approx(21 / 22)
    assert mono.ratio("image", "counter") is None


def test_table_has_every_column_and_ratio():
    run = results.parse(HARNESS_OUTPUT)
    hot = results.HotPaths(columns=[("generated", "/x/vdso.so"), ("Linux 6.1.176", "/y/ref.so")],
                           rows=[("clock_gettime (counter clock)", {"generated": 38, "Linux 6.1.176": 57}),
                                 ("time", {"generated": 6, "Linux 6.1.176": None})])
    text = results.table(["HEADER"], run, hot)
    lines = text.splitlines()
    assert lines[0] == "HEADER"
    head = next(ln for ln in lines if ln.startswith("call "))
    for col in ("generated", "live kernel", "syscall", "gen/live", "gen/floor"):
        assert col in head, head
    mono = next(ln for ln in lines if ln.startswith("clock_gettime(MONOTONIC) "))
    assert "20.25 [" in mono and "22.00 [" in mono
    # gen/floor only where the answer comes from the counter.
    coarse = next(ln for ln in lines if ln.startswith("clock_gettime(MONOTONIC_COARSE)"))
    assert coarse.count("[") == 3
    assert any(ln.strip().startswith("lfence; rdtsc") for ln in lines)
    assert "warning: the image and the kernel disagree on clock_gettime:REALTIME" in text
    assert "note: something worth telling" in text
    hot_lines = text.split("hot path, instructions")[1].splitlines()
    assert next(ln for ln in hot_lines if ln.startswith("clock_gettime (counter clock)")).split()[-2:] == ["38", "57"]
    assert next(ln for ln in hot_lines if ln.startswith("time ")).split()[-2:] == ["6", "-"]
    assert "Linux 6.1.176: /y/ref.so" in text


def test_json_document():
    run = results.parse(HARNESS_OUTPUT)
    doc = results.document({"target": "x86_64"}, run, results.HotPaths(columns=[("generated", "/x")],
                                                                        rows=[("time", {"generated": 6})]))
    json.dumps(doc)
    assert doc["target"] == "x86_64" and doc["cpu"] == 1 and doc["data"] == "live"
    assert doc["floor"] == "counter:lfence;rdtsc"
    mono = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC")
    assert set(mono["ways"]) == {"image", "live", "syscall"}
    assert mono["ways"]["image"]["samples"] == [20.0, 21.0, 19.0, 20.5]
    assert set(mono["ways"]["image"]) == {"median", "q1", "q3", "min", "max", "n", "samples"}
    assert "image_over_live" in mono and "image_over_floor" in mono and mono["agree"] == "ok"
    coarse = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC_COARSE")
    assert "image_over_floor" not in coarse
    assert doc["hot_path"]["rows"] == [{"call": "time", "counts": {"generated": 6}}]


# --- hot paths ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["x86_64", "arm64", "ppc64le", "i386"])
def test_hot_paths_of_a_built_image(name, built):
    target, so, dbg = built(name)
    img = ElfImage(so)
    cold = hotpath.cold_ranges(ElfImage(dbg))
    assert cold, "the unstripped image names its cold functions"
    assert hotpath.cold_ranges(img) == [], "the stripped one has no symbol table"
    entry = next(e.name for e in target.exports if e.function.name == "clock_gettime")
    counter = hotpath.export_hot_path(img, entry, 1, cold)
    coarse = hotpath.export_hot_path(img, entry, 0, cold)
    assert counter and coarse and coarse < counter
    # The counter is read exactly once on a path that returns without a syscall; never twice.
    assert hotpath.export_hot_path(img, entry, 2, cold) is None
    assert hotpath.export_hot_path(img, "__no_such_function", 1) is None


def test_hot_path_table_rows_follow_the_exports(built):
    target, so, _ = built("x86_64")
    hot = hot_paths(target, str(so))
    assert hot.columns == [("generated", str(so))]
    calls = [call for call, _ in hot.rows]
    assert calls == ["clock_gettime (counter clock)", "clock_gettime (coarse clock)", "gettimeofday", "time",
                     "clock_getres", "getcpu"]
    assert all(isinstance(c["generated"], int) for _, c in hot.rows)


def test_references_by_abi_once_each(built, tmp_path):
    """Images of the target's ABI only, each once however its copies differ outside the code."""
    _, so_x86, _ = built("x86_64")
    _, so_arm, _ = built("arm64")
    shutil.copy(so_x86, tmp_path / "a.so")
    (tmp_path / "sub").mkdir()
    data = bytearray(so_x86.read_bytes())
    shstr = data.rfind(b".text")
    data[shstr:shstr + 5] = b".TEXT"
    (tmp_path / "sub" / "b.so").write_bytes(bytes(data))
    shutil.copy(so_arm, tmp_path / "c.so")
    (tmp_path / "junk.so").write_bytes(b"not an ELF file")
    found = find_references(load_target("x86_64"), dirs=[tmp_path])
    assert [os.path.basename(p) for p, _ in found] == ["a.so"]
    assert [os.path.basename(p) for p, _ in find_references(load_target("arm64"), dirs=[tmp_path])] == ["c.so"]
    assert find_references(load_target("x86_64"), dirs=[tmp_path / "missing"]) == []
    assert find_references(load_target("x86_64"), files=[str(tmp_path / "c.so")])[0][0].endswith("c.so")


def test_linux_label(built):
    _, so, _ = built("x86_64")
    # vdsogen's images carry the Linux version note of their spec.
    assert linux_label(ElfImage(so), "fallback").startswith("Linux 6.17.0")


# --- the command ---------------------------------------------------------------------

def bench(*args, env=None):
    full = dict(os.environ, VDSOGEN_BENCH_REFERENCES="", **(env or {}))
    return subprocess.run([sys.executable, "-m", "vdsogen", "bench", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=600)


def test_bench_native_json(built, tmp_path):
    target, so, _ = built("x86_64")
    proc = bench("--arch=x86_64", f"--image={so}", "--format=json", "--rounds=2", "--batch-us=20",
                 f"--reference={so}")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["target"] == "x86_64" and doc["native"] and doc["rounds"] == 2 and doc["image"] == str(so)
    names = {d["line"] for d in doc["lines"]}
    for f in ("clock_gettime:MONOTONIC", "clock_gettime:REALTIME_COARSE", "clock_gettime:PROCESS_CPUTIME_ID",
              "gettimeofday", "time", "clock_getres:MONOTONIC", "getcpu", "call:empty", "counter:lfence;rdtsc",
              "counter:rdtscp"):
        assert f in names, f
    mono = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC")
    assert {"image", "syscall"} <= set(mono["ways"]) and all(d["n"] == 2 for d in mono["ways"].values())
    assert [c["label"] for c in doc["hot_path"]["columns"]][0] == "generated"
    assert any(c["path"] == str(so) for c in doc["hot_path"]["columns"][1:])


def test_bench_text_under_qemu():
    proc = bench("--arch=arm64", "--rounds=2", "--batch-us=20")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "under qemu-user" in out and "live kernel" not in out.split("hot path")[0]
    assert "clock_gettime(MONOTONIC)" in out and "isb; mrs cntvct el0" in out
    assert "hot path, instructions" in out and "no real Linux image of the arm64 ABI" in out


def test_bench_times_the_test_build_where_qemu_cannot_read_the_counter():
    """arm's real build dies of SIGILL at its mrrc under qemu: the test build is timed instead."""
    proc = bench("--arch=arm", "--rounds=1", "--batch-us=20")
    assert proc.returncode == 0, proc.stderr
    assert "clock_gettime(MONOTONIC)" in proc.stdout
    assert "timed: the test build" in proc.stdout and "counted: the real build" in proc.stdout


def test_bench_rejects_bad_arguments(tmp_path):
    assert bench("--arch=x86_64", "--rounds=0").returncode == 2
    proc = bench("--arch=x86_64", f"--image={tmp_path / 'none.so'}")
    assert proc.returncode != 0 and "no such image" in proc.stderr


def test_harness_bench_usage(built, tmp_path):
    """The harness's own options: a bad one is a usage error, not a crash."""
    from vdsogen.harness.driver import build_harness
    from vdsogen.build.toolchain import Builder
    import io

    target, so, _ = built("x86_64")
    exe = build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))
    proc = subprocess.run([str(exe), "--bench", "--bogus", str(so)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = subprocess.run([str(exe), "--bench", "--rounds", "1", "--batch-us", "10", str(so)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "bench.data synthetic" in proc.stdout, proc.stdout
