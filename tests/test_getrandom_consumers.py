"""Consumers of the vDSO's getrandom through `vdsogen run`: glibc's getrandom() and Go's crypto/rand as
Debian ships them (scripts/fetch-consumers.sh: trixie's glibc 2.41, unstable's for riscv64, whose 2.41 looks
up no vDSO getrandom; Go 1.24; trixie's qemu 10.0), on each getrandom target's image.

Natively (x86_64, on the running kernel's data pages) perf counts the getrandom syscalls of the whole run:
answered by the image, a few calls of many leave a syscall (the reseeds, and vdsogen's own Python's); the
same image without the export makes every call one; and an image whose getrandom hands out a constant makes
the consumer print it, so the bytes are the image's.  glibc's fork draws in parent and child differ (the
states are MAP_DROPPABLE: a fork wipes them).

Under qemu-user the consumers look the export up and query it, but no qemu maps MAP_DROPPABLE, which the
query tells them to map the states with (the host's 7.2, trixie's 10.0 and unstable's 11.1 all refuse it,
EINVAL): qemu's syscall log (-strace, of the program's qemu only) shows the state mapping asked for as the
query said and refused, and each call then made as the syscall.  That the generator is right on those
targets is the harness's (test_getrandom.py: it maps its states MAP_PRIVATE and wipes them on fork).  Should
a qemu map the states, the calls must be answered in user space.

Not run: Go on ppc32 (no Go port) and riscv64 (no Go release has the vDSO getrandom there).
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build_broken
from vdsogen.spec.model import load_target

CACHE = Path(os.environ.get("VDSOGEN_CONSUMERS") or Path.home() / ".cache" / "vdsogen" / "consumers")
USR = CACHE / "root" / "usr"
GOROOT = USR / "lib" / "go-1.24"
CONSUMER_C = ROOT / "scripts" / "e2e" / "getrandom-consumer.c"
CONSUMER_GO = ROOT / "scripts" / "e2e" / "getrandom-consumer.go"
VDSOGEN = [sys.executable, "-m", "vdsogen"]

# target: (glibc's directory under usr/, its dynamic loader)
GLIBC = {"x86_64": ("x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
         "arm64": ("aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
         "ppc32": ("powerpc-linux-gnu", "ld.so.1"),
         "ppc64": ("powerpc64-linux-gnu", "ld64.so.1"),
         "ppc64le": ("powerpc64le-linux-gnu", "ld64.so.2"),
         "s390x": ("s390x-linux-gnu", "ld64.so.1"),
         "riscv64": ("riscv64-linux-gnu", "ld-linux-riscv64-lp64d.so.1"),
         "loongarch64": ("loongarch64-linux-gnu", "ld-linux-loongarch-lp64d.so.1")}
GOARCH = {"x86_64": "amd64", "arm64": "arm64", "ppc64": "ppc64", "ppc64le": "ppc64le", "s390x": "s390x",
          "loongarch64": "loong64"}
NATIVE = "x86_64"
# Calls per native run (the vDSO's answer in ~100 ns), per run under qemu (each a refused mapping and a syscall).
NATIVE_CALLS = 20000
QEMU_CALLS = 100
# The constant the broken image hands out, and its edits of the rendered sources: the batch's bytes reach
# the caller as 0x5a (a 16-byte read takes only batch bytes).
CONSTANT = "5a" * 16
CONSTANT_EDITS = {"vdso_getrandom.h": [("__builtin_memcpy(dst, &w, sizeof(w));", "__builtin_memset(dst, 0x5a, sizeof(w));"),
                                       ("*dst++ = *src;", "*dst++ = 0x5a;")]}
OUTPUT = re.compile(r"calls (\d+) (?:ns/call \S+ )?last ([0-9a-f]{32})$", re.M)


def fetched(path):
    """`path`, which scripts/fetch-consumers.sh leaves: an error (not a skip) when it is missing."""
    if not path.exists():
        pytest.fail(f"{path}: missing; scripts/setup.sh runs scripts/fetch-consumers.sh, which fetches it")
    return path


def checked(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, argv))}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory for the module's builds; an error of every test when the fetch did not complete."""
    for stamp in ("stamp", "gostamp"):
        fetched(CACHE / stamp)
    return tmp_path_factory.mktemp("consumers")


@pytest.fixture(scope="module")
def glibc_consumer(work):
    """glibc_consumer(target) -> [loader, --library-path, libs, program]: scripts/e2e/getrandom-consumer.c,
    built once, run by trixie's dynamic loader of the target (the target's GNU cross compiler builds it;
    loongarch64's, which Debian 12 lacks, is clang against trixie's headers and start files)."""
    made = {}

    def get(name):
        if name not in made:
            triple, loader = GLIBC[name]
            lib = fetched(USR / triple / "lib")
            exe = work / f"glibc-{name}"
            if name == "loongarch64":
                crt = [str(fetched(lib / f)) for f in ("crt1.o", "crti.o")]
                checked(["clang-19", "--target=loongarch64-linux-gnu", "-fuse-ld=lld", "-O2", "-nostdinc", "-isystem",
                         checked(["clang-19", "-print-resource-dir"]).stdout.strip() + "/include", "-isystem",
                         str(fetched(USR / triple / "include")), "-nostdlib", *crt, str(CONSUMER_C),
                         str(lib / "libc.so.6"), str(lib / "libc_nonshared.a"), str(lib / "crtn.o"),
                         f"-Wl,--dynamic-linker=/lib64/{loader}", "-o", str(exe)])
            else:
                checked([f"{load_target(name).toolchain.gnu_triple}-gcc", "-O2", str(CONSUMER_C), "-o", str(exe)])
            made[name] = [str(fetched(lib / loader)), "--library-path", str(lib), str(exe)]
        return made[name]
    return get


@pytest.fixture(scope="module")
def go_consumer(work):
    """go_consumer(target) -> [program]: scripts/e2e/getrandom-consumer.go built by Go 1.24 for the
    target's GOARCH (static), in the build cache the fetch filled."""
    made = {}

    def get(name):
        if name not in made:
            exe = work / f"go-{name}"
            env = dict(os.environ, GOROOT=str(GOROOT), GOCACHE=str(CACHE / "gocache"), GOTOOLCHAIN="local",
                       GO111MODULE="off", CGO_ENABLED="0", GOARCH=GOARCH[name], GOFLAGS="-trimpath")
            checked([str(fetched(GOROOT / "bin" / "go")), "build", "-o", str(exe), str(CONSUMER_GO)], env=env)
            made[name] = [str(exe)]
        return made[name]
    return get


def parse(out, calls):
    m = OUTPUT.search(out)
    assert m and int(m.group(1)) == calls, out
    return m.group(2)


# --- natively: perf counts the getrandom syscalls ---------------------------------------------------------

@pytest.fixture(scope="module")
def native_images(work):
    """{"without": (vdsogen run options), "constant": (...)}: the x86_64 image without the getrandom export
    (a spec that extends x86_64 with its other exports), and one whose getrandom hands out CONSTANT."""
    target = load_target(NATIVE)
    specs = work / "specs"
    specs.mkdir()
    lines = [f'extends = "{NATIVE}"']
    for e in target.exports:
        if e.impl != "getrandom":
            lines += ["", "[[export]]", f'name = "{e.name}"', f'impl = "{e.impl}"',
                      f"aliases = {json.dumps([a.name for a in e.aliases])}"]
    (specs / "nogetrandom.toml").write_text("\n".join(lines) + "\n")
    checked([*VDSOGEN, "build", "-q", f"--specs={specs}", "--arch=nogetrandom", f"--out={work / 'without'}"], cwd=ROOT)
    constant = build_broken(target, work / "constant", CONSTANT_EDITS)
    # The image and the supervisor into vdsogen run's cache first: the compilers that build them draw from
    # getrandom too, which perf would count.
    checked([*VDSOGEN, "run", f"--arch={NATIVE}", "--", "true"], cwd=ROOT)
    return {"without": [f"--specs={specs}", "--arch=nogetrandom", "--image", str(work / "without" / "vdso.so")],
            "constant": [f"--arch={NATIVE}", "--image", str(constant)]}


def perf_run(work, options, program):
    """(the program's stdout, the getrandom syscalls of the whole `vdsogen run`)."""
    if shutil.which("perf") is None:
        pytest.fail("perf: not found (linux-perf; scripts/fetch-consumers.sh installs it)")
    out = work / "perf.out"
    proc = checked(["perf", "stat", "-x,", "-e", "syscalls:sys_enter_getrandom", "-o", str(out), "--",
                    *VDSOGEN, "run", *options, "--", *program], cwd=ROOT)
    counts = [line.split(",")[0] for line in out.read_text().splitlines() if "sys_enter_getrandom" in line]
    assert counts and counts[0].isdigit(), out.read_text()
    return proc.stdout, int(counts[0])


@pytest.mark.parametrize("consumer", ["glibc", "go"])
def test_native_consumer_is_answered_by_the_image(consumer, glibc_consumer, go_consumer, native_images, work):
    program = (glibc_consumer if consumer == "glibc" else go_consumer)(NATIVE)
    out, syscalls = perf_run(work, [f"--arch={NATIVE}"], [*program, str(NATIVE_CALLS)])
    assert parse(out, NATIVE_CALLS) != CONSTANT
    assert syscalls < NATIVE_CALLS // 100, f"{syscalls} getrandom syscalls for {NATIVE_CALLS} calls:\n{out}"
    # Without the export every call is the syscall; with a getrandom that hands out a constant, the
    # consumer prints it: the bytes above were the image's.
    out, without = perf_run(work, native_images["without"], [*program, str(NATIVE_CALLS)])
    assert parse(out, NATIVE_CALLS) != CONSTANT
    assert without >= NATIVE_CALLS, f"{without} getrandom syscalls for {NATIVE_CALLS} calls without the export"
    out, _ = perf_run(work, native_images["constant"], [*program, str(NATIVE_CALLS)])
    assert parse(out, NATIVE_CALLS) == CONSTANT, out


def test_native_glibc_fork_draws_differ(glibc_consumer):
    """The state a child inherits is wiped (MAP_DROPPABLE): parent and child draw different bytes."""
    proc = checked([*VDSOGEN, "run", f"--arch={NATIVE}", "--", *glibc_consumer(NATIVE), "fork"], cwd=ROOT)
    assert proc.stdout == "fork distinct\n", proc.stdout + proc.stderr


# --- under qemu-user: qemu's syscall log --------------------------------------------------------------------

# qemu's log has "PID call(args)", then " = result" when it returns: threads' lines interleave (Go's), so a call
# is found anywhere in a line, and a result only right after its call.  A consumer's 16-byte getrandom syscall:
SYSCALL16 = re.compile(r"\d+ getrandom\(0x[0-9a-f]+,16,0\)")
# A state mapping as the query says (PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_DROPPABLE), and its result.
STATE_MAP = re.compile(r"\d+ mmap2?\((?:NULL|0x0+),(\d+),PROT_READ\|PROT_WRITE,"
                       r"MAP_ANONYMOUS\|(?:0x8|MAP_DROPPABLE),-1,0\)( = -1 errno=22| = 0x[0-9a-f]+)?")


def traced_qemu(work, name):
    """A VDSOGEN_QEMU directory whose qemu-NAME is trixie's, with -strace into work/strace-NAME/ for the
    program's qemu (not the timekeeper's, which `vdsogen run` starts as `qemu LOADER --timekeeper PAGES`)."""
    qemu = load_target(name).toolchain.qemu
    real = fetched(USR / "bin" / f"qemu-{qemu}")
    where, logs = work / f"qemu-{name}", work / f"strace-{name}"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    where.mkdir(exist_ok=True)
    wrapper = where / f"qemu-{qemu}"
    wrapper.write_text(f'#!/bin/sh\n[ "$2" = --timekeeper ] && exec {real} "$@"\n'
                       f'exec {real} -strace -D {logs}/strace.%d "$@"\n')
    wrapper.chmod(0o755)
    return where, logs


def qemu_run(work, name, program):
    """(the program's stdout, its 16-byte getrandom syscalls, [(length, result)] of its state mappings)."""
    where, logs = traced_qemu(work, name)
    proc = checked([*VDSOGEN, "run", f"--arch={name}", "--", *program, str(QEMU_CALLS)], cwd=ROOT,
                   env=dict(os.environ, VDSOGEN_QEMU=str(where)))
    log = "".join(p.read_text(errors="replace") for p in sorted(logs.iterdir()))
    return proc.stdout, len(SYSCALL16.findall(log)), STATE_MAP.findall(log)


def check_under_qemu(out, syscalls, maps):
    parse(out, QEMU_CALLS)
    assert maps, f"no state mapped as the query says (MAP_ANONYMOUS | MAP_DROPPABLE): the export was not used\n{out}"
    refused = sum(result == " = -1 errno=22" for _, result in maps)
    mapped = sum(result.startswith(" = 0x") for _, result in maps)
    # qemu refuses MAP_DROPPABLE: every call is the syscall.  Should it map the states, the calls are the image's.
    assert (refused and syscalls == QEMU_CALLS) or (mapped and syscalls < QEMU_CALLS // 10), \
        f"{len(maps)} state mappings ({refused} refused, {mapped} made), {syscalls} syscalls for {QEMU_CALLS} calls"


@pytest.mark.parametrize("name", [n for n in GLIBC if n != NATIVE])
def test_glibc_under_qemu_queries_the_image(name, glibc_consumer, work):
    check_under_qemu(*qemu_run(work, name, glibc_consumer(name)))


@pytest.mark.parametrize("name", [n for n in GOARCH if n != NATIVE])
def test_go_under_qemu_queries_the_image(name, go_consumer, work):
    check_under_qemu(*qemu_run(work, name, go_consumer(name)))


def test_vdsogen_qemu_names_a_missing_emulator(go_consumer, tmp_path):
    proc = subprocess.run([*VDSOGEN, "run", "--arch=arm64", "--", *go_consumer("arm64"), "1"], cwd=ROOT,
                          capture_output=True,
                          text=True, env=dict(os.environ, VDSOGEN_QEMU=str(tmp_path)))
    assert proc.returncode == 2
    assert proc.stderr == f"vdsogen: VDSOGEN_QEMU={tmp_path}: no executable qemu-aarch64 there (the emulator of arm64)\n"
