"""The injected-counter test build.

qemu-user cannot read some ABIs' counters (arm's mrrc of CNTVCT raises
SIGILL, mips's rdhwr reads 0).  A spec with `[harness] injected_counter`
is tested through its test build (Target.test_build, `vdsogen build
--test-counter`): the same image but for the counter read, which loads a
64-bit count the harness keeps in a page below the data pages and moves on
as it plays the timekeeper; a note marks the image (N006).  The real
build's read is verified by its instruction words (`[counter] words`,
T002).  arm is the carrier here; the mechanism is the same for any spec.
"""

import difflib
import io
import re

import pytest

from conftest import build_broken, run_broken, vdsogen
from vdsogen.build.toolchain import Builder
from vdsogen.gen.render import sources
from vdsogen.harness.driver import build_harness, run_harness
from vdsogen.spec.model import load_target

# isb; mrrc p15, 1, r2, r3, c14 in Thumb-2: each word two halfwords, the first high.
THUMB_READ = bytes.fromhex("bff36f8f53ec1e2f")
COUNTER_CLOCKS = ["REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI"]


@pytest.fixture(scope="module")
def arm_builds(tmp_path_factory):
    """The arm spec's real build and its test build, through the CLI."""
    out = tmp_path_factory.mktemp("arm-builds")
    for kind, extra in (("real", []), ("test", ["--test-counter"])):
        proc = vdsogen("build", "--arch=arm", f"--out={out / kind}", *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "real" / "vdso.so", out / "test" / "vdso.so"


def test_spec_key_and_test_build():
    target = load_target("arm")
    assert target.harness.injected_counter and not target.test_counter
    assert target.counter.words == (0xF3BF8F6F, 0xEC532F1E)
    test = target.test_build()
    assert test.test_counter and test.exports == target.exports and test.datapage == target.datapage


def test_variant_differs_only_in_the_counter_read():
    """Rendered side by side, the two builds differ in three places: the
    counter hooks, the linker script's symbol for the injected count, and
    the note that marks the test build."""
    target = load_target("arm")
    real, test = dict(sources(target)), dict(sources(target.test_build()))
    assert real.keys() == test.keys()
    differ = {name for name in real if real[name] != test[name]}
    assert differ == {"vdso_arch.h", "vdso.lds", "note.S"}

    def changed(name):
        diff = difflib.unified_diff(real[name].splitlines(), test[name].splitlines(), n=0, lineterm="")
        return [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]

    lds = changed("vdso.lds")
    assert all(line.startswith("+") for line in lds)
    assert [line for line in lds if "=" in line] == ["+\tvdso_test_counter = vdso_u_data - 4096;"]
    assert all(line.startswith("+") for line in changed("note.S")) and '"vdsogen"' in test["note.S"]
    # vdso_arch.h: everything before the counter hooks (numbers, barriers) and after them (the syscall) stays.
    start, end = "static __always_inline void vdso_cpu_relax(void)", "/* svc #0:"
    for text in (real["vdso_arch.h"], test["vdso_arch.h"]):
        assert start in text and end in text
    head = [t["vdso_arch.h"].split(start)[0] for t in (real, test)]
    tail = [t["vdso_arch.h"].split(end)[1] for t in (real, test)]
    assert head[0] == head[1] and tail[0] == tail[1]
    assert "mrrc" in real["vdso_arch.h"] and "mrrc" not in test["vdso_arch.h"]
    assert "vdso_test_counter" in test["vdso_arch.h"]


def test_check_shows_the_test_build(arm_builds):
    real, test = arm_builds
    proc = vdsogen("check", "--arch=arm", str(test))
    assert proc.returncode == 0, proc.stdout
    assert "N006 info    PT_NOTE: test build: injected counter" in proc.stdout
    assert "0 error(s), 0 warning(s), 1 info" in proc.stdout
    audit = vdsogen("audit", str(test))
    assert audit.returncode == 0 and "test build: injected counter" in audit.stdout, audit.stdout
    proc = vdsogen("check", "--arch=arm", str(real))
    assert proc.returncode == 0 and "0 error(s), 0 warning(s), 0 info" in proc.stdout, proc.stdout


def test_real_counter_words_found_and_a_mutated_word_detected(arm_builds, tmp_path):
    real, test = arm_builds
    data = bytearray(real.read_bytes())
    reads = [m.start() for m in re.finditer(re.escape(THUMB_READ), bytes(data))]
    assert reads, "the real build has no isb; mrrc p15, 1, r2, r3, c14"
    assert THUMB_READ not in test.read_bytes()
    # One of the words changed everywhere (mrrc of c15): T002, and nothing else.
    for at in reads:
        data[at + 6] = 0x1F
    broken = tmp_path / "broken.so"
    broken.write_bytes(data)
    proc = vdsogen("check", "--arch=arm", str(broken))
    assert proc.returncode == 1, proc.stdout
    errors = [line for line in proc.stdout.splitlines() if " error " in line]
    assert len(errors) == 1 and "T002 error" in errors[0] and "f3bf8f6f ec532f1e" in errors[0], proc.stdout


def test_vdsogen_test_runs_every_check_on_the_test_build(tmp_path):
    proc = vdsogen("test", "--arch=arm", f"--workdir={tmp_path}")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "the real build; check found its counter read f3bf8f6f ec532f1e (T002)" in out
    assert f"# {tmp_path / 'test-image' / 'vdso.so'}:" in out
    passed = {line[3:] for line in out.splitlines() if line.startswith("ok ")}
    want = {"counter", "gettimeofday.tz", "clock_getres.REALTIME", "clock_getres.REALTIME_COARSE",
            "clock_gettime.REALTIME_COARSE", "clock_gettime.invalid_12", "clock_gettime.id_-1",
            "mode_none.MONOTONIC", "timens.MONOTONIC", "seqcount.concurrent", "y2038.clock_gettime64.REALTIME"}
    want |= {f"{fn}.{c}" for fn in ("clock_gettime", "clock_gettime64") for c in COUNTER_CLOCKS}
    assert want <= passed, sorted(want - passed)
    # The injected counter starts high in its 64-bit range, at about 24 MHz.
    hz = int(re.search(r"# counter: (\d+) Hz", out)[1])
    assert 20_000_000 < hz < 28_000_000, out


@pytest.fixture(scope="module")
def arm_test_harness(tmp_path_factory):
    target = load_target("arm").test_build()
    work = tmp_path_factory.mktemp("arm-test-harness")
    return target, build_harness(target, work, Builder(target, stream=io.StringIO()))


# Breakages of the test build's counter read, and the checks that must then FAIL.
INJECTED_BREAKAGES = {
    # The high word of the count is lost: every counter clock jumps back.
    "truncated": ("count = tc->count;", "count = (uint32_t)tc->count;"),
    # The count never moves: the clocks stand still while the timekeeper's go on.
    "frozen": ("count = tc->count;", "count = 0x1fff00000ULL;"),
}


@pytest.mark.parametrize("breakage", sorted(INJECTED_BREAKAGES))
def test_harness_fails_broken_injected_arithmetic(breakage, arm_test_harness, tmp_path):
    target, harness = arm_test_harness
    old, new = INJECTED_BREAKAGES[breakage]
    image = build_broken(target, tmp_path / "image", {"vdso_arch.h": [(old, new)]})
    status, outcome, output = run_broken(target, harness, image)
    assert status == 1, output
    for clock in COUNTER_CLOCKS:
        assert f"clock_gettime.{clock}" in outcome.failed, output
    # The coarse clocks read no counter: they still pass.
    assert "clock_gettime.REALTIME_COARSE" in outcome.passed, output


def test_the_real_read_cannot_run_under_qemu(arm_builds, tmp_path):
    """Why the mechanism exists: the spec's own harness on the real build
    dies of SIGILL at its first counter read."""
    real, _ = arm_builds
    target = load_target("arm")
    harness = build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))
    out = io.StringIO()
    status, outcome = run_harness(target, harness, real, Builder(target, stream=out), out)
    assert status != 0 and outcome.failed.get("counter", "").startswith("killed by signal 4"), out.getvalue()


def test_vdsogen_test_refuses_a_real_image(arm_builds, tmp_path):
    real, test = arm_builds
    proc = vdsogen("test", "--arch=arm", f"--image={real}", f"--workdir={tmp_path / 'r'}")
    assert proc.returncode != 0 and "not a test build" in proc.stderr, proc.stdout + proc.stderr
    proc = vdsogen("test", "--arch=arm", f"--image={test}", f"--workdir={tmp_path / 't'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_any_spec_has_a_test_build(tmp_path):
    """arm64's counter runs under qemu, but its test build is made and run
    the same way: `vdsogen test` sees the note and builds the harness for it."""
    proc = vdsogen("build", "--arch=arm64", f"--out={tmp_path / 'img'}", "--test-counter")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    so = tmp_path / "img" / "vdso.so"
    proc = vdsogen("test", "--arch=arm64", f"--image={so}", f"--workdir={tmp_path / 'w'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^ok clock_gettime\.MONOTONIC$", proc.stdout, re.M)
    assert "mrs" not in (tmp_path / "img" / "src" / "vdso_arch.h").read_text()


def test_injected_counter_needs_the_real_reads_words(tmp_path):
    """Without [counter] words nothing would verify the real build's read."""
    from vdsogen import paths
    from vdsogen.errors import SpecError

    text = (paths.SPECS / "arm.toml").read_text()
    words = re.search(r"^words = .*\n", text, re.M)[0]
    (tmp_path / "arm.toml").write_text(text.replace(words, ""))
    with pytest.raises(SpecError, match=r"arm\.toml: counter\.words: missing: with \[harness\] injected_counter"):
        load_target("arm", str(tmp_path))
