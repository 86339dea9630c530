"""The C test harness and `vdsogen test`.

Every target's image must pass every check; and the harness must be able to
fail: images built from deliberately broken sources must draw the specific
FAIL line that names the breakage.  Variants of the generic core (its
breakages, the coarse-clock setting, other layouts) run on one target of each
arch family, a different one from variant to variant
(conftest.across_families, one_per_family); every target's own image runs on
every target.
"""

import dataclasses
import io
import re

import pytest

from vdsogen import cli, paths
from vdsogen.build.image import build_target
from vdsogen.audit.check import build_validator
from vdsogen.errors import HarnessError, SpecError
from vdsogen.harness.driver import build_harness, run_harness, run_tests
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target
from vdsogen.build.toolchain import Builder

from conftest import (CLOCK_TARGETS, CLOCKS, TARGETS, TIME_TARGETS, across_families, build_broken, expected_checks,
                      harness_target, one_per_family, run_broken, run_variant)


COUNTER_CLOCKS = ["REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI"]


def booted_only(name, outcome, output):
    """A booted-only target ([harness] booted: s390-compat) runs no check here: the run says so, with
    status 1 and nothing passed (its harness runs on a booted kernel: tests/test_s390_compat.py)."""
    if not load_target(name).harness.booted:
        return False
    assert not outcome.passed and not outcome.failed and outcome.not_run == ["harness"], output
    assert outcome.summary == (0, 0) and outcome.summary_not_run == 1, output
    return True


@pytest.mark.parametrize("name", TARGETS)
def test_image_passes_every_check(name, good_runs):
    status, outcome, output, _ = good_runs(name)
    if booted_only(name, outcome, output):
        assert status == 1, output
        return
    assert not outcome.failed, output
    assert status == 0, output
    assert outcome.summary == (len(outcome.passed), 0), output
    missing = [c for c in expected_checks(load_target(name)) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"


@pytest.mark.parametrize("name", TARGETS)
def test_one_check_line_per_symbol(name, good_runs):
    _, outcome, output, _ = good_runs(name)
    if booted_only(name, outcome, output):
        return
    target = load_target(name)
    reported = sorted(c[len("symbol."):] for c in outcome.passed if c.startswith("symbol."))
    assert reported == sorted(n for n, _, _ in target.symbols()), output


# --- the harness can fail -------------------------------------------------

# Each breakage: the edits, and the checks that must then FAIL.  The core
# has a hot path inlined into each entry and a cold path out of line that
# redoes everything; a breakage edits the path its checks take (the hot one
# for a clock read on a fresh page), and the other too where both have it.
BREAKAGES = {
    # BOOTTIME answers from MONOTONIC's base.
    "swapped-base": (
        {"vdso_core.h": [("return vdso_hres_fast(&vc[CS_HRES_COARSE], clock, ts);",
                          "return vdso_hres_fast(&vc[CS_HRES_COARSE], clock == CLOCK_BOOTTIME ? "
                          "CLOCK_MONOTONIC : clock, ts);"),
                         ("ret = vdso_read_clock(vc, base, counter, &sec, &ns);",
                          "ret = vdso_read_clock(vc, base == CLOCK_BOOTTIME ? "
                          "CLOCK_MONOTONIC : base, counter, &sec, &ns);")]},
        ["clock_gettime.BOOTTIME"]),
    # The invalid-id path of clock_gettime writes into the caller's buffer.
    "invalid-id-writes": (
        {"vdso_core.h": [("return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);",
                          "{ ts->tv_nsec = 0; return vdso_syscall(VDSO_NR_clock_gettime, "
                          "clock, (long)ts, 0); }")]},
        ["clock_gettime.invalid_12", "clock_gettime.invalid_100"]),
    # The reader no longer waits while an update is in progress (the hot
    # path hands an odd sequence to the cold one, which must wait).
    "seqcount-no-wait": (
        {"vdso_core.h": [("while ((*seq = READ_ONCE(vc->seq)) & 1) {",
                          "while ((*seq = READ_ONCE(vc->seq)) & 1 && "
                          "READ_ONCE(vc->clock_mode) == VDSO_CLOCKMODE_TIMENS) {")]},
        ["seqcount.wait.MONOTONIC", "seqcount.wait.MONOTONIC_RAW"]),
    # The raw clock is read with the hres record's mult and shift.
    "raw-uses-hres-record": (
        {"vdso_core.h": [("ns = vdso_shift_ns(delta * vc->mult + vc->basetime[clk].nsec, vc->shift);",
                          "ns = vdso_shift_ns(delta * (vc - (clk == CLOCK_MONOTONIC_RAW))->mult + "
                          "vc->basetime[clk].nsec, (vc - (clk == CLOCK_MONOTONIC_RAW))->shift);"),
                         ("*ns = vdso_counter_ns(vc, cycles, *ns);",
                          "*ns = vdso_counter_ns(vc - (clk == CLOCK_MONOTONIC_RAW), cycles, *ns);")]},
        ["clock_gettime.MONOTONIC_RAW"]),
    # Namespace offsets are ignored.
    "timens-no-offset": (
        {"vdso_core.h": [("sec += offs->sec;", "(void)offs;")]},
        ["timens.MONOTONIC", "timens.BOOTTIME"]),
    # clock_getres answers 1 ns for the counter clocks without reading hrtimer_res.
    "getres-constant-1": (
        {"vdso_core.h": [("return READ_ONCE(VDSO_HRTIMER_RES(vd));", "return ((void)vd, 1);")]},
        [f"clock_getres.{c}" for c in COUNTER_CLOCKS]),
    # clock_getres answers the tick for the counter clocks too.
    "getres-tick-for-hres": (
        {"vdso_core.h": [("return READ_ONCE(VDSO_HRTIMER_RES(vd));", "return ((void)vd, VDSO_LOW_RES_NSEC);")]},
        [f"clock_getres.{c}" for c in COUNTER_CLOCKS]),
    # The id is range-checked as signed: negative ids reach the shift (UB);
    # the hardware masks the count, and -57 lands on BOOTTIME's bit.
    "signed-range-check": (
        {"vdso_core.h": [("(uint32_t)clock >= VDSO_MAX_CLOCKS", "clock >= VDSO_MAX_CLOCKS")]},
        ["clock_gettime.id_-57", "clock_getres.id_-57"]),
}


@pytest.mark.parametrize("name,breakage", across_families(CLOCK_TARGETS, sorted(BREAKAGES)))
def test_harness_catches(name, breakage, harnesses, tmp_path):
    target = harness_target(name)
    edits, must_fail = BREAKAGES[breakage]
    if breakage == "timens-no-offset" and not target.datapage.layout.has_timens:
        must_fail = []
    if breakage == "signed-range-check" and target.elf.machine_name == "EM_ARM":
        # An ARM shift by a register takes its low byte: past 31 it shifts
        # every bit out, so -57 reads no clock; INT_MIN (low byte 0) does.
        must_fail = ["clock_gettime.id_-2147483648", "clock_getres.id_-2147483648"]
    getres = any(e.function.name.startswith("clock_getres") for e in target.exports)
    if not getres:
        # No clock_getres (sparc32-compat, as Linux's): what breaks only it breaks nothing exported.
        must_fail = [c for c in must_fail if not c.startswith("clock_getres.")]
    image = build_broken(target, tmp_path / "image", edits)
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses(name), image,
                                  Builder(target, stream=out), out)
    output = out.getvalue()
    if not getres and breakage.startswith("getres-"):
        assert status == 0, output
        return
    assert status != 0, output
    for check in must_fail:
        assert check in outcome.failed, f"{check} did not fail:\n{output}"
    # Symbols and unrelated clocks still pass: the FAIL is specific.
    assert "symbol." + target.exports[0].name in outcome.passed, output
    assert "clock_gettime.REALTIME" in outcome.passed or breakage == "seqcount-no-wait", output


def test_image_check_refuses_a_table_the_abi_has_not(good_runs, tmp_path):
    """A harness of an ABI with DT_HASH only (as the MIPS ABIs are) fails an
    image that carries DT_GNU_HASH too, and only the image check."""
    target = load_target("x86_64")
    sysv_only = dataclasses.replace(target, abi=dataclasses.replace(target.abi, hash_styles=("sysv",)))
    _, _, _, image = good_runs("x86_64")
    harness = build_harness(sysv_only, tmp_path / "harness", Builder(sysv_only, stream=io.StringIO()))
    status, outcome, output = run_broken(sysv_only, harness, image)
    assert status == 1 and set(outcome.failed) == {"image"}, output
    assert outcome.failed["image"] == "DT_GNU_HASH present, the ABI's vDSO has DT_HASH only (hash_styles)", output
    assert "symbol.__vdso_clock_gettime" in outcome.passed, output


# The core's wide-multiply branch, taken when delta > max_cycles.
WIDE = "return vdso_mul_add_shr(delta, vc->mult, base, vc->shift);"

# Each breakage of that branch, and which max_cycles checks must then FAIL.
WIDE_BREAKAGES = {
    # The branch forgets the base: max_cycles 1 sends every read through it.
    "drops-base": ("return vdso_mul_add_shr(delta, vc->mult, 0, vc->shift);",
                   ["max_cycles.forced", "max_cycles.overflow"]),
    # The branch multiplies in 64 bits: only an overflowing product shows it.
    "64-bit": ("return (delta * vc->mult + base) >> vc->shift;", ["max_cycles.overflow"]),
}
MAX_CYCLES_TARGETS = [n for n in TIME_TARGETS if load_target(n).datapage.layout.has_max_cycles]


def test_some_target_has_max_cycles():
    assert MAX_CYCLES_TARGETS, "no target's layout has max_cycles: the wide branch goes untested"


@pytest.mark.parametrize("breakage", sorted(WIDE_BREAKAGES))
@pytest.mark.parametrize("name", MAX_CYCLES_TARGETS)
def test_harness_catches_wide_branch(name, breakage, harnesses, tmp_path):
    target = harness_target(name)
    new, must_fail = WIDE_BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", {"vdso_core.h": [(WIDE, new)]})
    status, outcome, output = run_broken(target, harnesses(name), image)
    assert status == 1, output
    # seqcount.inside's max_cycles calls take the wide branch too (every read does with max_cycles 1).
    inside = [f for f in outcome.failed if f.startswith("seqcount.inside.max_cycles.")]
    assert sorted(set(outcome.failed) - set(inside)) == sorted(must_fail), output
    assert bool(inside) == ("max_cycles.forced" in must_fail), output
    assert all(f"clock_gettime.{c}" in outcome.passed for c in CLOCKS), output


# --- coarse clocks in clock mode NONE -------------------------------------

def with_coarse_in_mode_none(target, setting):
    return dataclasses.replace(target, datapage=dataclasses.replace(target.datapage,
                                                                    coarse_in_mode_none=setting))


@pytest.fixture(scope="session")
def syscall_variant(tmp_path_factory):
    """target name -> (variant, status, Outcome, output, image, harness) for coarse_in_mode_none = "syscall"."""
    cache = {}

    def get(name):
        if name not in cache:
            variant = with_coarse_in_mode_none(harness_target(name), "syscall")
            work = tmp_path_factory.mktemp(f"coarse-syscall-{name}")
            out = io.StringIO()
            builder = Builder(variant, stream=out)
            image, _ = build_target(variant, work / "image", builder=builder, validate=build_validator)
            exe = build_harness(variant, work, builder)
            status, outcome = run_harness(variant, exe, image, builder, out)
            cache[name] = (variant, status, outcome, out.getvalue(), image, exe)
        return cache[name]

    return get


def test_coarse_setting_reaches_the_harness():
    from vdsogen.harness.driver import harness_sources

    for setting, value in (("page", 0), ("syscall", 1)):
        target = with_coarse_in_mode_none(load_target("x86_64"), setting)
        header = dict(harness_sources(target))["vdso_config.h"]
        assert re.search(rf"^#define VDSO_COARSE_IN_MODE_NONE_SYSCALL\s+{value}$", header, re.M), header


@pytest.mark.parametrize("name", TARGETS)
def test_call_shapes_come_from_the_declarations(name):
    """One typed wrapper and one IMPL_ index per exported function, as functions.toml declares it."""
    from vdsogen.harness.driver import harness_sources

    target = load_target(name)
    header = dict(harness_sources(target))["harness_target.h"]
    wrappers = re.findall(r"^static inline struct h_ret v_(\w+)\((.*)\)$", header, re.M)
    assert wrappers == [(f.name, f.param_list) for f in target.functions if f.c_call], header
    impls = re.findall(r"^\tIMPL_(\w+),$", header, re.M)
    assert impls == [f.name.upper() for f in target.functions], header


@pytest.mark.parametrize("name", TARGETS)
def test_arch_checks_come_from_beside_their_fragments(name):
    """A target gets the check of each function an arch fragment implements, and no other."""
    from vdsogen.harness.driver import harness_sources

    target = load_target(name)
    files = dict(harness_sources(target))
    arch = [f.name for f in target.arch_functions] + list(target.harness.checks)
    # (harness_functions.c is the core functions' wiring: tests/test_harness_wiring.py)
    assert sorted(n for n in files if n.endswith(".c") and n != "harness_functions.c") == \
        sorted(f"check-{n}.c" for n in arch)
    for n in arch:
        assert f"void h_check_{n}(void)" in files[f"check-{n}.c"]
        assert f"h_check_{n}," in files["harness_target.h"]
    if name == "ppc64le":
        assert arch == ["get_syscall_map", "getcpu", "get_tbfreq", "sync_dicache"]


def test_missing_arch_check_is_an_error(tmp_path, monkeypatch):
    import shutil

    for d in ("templates", "arch"):
        shutil.copytree(paths.ROOT / d, tmp_path / d)
    (tmp_path / "arch" / "powerpc" / "harness-check-sync_dicache.c.j2").unlink()
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "TEMPLATES", tmp_path / "templates")
    monkeypatch.setattr(paths, "ARCH", tmp_path / "arch")
    target = load_target("ppc64le")
    with pytest.raises(SpecError, match=r"arch/powerpc/harness-check-sync_dicache\.c\.j2: missing"):
        build_harness(target, tmp_path / "work", Builder(target, stream=io.StringIO()))


@pytest.mark.parametrize("name", one_per_family(TIME_TARGETS, 0))
def test_coarse_syscall_variant_passes_every_check(name, syscall_variant):
    variant, status, outcome, output, _, _ = syscall_variant(name)
    assert not outcome.failed, output
    assert status == 0, output
    missing = [c for c in expected_checks(variant) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"


def coarse_mode_none_checks(target):
    """The checks coarse_in_mode_none decides: the coarse clocks, and time() where exported."""
    names = ["mode_none.REALTIME_COARSE", "mode_none.MONOTONIC_COARSE"]
    if any(e.impl == "time" for e in target.exports):
        names.append("mode_none.time")
    return sorted(names)


@pytest.mark.parametrize("name", one_per_family(CLOCK_TARGETS, 1))
def test_syscall_harness_fails_the_page_image(name, syscall_variant, good_runs):
    """The harness for "syscall" finds the page's coarse values in the default image."""
    variant, _, _, _, _, exe = syscall_variant(name)
    status, outcome, output = run_broken(variant, exe, good_runs(name)[3])
    assert status == 1, output
    assert sorted(outcome.failed) == coarse_mode_none_checks(variant), output


@pytest.mark.parametrize("name", one_per_family(CLOCK_TARGETS, 2))
def test_page_harness_fails_the_syscall_image(name, syscall_variant, harnesses):
    """The default harness finds real time, not the page's, in the "syscall" image."""
    _, _, _, _, image, _ = syscall_variant(name)
    target = harness_target(name)
    status, outcome, output = run_broken(target, harnesses(name), image)
    assert status == 1, output
    assert sorted(outcome.failed) == coarse_mode_none_checks(target), output


# --- other layouts --------------------------------------------------------

@pytest.fixture
def layouts(tmp_path, monkeypatch):
    """A private copy of specs/layouts/ that tests may add to, in effect for this test."""
    d = tmp_path / "layouts"
    d.mkdir()
    for f in paths.LAYOUTS.glob("*.toml"):
        (d / f.name).write_text(f.read_text())
    monkeypatch.setattr(paths, "LAYOUTS", d)
    return d


def with_layout(target, layout, pages=None):
    dp = dataclasses.replace(target.datapage, layout=layout, pages=pages or target.datapage.pages)
    return dataclasses.replace(target, datapage=dp)


def assert_every_check_passes(variant, status, outcome, output):
    assert not outcome.failed, output
    assert status == 0, output
    assert outcome.summary == (len(outcome.passed), 0), output
    missing = [c for c in expected_checks(variant) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"


def layout_615(name, layouts):
    """linux-6.15 for the target: the arch's own on top where its layout has some (powerpc64's
    arch page; x86's max_cycles and the pvclock and hvclock pages its counter reads)."""
    shipped = load_target(name).datapage.layout
    if shipped.name != "linux-6.17":
        text = (layouts / f"{shipped.name}.toml").read_text()
        # A later version's arch layout (ppc32's linux-7.2-powerpc32) extends its 6.17 one: take that.
        while 'extends = "linux-6.17"' not in text:
            base = re.search(r'(?m)^extends = "(linux-[^"]+)"', text)
            assert base, text
            shipped = load_layout(base.group(1))
            text = (layouts / f"{shipped.name}.toml").read_text()
        # A layout that restates the time struct (s390's tod_delta heads it) drops 6.17's aux clocks too.
        text = "".join(ln for ln in text.splitlines(keepends=True) if '"aux_clock_data"' not in ln)
        (layouts / f"test-6.15-{shipped.name}.toml").write_text(
            text.replace('extends = "linux-6.17"', 'extends = "linux-6.15"'))
        return load_layout(f"test-6.15-{shipped.name}")
    return load_layout("linux-6.15")


@pytest.mark.parametrize("name", one_per_family(TIME_TARGETS, 3))
def test_linux_6_15_layout(name, layouts, tmp_path):
    layout = layout_615(name, layouts)
    assert layout.field_offset(layout.time_struct, "tz_minuteswest") == \
        layout.field_offset(layout.time_struct, layout.clocks_member) + 2 * layout.struct(layout.clock_struct).size
    variant = with_layout(load_target(name), layout)
    status, outcome, output = run_variant(variant, tmp_path / "work")
    assert_every_check_passes(variant, status, outcome, output)
    # linux-6.15 has no max_cycles, x86's variant adds it
    assert ("max_cycles.forced" in outcome.passed) == layout.has_max_cycles, output


def write_layout_without_timens(layouts, base):
    """A layout extending base with every page but the time-namespace slot."""
    lines = [f'description = "{base.name} without a time-namespace page (test)"',
             f'extends = "{base.name}"']
    for page in base.pages:
        if page.role == "timens":
            continue
        lines += ["", "[[page]]", f'role = "{page.role}"']
        lines += [f'struct = "{page.struct}"'] if page.struct else []
        lines += [f'symbol = "{page.symbol}"'] if page.symbol else []
    name = f"test-{base.name}-no-timens"
    (layouts / f"{name}.toml").write_text("\n".join(lines) + "\n")
    return load_layout(name)


@pytest.mark.parametrize("name", one_per_family(TIME_TARGETS, 4))
def test_layout_without_timens_page(name, layouts, tmp_path):
    target = load_target(name)
    layout = write_layout_without_timens(layouts, target.datapage.layout)
    assert not layout.has_timens and layout.page_count == target.datapage.layout.page_count - 1
    variant = with_layout(target, layout, pages=layout.page_count)
    status, outcome, output = run_variant(variant, tmp_path / "work")
    assert_every_check_passes(variant, status, outcome, output)
    assert not [c for c in [*outcome.passed, *outcome.failed] if c.startswith("timens.")], output


def test_failure_line_format(harnesses, tmp_path):
    target = load_target("x86_64")
    edits, _ = BREAKAGES["swapped-base"]
    image = build_broken(target, tmp_path / "image", edits)
    out = io.StringIO()
    status, _ = run_harness(target, harnesses("x86_64"), image, Builder(target, stream=out), out)
    lines = out.getvalue().splitlines()
    fail = [ln for ln in lines if ln.startswith("FAIL clock_gettime.BOOTTIME: ")]
    assert fail and re.search(r"got 2000\d+\.\d{9}, want \[3000\d+\.\d{9}, 3000\d+\.\d{9}\]", fail[0]), lines
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed", lines[-1]), lines
    assert status == 1


def test_crash_in_the_image_is_a_failure_not_the_end(harnesses, tmp_path):
    """A crash inside an entry fails that check; later groups still run."""
    target = load_target("x86_64")
    image = build_broken(target, tmp_path / "image", {"vdso_core.h": [
        ("if (tv) {\n\t\tstruct vdso_timespec64 ts;",
         "if (tv) {\n\t\tstruct vdso_timespec64 ts;\n\n\t\t*(volatile int *)0 = 0;")]})
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses("x86_64"), image, Builder(target, stream=out), out)
    output = out.getvalue()
    assert status == 1
    assert "killed by signal 11" in outcome.failed.get("gettimeofday", ""), output
    assert "time" in outcome.passed and "timens.MONOTONIC" in outcome.passed, output
    assert "killed by signal 11" in outcome.failed.get("timens.gettimeofday", ""), output


def test_cr0_so_error_flag_is_read(harnesses, tmp_path):
    """ppc64le: an entry that returns the errno without setting CR0.SO is caught."""
    target = load_target("ppc64le")
    image = build_broken(target, tmp_path / "image", {"entry.S": [("\tcrset\tso", "\tnop")]})
    out = io.StringIO()
    status, outcome = run_harness(target, harnesses("ppc64le"), image, Builder(target, stream=out), out)
    output = out.getvalue()
    assert status == 1
    for check in ("clock_gettime.invalid_12", "clock_getres.invalid_100"):
        assert "r3=22 with CR0.SO clear" in outcome.failed.get(check, ""), output
    assert "clock_gettime.MONOTONIC" in outcome.passed, output


# --- errors ---------------------------------------------------------------

def with_toolchain(target, **changes):
    return dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, **changes))


def test_missing_compiler_is_an_error(tmp_path):
    target = with_toolchain(load_target("x86_64"), gnu_triple="no-such-triple-linux-gnu")
    with pytest.raises(HarnessError, match="no-such-triple-linux-gnu-gcc: not found"):
        build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))


def test_missing_qemu_is_an_error(tmp_path):
    target = with_toolchain(load_target("x86_64"), qemu="no-such-cpu")
    with pytest.raises(HarnessError, match="qemu-no-such-cpu-static: not found"):
        run_tests(target, workdir=tmp_path, stream=io.StringIO())


def test_missing_image_is_an_error(tmp_path):
    with pytest.raises(HarnessError, match="no such image"):
        run_tests(load_target("x86_64"), tmp_path / "nothing.so", workdir=tmp_path, stream=io.StringIO())


def test_cli_test_command(good_runs, tmp_path, capsys):
    _, _, _, image = good_runs("x86_64")
    assert cli.main(["test", "--arch", "x86_64", "--image", str(image), "--workdir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "  HOSTCC  " in err and re.search(r"^\d+ passed, 0 failed$", out, re.M), out
    assert "  HOSTCC  " not in out


def test_cli_reports_harness_errors(tmp_path, capsys):
    assert cli.main(["test", "--arch", "x86_64", "--image", str(tmp_path / "missing.so")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vdsogen: ") and "no such image" in err and "Traceback" not in err
