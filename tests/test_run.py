"""`vdsogen run`: programs that get the generated image as their vDSO.

Natively the image replaces the kernel's [vdso] in every process of the
program at each exec, directly above the kernel's data pages.  The proofs:
the probe reads the image's build-id at AT_SYSINFO_EHDR; an image whose
clock_gettime answers a wrong time is seen to be answering (by the probe, by
programs a shell forks and execs, and by glibc, musl and the Go runtime,
which find the vDSO themselves); programs built here from source with
Debian's compilers make no clock syscalls for the page clocks (a seccomp
counter in the supervisor) and their answers fall between the kernel's
readings taken before and after them.  Under qemu-user the same holds of the
probe and of the cross-built glibc static program on every foreign target
(qemu's syscall log counting), on the test build where qemu-user cannot read
the counter; loongarch64, which has no C library, runs the freestanding probe.
"""

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLOCK_TARGETS, TARGETS, TIME_TARGETS, isolated_run_cache, program_stderr
from vdsogen.elf.consts import EM_X86_64
from vdsogen.elf.reader import ElfImage
from vdsogen.harness.driver import compiler
from vdsogen.spec.model import load_target

ROOT = Path(__file__).resolve().parent.parent

PAGE_CLOCKS = (0, 1, 4, 5, 6, 7, 11)      # REALTIME, MONOTONIC, MONOTONIC_RAW, both COARSE, BOOTTIME, TAI
COARSE = {5: 0, 6: 1}                     # coarse clock -> its fine clock
BROKEN_SEC = 12345                        # what the broken image's clock_gettime answers

# A third-party program: only the C library between it and the vDSO.
CLOCKS_C = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef USE_DLOPEN
#include <dlfcn.h>
#endif

static void report(void)
{
	static const int clocks[] = { 0, 1, 4, 5, 6, 7, 11 };
	struct timespec ts;
	struct timeval tv;

	for (unsigned i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (clock_gettime(clocks[i], &ts) == 0)
			printf("clock %d %lld\n", clocks[i], ts.tv_sec * 1000000000LL + ts.tv_nsec);
		if (clock_getres(clocks[i], &ts) == 0)
			printf("res %d %lld\n", clocks[i], ts.tv_sec * 1000000000LL + ts.tv_nsec);
	}
	gettimeofday(&tv, NULL);
	printf("gettimeofday %lld\n", tv.tv_sec * 1000000LL + tv.tv_usec);
	/* No vDSO answers a CPU-time clock: one syscall, which the counter must see. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("time %lld\n", (long long)time(NULL));
#ifdef USE_DLOPEN
	{
		void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
		int (*get)(clockid_t, struct timespec *) = h ? (void *)dlsym(h, "__vdso_clock_gettime") : NULL;

		if (get && get(CLOCK_MONOTONIC, &ts) == 0)
			printf("dlopen %lld\n", ts.tv_sec * 1000000000LL + ts.tv_nsec);
		else
			printf("dlopen-failed\n");
	}
#endif
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			report();
			return 0;
		}
		waitpid(pid, NULL, 0);
		return 0;
	}
	report();
	return 0;
}
"""

CLOCKS_GO = """
package main

import (
	"fmt"
	"time"
)

// No sleeping: under the broken image the monotonic clock stands still.
func main() {
	start := time.Now()
	fmt.Printf("clock 0 %d\\n", start.UnixNano())
	fmt.Printf("elapsed %d\\n", time.Since(start).Nanoseconds())
}
"""


def vdsogen(*args, env=None):
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=300)


# The supervisor, probes and images are built once, into a cache of the module's own.
run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)


def build_id(path):
    for n in ElfImage(str(path)).notes:
        if n.name == "GNU" and n.type == 3:
            return bytes(n.desc).hex()
    raise AssertionError(f"{path}: no build-id")


def broken_copy(so, dest):
    """The x86-64 image with __vdso_clock_gettime answering BROKEN_SEC s for every clock."""
    img = ElfImage(str(so))
    sym = next(s for s in img.dynsym if s.name == "__vdso_clock_gettime")
    load = img.loads[0]
    off = sym.value - load.vaddr + load.offset
    # movq $BROKEN_SEC, (%rsi); movq $0, 8(%rsi); xor %eax, %eax; ret
    code = b"\x48\xc7\x06" + BROKEN_SEC.to_bytes(4, "little") + bytes.fromhex("48c7460800000000" "31c0" "c3")
    data = bytearray(Path(so).read_bytes())
    data[off:off + len(code)] = code
    dest.write_bytes(bytes(data))
    return dest


@pytest.fixture(scope="module")
def x86_64_image(built):
    return built("x86_64")[1]


@pytest.fixture(scope="module")
def broken_image(x86_64_image, tmp_path_factory):
    return broken_copy(x86_64_image, tmp_path_factory.mktemp("broken") / "vdso.so")


def parse_probe(text):
    out = {"clock": {}}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "probe.clock":
            cid, _, value = rest.partition(" ")
            out["clock"][int(cid)] = value
        elif key.startswith("probe."):
            out[key[6:]] = rest
    return out


def to_ns(text):
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int(frac.ljust(9, "0"))


def test_probe_sees_the_generated_image(x86_64_image):
    before = time.clock_gettime_ns(time.CLOCK_REALTIME)
    proc = vdsogen("run", "--arch=x86_64", f"--image={x86_64_image}", "--", "vdsogen-probe")
    after = time.clock_gettime_ns(time.CLOCK_REALTIME)
    assert proc.returncode == 0, proc.stderr
    p = parse_probe(proc.stdout)
    assert int(p["vdso"], 16) != 0
    assert p["build-id"] == build_id(x86_64_image)
    assert (p["syscalls"], p["getres-syscalls"], p["control"]) == ("0", "0", "1"), proc.stdout
    assert set(p["clock"]) == set(PAGE_CLOCKS)
    assert before <= to_ns(p["clock"][0]) <= after


def test_probe_without_run_sees_the_kernels_image(x86_64_image):
    """The same probe outside `vdsogen run`: another build-id, so the first test can fail."""
    from vdsogen.run import build_probe

    proc = subprocess.run([str(build_probe(load_target("x86_64")))], capture_output=True, text=True)
    assert proc.returncode == 0
    assert parse_probe(proc.stdout)["build-id"] != build_id(x86_64_image)


def test_probe_observes_a_broken_image(broken_image):
    assert vdsogen("check", "--arch=x86_64", str(broken_image)).returncode == 0
    proc = vdsogen("run", "--arch=x86_64", f"--image={broken_image}", "--", "vdsogen-probe")
    assert proc.returncode == 0, proc.stderr
    p = parse_probe(proc.stdout)
    assert p["build-id"] == build_id(broken_image)
    assert all(v == f"{BROKEN_SEC}.000000000" for v in p["clock"].values()), proc.stdout
    assert p["syscalls"] == "0"


def test_substitution_survives_fork_and_exec(broken_image, tmp_path):
    """sh forks and execs the probe twice, the second time through another sh."""
    from vdsogen.run import build_probe

    probe = build_probe(load_target("x86_64"))
    counts = tmp_path / "counts"
    proc = vdsogen("run", "--arch=x86_64", f"--image={broken_image}", f"--syscall-counts={counts}", "--",
                   "sh", "-c", f"{probe}; sh -c {probe}; date +%Y")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count(f"probe.build-id {build_id(broken_image)}") == 2
    assert lines.count(f"probe.clock 0 {BROKEN_SEC}.000000000") == 2
    assert lines[-1] == "1970"          # date (dynamic glibc) from the grandchild sh
    assert counts.read_text() == ""     # the probes' seccomp filters refuse before the counter's


def agrees(name, out, before, after, tick_nsec=None):
    """The values `out` printed lie between the kernel's readings before and after the program;
    the coarse clocks' resolution is the target's tick (`tick_nsec`), else the host's."""
    values = {}
    for line in out.splitlines():
        words = line.split()
        if words[0] in ("clock", "res"):
            values[(words[0], int(words[1]))] = int(words[2])
        elif words[0] in ("gettimeofday", "time", "dlopen"):
            values[(words[0], None)] = int(words[1])
    for cid in PAGE_CLOCKS:
        if ("clock", cid) in values:
            assert before[cid] <= values[("clock", cid)] <= after[cid], (name, cid, out)
        if ("res", cid) in values:
            want = tick_nsec if tick_nsec and cid in COARSE else round(time.clock_getres(cid) * 1e9)
            assert values[("res", cid)] == want, (name, cid, out)
    if ("gettimeofday", None) in values:
        assert before[0] // 1000 <= values[("gettimeofday", None)] <= after[0] // 1000, (name, out)
    if ("time", None) in values:
        assert before[5] // 10**9 <= values[("time", None)] <= after[0] // 10**9, (name, out)
    if ("dlopen", None) in values:
        assert before[1] <= values[("dlopen", None)] <= after[1], (name, out)
    return values


def readings():
    return {c: time.clock_gettime_ns(c) for c in PAGE_CLOCKS}


def read_counts(path):
    counts = {}
    for line in path.read_text().splitlines():
        name, clock, n = line.split()
        counts[(name, clock)] = int(n)
    return counts


def page_clock_syscalls(counts):
    return {k: n for k, n in counts.items()
            if k[0] in ("gettimeofday", "time") or k[1] in {str(c) for c in PAGE_CLOCKS}}


@pytest.fixture(scope="module")
def third_party(tmp_path_factory):
    """{name: (argv, arch)} of programs built here from source: glibc dynamic and static, musl static,
    Go (CGO_ENABLED=0), glibc static for i386."""
    d = tmp_path_factory.mktemp("third-party")
    src = d / "clocks.c"
    src.write_text(CLOCKS_C)
    progs = {}

    def cc(name, argv, arch="x86_64"):
        subprocess.run([*argv, str(src), "-o", str(d / name)], check=True)
        progs[name] = ([str(d / name)], arch)

    cc("glibc-dynamic", ["gcc", "-O2", "-DUSE_DLOPEN"])
    cc("glibc-static", ["gcc", "-O2", "-static"])
    cc("musl-static", ["musl-gcc", "-O2", "-static"])
    cc("glibc-static-i386", ["i686-linux-gnu-gcc", "-O2", "-static"], "i386")
    gosrc = d / "go"
    gosrc.mkdir()
    (gosrc / "main.go").write_text(CLOCKS_GO)
    env = dict(os.environ, CGO_ENABLED="0", GO111MODULE="off", GOCACHE=os.environ.get("GOCACHE") or
               str(Path.home() / ".cache" / "go-build"))
    subprocess.run(["go", "build", "-o", str(d / "go-static"), "main.go"], cwd=gosrc, env=env, check=True)
    progs["go-static"] = ([str(d / "go-static")], "x86_64")
    return progs


# C libraries whose clock_getres is a syscall whatever the vDSO has: musl's always
# is, i386 glibc makes the time64 syscall (the vDSO has no clock_getres_time64).
GETRES_BY_SYSCALL = {"musl-static", "glibc-static-i386"}
THIRD_PARTY = ("glibc-dynamic", "glibc-static", "musl-static", "go-static", "glibc-static-i386")


@pytest.mark.parametrize("name", THIRD_PARTY)
def test_third_party_program_uses_the_image_without_syscalls(name, third_party, built, tmp_path):
    argv, arch = third_party[name]
    image = built(arch)[1]
    counts = tmp_path / "counts"
    before = readings()
    proc = vdsogen("run", f"--arch={arch}", f"--image={image}", f"--syscall-counts={counts}", "--", *argv)
    after = readings()
    assert proc.returncode == 0, proc.stderr
    values = agrees(name, proc.stdout, before, after)
    assert ("clock", 0) in values
    if name == "glibc-dynamic":
        assert ("dlopen", None) in values, proc.stdout
    counted = read_counts(counts)
    if name != "go-static":
        assert counted.get(("clock_gettime", "2")) == 1, (name, counted)
    syscalls = page_clock_syscalls(counted)
    if name in GETRES_BY_SYSCALL:
        syscalls = {k: n for k, n in syscalls.items() if k[0] != "clock_getres"}
    assert syscalls == {}, (name, syscalls)


@pytest.mark.parametrize("name", [n for n in THIRD_PARTY if not n.endswith("i386")])
def test_third_party_program_observes_a_broken_image(name, third_party, broken_image):
    argv, _ = third_party[name]
    proc = vdsogen("run", "--arch=x86_64", f"--image={broken_image}", "--", *argv, "fork")
    assert proc.returncode == 0, proc.stderr
    first = next(line for line in proc.stdout.splitlines() if line.startswith("clock 0 "))
    assert int(first.split()[2]) == BROKEN_SEC * 10**9, proc.stdout
    if name == "glibc-dynamic":
        assert f"dlopen {BROKEN_SEC * 10**9}" in proc.stdout


def test_the_counter_counts(tmp_path):
    """Clock syscalls the vDSO cannot avoid are counted: the counter is able to fail the tests above."""
    src = tmp_path / "sys.c"
    src.write_text("#include <time.h>\n#include <unistd.h>\n#include <sys/syscall.h>\n"
                   "int main(void) { struct timespec ts; syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);\n"
                   "clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return 0; }\n")
    subprocess.run(["gcc", "-O2", str(src), "-o", str(tmp_path / "sys")], check=True)
    counts = tmp_path / "counts"
    proc = vdsogen("run", "--arch=x86_64", f"--syscall-counts={counts}", "--", str(tmp_path / "sys"))
    assert proc.returncode == 0, proc.stderr
    assert read_counts(counts) == {("clock_gettime", "1"): 1, ("clock_gettime", "2"): 1}


def test_i386_probe_sees_the_generated_image(built):
    _, so, _ = built("i386")
    proc = vdsogen("run", "--arch=i386", f"--image={so}", "--", "vdsogen-probe")
    assert proc.returncode == 0, proc.stderr
    p = parse_probe(proc.stdout)
    assert p["build-id"] == build_id(so)
    assert (p["syscalls"], p["control"]) == ("0", "1"), proc.stdout


def test_x32_probe_is_an_x32_program(built, tmp_path):
    """x32 programs come from the x32 compiler ([toolchain] program_triple),
    not the one that builds the image's x86-64 objects.  A kernel with
    CONFIG_X86_X32_ABI runs the probe on the image (scripts/kernel-e2e.sh
    boots one that does); one without refuses it, in one line."""
    from vdsogen.run import build_probe

    target = load_target("x32")
    probe = build_probe(target)
    img = ElfImage(str(probe))
    assert (img.elf_class, img.e_machine) == (32, EM_X86_64)
    _, so, _ = built("x32")
    try:
        subprocess.run([str(probe)], capture_output=True, timeout=60)
        kernel_runs_x32 = True
    except OSError as e:
        assert e.errno == errno.ENOEXEC, e
        kernel_runs_x32 = False
    proc = vdsogen("run", "--arch=x32", f"--image={so}", "--", "vdsogen-probe")
    if kernel_runs_x32:
        assert proc.returncode == 0, proc.stderr
        p = parse_probe(proc.stdout)
        assert p["build-id"] == build_id(so) and (p["syscalls"], p["control"]) == ("0", "1"), proc.stdout
    else:
        one_line(proc, 126, str(probe), "Exec format error")


def test_script_without_interpreter_line_runs_under_sh(tmp_path):
    script = tmp_path / "script"
    script.write_text('echo "run by $0"\n')
    script.chmod(0o755)
    proc = vdsogen("run", "--arch=x86_64", "--", str(script))
    assert proc.returncode == 0 and proc.stdout == f"run by {script}\n", proc.stderr


# ---- errors: one line, the shell's exit status, no traceback ---------------------------------

def one_line(proc, status, *words):
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = program_stderr(proc.stderr).strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_exit_status_is_the_programs():
    assert vdsogen("run", "--arch=x86_64", "--", "sh", "-c", "exit 7").returncode == 7


def test_program_not_there(tmp_path):
    one_line(vdsogen("run", "--arch=x86_64", "--", "no-such-program-xyz"), 127, "no-such-program-xyz",
             "not found")
    one_line(vdsogen("run", "--arch=x86_64", "--", str(tmp_path / "nothing")), 127, "no such file")
    plain = tmp_path / "plain"
    plain.write_text("data\n")
    one_line(vdsogen("run", "--arch=x86_64", "--", str(plain)), 126, "not an executable")


def test_program_of_another_abi():
    one_line(vdsogen("run", "--arch=i386", "--", "/bin/true"), 2, "/bin/true", "not of the i386 ABI")
    one_line(vdsogen("run", "--arch=arm64", "--", "/bin/true"), 2, "/bin/true", "not of the arm64 ABI")


def test_program_killed_by_a_signal():
    one_line(vdsogen("run", "--arch=x86_64", "--", "sh", "-c", "kill -TERM $$"), 128 + 15, "killed by SIGTERM")


def test_no_program():
    one_line(vdsogen("run", "--arch=x86_64"), 2, "no program given")


def test_image_failing_check(built):
    _, arm64, _ = built("arm64")
    one_line(vdsogen("run", "--arch=x86_64", f"--image={arm64}", "--", "true"), 2, str(arm64), "fails `vdsogen check`")


def test_layout_that_does_not_match(tmp_path):
    """The x86-64 spec on a layout without the aux clocks: the page count is right, hrtimer_res is not."""
    specs = tmp_path / "specs"
    (specs / "layouts").mkdir(parents=True)
    spec = (ROOT / "specs" / "x86_64.toml").read_text()
    (specs / "x86_64.toml").write_text(spec.replace('layout = "linux-6.17-x86"', 'layout = "no-aux-x86"'))
    layout = (ROOT / "specs" / "layouts" / "linux-6.17-x86.toml").read_text()
    (specs / "layouts" / "no-aux-x86.toml").write_text(layout + """
[[struct]]
name = "vdso_time_data"
comment = "v6.15/v6.16: no aux clocks."
align = 64
fields = [
    { name = "clock_data", type = "vdso_clock", count = 2 },
    { name = "tz_minuteswest", type = "s32" },
    { name = "tz_dsttime", type = "s32" },
    { name = "hrtimer_res", type = "u32" },
    { name = "__unused", type = "u32" },
]
""")
    one_line(vdsogen("run", "--arch=x86_64", f"--specs={specs}", "--", "true"), 2, "hrtimer_res", "no-aux-x86")


def test_page_count_that_does_not_match(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    spec = (ROOT / "specs" / "x86_64.toml").read_text()
    # linux-6.14-x86 describes no rng page (6.14's getrandom state sits in its vvar page): the
    # variant leaves getrandom to the syscall, else the spec fails on that before its page count.
    getrandom = '[[export]]\nname = "__vdso_getrandom"\nimpl = "getrandom"\naliases = ["getrandom"]\n\n'
    assert getrandom in spec
    (specs / "x86_64.toml").write_text(spec.replace(getrandom, "")
                                       .replace('layout = "linux-6.17-x86"', 'layout = "linux-6.14-x86"')
                                       .replace("pages = 6", "pages = 4"))
    one_line(vdsogen("run", "--arch=x86_64", f"--specs={specs}", "--", "true"), 2, "data pages", "4 pages")


# ---- foreign targets, under qemu-user -------------------------------------------------------

def run_bounded(*args, timeout=30):
    """vdsogen with a deadline that also ends qemu and the program (a broken image may hang them);
    build_foreign() has built what it runs, so the deadline is the run's."""
    proc = subprocess.Popen([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise AssertionError(f"vdsogen {' '.join(args)}: still running after {timeout} s") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _foreign():
    """Every target qemu-user runs: with a GNU cross compiler for the loader, or built freestanding
    as its harness is (loongarch64: no C library for it, so no third-party program either)."""
    out = []
    for name in TARGETS:
        t = load_target(name)
        if t.toolchain.qemu and (t.toolchain.gnu_triple or t.harness.libc == "freestanding"):
            out.append(name)
    return out


FOREIGN = _foreign()
# With data pages (parisc's clocks are all syscalls: its `vdsogen run` is test_parisc.py's), and a glibc harness
# (sh4's is freestanding: Debian's sh4 glibc does not start under qemu-sh4 7.2).
FOREIGN_GLIBC = tuple(n for n in FOREIGN if load_target(n).toolchain.gnu_triple and n in TIME_TARGETS
                      and load_target(n).harness.libc == "system")
# Where qemu-user cannot read the counter: `vdsogen run` runs the test build.
INJECTED = tuple(n for n in FOREIGN if load_target(n).harness.injected_counter)


def build_foreign(arch):
    from vdsogen.run import build_probe
    from vdsogen.run.foreign import build_loader

    target = load_target(arch)
    build_loader(target.test_build() if target.harness.injected_counter else target)
    build_probe(target)


@pytest.fixture(scope="module")
def run_image(built, tmp_path_factory):
    """run_image(arch) -> the image `vdsogen run` runs: the built one, or its test build where
    qemu-user cannot read the counter."""
    from vdsogen.build.image import build_target
    from vdsogen.audit.check import build_validator
    from vdsogen.build.toolchain import Builder
    import io

    cache = {}

    def get(arch):
        if arch not in cache:
            target = load_target(arch)
            if target.harness.injected_counter:
                test = target.test_build()
                so, _ = build_target(test, tmp_path_factory.mktemp(f"test-{arch}"),
                                     builder=Builder(test, stream=io.StringIO()), validate=build_validator)
                cache[arch] = so
            else:
                cache[arch] = built(arch)[1]
        return cache[arch]

    return get


# glibc's n64 clock_getres is a syscall whatever the vDSO has (its mips port names no vDSO
# call for the 64-bit-time getres); its o32 and n32 programs ask for __vdso_clock_getres.
# Its sparc port asks for none: Linux's sparc64 vDSO has no getres.
FOREIGN_GETRES_BY_SYSCALL = {"mips-n64", "mips-n64-be", "sparc64"}


def foreign_page_clock_syscalls(arch, counts):
    syscalls = page_clock_syscalls(counts)
    if arch in FOREIGN_GETRES_BY_SYSCALL:
        syscalls = {k: n for k, n in syscalls.items() if k[0] != "clock_getres"}
    return syscalls


def said_test_build(arch, proc):
    """A test build's run says so in one line on stderr, and only then."""
    lines = [line for line in proc.stderr.splitlines() if "test build" in line]
    if arch in INJECTED:
        assert len(lines) == 1 and "injected_counter" in lines[0], proc.stderr
    else:
        assert lines == [], proc.stderr


@pytest.mark.parametrize("arch", [a for a in FOREIGN if a in CLOCK_TARGETS])
def test_foreign_probe_sees_the_generated_image(arch, run_image, tmp_path):
    so = run_image(arch)
    build_foreign(arch)
    counts = tmp_path / "counts"
    before = readings()
    proc = run_bounded("run", f"--arch={arch}", f"--image={so}", f"--syscall-counts={counts}", "--",
                       "vdsogen-probe")
    after = readings()
    assert proc.returncode == 0, proc.stderr
    said_test_build(arch, proc)
    p = parse_probe(proc.stdout)
    assert p["build-id"] == build_id(so)
    assert p["syscalls"] == "unknown"       # no seccomp under qemu-user: qemu's log counts instead
    for cid in PAGE_CLOCKS:
        assert before[cid] <= to_ns(p["clock"][cid]) <= after[cid], (cid, proc.stdout)
    assert foreign_page_clock_syscalls(arch, read_counts(counts)) == {}


@pytest.mark.parametrize("arch", FOREIGN_GLIBC)
def test_foreign_third_party_program(arch, run_image, tmp_path):
    """The cross-built glibc static program, answering from a child it forks (the data pages
    are shared with it): no page-clock syscalls, answers between the host's."""
    so = run_image(arch)
    build_foreign(arch)
    target = load_target(arch)
    src = tmp_path / "clocks.c"
    src.write_text(CLOCKS_C)
    exe = tmp_path / "clocks"
    subprocess.run([compiler(target), "-O2", "-static", *target.toolchain.harness_cflags, str(src), "-o", str(exe)],
                   check=True)
    counts = tmp_path / "counts"
    before = readings()
    proc = run_bounded("run", f"--arch={arch}", f"--image={so}", f"--syscall-counts={counts}", "--", str(exe),
                       "fork")
    after = readings()
    assert proc.returncode == 0, proc.stderr
    said_test_build(arch, proc)
    values = agrees(f"glibc-static-{arch}", proc.stdout, before, after, target.datapage.tick_nsec)
    assert ("clock", 0) in values and ("gettimeofday", None) in values
    counted = read_counts(counts)
    assert counted.get(("clock_gettime", "2")) == 1, counted
    assert foreign_page_clock_syscalls(arch, counted) == {}, counted


def test_foreign_program_without_the_image_is_counted(built, tmp_path):
    """qemu's own log, read the same way, sees the syscalls of a program that has no vDSO:
    the counts above are able to fail."""
    src = tmp_path / "clocks.c"
    src.write_text(CLOCKS_C)
    exe = tmp_path / "clocks"
    subprocess.run(["aarch64-linux-gnu-gcc", "-O2", "-static", str(src), "-o", str(exe)], check=True)
    from vdsogen.run.foreign import count_qemu_log

    log = tmp_path / "log"
    subprocess.run(["qemu-aarch64-static", "-d", "strace", "-D", str(log), str(exe)], check=True,
                   capture_output=True)
    counts = tmp_path / "counts"
    count_qemu_log(log, [], counts)
    assert page_clock_syscalls(read_counts(counts))[("clock_gettime", "0")] == 1


def test_injected_counter_advances(run_image, tmp_path):
    """The test build's counter runs by itself: a program that spins on CLOCK_MONOTONIC sees it move on
    in steps of microseconds, at the rate of the host's clock."""
    src = tmp_path / "spin.c"
    src.write_text("#include <stdio.h>\n#include <time.h>\n"
                   "static long long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n"
                   "return t.tv_sec * 1000000000LL + t.tv_nsec; }\n"
                   "int main(void) { long long t0 = ns(), last = t0, now, steps = 0, big = 0;\n"
                   "while ((now = ns()) - t0 < 200000000) { if (now != last) { steps++;\n"
                   "if (now - last > big) big = now - last; } last = now; }\n"
                   "printf(\"%lld %lld %lld\\n\", now - t0, steps, big); return 0; }\n")
    exe = tmp_path / "spin"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-static", str(src), "-o", str(exe)], check=True)
    build_foreign("arm")
    t0 = time.monotonic_ns()
    proc = run_bounded("run", "--arch=arm", f"--image={run_image('arm')}", "--", str(exe))
    wall = time.monotonic_ns() - t0
    assert proc.returncode == 0, proc.stderr
    elapsed, steps, biggest = map(int, proc.stdout.split())
    assert 200_000_000 <= elapsed < wall
    # Steps of microseconds: hundreds of them.  One step may be long where the thread moving the
    # counter waited for a CPU (45 ms seen at load 6): under half the window.
    assert steps > 200 and biggest < 100_000_000, proc.stdout


def test_injected_counter_target_refuses_the_real_build(built):
    _, so, _ = built("arm")
    one_line(vdsogen("run", "--arch=arm", f"--image={so}", "--", "vdsogen-probe"), 2, str(so), "not a test build",
             "--test-counter")


def test_injected_counter_target_builds_its_test_build():
    """Without --image: the real build (checked) and the test build, into the cache; the line says why."""
    build_foreign("arm")
    proc = run_bounded("run", "--arch=arm", "--", "vdsogen-probe", timeout=300)
    assert proc.returncode == 0, proc.stderr
    said_test_build("arm", proc)
    assert parse_probe(proc.stdout)["build-id"] != "none"


def test_a_test_build_given_runs_as_one(tmp_path):
    """arm64's counter qemu-user reads, but a test build given runs on the injected counter."""
    from vdsogen.build.image import build_target
    from vdsogen.build.toolchain import Builder
    import io

    test = load_target("arm64").test_build()
    so, _ = build_target(test, tmp_path / "img", builder=Builder(test, stream=io.StringIO()))
    build_foreign("arm64")
    before = readings()
    proc = run_bounded("run", "--arch=arm64", f"--image={so}", "--", "vdsogen-probe")
    after = readings()
    assert proc.returncode == 0, proc.stderr
    assert "running the test build" in proc.stderr and "N006" in proc.stderr, proc.stderr
    p = parse_probe(proc.stdout)
    assert p["build-id"] == build_id(so)
    assert before[1] <= to_ns(p["clock"][1]) <= after[1], proc.stdout


def test_test_build_natively_is_refused(tmp_path):
    from vdsogen.build.image import build_target
    from vdsogen.build.toolchain import Builder
    import io

    test = load_target("x86_64").test_build()
    so, _ = build_target(test, tmp_path / "img", builder=Builder(test, stream=io.StringIO()))
    one_line(vdsogen("run", "--arch=x86_64", f"--image={so}", "--", "true"), 2, "a test build", "natively")


def test_foreign_target_without_a_cross_compiler(tmp_path):
    """loongarch64 without its freestanding harness: no GNU cross compiler, no C library."""
    specs = tmp_path / "specs"
    specs.mkdir()
    spec = (ROOT / "specs" / "loongarch64.toml").read_text()
    assert 'libc = "freestanding"' in spec
    harness = ("libc =", 'clang_target = "loongarch64-linux-gnu"')
    spec = "\n".join(line for line in spec.splitlines() if not line.startswith(harness))
    (specs / "loongarch64.toml").write_text(spec)
    one_line(vdsogen("run", "--arch=loongarch64", f"--specs={specs}", "--", "vdsogen-probe"), 2, "loongarch64",
             "gnu_triple")
