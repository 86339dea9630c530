"""A spec may extend another (`extends = "NAME"`) and override keys: tables
merge key by key at any depth, arrays and other values replace the base's.
The base is NAME.toml in the spec's own directory, else in vdsogen's specs/;
a missing base and a cycle are errors that name the file and the key."""

import dataclasses

import pytest

from conftest import ROOT, vdsogen
from vdsogen.build.depfile import Request, inputs
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import SpecError
from vdsogen.spec.model import _merge, load_target

BASE = """\
abi = "arm64"
arch = "arm64"
[elf]
linux_version = "6.17.0"
eh_frame = false
[[export]]
name = "__kernel_clock_gettime"
impl = "clock_gettime"
[[export]]
name = "__kernel_gettimeofday"
impl = "gettimeofday"
[counter]
fragment = "cntvct"
modes = ["archtimer", "archtimer_nocompat"]
mask = true
clamp_backwards = false
[syscall]
fragment = "svc"
[datapage]
layout = "linux-6.17"
page_size = 4096
pages = 4
tick_nsec = 4000000
[entry]
style = "c"
[toolchain]
clang_target = "aarch64-linux-gnu"
gnu_triple = "aarch64-linux-gnu"
qemu = "aarch64"
cflags = ["-mcmodel=tiny"]
"""


def write(d, name, text):
    (d / f"{name}.toml").write_text(text)


def comparable(t):
    """A target less what tells two specs apart anyway: name and files."""
    return dataclasses.replace(t, name="", path="", spec_files=())


def test_big_endian_mips_is_its_base_but_for_byte_order_and_tools():
    le, be = load_target("mips-o32"), load_target("mips-o32-be")
    assert (le.elf.endian, be.elf.endian) == ("little", "big")
    assert (be.toolchain.clang_target, be.toolchain.qemu) == ("mips-linux-gnu", "mips")
    assert be.spec_files == (str(ROOT / "specs" / "mips-o32-be.toml"), str(ROOT / "specs" / "mips-o32.toml"),
                             str(ROOT / "specs" / "mips-n64.toml"))
    same = dataclasses.replace(comparable(be), elf=le.elf, toolchain=le.toolchain)
    assert same == comparable(le)


def test_tables_merge_and_arrays_replace(tmp_path):
    write(tmp_path, "base", BASE)
    write(tmp_path, "child", 'extends = "base"\n'
                             '[datapage]\npage_size = 16384\n'
                             '[[export]]\nname = "__kernel_clock_getres"\nimpl = "clock_getres"\n'
                             '[toolchain]\ncflags = []\n')
    base, child = load_target("base", tmp_path), load_target("child", tmp_path)
    # [datapage]: one key overridden, the others kept.
    assert (child.datapage.page_size, child.datapage.pages, child.datapage.tick_nsec) == (16384, 4, 4000000)
    # Arrays, of tables or of strings, replace the base's.
    assert [e.name for e in child.exports] == ["__kernel_clock_getres"]
    assert child.toolchain.cflags == ()
    assert child.counter == base.counter and child.elf == base.elf


def test_tables_in_tables_merge_too():
    base = {"a": {"b": {"c": 1, "d": 2}, "e": [1]}, "f": 1}
    assert _merge(base, {"a": {"b": {"c": 3}, "e": [2]}}) == {"a": {"b": {"c": 3, "d": 2}, "e": [2]}, "f": 1}
    assert base["a"]["b"] == {"c": 1, "d": 2}, "the base is left as it was"


def test_unset_drops_an_inherited_key_or_table(tmp_path):
    write(tmp_path, "base", BASE + '[harness]\nchecks = []\n')
    assert load_target("base", tmp_path).toolchain.qemu == "aarch64"
    write(tmp_path, "child", 'extends = "base"\nunset = ["toolchain.qemu", "harness"]\n')
    t = load_target("child", tmp_path)
    assert t.toolchain.qemu is None and t.harness == load_target("base", tmp_path).harness
    # unset then set again: the child's own value wins.
    write(tmp_path, "child", 'extends = "base"\nunset = ["toolchain"]\n[toolchain]\nclang_target = "x"\n'
                             'gnu_triple = "aarch64-linux-gnu"\n')
    t = load_target("child", tmp_path)
    assert (t.toolchain.clang_target, t.toolchain.qemu, t.toolchain.cflags) == ("x", None, ())


@pytest.mark.parametrize("unset, key, message", [
    ('["toolchain.qemus"]', "unset[0]", "the base has no key 'toolchain.qemus' (did you mean 'qemu'?)"),
    ('["nosuch.qemu"]', "unset[0]", "the base has no table 'nosuch'"),
    ('"toolchain"', "unset", "expected an array of dotted keys"),
])
def test_a_bad_unset_names_file_and_key(tmp_path, unset, key, message):
    write(tmp_path, "base", BASE)
    write(tmp_path, "child", f'extends = "base"\nunset = {unset}\n')
    with pytest.raises(SpecError) as e:
        load_target("child", tmp_path)
    assert (e.value.path, e.value.key) == (str(tmp_path / "child.toml"), key)
    assert message in e.value.message


def test_unset_needs_extends(tmp_path):
    write(tmp_path, "alone", 'unset = ["harness"]\n' + BASE)
    with pytest.raises(SpecError) as e:
        load_target("alone", tmp_path)
    assert e.value.key == "unset" and "only a spec that extends another" in e.value.message


def test_a_spec_extending_its_own_name_extends_vdsogens(tmp_path):
    """A kernel tree's arch/x86/vdsogen/x86_64.toml extends vdsogen's x86_64;
    a spec extending its own name that vdsogen does not have is an error."""
    write(tmp_path, "a", 'extends = "a"\n')
    with pytest.raises(SpecError) as e:
        load_target("a", tmp_path)
    assert e.value.key == "extends" and "a spec that extends its own name extends vdsogen's" in e.value.message
    write(tmp_path, "x86_64", 'extends = "x86_64"\n[datapage]\ntick_nsec = 1000000\n')
    t = load_target("x86_64", tmp_path)
    assert t.datapage.tick_nsec == 1000000
    assert t.spec_files == (str(tmp_path / "x86_64.toml"), str(ROOT / "specs" / "x86_64.toml"))


def test_a_chain_and_a_base_from_vdsogens_own_specs(tmp_path):
    write(tmp_path, "a", 'extends = "arm64"\n[datapage]\npage_size = 16384\n')
    write(tmp_path, "b", 'extends = "a"\n[datapage]\ntick_nsec = 1000000\n')
    t = load_target("b", tmp_path)
    assert (t.datapage.page_size, t.datapage.tick_nsec) == (16384, 1000000)
    assert [e.name for e in t.exports] == [e.name for e in load_target("arm64").exports]
    assert t.spec_files == (str(tmp_path / "b.toml"), str(tmp_path / "a.toml"), str(ROOT / "specs" / "arm64.toml"))
    # An image depends on every spec of the chain: a change to the base rebuilds it.
    files, _ = inputs(t, Request("b", str(tmp_path), None, (), "vdso", {}))
    assert {str(tmp_path / "a.toml"), str(ROOT / "specs" / "arm64.toml")} <= set(files)


def test_missing_base_names_file_and_key(tmp_path):
    write(tmp_path, "child", 'extends = "nosuch"\n')
    with pytest.raises(SpecError) as e:
        load_target("child", tmp_path)
    assert (e.value.path, e.value.key) == (str(tmp_path / "child.toml"), "extends")
    assert "no spec 'nosuch'" in e.value.message
    write(tmp_path, "child", 'extends = "arm46"\n')
    with pytest.raises(SpecError) as e:
        load_target("child", tmp_path)
    assert "(did you mean 'arm64'?)" in e.value.message


@pytest.mark.parametrize("chain", [["a", "b"], ["a", "b", "c"]])
def test_cycle_names_file_and_key(tmp_path, chain):
    for name, nxt in zip(chain, chain[1:] + chain[:1]):
        write(tmp_path, name, f'extends = "{nxt}"\n')
    with pytest.raises(SpecError) as e:
        load_target(chain[0], tmp_path)
    assert e.value.key == "extends" and e.value.path == str(tmp_path / f"{chain[-1]}.toml")
    assert "circular extends: " + " -> ".join(chain + chain[:1]) in e.value.message


@pytest.mark.parametrize("value", ["42", '""', '"../arm64"', '["arm64"]'])
def test_extends_must_name_a_spec(tmp_path, value):
    write(tmp_path, "child", f"extends = {value}\n")
    with pytest.raises(SpecError) as e:
        load_target("child", tmp_path)
    assert e.value.key == "extends" and "expected the name of a spec" in e.value.message


def test_an_overriding_key_is_still_checked(tmp_path):
    write(tmp_path, "base", BASE)
    write(tmp_path, "child", 'extends = "base"\n[datapage]\npage_size = 5000\nnosuch = 1\n')
    with pytest.raises(SpecError) as e:
        load_target("child", tmp_path)
    assert (e.value.path, e.value.key) == (str(tmp_path / "child.toml"), "datapage.page_size")


def test_specs_dir_through_the_cli(tmp_path):
    """`--specs=DIR`: a 16 KiB arm64 target that extends vdsogen's own arm64
    spec by one key, listed, built and checked."""
    specs, out = tmp_path / "specs", tmp_path / "out"
    specs.mkdir()
    write(specs, "arm64-16k", 'extends = "arm64"\n\n[datapage]\npage_size = 16384\n')
    opt = f"--specs={specs}"
    listed = vdsogen("list", opt, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.split()[0] == "arm64-16k", listed.stdout
    build = vdsogen("build", opt, "--arch=arm64-16k", f"--out={out}", cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    check = vdsogen("check", opt, "--arch=arm64-16k", str(out / "vdso.so"), cwd=tmp_path)
    assert check.returncode == 0 and "0 error(s)" in check.stdout, check.stdout
    assert [s.align for s in ElfImage(str(out / "vdso.so")).loads] == [16384]

    write(specs, "arm64-16k", 'extends = "arm64-64k"\n')
    bad = vdsogen("build", opt, "--arch=arm64-16k", f"--out={out}", cwd=tmp_path)
    assert bad.returncode == 2 and f"{specs / 'arm64-16k.toml'}: extends: no spec 'arm64-64k'" in bad.stderr
