"""`vdsogen run` as a runtime would ship it (issue 23).

- The image cache: concurrent runs of one target from an empty cache all
  succeed, and a run whose inputs did not change neither compiles nor links.
- The image is mapped as a kernel maps it: natively inside the kernel's own
  [vdso] mapping, the whole file (section headers too), zero-padded to whole
  pages, so /proc/self/maps names it [vdso] and `vdsogen audit --live` in a
  program under `run` reads the image whole.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import isolated_run_cache

ROOT = Path(__file__).resolve().parent.parent
PAGE = 4096

run_cache = pytest.fixture(scope="module", autouse=True, name="run_cache")(isolated_run_cache)


def vdsogen(*args, env=None, timeout=300):
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=timeout)


def test_concurrent_runs_share_one_cache(tmp_path):
    """8 runs of one target at once, from an empty cache: each gets the image (probe.control 1 is the
    probe's last line); then a run with nothing changed builds nothing (V=1 would show the commands)."""
    env = {"VDSOGEN_CACHE": str(tmp_path / "cache")}
    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(lambda _: vdsogen("run", "--arch=x86_64", "--", "vdsogen-probe", env=env), range(8)))
    for p in procs:
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[-1] == "probe.control 1", p.stdout
    assert len({next(x for x in p.stdout.splitlines() if x.startswith("probe.build-id")) for p in procs}) == 1
    again = vdsogen("run", "--arch=x86_64", "--", "true", env=dict(env, V="1"))
    assert again.returncode == 0, again.stderr
    assert again.stderr == "", f"a run with nothing changed built the image again:\n{again.stderr}"


LIVE = r"""
import sys
from vdsogen.audit.run import live_bytes
image = open(sys.argv[1], "rb").read()
live = live_bytes()
maps = [l for l in open("/proc/self/maps") if l.rstrip().endswith("[vdso]")]
print("maps", len(maps))
print("size", len(live))
print("image", live[:len(image)] == image)
print("padding", live[len(image):] == bytes(len(live) - len(image)))
"""


def test_image_is_mapped_whole_as_vdso(built, tmp_path):
    """The [vdso] line is the image's: its bytes are the whole file, then zeros to the page's end;
    and `vdsogen audit --live` under run reads it without a finding."""
    so = built("x86_64")[1]
    (tmp_path / "live.py").write_text(LIVE)
    p = vdsogen("run", "--arch=x86_64", f"--image={so}", "--", sys.executable, str(tmp_path / "live.py"), str(so),
                env={"PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    got = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert got == {"maps": "1", "size": got["size"], "image": "True", "padding": "True"}, p.stdout
    assert int(got["size"]) >= -(-so.stat().st_size // PAGE) * PAGE
    audit = vdsogen("run", "--arch=x86_64", f"--image={so}", "--", sys.executable, "-m", "vdsogen", "audit",
                    "--live", env={"PYTHONPATH": str(ROOT)})
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.splitlines()[-1].startswith("[vdso]: 0 error(s), 0 warning(s)"), audit.stdout


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


def probe_lines(text):
    return dict(line.split(" ", 1) for line in text.splitlines() if line.startswith("probe.")
                and not line.startswith(("probe.clock ", "probe.clock_getres ")))


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_a_kernels_image_is_judged_by_audit(arch, built, tmp_path):
    """An image vdsogen did not build runs if `vdsogen audit` passes it as of the target's ABI (not
    `vdsogen check` against the spec, which wants vdsogen's notes and exports): its data pages laid
    out for the kernel its version note names, said on stderr."""
    so = as_kernels(built(arch)[1], tmp_path / "vdso.so")
    p = vdsogen("run", f"--arch={arch}", f"--image={so}", "--", "vdsogen-probe")
    assert p.returncode == 0, p.stderr
    assert "judged by `vdsogen audit` as of the" in p.stderr and "Linux 7.2.13" in p.stderr, p.stderr
    got = probe_lines(p.stdout)
    assert got["probe.control"] == ("1" if arch == "x86_64" else "unknown"), p.stdout
    if arch == "x86_64":
        assert got["probe.syscalls"] == "0", p.stdout


def test_a_kernels_image_of_another_layout_is_refused_natively(built, tmp_path):
    """Natively the image reads the running kernel's pages: one of Linux 6.12 (fewer pages) cannot."""
    so = as_kernels(built("x86_64")[1], tmp_path / "vdso.so", (6, 12, 1))
    p = vdsogen("run", "--arch=x86_64", f"--image={so}", "--", "true")
    assert p.returncode == 2, p.stderr
    assert "linux-6.12-x86" in p.stderr.splitlines()[-1], p.stderr
