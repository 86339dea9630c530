"""The core functions' harness wiring is generated from functions.toml.

Each core function's [NAME.harness] table says which check groups run it,
how its result is compared with its syscall (its flavour) and its benchmark
rows; vdsogen renders them into harness_functions.h and .c for each target.
A toy function declared in a copy of functions.toml gets its groups,
flavour and rows, and the harness compiles with it, without a line of
harness/*.c; a table with a misspelt key is an error naming the file and
the key.  The supervisor's seccomp filter (runner/supervise.c) is built by
code that resolves its jumps; run through a small BPF interpreter here, it
traces exactly the clock syscalls the specs number.
"""

import dataclasses
import io
import re
import subprocess

import pytest

from conftest import ROOT, TARGETS
from vdsogen.build.toolchain import Builder
from vdsogen.errors import SpecError
from vdsogen.harness.driver import build_harness, harness_sources
from vdsogen.spec import functions
from vdsogen.spec.model import Export, load_target

CATALOGUE_TEXT = functions.CATALOGUE.read_text()

# A core function of an existing shape: clock_gettime64's declaration under another name.
TOY = '''
[clock_gettime_toy]
returns = "int"
params = ["clockid_t clock", "struct vdso_timespec64 *ts"]
syscall = "clock_gettime64"
result = "errno"
data = true
where = "core"

[clock_gettime_toy.harness]
flavour = "timespec"
checks = ["clocks", "ids"]
y2038 = true

[clock_gettime_toy.harness.bench]
shape = "gettime"
rows = ["MONOTONIC", "REALTIME_COARSE"]
hot_paths = { "counter clock" = [1], "coarse clock" = [0] }
'''


@pytest.fixture
def catalogue(tmp_path, monkeypatch):
    """catalogue(text): functions.toml replaced by `text` (in a copy) until the test ends."""
    path = tmp_path / "functions.toml"

    def use(text):
        path.write_text(text)
        monkeypatch.setattr(functions, "CATALOGUE", path)
        functions.catalogue.cache_clear()
        return path

    yield use
    functions.catalogue.cache_clear()


def generated(target):
    files = dict(harness_sources(target))
    return files["harness_functions.h"], files["harness_functions.c"]


def groups(c_text):
    """[(group name, IMPL_ name, C function)] of h_function_groups[]."""
    table = c_text.split("h_function_groups[] = {")[1].split("};")[0]
    return re.findall(r'\{ "([^"]+)", IMPL_(\w+), (\w+) \},', table)


def bench_rows(c_text):
    """[(IMPL_ name, row or NULL, shape, flavour)] of h_bench_rows[]."""
    table = c_text.split("h_bench_rows[] = {")[1].split("};")[0]
    return re.findall(r'\{ IMPL_(\w+), ("\w+"|NULL), SH_(\w+), \w+, (&fl_\w+|NULL), SC_\w+ \},', table)


def expected_groups(target):
    out = []
    for f in functions.catalogue().values():
        if f.harness and f.name in {g.name for g in target.functions}:
            for c in f.harness.checks:
                name = f.name if c == f.name else f"{f.name} {c}"
                run = f"grp_{f.name}_{c}" if f.harness.flavour else f"check_{c}"
                out.append((name, f.name.upper(), run))
    return out


@pytest.mark.parametrize("name", TARGETS)
def test_groups_and_rows_follow_functions_toml(name):
    target = load_target(name)
    h, c = generated(target)
    assert groups(c) == expected_groups(target), c
    exported = {f.name for f in target.functions}
    want_rows = [(f.name.upper(), f'"{r}"' if r else "NULL", f.harness.bench.shape.upper(),
                  f"&fl_{f.name}" if f.harness.flavour else "NULL")
                 for f in functions.catalogue().values()
                 if f.name in exported and f.harness and f.harness.bench
                 for r in (f.harness.bench.rows or (None,))]
    assert bench_rows(c) == want_rows, c
    assert re.search(rf"^#define H_NBENCH_ROWS\s+{len(want_rows)}$", h, re.M), h
    flavours = [f.name for f in functions.catalogue().values() if f.name in exported and f.harness
                and f.harness.flavour]
    assert re.findall(r"^extern const struct ts_flavour fl_(\w+);$", h, re.M) == flavours


def test_a_toy_core_function_is_wired_from_its_declaration(catalogue, tmp_path):
    """Declared in functions.toml and exported, a function of an existing shape
    gets its flavour, groups, y2038 entry and bench rows, and the harness
    compiles with them: nothing of harness/*.c names it."""
    catalogue(CATALOGUE_TEXT + TOY)
    base = load_target("i386")
    _, before = generated(base)
    toy = Export("__vdso_clock_gettime_toy", functions.get("clock_gettime_toy"), "LINUX_2.6", "global", (), "core")
    target = dataclasses.replace(base, exports=(*base.exports, toy))
    h, c = generated(target)
    assert "clock_gettime_toy" not in before
    assert ("clock_gettime_toy clocks", "CLOCK_GETTIME_TOY", "grp_clock_gettime_toy_clocks") in groups(c)
    assert ("clock_gettime_toy ids", "CLOCK_GETTIME_TOY", "grp_clock_gettime_toy_ids") in groups(c)
    assert "check_clocks(&fl_clock_gettime_toy);" in c and "check_ids(&fl_clock_gettime_toy);" in c
    assert "extern const struct ts_flavour fl_clock_gettime_toy;" in h
    # Its flavour reads the declared timespec and compares with the declared syscall.
    assert "const struct vdso_timespec64 *ts = p;" in c.split("get_clock_gettime_toy")[1]
    assert "IMPL_CLOCK_GETTIME_TOY, NR_CLOCK_GETTIME64, sizeof(struct vdso_timespec64)" in c
    assert "\t&fl_clock_gettime_toy,\n" in c.split("h_y2038_flavours[]")[1]
    assert [r for r in bench_rows(c) if r[0] == "CLOCK_GETTIME_TOY"] == [
        ("CLOCK_GETTIME_TOY", '"MONOTONIC"', "GETTIME", "&fl_clock_gettime_toy"),
        ("CLOCK_GETTIME_TOY", '"REALTIME_COARSE"', "GETTIME", "&fl_clock_gettime_toy")]
    exe = build_harness(target, tmp_path / "work", Builder(target, stream=io.StringIO()))
    assert exe.is_file()


def test_a_function_without_harness_table_gets_no_wiring(catalogue):
    """Remove clock_getres's [NAME.harness] and its groups and rows go with it."""
    text = re.sub(r"\n\[clock_getres\.harness\]\n.*?(?=\n# |\n\[clock_getres_time64\])", "\n", CATALOGUE_TEXT,
                  flags=re.S)
    assert "[clock_getres.harness" not in text and "[clock_getres_time64.harness]" in text
    _, with_it = generated(load_target("x86_64"))
    catalogue(text)
    _, without = generated(load_target("x86_64"))
    assert "clock_getres resolutions" in with_it and "clock_getres resolutions" not in without
    assert any(r[0] == "CLOCK_GETRES" for r in bench_rows(with_it))
    assert not any(r[0] == "CLOCK_GETRES" for r in bench_rows(without))
    assert "fl_clock_getres" not in without


BAD = [
    ('checks = ["clocks", "ids"]', 'chekcs = ["clocks", "ids"]', "clock_gettime.harness.chekcs: unknown key"),
    ('checks = ["clocks", "ids"]', 'checks = ["clokcs", "ids"]',
     "clock_gettime.harness.checks[0]: 'clokcs' is not a harness check"),
    ('flavour = "timespec"', 'flavour = "timespek"', "clock_gettime.harness.flavour: 'timespek' is not one of"),
    ('shape = "gettime"', 'shape = "gettimeofday"', "clock_gettime.harness.bench.shape: 'gettimeofday' is "
                                                    "gettimeofday()'s own call"),
    ('rows = ["REALTIME", ', 'rows = ["REALTYME", ', "clock_gettime.harness.bench.rows[0]: 'REALTYME' is not a clock"),
    ('hot_paths = { "counter clock" = [1], "coarse clock" = [0] }', 'hot_path = [1]\nhot_paths = {}',
     "clock_gettime.harness.bench.hot_paths: give hot_path"),
]


@pytest.mark.parametrize("old, new, message", BAD, ids=[b[2].split(":")[0] for b in BAD])
def test_a_bad_harness_key_names_file_and_key(catalogue, old, new, message):
    assert old in CATALOGUE_TEXT
    path = catalogue(CATALOGUE_TEXT.replace(old, new, 1))
    with pytest.raises(SpecError) as e:
        functions.catalogue()
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)


def test_an_arch_function_takes_no_harness_table(catalogue):
    path = catalogue(CATALOGUE_TEXT + '\n[get_tbfreq.harness]\nchecks = ["get_tbfreq"]\n')
    with pytest.raises(SpecError, match=re.escape(f"{path}: get_tbfreq.harness: only a core function")):
        functions.catalogue()


def test_every_check_and_shape_functions_toml_may_name_exists_in_c():
    checks = "".join(p.read_text() for p in ROOT.glob("harness/checks-*.c"))
    for c in functions.FLAVOUR_CHECKS:
        assert re.search(rf"^void check_{c}\(const struct ts_flavour \*fl\)$", checks, re.M), c
    for c in functions.FUNCTION_CHECKS:
        assert re.search(rf"^void check_{c}\(void\)$", checks, re.M), c
    internal = (ROOT / "harness" / "internal.h").read_text()
    enum = re.search(r"enum \{ (SH_\w+(?:, SH_\w+)*) \};", internal)[1]
    assert {f"SH_{s.upper()}" for s in functions.FLAVOUR_SHAPES + functions.FUNCTION_SHAPES} <= set(enum.split(", "))
    for name in functions.CLOCK_IDS:
        assert re.search(rf"\bC_{name} = {functions.CLOCK_IDS[name]}\b", internal), name


# --- the supervisor's seccomp filter ----------------------------------------------------

AUDIT_ARCH_X86_64, AUDIT_ARCH_I386 = 0xC000003E, 0x40000003
RET_TRACE, RET_ALLOW = 0x7FF00000, 0x7FFF0000
X32_BIT = 0x40000000
COUNTED = {"clock_gettime": 0, "gettimeofday": 1, "clock_getres": 3, "clock_gettime64": 0, "clock_getres_time64": 3}


def dumped_filter():
    from vdsogen.run import build_supervisor

    out = subprocess.run([str(build_supervisor()), "--dump-filter"], capture_output=True, text=True, check=True)
    return [tuple(int(w, 0) for w in line.split()) for line in out.stdout.splitlines()]


def run_bpf(prog, arch, nr):
    """What the classic BPF program answers for a syscall: the loads and jumps the filter uses."""
    data = {0: nr, 4: arch}
    acc, pc = 0, 0
    for _ in range(len(prog)):
        code, jt, jf, k = prog[pc]
        if code == 0x20:                      # BPF_LD | BPF_W | BPF_ABS
            acc, pc = data[k], pc + 1
        elif code == 0x15:                    # BPF_JMP | BPF_JEQ | BPF_K
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x06:                    # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"instruction {pc}: code {code:#x}")
        assert pc < len(prog), "jumped past the end"
    raise AssertionError("no return")


def test_the_supervisors_filter_traces_the_specs_clock_syscalls():
    """Built with its jumps resolved, the filter traces each clock syscall the
    x86 specs number (x32's with the x32 bit too), by what it is, and lets
    every other syscall and architecture through."""
    prog = dumped_filter()
    assert all(jt < len(prog) and jf < len(prog) for _, jt, jf, _ in prog)
    cases = []
    for name, arch, bits in (("x86_64", AUDIT_ARCH_X86_64, (0,)), ("x32", AUDIT_ARCH_X86_64, (X32_BIT,)),
                             ("i386", AUDIT_ARCH_I386, (0,))):
        numbers = load_target(name).syscalls.numbers
        for call, what in COUNTED.items():
            if call in numbers:
                cases += [(arch, numbers[call] | b, RET_TRACE | what) for b in bits]
        cases.append((arch, numbers["getcpu"], RET_ALLOW))
    assert len(cases) > 12
    for arch, nr, want in cases:
        assert run_bpf(prog, arch, nr) == want, (hex(arch), nr)
    assert run_bpf(prog, 0xC00000B7, 113) == RET_ALLOW          # an arm64 task: not counted
