"""`vdsogen audit` reads untrusted files: thousands of mutated images (hypothesis)
must each end in exit-code 0, 1 or 2, never an exception, never a hang.

Seeds are vdsogen's own images (stripped and unstripped) and corpus images of
other ABIs (s390x's 8-byte .hash, big-endian MIPS n64, Thumb, i386, ELFv1).
Mutations: byte flips, truncation, header and table fields overwritten with
edge values, hash chains made to loop, segments made to overlap.  Small seeds
never make large counts, so worst cases are also written from scratch
(elfmut.synthesize): huge nbucket/nchain claims, long but valid chains,
thousands of sections, big symbol tables, long names, deep branch graphs.

What bounds the time per file is the work budget (vdsogen.elf.Budget): the
tests assert that no file takes more units than WORK_BUDGET, and that real
images need at most a fiftieth of it.  No test asserts a wall time (the
project's rule: timings are benchmarks); the slowest file is printed, and
only a loose alarm (HANG_GUARD) turns a real hang into a failure.
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
from elfmut import SYNTH_ABIS, synthesize
from vdsogen.audit.run import audit_bytes
from vdsogen.elf.reader import WORK_BUDGET, ElfImage, TooComplex, Unreadable


SEEDS_VDSOGEN = [("x86_64", "so"), ("x86_64", "dbg"), ("arm64", "so"), ("ppc64le", "so"), ("ppc64le", "dbg")]
SEEDS_CORPUS = ["s390x", "mips-n64-be", "arm64-compat", "i386", "ppc64", "riscv64", "x86_64-gnuld"]
EXAMPLES = 400            # per seed: 12 seeds, 4800 mutated images
WORST_EXAMPLES = 150      # images written from scratch
HANG_GUARD = 30           # seconds per file: SIGALRM turns a real hang into a failure (not a timing)
MARGIN = 50               # the budget is at least this many times what a real image needs
STATS = {"tried": 0, "slowest": 0.0, "slowest_case": None, "exit": {0: 0, 1: 0, 2: 0}, "max_work": 0,
         "max_work_case": None, "too_complex": 0, "worst": 0}
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


def audit_guarded(name, data, case):
    """Audit one file: exit 0, 1 or 2, the work within the budget; the wall
    time is recorded, not asserted."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_GUARD)
    try:
        start = time.perf_counter()
        report = audit_bytes(name, data)
        elapsed = time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    STATS["tried"] += 1
    STATS["exit"][report.exit_code] += 1
    STATS["too_complex"] += isinstance(report.error, TooComplex)
    if elapsed > STATS["slowest"]:
        STATS["slowest"], STATS["slowest_case"] = elapsed, (name, case)
    if report.work > STATS["max_work"]:
        STATS["max_work"], STATS["max_work_case"] = report.work, (name, case)
    assert report.exit_code in (0, 1, 2)
    if report.status == "unusable":
        assert str(report.error).startswith(name)
    assert report.work <= WORK_BUDGET, f"{name}: {report.work} units for {case}"
    return report


def audit_timed(seed, data, case):
    return audit_guarded(f"{seed.name}-mutant", data, case)


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
    report = audit_bytes(seed.name, seed.data)
    assert report.status == "audited"
    assert report.work * MARGIN <= WORK_BUDGET, f"{seed.name} needs {report.work} units"

    @FUZZ
    @given(CASES)
    def run(case):
        audit_timed(seed, mutate(seed, case), case)

    run()
    STATS.setdefault("seeds", set()).add(seed.name)


@pytest.mark.parametrize("index", range(len(SEEDS_VDSOGEN) + len(SEEDS_CORPUS)))
def test_mutated_images_never_crash_or_hang(seeds, index):
    fuzz_seed(seeds[index])


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


# -- worst cases, written from scratch ----------------------------------------------------------

CLAIMS = st.lists(st.tuples(st.sampled_from(["nbucket", "nchain", "gnu_nbuckets", "gnu_symoffset", "gnu_bloom_size",
                                             "e_shnum", "e_phnum", "strsz"]),
                            st.sampled_from(EDGE)), max_size=2)
WORST = st.one_of(
    # Big symbol tables (up to past the cap), and any bucket counts: 1 makes one long, valid chain.
    st.fixed_dictionaries({"abi": st.sampled_from(sorted(SYNTH_ABIS)), "nsyms": st.integers(500, 4200),
                           "core_last": st.booleans(), "nbucket": st.one_of(st.just(1), st.integers(1, 70000)),
                           "gnu_nbuckets": st.one_of(st.just(1), st.integers(1, 8192)), "claims": CLAIMS}),
    # Long names in long chains: hashing them is charged by length.
    st.fixed_dictionaries({"nsyms": st.integers(1, 120), "name_len": st.sampled_from([200, 4000]),
                           "nbucket": st.just(1), "gnu_nbuckets": st.just(1)}),
    # Deep branch graphs, overlapping executable sections, a .symtab entry per block.
    st.fixed_dictionaries({"abi": st.sampled_from(["x86_64", "arm64"]), "blocks": st.integers(1, 40000),
                           "graph": st.sampled_from(["straight", "chain", "calls", "random"]),
                           "seed": st.integers(0, 1 << 16), "exec_sections": st.sampled_from([0, 1, 30, 240]),
                           "symtab": st.booleans(), "nsyms": st.integers(1, 300)}),
    st.fixed_dictionaries({"abi": st.sampled_from(["ppc64le", "riscv64", "loongarch64"]),
                           "blocks": st.integers(1, 40000), "exec_sections": st.sampled_from([0, 240])}),
    # Thousands of sections (past the cap), and huge counts claimed in the headers.
    st.fixed_dictionaries({"extra_sections": st.one_of(st.integers(0, 240), st.integers(241, 5000)),
                           "claims": CLAIMS}),
)


def fuzz_worst_cases():
    @settings(FUZZ, max_examples=WORST_EXAMPLES)
    @given(WORST)
    def run(params):
        audit_guarded("synthetic", synthesize(**params), params)
        STATS["worst"] += 1

    run()


def test_worst_cases_stay_within_the_budget():
    fuzz_worst_cases()


def test_synthetic_images_are_sound():
    """The generator writes valid tables: a long single chain and a big table
    audit without hash findings, and every consumer finds its lookups."""
    for params in ({}, {"nsyms": 1500, "nbucket": 1, "gnu_nbuckets": 1}, {"nsyms": 4000},
                   {"abi": "arm64", "blocks": 500, "graph": "random", "symtab": True}):
        report = audit_bytes("synthetic", synthesize(**params))
        assert report.status == "audited", (params, report.error)
        assert not {f.rule for f in report.findings} & {"X003", "L001", "L002", "K002"}, params
        assert {c.verdict for c in report.consumers} == {"works"}, params


def test_the_budget_ends_what_no_vdso_needs():
    """Every kind of work is charged: each of these ends in "too complex"."""
    for params in ({"blocks": 100000},                                      # instructions
                   {"abi": "arm64", "blocks": 100000, "graph": "chain"},
                   {"abi": "ppc64le", "blocks": 100000},                    # code words (K001)
                   {"nsyms": 1000, "name_len": 4000, "nbucket": 1}):        # hashing long names
        report = audit_bytes("big", synthesize(**params))
        assert isinstance(report.error, TooComplex), (params, report.error, report.work)
        assert report.exit_code == 2 and "too complex for a vDSO" in str(report.error)
        assert report.work <= WORK_BUDGET


def test_chain_steps_are_charged():
    """Hash-chain steps are charged too; within the symbol cap (4096) one chain
    of 4000 symbols, walked by every lookup, takes about 61000 units, under
    the budget since real images' getrandom code raised it to 200000."""
    report = audit_bytes("big", synthesize(nsyms=4000, nbucket=1, gnu_nbuckets=1, core_last=True))
    assert 50000 < report.work <= WORK_BUDGET, (report.error, report.work)


def test_caps_refuse_absurd_counts_at_once():
    for params, what in (({"nsyms": 4097}, "symbols, absurd"), ({"extra_sections": 300}, "e_shnum"),
                         ({"claims": [("nchain", 0xFFFFFFFF)]}, "DT_HASH claims")):
        report = audit_bytes("absurd", synthesize(**params))
        assert report.exit_code == 2 and what in str(report.error), (params, report.error)
        assert report.work < 1000


def test_worst_case_through_the_cli(tmp_path):
    p = tmp_path / "deep.so"
    p.write_bytes(synthesize(blocks=100000, graph="chain"))
    proc = subprocess.run([sys.executable, "-m", "vdsogen", "audit", str(p)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{p}: too complex for a vDSO" in proc.stderr


def test_fuzz_figures(seeds, capsys):
    """Prints the figures the issue asks for (fuzzing what was not fuzzed yet in
    this run): files tried, exit codes, the most work, the slowest file."""
    for seed in seeds:
        if seed.name not in STATS.get("seeds", ()):
            fuzz_seed(seed)
    if not STATS["worst"]:
        fuzz_worst_cases()
    with capsys.disabled():
        print(f"\nfuzz: {STATS['tried']} images audited ({STATS['worst']} written from scratch), "
              f"exit codes {STATS['exit']}, {STATS['too_complex']} too complex; "
              f"most work {STATS['max_work']} of {WORK_BUDGET} units "
              f"({STATS['max_work_case'] and STATS['max_work_case'][0]}); "
              f"slowest {STATS['slowest'] * 1000:.1f} ms ({STATS['slowest_case'] and STATS['slowest_case'][0]}), "
              "not asserted")
    assert STATS["tried"] >= 4000
