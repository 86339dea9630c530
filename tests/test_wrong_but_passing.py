"""An image that passes its own checks must not be wrong on a real kernel.

The harness plays the kernel by the spec's layout and calls the exports by
the spec's implementations: a spec mistake there is a mistake the harness
shares.  So what it cannot see is held to facts outside the spec:

  - every image names the data pages it was built for (a "vdsogen" note of
    type 2: layout name, digest, page size and count), and `check` holds it
    to the spec's (rule N008);
  - a layout that takes the name of one of vdsogen's own must lay out the
    same data (two fields swapped in a copy pass the harness);
  - an export's name says what it is: `__vdso_clock_gettime` built from
    gettimeofday is an error of the spec, whatever the harness would run.
"""

import io
import shutil

import pytest

from conftest import ROOT, build_broken, vdsogen
from vdsogen.audit.check import check_image
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.errors import SpecError
from vdsogen.spec.model import load_target

X86_LAYOUT = ROOT / "specs" / "layouts" / "linux-6.17-x86.toml"
SWAPS = {
    "cycle_last and max_cycles": ('    { name = "cycle_last", type = "u64" },\n    { name = "max_cycles", type = "u64" },\n',
                                  '    { name = "max_cycles", type = "u64" },\n    { name = "cycle_last", type = "u64" },\n'),
    "max_cycles and mask": ('    { name = "max_cycles", type = "u64" },\n    { name = "mask", type = "u64" },\n',
                            '    { name = "mask", type = "u64" },\n    { name = "max_cycles", type = "u64" },\n'),
}


def specs_dir(tmp_path, layout_text=None, spec_text=None):
    d = tmp_path / "specs"
    (d / "layouts").mkdir(parents=True)
    (d / "x86_64.toml").write_text(spec_text or (ROOT / "specs" / "x86_64.toml").read_text())
    (d / "layouts" / X86_LAYOUT.name).write_text(layout_text or X86_LAYOUT.read_text())
    return d


def n008(target, so):
    return [f for f in check_image(target, so) if f.rule == "N008"]


def build(target, out):
    so, _ = build_target(target, out, builder=Builder(target, stream=io.StringIO()))
    return so


def test_an_image_names_its_data_pages(built):
    target, so, _ = built("x86_64")
    assert not n008(target, so)
    assert target.datapage.note.startswith("linux-6.17-x86 ") and target.datapage.note.endswith(" 4096x6 tick 4000000")


def test_an_image_built_for_other_pages_fails_check(tmp_path):
    """Built for 64 KiB pages, checked against the 4 KiB spec: N008 says which."""
    spec = (ROOT / "specs" / "x86_64.toml").read_text().replace("page_size = 4096", "page_size = 16384")
    other = load_target("x86_64", specs_dir(tmp_path, spec_text=spec))
    so = build(other, tmp_path / "out")
    found = n008(load_target("x86_64"), so)
    assert [f.severity for f in found] == ["error"]
    assert "16384x6" in found[0].message and "4096x6" in found[0].message


def test_an_image_built_for_another_tick_fails_check(tmp_path):
    """HZ=1000 where the spec says HZ=250: clock_getres of the coarse clocks
    would answer 1 ms on a 4 ms kernel, and the harness, playing the same
    spec, would agree with it."""
    spec = (ROOT / "specs" / "x86_64.toml").read_text().replace("tick_nsec = 4000000", "tick_nsec = 1000000")
    other = load_target("x86_64", specs_dir(tmp_path, spec_text=spec))
    found = n008(load_target("x86_64"), build(other, tmp_path / "out"))
    assert found and "tick 1000000" in found[0].message and "tick 4000000" in found[0].message


def test_an_image_without_the_note_fails_check(tmp_path):
    target = load_target("x86_64")
    so = build_broken(target, tmp_path / "old", {"note.S": [("\t.long\t2\t\t\t/* type: data pages */", "\t.long\t3")]})
    found = n008(target, so)
    assert found and "no data-pages note" in found[0].message


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_a_copy_of_a_linux_layout_with_fields_swapped_fails(tmp_path, swap):
    """The swapped layout builds an image its own harness would pass; its
    name claims Linux's layout, so check and build refuse it."""
    old, new = SWAPS[swap]
    text = X86_LAYOUT.read_text()
    assert old in text
    d = specs_dir(tmp_path, layout_text=text.replace(old, new))
    target = load_target("x86_64", d)
    so = build(target, tmp_path / "out")
    found = n008(target, so)
    assert found and "is not vdsogen's linux-6.17-x86" in found[-1].message, found
    proc = vdsogen("build", "--arch=x86_64", f"--specs={d}", f"--out={tmp_path / 'cli'}")
    assert proc.returncode == 1 and "N008" in proc.stderr and "Traceback" not in proc.stderr
    # Under a name of its own the same layout is the spec's business.
    renamed = tmp_path / "renamed"
    shutil.copytree(d, renamed)
    (renamed / "layouts" / X86_LAYOUT.name).rename(renamed / "layouts" / "my-x86.toml")
    spec = renamed / "x86_64.toml"
    spec.write_text(spec.read_text().replace('layout = "linux-6.17-x86"', 'layout = "my-x86"'))
    assert not n008(load_target("x86_64", renamed), build(load_target("x86_64", renamed), tmp_path / "out2"))


@pytest.mark.parametrize("name, impl, key", [
    ("__vdso_clock_gettime", "gettimeofday", "export[0].name"),
    ("__vdso_time", "getcpu", "export[2].name"),
])
def test_an_export_built_from_another_function_is_an_error(tmp_path, name, impl, key):
    """__vdso_clock_gettime built from gettimeofday passed its own harness
    (which ran gettimeofday's checks on it) and made `date` print 1970."""
    text = (ROOT / "specs" / "x86_64.toml").read_text()
    block = f'name = "{name}"\nimpl = "{name.removeprefix("__vdso_")}"'
    assert block in text
    d = specs_dir(tmp_path, spec_text=text.replace(block, f'name = "{name}"\nimpl = "{impl}"'))
    with pytest.raises(SpecError) as e:
        load_target("x86_64", d)
    assert f"{key}: {name} is {name.removeprefix('__vdso_')} to every caller, and this export is built from " \
           f"{impl}" in str(e.value), str(e.value)


def test_an_alias_is_held_to_its_name_too(tmp_path):
    text = (ROOT / "specs" / "x86_64.toml").read_text()
    assert 'aliases = ["time"]' in text
    d = specs_dir(tmp_path, spec_text=text.replace('aliases = ["time"]', 'aliases = ["clock_gettime64"]'))
    with pytest.raises(SpecError) as e:
        load_target("x86_64", d)
    assert "export[2].aliases[0]: clock_gettime64 is clock_gettime64 to every caller, and this export is built from time" in str(e.value)


def test_every_shipped_export_is_what_its_name_says():
    from vdsogen.spec.model import list_targets, name_means
    for n in list_targets():
        for e in load_target(n).exports:
            for name in (e.name, *(a.name for a in e.aliases)):
                assert name_means(name) in (None, e.impl), (n, name)


@pytest.mark.parametrize("shstrndx", [16, 200])
def test_unreadable_section_names_are_an_error(built, tmp_path, shstrndx):
    """With e_shstrndx out of range every section name read as "", and a
    damaged .altinstructions (found by name) passed check, audit and test.
    (e_shstrndx 0, "no names", is rule H005's error.)"""
    _, so, _ = built("x86_64")
    data = bytearray(so.read_bytes())
    # e_shnum: 16 sections, 0-15 (since getrandom, a .rodata holds the ChaCha20 routine's constants)
    assert int.from_bytes(data[0x3C:0x3E], "little") == 16
    data[0x3E:0x40] = shstrndx.to_bytes(2, "little")             # e_shstrndx of an ELF64 header
    bad = tmp_path / "vdso.so"
    bad.write_bytes(bytes(data))
    for cmd in (["audit", str(bad)], ["check", "--arch=x86_64", str(bad)]):
        proc = vdsogen(*cmd)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"{bad} @0x3e: malformed ELF headers: e_shstrndx {shstrndx} is not one of the 16" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_run_refuses_an_image_built_for_other_pages(tmp_path):
    """`run --image` checks the image against the spec (N008: its data-pages
    note) and the spec against the running kernel: an image built for other
    pages never runs, however well it passed its own harness."""
    spec = (ROOT / "specs" / "x86_64.toml").read_text().replace("page_size = 4096", "page_size = 16384")
    other = build(load_target("x86_64", specs_dir(tmp_path, spec_text=spec)), tmp_path / "out")
    proc = vdsogen("run", "--arch=x86_64", f"--image={other}", "--", "true")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "fails `vdsogen check` for x86_64: N008" in proc.stderr and "16384x6" in proc.stderr


def test_run_refuses_a_spec_whose_tick_is_not_the_kernels(tmp_path):
    """A spec with the wrong HZ builds an image that passes check and test
    (both go by the spec); the running kernel's clock_getres of a coarse
    clock says otherwise, and run refuses."""
    import time

    tick = round(time.clock_getres(5) * 1e9)      # CLOCK_REALTIME_COARSE
    wrong = 1_000_000 if tick != 1_000_000 else 4_000_000
    spec = (ROOT / "specs" / "x86_64.toml").read_text().replace("tick_nsec = 4000000", f"tick_nsec = {wrong}")
    proc = vdsogen("run", "--arch=x86_64", f"--specs={specs_dir(tmp_path, spec_text=spec)}", "--", "true")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the x86_64 spec's tick is {wrong} ns, the running kernel's is {tick} ns" in proc.stderr
