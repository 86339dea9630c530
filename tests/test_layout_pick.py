"""`vdsogen test --image` plays the layout of the image's kernel.

Each layout says the Linux versions it describes and the ABIs that read it
then (`linux`, `abis`); the image's Linux version note picks among those of
the target's ABI (the spec's own first), `--layout=NAME` overrides, and an
image whose version no layout covers is a clear error.  The images are
vdsogen's own, their version note rewritten here: no download.
"""

import io
import re
import struct

import pytest

from vdsogen import cli, paths
from vdsogen.audit import era
from vdsogen.elf.consts import NT_LINUX_VERSION
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import HarnessError, VdsogenError
from vdsogen.harness import layouts
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

from conftest import TIME_TARGETS


def with_note(src, dst, version):
    """A copy of image src whose Linux version note says `version` (major, minor, sublevel)."""
    img = ElfImage(str(src))
    note = next(n for n in img.notes if n.name == "Linux" and n.type == NT_LINUX_VERSION)
    data = bytearray(src.read_bytes())
    at = data.index(bytes(note.desc), note.offset)
    code = (version[0] << 16) | (version[1] << 8) | version[2]
    struct.pack_into("<I" if img.little else ">I", data, at, code)
    dst.write_bytes(bytes(data))
    return dst


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """images(name) -> vdsogen's image of the target, built once."""
    from conftest import build_broken
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = build_broken(load_target(name), tmp_path_factory.mktemp(name), {})
        return cache[name]

    return get


@pytest.mark.parametrize("name, version, layout, pages", [
    ("x86_64", (6, 1, 0), "linux-5.6-x86", 4),
    ("x86_64", (6, 11, 2), "linux-6.12-x86", 4),
    ("i386", (6, 12, 117), "linux-6.12-x86", 4),
    ("x32", (6, 14, 0), "linux-6.14-x86", 4),
    ("x86_64", (7, 2, 13), "linux-6.17-x86", 6),
    ("arm64", (6, 1, 176), "linux-5.6", 2),
    ("arm64", (6, 16, 1), "linux-6.15", 4),
    ("arm64", (6, 17, 0), "linux-6.17", 4),
    ("riscv64", (7, 2, 13), "linux-7.2-riscv", 4),
])
def test_the_note_picks_the_layout(name, version, layout, pages, images, tmp_path):
    target = load_target(name)
    image = with_note(images(name), tmp_path / "vdso.so", version)
    choice = layouts.choose(target, image)
    assert choice.target.datapage.layout.name == layout
    assert choice.target.datapage.pages == pages
    assert choice.target.datapage.page_size == target.datapage.page_size
    shown = era.show(version)
    assert choice.line.startswith(f"# layout: {layout} (Linux ") and f"says Linux {shown}; {pages} data pages" in choice.line
    assert ("the spec's" in choice.line) == (layout == target.datapage.layout.name)


@pytest.mark.parametrize("name, version, have", [
    ("x86_64", (5, 4, 0), "linux-5.6-x86 (5.6-6.9), linux-6.12-x86 (6.10-6.12), linux-6.14-x86 (6.13-6.14), "
                          "linux-6.15-x86 (6.15-6.16), linux-6.17-x86 (6.17+)"),
    ("riscv64", (5, 19, 0), "linux-6.1-riscv (6.1-6.3), linux-6.4-riscv (6.4-6.6), linux-6.7-riscv (6.7-6.7), "
                            "linux-6.8-riscv (6.8-6.10), linux-6.12-riscv (6.11-6.12), linux-6.13-riscv (6.13-6.13), "
                            "linux-6.14-riscv (6.14-6.14), linux-6.15-riscv (6.15-6.15), linux-6.16-riscv (6.16-6.16), linux-6.17-riscv (6.17-6.17), "
                            "linux-6.18-riscv (6.18-6.18), linux-6.19-riscv (6.19-6.19), linux-7.2-riscv (7.0+)"),
    ("arm64", (5, 4, 0), "linux-5.6 (5.6-6.14), linux-6.15 (6.15-6.16), linux-6.17 (6.17+)"),
])
def test_no_layout_fits(name, version, have, images, tmp_path):
    image = with_note(images(name), tmp_path / "vdso.so", version)
    shown = era.show(version)
    with pytest.raises(HarnessError) as e:
        layouts.choose(load_target(name), image)
    assert str(e.value) == (f"{image}: Linux {shown}: no layout of the {load_target(name).abi.name} ABI covers it "
                            f"(its layouts: {have}); give one with --layout=NAME")


def test_layout_option_overrides_and_unknown_names_are_errors(images, tmp_path):
    target = load_target("x86_64")
    image = with_note(images("x86_64"), tmp_path / "vdso.so", (6, 15, 0))
    choice = layouts.choose(target, image, "linux-6.14-x86")
    assert choice.target.datapage.layout.name == "linux-6.14-x86"
    assert choice.line == "# layout: linux-6.14-x86 (Linux 6.13-6.14), as --layout says; 4 data pages"
    with pytest.raises(HarnessError, match=r"--layout=linux-6.14-x68: no such layout in .*did you mean 'linux-6.14-x86'"):
        layouts.choose(target, image, "linux-6.14-x68")


def test_an_image_without_a_note_keeps_the_spec_layout(images, tmp_path):
    src = images("x86_64")
    data = bytearray(src.read_bytes())
    at = data.index(b"Linux\0\0\0")
    data[at:at + 5] = b"Xinux"          # the note is another owner's now
    (tmp_path / "vdso.so").write_bytes(bytes(data))
    choice = layouts.choose(load_target("x86_64"), tmp_path / "vdso.so")
    assert choice.target is not None and choice.target.datapage.layout.name == "linux-6.17-x86"
    assert choice.line == ("# layout: linux-6.17-x86 (Linux 6.17+), the spec's: the image has no Linux version "
                           "note; 6 data pages")


def test_an_old_kernels_image_passes_on_its_own_layout(tmp_path):
    """vdsogen's x86_64 image built for the pages of 6.12 (--layout), its note
    then saying 6.12: `vdsogen test --image` finds that layout itself and
    every check passes; on the spec's 6.17 pages it could not."""
    target = load_target("x86_64")
    out = io.StringIO()
    status, outcome = run_tests_full(target, workdir=tmp_path / "w", stream=out, layout="linux-6.12-x86")
    assert status == 0, out.getvalue()
    assert "# layout: linux-6.12-x86 (Linux 6.10-6.12), as --layout says; 4 data pages" in out.getvalue()
    old = with_note(tmp_path / "w" / "image" / "vdso.so", tmp_path / "old.so", (6, 12, 117))
    out = io.StringIO()
    status, outcome = run_tests_full(target, old, workdir=tmp_path / "v", stream=out)
    assert status == 0, out.getvalue()
    assert ("# layout: linux-6.12-x86 (Linux 6.10-6.12), the image's version note says Linux 6.12.117; "
            "4 data pages") in out.getvalue()
    assert not any(c.startswith("clock_gettime.AUX") for c in outcome.passed), out.getvalue()


def test_cli_says_which_layout(images, tmp_path, capsys):
    image = with_note(images("x86_64"), tmp_path / "vdso.so", (7, 2, 13))
    assert cli.main(["test", "--arch", "x86_64", "--image", str(image), "--workdir", str(tmp_path / "w")]) == 0
    assert re.search(r"^# layout: linux-6\.17-x86 \(Linux 6\.17\+\), the spec's: the image's version note says "
                     r"Linux 7\.2\.13; 6 data pages$", capsys.readouterr().out, re.M)
    riscv = with_note(images("riscv64"), tmp_path / "riscv.so", (5, 19, 0))
    assert cli.main(["test", "--arch", "riscv64", "--image", str(riscv)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vdsogen: ") and "no layout of the riscv64 ABI covers it" in err and "Traceback" not in err


@pytest.mark.parametrize("name", TIME_TARGETS)
def test_each_spec_layout_is_its_own_pick(name):
    """A spec's layout lists its ABI and covers its Linux version: `test
    --image` of vdsogen's own image plays the layout it was built for."""
    target = load_target(name)
    layout = target.datapage.layout
    assert target.abi.name in layout.abis and layout.covers(target.elf.linux_version)


@pytest.mark.parametrize("text, key, message", [
    ('linux = ["6.17", "6.1"]', "linux", "6.1 is before 6.17"),
    ('linux = ["6"]', "linux[0]", "'6' is not a MAJOR.MINOR version"),
    ('linux = ["5.6", "6.1", "6.2"]', "linux", "3 versions: give the first, and the last unless it is open"),
    ('abis = ["x86-64"]', "abis[0]", "'x86-64' is no ABI of vdsogen/spec/abi.toml (did you mean 'x86_64'?)"),
])
def test_bad_versions_and_abis_name_file_and_key(text, key, message, tmp_path):
    (tmp_path / "bad.toml").write_text(f'extends = "linux-6.17"\n{text}\n')
    with pytest.raises(VdsogenError) as e:
        load_layout("bad", (tmp_path, paths.LAYOUTS))
    assert "bad.toml" in str(e.value) and key in str(e.value) and message in str(e.value), str(e.value)
