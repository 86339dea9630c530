"""`vdsogen audit` reads untrusted files: thousands of mutated images (hypothesis)
must each end in exit-code 0, 1 or 2, never an exception, never a hang.

Seeds are vdsogen's own images (stripped and unstripped) and corpus images of
other ABIs (s390x's 8-byte .hash, big-endian MIPS n64, Thumb, i386, ELFv1).
Mutations: byte flips, truncation, header and table fields overwritten with
edge values, hash chains made to loop, segments made to overlap.  Each run
is timed; the slowest is printed, and a run over a second fails as a hang
(the per-file bound the issue sets), as does any run that needs the alarm.
"""

import signal
import struct
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
import corpus as corpus_images
from vdsogen.audit import audit_bytes
from vdsogen.elf import ElfImage, Unreadable


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return corpus_images.shared(tmp_path_factory)


SEEDS_VDSOGEN = [("x86_64", "so"), ("x86_64", "dbg"), ("arm64", "so"), ("ppc64le", "so"), ("ppc64le", "dbg")]
SEEDS_CORPUS = ["s390x", "mips-n64-be", "arm64-compat", "i386", "ppc64", "riscv64", "x86_64-gnuld"]
EXAMPLES = 400            # per seed: 12 seeds, 4800 mutated images
HANG_GUARD = 5            # seconds: SIGALRM turns a hang into a failure
PER_FILE_LIMIT = 1.0      # seconds, as the issue bounds each file
STATS = {"tried": 0, "slowest": 0.0, "slowest_case": None, "exit": {0: 0, 1: 0, 2: 0}}
EDGE = [0, 1, 2, 3, 4, 7, 8, 0x10, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
        0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF]


class Seed:
    """A good image and the file offsets of the fields worth overwriting."""

    def __init__(self, name, data):
        self.name = name
        self.data = data
        img = ElfImage(name, data)
        self.e = "<" if img.little else ">"
        w = img.wsize
        self.fields = [(o, s) for o, s in ((0x10, 2), (0x12, 2), (0x18, w), (0x18 + w, w), (0x18 + 2 * w, w),
                                           (0x24 if w == 4 else 0x30, 4))]
        self.fields += [(0x2C if w == 4 else 0x38, 2), (0x30 if w == 4 else 0x3C, 2), (0x32 if w == 4 else 0x3E, 2)]
        for seg in img.segments:
            for k in range(8 if w == 4 else 7):
                self.fields.append((seg.hdr_offset + (4 * k if w == 4 else (0, 4, 8, 16, 24, 32, 40)[k]),
                                    4 if w == 4 or k < 2 else 8))
        for sec in img.sections:
            step = 4 if w == 4 else 8
            self.fields += [(sec.hdr_offset + 4, 4), (sec.hdr_offset + 8 + 2 * step, step),
                            (sec.hdr_offset + 8 + 3 * step, step), (sec.hdr_offset + 8 + 4 * step, 4)]
        for _tag, _val, off in img.dynamic or ():
            self.fields += [(off, w), (off + w, w)]
        self.tables = []
        for name in ("HASH", "GNU_HASH", "VERDEF", "VERSYM", "SYMTAB", "STRTAB"):
            addr = img.dyn(name)
            if addr is not None:
                try:
                    self.tables.append((name, img.offset_of(addr)))
                except Unreadable:
                    pass
        for _n, off in self.tables:
            self.fields += [(off + 4 * i, 4) for i in range(8)]
        for n in img.notes:
            self.fields += [(n.offset, 4), (n.offset + 4, 4), (n.offset + 8, 4)]
        self.fields = [(o, s) for o, s in self.fields if o + s <= len(data)]
        self.hash_word = img.hash_word
        self.sysv = img.sysv_hash() if img.dyn("HASH") is not None else None
        self.sysv_off = dict(self.tables).get("HASH")


# -- mutations ---------------------------------------------------------------------------

def flip(seed, data, offset, xor):
    data[offset % len(data)] ^= xor or 1


def overwrite(seed, data, index, value):
    off, size = seed.fields[index % len(seed.fields)]
    struct.pack_into(seed.e + {2: "H", 4: "I", 8: "Q"}[size], data, off, value & ((1 << 8 * size) - 1))


def loop_chain(seed, data, index, target):
    """Make a DT_HASH chain entry point back into its chain."""
    if seed.sysv is None:
        return
    nbucket, nchain, _b, _c = seed.sysv
    if not nchain:
        return
    i = index % nchain
    word = seed.hash_word
    off = seed.sysv_off + (2 + nbucket + i) * word
    struct.pack_into(seed.e + ("I" if word == 4 else "Q"), data, off, target % max(nchain, 1) or i)


def overlap_segments(seed, data, a, b):
    img = ElfImage(seed.name, seed.data)
    if len(img.segments) < 2:
        return
    src, dst = img.segments[a % len(img.segments)], img.segments[b % len(img.segments)]
    size = 32 if img.elf_class == 32 else 56
    data[dst.hdr_offset:dst.hdr_offset + size] = seed.data[src.hdr_offset:src.hdr_offset + size]


OPS = st.one_of(
    st.tuples(st.just(flip), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just(overwrite), st.integers(0, 1 << 16), st.one_of(st.sampled_from(EDGE),
                                                                      st.integers(0, (1 << 64) - 1))),
    st.tuples(st.just(loop_chain), st.integers(0, 1 << 16), st.integers(0, 64)),
    st.tuples(st.just(overlap_segments), st.integers(0, 16), st.integers(0, 16)),
)
CASES = st.tuples(st.lists(OPS, min_size=1, max_size=4), st.one_of(st.none(), st.integers(0, 1 << 20)))


def mutate(seed, case):
    ops, cut = case
    data = bytearray(seed.data)
    for fn, x, y in ops:
        fn(seed, data, x, y)
    if cut is not None:
        del data[cut % (len(data) + 1):]
    return bytes(data)


def _alarm(signum, frame):
    raise TimeoutError("audit hung")


def audit_timed(seed, data, case):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_GUARD)
    try:
        start = time.perf_counter()
        report = audit_bytes(f"{seed.name}-mutant", data)
        elapsed = time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    STATS["tried"] += 1
    STATS["exit"][report.exit_code] += 1
    if elapsed > STATS["slowest"]:
        STATS["slowest"], STATS["slowest_case"] = elapsed, (seed.name, case)
    assert report.exit_code in (0, 1, 2)
    if report.status == "unusable":
        assert str(report.error).startswith(f"{seed.name}-mutant")
    assert elapsed < PER_FILE_LIMIT, f"{seed.name}: {elapsed:.3f} s for {case}"
    return report


@pytest.fixture(scope="module")
def seeds(built, corpus):
    out = []
    for name, which in SEEDS_VDSOGEN:
        _t, so, dbg = built(name)
        path = so if which == "so" else dbg
        out.append(Seed(f"{name}.{which}", path.read_bytes()))
    for name, path in corpus.many(SEEDS_CORPUS).items():
        out.append(Seed(name, path.read_bytes()))
    return out


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def fuzz_seed(seed):
    assert audit_bytes(seed.name, seed.data).status == "audited"

    @FUZZ
    @given(CASES)
    def run(case):
        audit_timed(seed, mutate(seed, case), case)

    run()
    STATS.setdefault("seeds", set()).add(seed.name)


@pytest.mark.parametrize("index", range(len(SEEDS_VDSOGEN) + len(SEEDS_CORPUS)))
def test_mutated_images_never_crash_or_hang(seeds, index):
    fuzz_seed(seeds[index])


def test_fuzz_figures(seeds, capsys):
    """Prints the figures the issue asks for (fuzzing any seed not yet fuzzed in this run)."""
    for seed in seeds:
        if seed.name not in STATS.get("seeds", ()):
            fuzz_seed(seed)
    with capsys.disabled():
        print(f"\nfuzz: {STATS['tried']} mutated images audited, exit codes {STATS['exit']}, "
              f"slowest {STATS['slowest'] * 1000:.1f} ms ({STATS['slowest_case'] and STATS['slowest_case'][0]})")
    assert STATS["tried"] >= 4000


def test_mutants_through_the_cli(seeds, tmp_path):
    """A few mutants through the real command line: exit 0/1/2, no traceback."""
    cases = [([(overwrite, 1, 0xFFFFFFFF)], None), ([(flip, 0x40, 0xFF)], None), ([(loop_chain, 0, 0)], None),
             ([(overlap_segments, 0, 1)], None), ([(flip, 3, 1)], 200), ([(overwrite, 40, 0)], None)]
    paths = []
    for i, case in enumerate(cases):
        p = tmp_path / f"m{i}.so"
        p.write_bytes(mutate(seeds[i % len(seeds)], case))
        paths.append(p)
    for p in paths:
        proc = subprocess.run([sys.executable, "-m", "vdsogen", "audit", str(p)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode in (0, 1, 2), proc.stderr
        assert "Traceback" not in proc.stderr
        if proc.returncode == 2:
            assert str(p) in proc.stderr


def test_hash_chain_loop_is_unusable(seeds):
    seed = next(s for s in seeds if s.name == "x86_64.so")
    data = bytearray(seed.data)
    nbucket, nchain, buckets, _chains = seed.sysv
    first = next(b for b in buckets if b)
    struct.pack_into("<I", data, seed.sysv_off + (2 + nbucket + first) * 4, first)    # chain[i] = i
    report = audit_bytes("looped.so", bytes(data))
    assert report.exit_code == 2 and "loops" in str(report.error)
