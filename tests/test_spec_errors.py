"""One load reports every error of a spec, each naming file and key, with
"did you mean" where a known name is close; an unknown key is an error in
every table; ABI facts (syscall numbers, instruction, result convention,
the trampolines' syscalls) come from the ABI catalogue, not from specs."""

import re

import pytest

from conftest import ROOT
from vdsogen import cli
from vdsogen.errors import SpecError, SpecErrors
from vdsogen.spec import abi
from vdsogen.spec.model import list_targets, load_target


def load_text(tmp_path, name, text):
    (tmp_path / f"{name}.toml").write_text(text)
    return load_target(name, tmp_path)


def spec_text(name):
    return (ROOT / "specs" / f"{name}.toml").read_text()


# Every table header of two specs that between them have every kind of table.
def _tables(text):
    return re.findall(r"^(\[\[?[A-Za-z0-9_.]+\]\]?)$", text, re.M)


@pytest.mark.parametrize("target, header", [(t, h) for t in ("x86_64", "s390x", "mips-n64")
                                           for h in dict.fromkeys(_tables(spec_text(t)))])
def test_an_unknown_key_is_an_error_in_every_table(tmp_path, target, header):
    text = spec_text(target).replace(f"{header}\n", f"{header}\nbogus_key = 1\n", 1)
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, target, text)
    name = header.strip("[]")
    index = "[0]" if header.startswith("[[") else ""
    assert f"{name}{index}.bogus_key: unknown key" in str(e.value), str(e.value)


def test_top_level_unknown_key_says_did_you_mean(tmp_path):
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, "t", 'archh = "x86"\n' + spec_text("x86_64"))
    assert "t.toml: archh: unknown key (did you mean 'arch'?)" in str(e.value)


def test_one_load_reports_every_error(tmp_path, capsys):
    text = (spec_text("x86_64")
            .replace('eh_frame = true', 'eh_frame = "yes"')
            .replace('impl = "time"', 'impl = "tme"')
            .replace('page_size = 4096', 'page_size = 4095')
            .replace('clang_target = "x86_64-linux-gnu"', 'clang_target = "x86_64-linux-gnu"\ncflag = []'))
    (tmp_path / "t.toml").write_text(text)
    with pytest.raises(SpecErrors) as e:
        load_target("t", tmp_path)
    keys = [err.key for err in e.value.errors]
    assert keys == ["elf.eh_frame", "export[2].impl", "datapage.page_size", "toolchain.cflag"], keys
    # The CLI prints each on a line of its own, exit 2, no traceback, nothing written.
    out = tmp_path / "out"
    assert cli.main(["build", f"--specs={tmp_path}", "--arch=t", f"--out={out}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith(f"vdsogen: {tmp_path / 't.toml'}: ") for line in lines), lines
    assert "export[2].impl: no implementation 'tme'" in lines[1] and "(did you mean 'time'?)" in lines[1]
    assert "toolchain.cflag: unknown key (did you mean 'cflags'?)" in lines[3]
    assert not out.exists()


@pytest.mark.parametrize("old, new, key, message", [
    ("[syscall]", "[syscall]\ninstruction = \"syscall\"", "syscall.instruction", "an ABI fact"),
    ('fragment = "rt_sigreturn"', 'fragment = "rt_sigreturn"\nsyscall = "rt_sigreturn"', "trampoline[1].syscall",
     "an ABI fact: vdsogen/spec/abi.toml holds it ([i386] trampolines)"),
    ('fragment = "int80"', 'fragment = "int08"', "syscall.fragment", "no fragment arch/x86/syscall-int08.h.j2"),
])
def test_abi_facts_are_not_spec_keys(tmp_path, old, new, key, message):
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, "t", spec_text("i386").replace(old, new, 1))
    assert f"{key}: {message}" in str(e.value), str(e.value)


def test_numbers_are_the_abis_for_the_syscalls_the_image_makes():
    for name in list_targets():
        t = load_target(name)
        made = {e.function.syscall for e in t.exports if e.function.syscall} | {x.syscall for x in t.trampolines}
        if t.datapage is not None and t.datapage.coarse_in_mode_none == "syscall":
            made.add("clock_gettime")
        assert set(t.syscalls.numbers) == made, name
        assert all(t.abi.syscalls.numbers[n] == nr for n, nr in t.syscalls.numbers.items())
        assert (t.syscalls.instruction, t.syscalls.convention) == (t.abi.syscalls.instruction,
                                                                   t.abi.syscalls.convention)
        assert all(x.syscall == next(a.syscall for a in t.abi.trampolines if a.name == x.name)
                   for x in t.trampolines)


def _edit_numbers(path, name, old, new):
    text = path.read_text()
    head, tail = text.split(f"[{name}.syscalls.numbers]\n", 1)
    assert old in tail.split("\n\n", 1)[0] + "\n", (name, old)
    path.write_text(head + f"[{name}.syscalls.numbers]\n" + tail.replace(old, new, 1))


@pytest.mark.parametrize("old, new, key, message", [
    ("clock_gettime = 228", "clock_getime = 228", "x86_64.syscalls.numbers.clock_getime",
     "no function of functions.toml nor trampoline makes this syscall (did you mean 'clock_gettime'?)"),
    ("clock_gettime = 228", "clock_gettime = 99999", "x86_64.syscalls.numbers.clock_gettime", "out of range"),
    ("clock_gettime = 228", "clock_gettime = -1", "x86_64.syscalls.numbers.clock_gettime", "out of range"),
])
def test_bad_numbers_in_the_catalogue(catalogue_copy, old, new, key, message):
    _edit_numbers(catalogue_copy, "x86_64", old, new)
    with pytest.raises(SpecError) as e:
        abi.catalogue()
    assert (e.value.path, e.value.key) == (str(catalogue_copy), key) and message in e.value.message


def test_a_syscall_the_catalogue_does_not_number(catalogue_copy):
    """The export falling back to it, or the trampoline making it, is the error."""
    _edit_numbers(catalogue_copy, "x86_64", "getcpu = 309\n", "")
    with pytest.raises(SpecError) as e:
        load_target("x86_64")
    assert e.value.key == "export[4].impl" and "falls back to syscall getcpu, and the ABI catalogue has no " \
        "number for it (vdsogen/spec/abi.toml [x86_64.syscalls.numbers])" in e.value.message
    _edit_numbers(catalogue_copy, "arm64", "rt_sigreturn = 139\n", "")
    abi.catalogue.cache_clear()
    with pytest.raises(SpecError) as e:
        load_target("arm64")
    assert e.value.key == "trampoline[0].name" and "makes syscall rt_sigreturn" in e.value.message


def test_an_abi_without_syscalls_builds_nothing(catalogue_copy):
    """An ABI in the catalogue for audit only (no [ABI.syscalls]) has no target: s390 (31-bit) was one
    until s390-compat."""
    text = catalogue_copy.read_text()
    start = text.index("[s390.syscalls]")
    catalogue_copy.write_text(text[:start] + text[text.index("[sparc64]", start):])
    abi.catalogue.cache_clear()
    assert abi.get("s390").syscalls is None
    with pytest.raises(SpecError) as e:
        load_target("s390-compat")
    assert e.value.key == "abi" and "has no [s390.syscalls]: vdsogen cannot build a vDSO of the s390 ABI yet" \
        in e.value.message


def test_a_trampoline_names_its_syscall_in_the_catalogue(catalogue_copy):
    text = catalogue_copy.read_text()
    catalogue_copy.write_text(text.replace('name = "__kernel_rt_sigreturn", syscall = "rt_sigreturn"',
                                           'name = "__kernel_rt_sigreturn", syscall = "rt_sigretrun"', 1))
    with pytest.raises(SpecError) as e:
        abi.catalogue()
    assert "syscall: 'rt_sigretrun' is not one of restart_syscall, rt_sigreturn, sigreturn " \
           "(did you mean 'rt_sigreturn'?)" in str(e.value)


@pytest.mark.parametrize("which", ["spec", "layout"])
def test_a_file_that_is_not_utf8_is_named_with_the_offset(tmp_path, which, capsys):
    """TOML is UTF-8: a Latin-1 byte in a spec or a layout is one line naming
    the file and the offset, exit 2, not a UnicodeDecodeError traceback."""
    (tmp_path / "layouts").mkdir()
    (tmp_path / "x86_64.toml").write_text(spec_text("x86_64"))
    layout = ROOT / "specs" / "layouts" / "linux-6.17-x86.toml"
    (tmp_path / "layouts" / layout.name).write_bytes(layout.read_bytes())
    bad = tmp_path / "x86_64.toml" if which == "spec" else tmp_path / "layouts" / layout.name
    good = bad.read_bytes()
    bad.write_bytes(good + b"# caf\xe9\n")
    rc = cli.main(["build", "--arch=x86_64", f"--specs={tmp_path}", f"--out={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}: not UTF-8: byte 0xe9 at offset {len(good) + 5}" in err, err
    assert not (tmp_path / "out" / "vdso.so").exists()


def test_a_page_without_the_struct_a_fragment_reads_names_the_layout(tmp_path, capsys):
    """powerpc's harness fills the arch page through its struct: a layout
    whose arch page names none is an error naming the layout and the page,
    not "struct None" in a C compiler's messages."""
    from vdsogen.harness.driver import harness_sources

    (tmp_path / "layouts").mkdir()
    (tmp_path / "ppc64le.toml").write_text(spec_text("ppc64le"))
    layout = ROOT / "specs" / "layouts" / "linux-6.17-powerpc64.toml"
    text = layout.read_text()
    assert 'role = "arch"\nstruct = "vdso_arch_data"\n' in text
    (tmp_path / "layouts" / layout.name).write_text(text.replace('struct = "vdso_arch_data"\n', "", 1))
    with pytest.raises(SpecError) as e:
        harness_sources(load_target("ppc64le", tmp_path))
    assert str(e.value) == (f"{tmp_path / 'layouts' / layout.name}: page (role 'arch'): has no 'struct', "
                            "which ppc64le's fragments use")
