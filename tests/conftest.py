"""What the test modules share.  A test module never imports another test
module: the helpers two or more of them use live here, plain functions
imported from conftest (`from conftest import vdsogen`), and the per-session
caches (built images, compiled harnesses, harness runs, the audit corpus)
are fixtures."""

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A kernel build's CC=, LD= and OBJCOPY= pick vdsogen's tools; the suite
# chooses them by CROSS_COMPILE= and LLVM= only (its tests that set them say so).
for _var in ("CC", "LD", "OBJCOPY"):
    os.environ.pop(_var, None)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import corpus as corpus_images  # noqa: E402
from vdsogen import paths  # noqa: E402
from vdsogen.build.image import build_target  # noqa: E402
from vdsogen.audit.check import build_validator  # noqa: E402
from vdsogen.gen.render import sources  # noqa: E402
from vdsogen.harness.driver import build_harness, run_harness, run_tests_full  # noqa: E402
from vdsogen.spec.model import load_target  # noqa: E402
from vdsogen.build.toolchain import Builder  # noqa: E402

# Every spec under specs/ is a target the suite builds, checks and runs.
TARGETS = tuple(sorted(p.stem for p in (ROOT / "specs").glob("*.toml")))
# Those with time data (data pages, a counter): not parisc, whose time functions are plain syscalls, nor
# sh4, whose Linux image has none.
TIME_TARGETS = tuple(n for n in TARGETS if load_target(n).datapage is not None)
# Those whose image reads the clocks from the data pages (clock_gettime): not
# riscv32, whose Linux image has no time function.
CLOCK_TARGETS = tuple(n for n in TIME_TARGETS
                      if {"clock_gettime", "clock_gettime64"} & {e.impl for e in load_target(n).exports})



def across_families(names, cases=("",)):
    """(name, case) pairs that put each case on one target of every arch family
    (the directory under arch/ its fragments come from), the family's targets
    taken in turn from case to case: every case meets every family's code, and,
    with enough cases, every target meets some case.  For variants of the
    generic core, whose breakage or setting is the same C on every target of a
    family: the whole cross product re-runs one family's harness on one
    family's code."""
    families = arch_families(names)
    return [(members[i % len(members)], case) for i, case in enumerate(cases) for members in families]


def one_per_family(names, turn):
    """One target of every arch family, the family's turn-th (modulo its size): each test that runs a
    variant on one target per family takes a different turn, so that together they reach every target."""
    return [members[turn % len(members)] for members in arch_families(names)]


def arch_families(names):
    """names grouped by arch family, in the order the families first appear."""
    families = {}
    for n in names:
        families.setdefault(load_target(n).arch, []).append(n)
    return list(families.values())


@pytest.fixture
def catalogue_copy(tmp_path, monkeypatch):
    """A private copy of vdsogen/spec/abi.toml that abi.catalogue() reads instead."""
    from vdsogen.spec import abi
    path = tmp_path / "abi.toml"
    path.write_text(abi.CATALOGUE.read_text())
    monkeypatch.setattr(abi, "CATALOGUE", path)
    abi.catalogue.cache_clear()
    yield path
    abi.catalogue.cache_clear()


# --- images -----------------------------------------------------------------

@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """built(name) -> (target, vdso.so, vdso.so.dbg), each target built once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = load_target(name)
            out = tmp_path_factory.mktemp(f"img-{name}")
            so, dbg = build_target(target, out, builder=Builder(target, stream=io.StringIO()),
                                   validate=build_validator)
            cache[name] = (target, so, dbg)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def built_with(tmp_path_factory):
    """built_with(name, env) -> (target, vdso.so, vdso.so.dbg), built with the
    toolchain the environment selects (CROSS_COMPILE=, LLVM=), once per session."""
    cache = {}

    def get(name, env):
        key = (name, tuple(sorted(env.items())))
        if key not in cache:
            target = load_target(name)
            out = tmp_path_factory.mktemp(f"img-{name}")
            so, dbg = build_target(target, out, builder=Builder(target, env=env, stream=io.StringIO()),
                                   validate=build_validator)
            cache[key] = (target, so, dbg)
        return cache[key]

    return get


def elf(path):
    """pyelftools' view of an image: the reference reader the tests check vdsogen's against."""
    from elftools.elf.elffile import ELFFile
    return ELFFile(open(path, "rb"))


def breg(expr, reg):
    """Offset and the rest of a DWARF expression that starts DW_OP_breg<reg> (a SLEB128 offset)."""
    assert expr[0] == 0x70 + reg, expr
    value = shift = 0
    for i, byte in enumerate(expr[1:], 1):
        value |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            if byte & 0x40:
                value -= 1 << shift
            return value, list(expr[i + 1:])
    raise ValueError("unterminated SLEB128")


def dynsym(path):
    return {s.name: s for s in elf(path).get_section_by_name(".dynsym").iter_symbols()}


# --- the audit corpus -------------------------------------------------------

@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """corpus(name) -> path of the audit corpus image (tests/corpus.py), built once per session."""
    return corpus_images.shared(tmp_path_factory)


# Every image the ELF oracles read: the corpus's and each target's vdso.so and vdso.so.dbg.
IMAGES = [f"corpus:{name}" for name in corpus_images.RECIPES] + \
         [f"vdsogen:{t}.{kind}" for t in TARGETS for kind in ("so", "dbg")]


def image_path(spec, corpus, built):
    """The file of one of IMAGES, given the corpus and built fixtures."""
    source, name = spec.split(":")
    if source == "corpus":
        return corpus(name)
    target, kind = name.split(".")
    _t, so, dbg = built(target)
    return so if kind == "so" else dbg


# --- the command line and a private tree ------------------------------------

def vdsogen(*args, env=None, cwd=None):
    """Run `python -m vdsogen ARGS` from the top of the tree, with env added to the environment."""
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=cwd or ROOT, env=full,
                          capture_output=True, text=True, timeout=300)


# The line `vdsogen run` says where the kernel's [vdso] (2 pages on some kernels, a mapping right
# after it) holds only the image's loaded part (runner/supervise.c, substitute()).
LOADED_PART_ONLY = "which a mapping follows: its loaded part ("


def program_stderr(text):
    """`vdsogen run`'s stderr without the line that says only the image's loaded part is mapped."""
    return "".join(line for line in text.splitlines(keepends=True) if LOADED_PART_ONLY not in line)


def run_cli(root, *args):
    """vdsogen on the tree at root (a project_copy), through VDSOGEN_ROOT."""
    return vdsogen(*args, env={"VDSOGEN_ROOT": str(root)})


def edit(path, old, new, count=1):
    """Replace old by new in the file at path; old must be there."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


@pytest.fixture
def project_copy(tmp_path):
    """A private copy of specs/, arch/ and templates/ to break, used through VDSOGEN_ROOT."""
    root = tmp_path / "root"
    for d in ("specs", "arch", "templates", "harness"):
        if (ROOT / d).exists():
            shutil.copytree(ROOT / d, root / d)
    return root


# --- the C test harness -----------------------------------------------------

def harness_target(name):
    """The target as the harness runs it: its test build (an injected
    counter) where qemu-user cannot read the spec's counter."""
    target = load_target(name)
    return target.test_build() if target.harness.injected_counter else target


CLOCKS = ["REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI",
          "REALTIME_COARSE", "MONOTONIC_COARSE"]

# Ids the page does not serve, compared with the raw syscall (harness/checks-clock.c: h_syscall_ids).
SYSCALL_IDS = [3, 8, 9, 10, 13, 14, 15, 16, 23, -1, -2, -6, -57, -2**31]


def expected_checks(target):
    """Check names the harness must report for target, from its spec."""
    impls = {e.impl for e in target.exports}
    if target.datapage is None:     # no time data: no counter, and the clocks' checks are the arch's (parisc's)
        impls = {i for i in impls if not i.startswith(("clock_", "gettimeofday", "time"))}
    # A v6.17+ layout's aux clocks (CLOCK_AUX + i) get checks of their own, not id_16 and id_23.
    naux = target.datapage.layout.aux_clocks if target.datapage else 0
    syscall_ids = [i for i in SYSCALL_IDS if not 16 <= i < 16 + naux]
    aux = [f"AUX{i}" for i in range(naux)]
    names = ["map", "image", *(["counter"] if target.datapage else []), "syscall_numbers"]
    if (paths.ARCH / target.arch / "harness-patch.h.j2").is_file():
        names.append("patch")
    names += [f"symbol.{name}" for name, _, _ in target.symbols()]
    names += [f"trampoline.{t.name}" for t in target.trampolines]
    for fn in ("clock_gettime", "clock_gettime64"):
        if fn in impls:
            names += [f"{fn}.{c}" for c in CLOCKS + aux]
            names += [f"{fn}.PROCESS_CPUTIME_ID", f"{fn}.invalid_12", f"{fn}.invalid_100"]
            names += [f"{fn}.id_{i}" for i in syscall_ids]
            names += [f"y2038.{fn}.{c}" for c in ("REALTIME", "REALTIME_COARSE")]
    names += [f"y2038.{i}" for i in ("gettimeofday", "time") if i in impls]
    if "clock_gettime" in impls:
        if target.datapage.layout.has_max_cycles:
            names += ["max_cycles.forced", "max_cycles.overflow"]
        names += [f"clock_mode.{m}" for m in target.counter.modes]
        names += [f"clock_mode.{max(target.counter.modes) + 1}.syscall"]
        names += [f"mode_none.{c}" for c in CLOCKS]
        names += ["seqcount.wait.MONOTONIC", "seqcount.wait.MONOTONIC_RAW",
                  "seqcount.wait.REALTIME_COARSE", "seqcount.concurrent"]
        if target.datapage.layout.has_timens:
            names += [f"timens.{c}" for c in CLOCKS + aux[:1]]
            names += [f"timens.{i}" for i in ("gettimeofday", "time", "clock_getres") if i in impls]
        names += [f"mode_none.{i}" for i in ("gettimeofday", "time") if i in impls]
    for fn in ("clock_getres", "clock_getres_time64"):
        if fn in impls:
            names += [f"{fn}.{c}" for c in CLOCKS + aux]
            names += [f"{fn}.NULL", f"{fn}.invalid_12", f"{fn}.invalid_100"]
            names += [f"{fn}.id_{i}" for i in syscall_ids]
    if "gettimeofday" in impls:
        names += ["gettimeofday", "gettimeofday.tz", "gettimeofday.NULL"]
    if "time" in impls:
        names += ["time", "time.NULL"]
    for impl in ("getcpu", "get_tbfreq", "sync_dicache", "flush_icache", "riscv_hwprobe"):
        if impl in impls:
            names.append(impl)
    if "getrandom" in impls:
        names += [f"getrandom.{c}" for c in ("query", "map", "keystream", "lengths", "rekey", "fallback", "race",
                                             "fork", "states")]
    names += list(target.harness.checks)
    if "vsyscall" in impls:
        names += ["vsyscall.getpid", "vsyscall.error",
                  "vsyscall.four_arguments" if target.arch == "sh" else "vsyscall.six_arguments"]
    for impl in ("futex_robust_list64_try_unlock", "futex_robust_list32_try_unlock"):
        if impl in impls:
            names += [f"{impl}.{c}" for c in ("unlock", "contended", "critical_section")]
    if target.trampolines and (paths.ARCH / target.arch / "harness-signal.h.j2").is_file() \
            and target.harness.libc == "system":      # the unwind checks need libgcc
        names.append("unwind.eh_frame")
        names += [f"{c}.{t.name}" for t in target.trampolines if t.syscall in ("sigreturn", "rt_sigreturn")
                  for c in ("unwind", "sigreturn")]
    return names


def build_broken(target, outdir, edits, env=None):
    """Build an image from the rendered sources with text replacements applied.

    edits: {file name: [(old, new)]}; each `old` must occur in the rendered
    file, so a change to the templates shows up here instead of silently
    testing nothing.  No validation: the image is meant to be wrong.  `env`
    chooses the toolchain as the environment does (CROSS_COMPILE=, LLVM=).
    """
    files = []
    for fname, text in sources(target):
        for old, new in edits.get(fname, []):
            assert old in text, f"{fname} no longer contains {old!r}: update this test's edit"
            text = text.replace(old, new)
        files.append((fname, text))
    so, _ = build_target(target, outdir, builder=Builder(target, env=env, stream=io.StringIO()), files=files)
    return so


def isolated_run_cache(tmp_path_factory):
    """A module's own VDSOGEN_CACHE, for `vdsogen run`'s supervisor, probes
    and images, built once per module (use it as a module-scoped fixture)."""
    cache = tmp_path_factory.mktemp("run-cache")
    old = os.environ.get("VDSOGEN_CACHE")
    os.environ["VDSOGEN_CACHE"] = str(cache)
    yield cache
    if old is None:
        del os.environ["VDSOGEN_CACHE"]
    else:
        os.environ["VDSOGEN_CACHE"] = old


def run_broken(target, harness, image, timeout=None):
    """Run harness on image (within `timeout` seconds, else the driver's
    default); returns (status, Outcome, output)."""
    out = io.StringIO()
    limit = {} if timeout is None else {"timeout": timeout}
    status, outcome = run_harness(target, harness, image, Builder(target, stream=out), out, **limit)
    return status, outcome, out.getvalue()


def run_variant(variant, work):
    """Build, check and run variant (a Target) the way `vdsogen test` does; returns (status, Outcome, output)."""
    out = io.StringIO()
    status, outcome = run_tests_full(variant, workdir=work, stream=out, builder=Builder(variant, stream=out))
    return status, outcome, out.getvalue()


@pytest.fixture(scope="session")
def harnesses(tmp_path_factory):
    """harnesses(name) -> the target's built harness, compiled once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = harness_target(name)
            work = tmp_path_factory.mktemp(f"harness-{name}")
            cache[name] = build_harness(target, work, Builder(target, stream=io.StringIO()))
        return cache[name]

    return get


@pytest.fixture(scope="session")
def good_runs(tmp_path_factory):
    """good_runs(name) -> (status, Outcome, output, image path), built and run once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = harness_target(name)
            work = tmp_path_factory.mktemp(f"good-{name}")
            out = io.StringIO()
            status, outcome = run_tests_full(target, workdir=work, stream=out,
                                             builder=Builder(target, stream=out))
            cache[name] = (status, outcome, out.getvalue(), work / "image" / "vdso.so")
        return cache[name]

    return get


# --- the fast tier ----------------------------------------------------------

# `make check-fast` runs the tests marked fast: these modules, whose tests read
# specs, layouts and the model, render sources and check a few images, with
# no harness run and no audit corpus (its build alone takes 20 s).  Everything
# runs in the full suite (`sh scripts/test.sh`).
FAST_MODULES = {"test_spec", "test_spec_extends", "test_spec_errors", "test_contracts", "test_layout", "test_golden",
                "test_rules", "test_kconfig", "test_isa", "test_hacking"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module is not None and item.module.__name__ in FAST_MODULES:
            item.add_marker(pytest.mark.fast)


def as_kernels(so, dest, version=(7, 2, 13)):
    """A copy of a vdsogen image as a kernel's would be: no notes of owner "vdsogen" (renamed), and a
    Linux version note naming `version`."""
    from vdsogen.elf.reader import ElfImage

    img = ElfImage(str(so))
    data = bytearray(so.read_bytes())
    at = data.index(b"vdsogen\0")
    data[at:at + 8] = b"kernelx\0"
    code = (version[0] << 16 | version[1] << 8 | version[2]).to_bytes(4, img.endian)
    old = next(bytes(n.desc) for n in img.notes if n.name == "Linux" and n.type == 0)
    at = data.index(b"Linux\0\0\0" + old)
    data[at + 8:at + 12] = code
    dest.write_bytes(bytes(data))
    return dest


def with_alt_records(so, dest, records, tail: bytes, edits, fmt: str, align: int):
    """A copy of the image `so` at `dest` with an .altinstructions section of
    boot-time patch records (vdsogen/harness/alternatives.py), packed by the
    struct format `fmt` whose first two fields are the offsets, each from
    itself, of the instructions and of their replacement; then the record's
    other fields.  A record is (orig, repl, *fields): orig a file offset,
    repl one or ("tail", i), byte i of `tail`, which goes in a section
    .altinstr_replacement at an `align`-byte boundary, as code is.  `edits`
    are (file offset, bytes) written over the copy first."""
    import struct
    import subprocess

    from vdsogen.elf.reader import ElfImage

    size = struct.calcsize(fmt)
    data = bytearray(so.read_bytes())
    for at, b in edits:
        data[at:at + len(b)] = b
    plain = dest.with_suffix(".plain")
    plain.write_bytes(bytes(data))
    recs, repl = dest.with_suffix(".recs"), dest.with_suffix(".repl")
    recs.write_bytes(bytes(size * len(records)))
    pad = 0
    for _ in range(2):      # again with the replacement at its boundary
        repl.write_bytes(bytes(pad) + tail)
        subprocess.run(["llvm-objcopy", f"--add-section=.altinstructions={recs}",
                        f"--add-section=.altinstr_replacement={repl}", str(plain), str(dest)], check=True)
        img = ElfImage(str(dest))
        sec, rep = img.section(".altinstructions"), img.section(".altinstr_replacement")
        assert sec is not None and rep is not None
        if (rep.offset + pad) % align == 0:
            break
        pad = -rep.offset % align
    start = rep.offset + pad
    data = bytearray(dest.read_bytes())
    for i, (orig, repl_at, *fields) in enumerate(records):
        at = sec.offset + size * i
        if isinstance(repl_at, tuple):
            repl_at = start + repl_at[1]
        struct.pack_into(fmt, data, at, orig - at, repl_at - (at + 4), *fields)
    dest.write_bytes(bytes(data))
    return dest


# The head of the C programs that compare the image's clocks with the kernel's
# (test_run_runtime's soak, test_run_host_clock's triples): by_syscall(CLK)
# through the syscall itself (a C library might answer from the vDSO), and
# by_vdso(CLK) through the C library's clock_gettime, which asks the vDSO.
CLOCK_READERS_C = r"""#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef SYS_clock_gettime64
#define NR_CLOCK	SYS_clock_gettime64
#else
#define NR_CLOCK	SYS_clock_gettime
#endif

static int64_t by_syscall(int clk)
{
	struct { int64_t sec, nsec; } ts;

	syscall(NR_CLOCK, clk, &ts);
	return ts.sec * 1000000000LL + ts.nsec;
}

static int64_t by_vdso(int clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
"""
