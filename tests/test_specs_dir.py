"""A target whose spec and fragments live outside vdsogen (`--specs=DIR`), as
a maintainer keeps them in a kernel tree: the README's worked example, an
arm64 image that differs from vdsogen's own only by page size and counter."""

import shutil
import struct

from conftest import ROOT, vdsogen
from vdsogen.elf.reader import ElfImage

EXAMPLE = ROOT / "docs" / "examples" / "arm64-16k"
MRS_CNTVCT = 0xD53BE040            # mrs xN, cntvct_el0, N in the low five bits


SPEC = """extends = "arm64"

[counter]
fragment = "cntvct-858921"

[datapage]
page_size = 16384
"""


def make_specs_dir(tmp_path):
    """The worked example, made as the README says: vdsogen's arm64 spec
    extended with two keys changed, and the one counter fragment it adds."""
    specs = tmp_path / "kernel" / "arch" / "arm64" / "vdsogen"
    (specs / "arch" / "arm64").mkdir(parents=True)
    (specs / "arm64-16k.toml").write_text(SPEC)
    shutil.copy(EXAMPLE / "arch" / "arm64" / "counter-cntvct-858921.h.j2", specs / "arch" / "arm64")
    shutil.copy(EXAMPLE / "arch" / "arm64" / "contract.toml", specs / "arch" / "arm64")
    return specs


def test_documented_example_is_the_derived_one(tmp_path):
    """docs/examples/arm64-16k is what the README tells a maintainer to write."""
    made = (make_specs_dir(tmp_path) / "arm64-16k.toml").read_text()
    shipped = (EXAMPLE / "arm64-16k.toml").read_text()
    strip = lambda t: [line.split("#")[0].rstrip() for line in t.splitlines() if not line.startswith("#")]  # noqa: E731
    assert strip(made) == strip(shipped)


def test_build_check_and_run_a_target_from_outside(tmp_path):
    specs = make_specs_dir(tmp_path)
    out, work = tmp_path / "out", tmp_path / "work"
    work.mkdir()
    opt = f"--specs={specs}"

    listed = vdsogen("list", opt, cwd=work)
    assert listed.returncode == 0 and listed.stdout.split() [0] == "arm64-16k", listed.stdout
    build = vdsogen("build", opt, "--arch=arm64-16k", f"--out={out}", cwd=work)
    assert build.returncode == 0, build.stdout + build.stderr
    so = out / "vdso.so"
    check = vdsogen("check", opt, "--arch=arm64-16k", str(so), cwd=work)
    assert check.returncode == 0 and "0 error(s)" in check.stdout, check.stdout

    img = ElfImage(str(so))
    assert [s.align for s in img.loads] == [16384]
    text = img.section(".text")
    words = [w for (w,) in struct.iter_unpack("<I", img.data[text.offset:text.offset + text.size])]
    reads = [i for i, w in enumerate(words) if w & ~0x1F == MRS_CNTVCT]
    assert any(b == a + 1 for a, b in zip(reads, reads[1:])), "the erratum's double read is not in the image"
    assert "specs" not in (out / "src" / "vdso.c").read_text().splitlines()[2], "a path of vdsogen's own tree"

    test = vdsogen("test", opt, "--arch=arm64-16k", f"--image={so}", f"--workdir={tmp_path / 'h'}", cwd=work)
    assert test.returncode == 0, test.stdout + test.stderr
    assert " 0 failed" in test.stdout.splitlines()[-1]


def test_specs_dir_errors(tmp_path):
    proc = vdsogen("build", f"--specs={tmp_path / 'nowhere'}", "--arch=x", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2 and "--specs: not a directory" in proc.stderr and "Traceback" not in proc.stderr
    specs = make_specs_dir(tmp_path)
    (specs / "arch" / "arm64" / "counter-cntvct-858921.h.j2").unlink()
    (specs / "arch" / "arm64" / "contract.toml").unlink()
    proc = vdsogen("build", f"--specs={specs}", "--arch=arm64-16k", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2 and "arm64-16k.toml: counter.fragment: no fragment" in proc.stderr
    assert not (tmp_path / "o").exists()
