"""scripts/kernel-harness.sh without a kernel: its arguments, and what a
`--image` run hands the booted kernel's /init (`--dry-run` builds the harness and the
initramfs's tree and prints the qemu command, with no package, download or
boot).  The image is vdsogen's arm or mips-o32 image made a kernel's (its data-pages
note renamed), as a Linux image carved from a Debian kernel is."""

import os
import re
import subprocess

import pytest

from conftest import ROOT
from vdsogen.harness import driver, layouts

SCRIPT = ROOT / "scripts" / "kernel-harness.sh"


def script(*args, cache, env=None):
    return subprocess.run(["sh", str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "VDSOGEN_KERNEL_CACHE": str(cache), **(env or {})})


def as_a_kernels(src, dst):
    """A copy of vdsogen's image without its data-pages note: a kernel's image to the driver."""
    data = src.read_bytes()
    assert data.count(b"vdsogen\0") >= 1
    dst.write_bytes(data.replace(b"vdsogen\0", b"Xdsogen\0"))
    return dst


def test_arguments_it_refuses(tmp_path):
    cases = [
        (["--bogus", "arm"], "--bogus: unknown option"),
        ([f"--image={tmp_path / 'none.so'}", "arm"], "none.so: no such file"),
        (["arm", "mips-n64"], "usage:"),
        (["vax"], "usage:"),
        (["--image=", "arm"], "--image=: unknown option"),
        (["--suite=potato", "arm"], "--suite=potato: unknown option"),
    ]
    for args, said in cases:
        r = script(*args, cache=tmp_path / "cache")
        assert r.returncode == 2 and said in r.stderr, (args, r.stdout, r.stderr)
    assert not (tmp_path / "cache").exists()    # refused before anything is made


@pytest.mark.parametrize("name, suite, run, qemu_system", [
    ("arm", "trixie", "trixie/arm/run", "qemu-system-arm"),
    ("mips-o32", None, "mips-n64/run-mips-o32", "qemu-system-mips64el"),     # o32 boots bookworm's n64 kernel
])
def test_an_image_and_its_environment_reach_the_guest(name, suite, run, qemu_system, built, tmp_path):
    """--image: the initramfs holds the image given, a harness of the layout
    its version note picks and, in /harness.env (which /init adds to the
    harness's environment), what holds a kernel's image to its kernel's vDSO
    (linux.toml), as `vdsogen test --image` sets it natively."""
    target, so, _ = built(name)
    image = as_a_kernels(so, tmp_path / f"linux-{name}.so")
    cache = tmp_path / "cache"
    args = ["--dry-run", f"--image={image}", *([f"--suite={suite}"] if suite else []), name]
    r = script(*args, cache=cache, env={"VDSOGEN_HARNESS_SOAK": "1"})
    assert r.returncode == 0, r.stdout + r.stderr

    rootfs = cache / run / "rootfs"
    assert (rootfs / "vdso.so").read_bytes() == image.read_bytes()
    assert (rootfs / "harness").is_file() and (rootfs / "init").is_file()
    layout = layouts.choose(target, image).target.datapage.layout.name
    assert re.search(rf"^  LAYOUT  {re.escape(layout)} ", r.stdout, re.M), r.stdout

    qemu = [line for line in r.stdout.splitlines() if line.startswith(f"{qemu_system} ")]
    assert len(qemu) == 1 and f"-initrd {cache}/{run}/initramfs.cpio.gz " in qemu[0], r.stdout
    env = dict(line.split("=", 1) for line in (rootfs / "harness.env").read_text().splitlines())
    linux = driver.linux_behaviour(target.abi.name)
    modes = target.counter.arch_modes
    assert env == {"VDSOGEN_HARNESS_LINUX_UNSERVED": linux["unserved"],
                   "VDSOGEN_HARNESS_LINUX_NONE": linux["none"],
                   "VDSOGEN_HARNESS_LINUX_UNSERVED_MODE": str(1 + max(m.number for m in modes)),
                   "VDSOGEN_HARNESS_SONAMES": " ".join(target.abi.sonames),
                   "VDSOGEN_HARNESS_KERNELS": "1",
                   "VDSOGEN_HARNESS_SOAK": "1"}, env       # the caller's own too, as natively
    if name == "mips-o32":
        # Linux's MIPS counter read serves R4K (1) and the GIC (2), which vdsogen's spec does not.
        assert [m.number for m in target.counter.clock_modes] == [1]
        assert env["VDSOGEN_HARNESS_LINUX_UNSERVED_MODE"] == "3"


def test_init_adds_the_env_file_to_the_harness_environment():
    """/init reads the file the script writes and runs the harness with its environment."""
    text = (ROOT / "scripts" / "e2e" / "harness-init.c").read_text()
    assert '#define ENV_FILE "/harness.env"' in text
    assert re.search(r"harness_env\(\);\s+code = run_harness\(\);", text)
    assert "execve(HARNESS, argv, environ);" in text
