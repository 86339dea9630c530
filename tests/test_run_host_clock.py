"""`vdsogen run`'s clocks are the host kernel's own where qemu-user's counter is the host's TSC.

Under qemu-user on an x86 host, powerpc's timebase, riscv's time CSR,
loongarch's stable counter and sparc64's %tick read the host's TSC; when the
host kernel keeps time with it (clocksource tsc), the foreign timekeeper
publishes the host's own cycle_last, mult, shift and bases every tick
(runner/loader.c host_update(), vdsogen/run/hostclock.py), so the image
computes what the host's clock syscalls compute: a syscall, the vDSO, a
syscall are ordered to the nanosecond, as the kernel's vdso_test_correctness
wants, on little- and big-endian targets alike.  Where the host does not keep
time so, the discipline keeps the clocks within 50 us, and `run -v` says why.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLOCK_READERS_C, isolated_run_cache

ROOT = Path(__file__).resolve().parent.parent
CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)

TRIPLES_C = r"""
/*
 * triples N: N rounds, 1 ms apart (the clocks drift between the
 * timekeeper's updates), of the syscall, the vDSO's answer (the C library's
 * clock_gettime), the syscall again, for each of MONOTONIC, REALTIME,
 * BOOTTIME and MONOTONIC_RAW; one line per clock: "clock ID DISORDERED
 * WORST_NS", how many triples were out of order and by how much at most.
 */
""" + CLOCK_READERS_C + r"""
int main(int argc, char **argv)
{
	static const int clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW };
#define NCLOCKS (sizeof(clocks) / sizeof(clocks[0]))
	long n = argc > 1 ? atol(argv[1]) : 2000, bad[NCLOCKS] = { 0 };
	int64_t worst[NCLOCKS] = { 0 };
	struct timespec pause = { 0, 1000000 };
	unsigned int i;

	for (long k = 0; k < n; k++) {
		for (i = 0; i < NCLOCKS; i++) {
			int64_t t1 = by_syscall(clocks[i]), v = by_vdso(clocks[i]), t2 = by_syscall(clocks[i]);
			int64_t off = t1 > v ? t1 - v : v > t2 ? v - t2 : 0;

			bad[i] += off != 0;
			worst[i] = off > worst[i] ? off : worst[i];
		}
		nanosleep(&pause, NULL);
	}
	for (i = 0; i < NCLOCKS; i++)
		printf("clock %d %ld %lld\n", clocks[i], bad[i], (long long)worst[i]);
	return 0;
}
"""

N = 2000
# Every target whose qemu-user counter is the host's TSC and that has a C library (loongarch64 and
# riscv32 have none to build the program with); ppc64 is big-endian.
HOST_TSC = ["riscv64", "ppc64le", "ppc64", "ppc32", "sparc64"]


def host_keeps_tsc():
    try:
        return Path(CLOCKSOURCE).read_text().strip() == "tsc"
    except OSError:
        return False


def vdsogen(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def build_triples(arch, tmp_path):
    from vdsogen.harness.driver import compiler
    from vdsogen.spec.model import load_target

    target = load_target(arch)
    (tmp_path / "triples.c").write_text(TRIPLES_C)
    exe = tmp_path / "triples"
    subprocess.run([compiler(target), "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-static",
                    *target.toolchain.harness_cflags, str(tmp_path / "triples.c"), "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("arch", HOST_TSC)
def test_clocks_are_the_hosts_to_the_nanosecond(arch, tmp_path):
    """2000 triples syscall, vDSO, syscall of each hres clock over 2 s or more, all in order to the
    nanosecond; the vDSO answered (the syscalls counted are the bracketing ones only); -v says the
    clocks are the host kernel's.  On a host that does not keep time with its TSC, -v says the
    discipline keeps them, and why."""
    exe = build_triples(arch, tmp_path)
    p = vdsogen("run", "-v", f"--arch={arch}", "--", str(exe), str(N))
    assert p.returncode == 0, p.stdout + p.stderr
    if not host_keeps_tsc():
        assert "the host kernel's own timekeeping is not used: the host's clocksource is" in p.stderr, p.stderr
        return
    assert f"vdsogen run: {arch}: the clocks are the host kernel's own" in p.stderr, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 4, p.stdout
    for line in lines:
        _, clock, bad, worst = line.split()
        assert int(bad) == 0, f"{arch}: clock {clock}: {bad} of {N} triples out of order, by up to {worst} ns"
    # Apart: qemu's syscall log slows the syscalls, widening every triple.
    counts = tmp_path / "counts"
    p = vdsogen("run", f"--arch={arch}", f"--syscall-counts={counts}", "--", str(exe), "20")
    assert p.returncode == 0, p.stdout + p.stderr
    called = {tuple(line.split()[:2]): int(line.split()[2]) for line in counts.read_text().splitlines()}
    for clock in (0, 1, 4, 7):
        assert called.get(("clock_gettime", str(clock))) == 2 * 20, f"{arch}: the vDSO was not used: {called}"


def test_other_counters_keep_the_discipline():
    """arm64's counter (62.5 MHz of the host's gettimeofday) is not the host's TSC: its clocks stay
    disciplined, said by -v with the counter's rate's source."""
    p = vdsogen("run", "-v", "--arch=arm64", "--", "vdsogen-probe")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "vdsogen run: arm64: the clocks are disciplined against the host's within 50 us, the counter's rate " \
           "CNTFRQ_EL0" in p.stderr, p.stderr


def test_host_clock_falls_back(tmp_path, monkeypatch):
    """A host whose clocksource is not tsc has no host clock to feed, and says why; this host's is."""
    from vdsogen.run import hostclock

    clock, why = hostclock.host_clock()
    assert (clock is not None) == host_keeps_tsc(), why
    if clock is not None:
        assert clock.read()[0] == clock.tsc
        assert len(clock.record(">")) == len(clock.record("<")) == 8 * hostclock.RECORD_WORDS
    source = tmp_path / "current_clocksource"
    source.write_text("hpet\n")
    monkeypatch.setattr(hostclock, "CLOCKSOURCE", str(source))
    assert hostclock.host_clock() == (None, f"the host's clocksource is hpet, not tsc ({source})")


def test_timekeeper_takes_over_when_the_host_clock_goes(tmp_path):
    """The timekeeper that had the host's clock and then has none (the host's clocksource changed,
    the feeder is gone) says so on stderr and keeps the clocks by the discipline from the last
    update: the pages still move on, and it ends as ever when its standard input does."""
    import select
    import struct
    import time

    from vdsogen.harness.driver import runner
    from vdsogen.run import hostclock
    from vdsogen.run.foreign import build_loader
    from vdsogen.spec.model import load_target

    # One update: a 1 GHz counter (mult 2^24, shift 24) read 0 at 1000 s of every clock.
    words = [1, 0, 2**64 - 1, 1 << 24, 1 << 24, 24, 24, 2**40, 2**40]
    words += [1000, 0] * len(hostclock.BASES)
    record = struct.pack(f"<{hostclock.RECORD_WORDS}Q", *words)
    target = load_target("riscv64")
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    keeper = subprocess.Popen([*runner(target), str(build_loader(target)), "--timekeeper", str(tmp_path / "pages"),
                               "--host-clock", str(req_w), str(rep_r)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(req_w, rep_r), text=True)
    os.close(req_w)
    os.close(rep_r)
    try:
        assert os.read(req_r, 1) == b"\0"
        os.write(rep_w, record)     # the first update, then none
        os.close(rep_w)
        assert keeper.stdout.readline().split()[2] == "the-host-kernel's-TSC-timekeeping"
        ready, _, _ = select.select([keeper.stderr], [], [], 30)
        assert ready, "the timekeeper said nothing"
        assert "the host kernel's clock records are no longer the TSC's: the clocks are disciplined" \
            in keeper.stderr.readline()
        before = (tmp_path / "pages").read_bytes()
        time.sleep(0.5)
        assert keeper.poll() is None, keeper.stderr.read()
        assert (tmp_path / "pages").read_bytes() != before, "the clocks stopped"
    finally:
        keeper.stdin.close()
        keeper.wait(timeout=30)
        os.close(req_r)
    assert keeper.returncode == 0
