"""Broken specs and layouts: a clear error naming file and key, exit 2,
no traceback, nothing written."""

import re

import pytest

from conftest import ROOT, edit, run_cli


CASES = [
    # (file, old text, new text, expected key, expected message fragment)
    ("specs/x86_64.toml", 'eh_frame = true', 'eh_frame = true\ncolour = "red"', "elf.colour", "unknown key"),
    ("specs/x86_64.toml", 'eh_frame = true', 'eh_frame = true\nsoname = "linux-gate.so.1"', "elf.soname",
     "'linux-gate.so.1' is not one of linux-vdso.so.1"),
    ("specs/x86_64.toml", 'abi = "x86_64"', 'abi = "x86-64"', "abi", "unknown ABI 'x86-64'"),
    ("specs/x86_64.toml", 'abi = "x86_64"\n', '', "abi", "missing required key"),
    ("specs/x86_64.toml", "flags = 0", 'flags = "0"', "elf.flags", "expected an integer, got string"),
    ("specs/x86_64.toml", "eh_frame = true", "eh_frame = 1", "elf.eh_frame", "expected a boolean"),
    ("specs/x86_64.toml", 'name = "__vdso_time"', 'name = "__vdso-time"', "export[2].name", "not a C identifier"),
    ("specs/x86_64.toml", 'fragment = "syscall"', 'fragment = "syscall"\nconvention = "cr0-so"',
     "syscall.convention", "an ABI fact: vdsogen/spec/abi.toml holds it ([x86_64.syscalls])"),
    ("specs/x86_64.toml", 'fragment = "syscall"', 'fragment = "syscall"\n[syscall.numbers]\ngetcpu = 309',
     "syscall.numbers", "an ABI fact"),

    ("specs/x86_64.toml", 'impl = "clock_gettime"', 'impl = "frobnicate"', "export[0].impl", "no implementation"),
    ("specs/x86_64.toml", 'impl = "clock_gettime"', 'impl = "clock_gettime"\nversion = "LINUX_2.7"',
     "export[0].version", "unknown version node 'LINUX_2.7' (the x86_64 ABI has LINUX_2.6)"),
    ("specs/x86_64.toml", 'eh_frame = true', 'eh_frame = true\nlinux_verison = "6.1.0"', "elf.linux_verison",
     "unknown key (did you mean 'linux_version'?)"),
    ("specs/x86_64.toml", 'impl = "clock_gettime"', 'impl = "clock_gettim"', "export[0].impl",
     "(did you mean 'clock_gettime'?)"),
    ("specs/x86_64.toml", 'layout = "linux-6.17-x86"', 'layout = "linux-6.17-x68"', "datapage.layout",
     "(did you mean 'linux-6.17-x86'?)"),
    ("specs/x86_64.toml", 'arch = "x86"', 'arch = "x68"', "arch", "(did you mean 'x86'?)"),
    ("specs/x86_64.toml", 'impl = "getcpu"', 'impl = "getcpu"\nwhere = "elsewhere"', "export[4].where",
     "'elsewhere' is not one of arch, core"),
    ("specs/x86_64.toml", 'impl = "getcpu"', 'impl = "getcpu"\nwhere = "arch"', "export[4].where",
     "no fragment arch/x86/impl-getcpu.S.j2"),
    ("specs/x86_64.toml", 'aliases = ["time"]', 'aliases = ["clock_gettime"]', "export[2].aliases[0]",
     "exported twice"),
    ("specs/x86_64.toml", "page_size = 4096", "page_size = 5000", "datapage.page_size", "not a power of two"),
    ("specs/x86_64.toml", "pages = 6", "pages = 4", "datapage.pages", "needs 6 pages"),
    ("specs/x86_64.toml", 'ordered = "lfence"', 'ordered = "rdtsc"', "counter.params.ordered",
     "must be one of 'rdtscp', 'lfence' (did you mean 'rdtscp'?)"),
    ("specs/x86_64.toml", 'ordered = "lfence"', 'ordered = "lfence"\nfence = 1', "counter.params.fence",
     "unknown key: the rdtsc counter fragment takes no such parameter"),
    ("specs/x86_64.toml", 'ordered = "lfence"', 'order = "lfence"', "counter.params.order",
     "unknown key: the rdtsc counter fragment takes no such parameter"),
    ("specs/x86_64.toml", 'ordered = "lfence"', '', "counter.params.ordered",
     "missing: the rdtsc counter fragment needs it"),
    ("specs/x86_64.toml", "tick_nsec = 4000000", 'tick_nsec = 4000000\ncoarse_in_mode_none = "never"',
     "datapage.coarse_in_mode_none", "is not one of page, syscall"),
    ("specs/layouts/linux-6.17.toml", "align = 64", "align = 48", "struct[2].align", "not a power of two"),
    ("specs/x86_64.toml", 'fragment = "rdtsc"', 'fragment = "hpet"', "counter.fragment", "no fragment"),
    ("specs/x86_64.toml", "[elf]", "[elf\n", None, "invalid TOML"),
    ("specs/layouts/linux-6.17.toml", '{ name = "mult", type = "u32" },', '{ name = "mult", type = "u31" },',
     "struct[1].fields[4].type", "unknown type"),
    ("specs/layouts/linux-6.17-x86.toml", '    { name = "shift", type = "u32" },\n', "",
     "access.clocks", "needs member shift"),
    ("specs/layouts/linux-6.17.toml", 'tz_dsttime = "tz_dsttime"', 'tz_dsttime = "tz_dstime"',
     "access.tz_dsttime", "no member"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[3] or c[4] for c in CASES])
def test_broken_spec(project_copy, tmp_path, case):
    rel, old, new, key, message = case
    edit(project_copy / rel, old, new)
    out = tmp_path / "out"
    proc = run_cli(project_copy, "build", "--arch=x86_64", f"--out={out}")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert rel in line
    if key:
        assert re.search(re.escape(f": {key}: "), line), line
    assert message in line
    assert not out.exists(), "a failed spec must not write anything"


@pytest.mark.parametrize("old, new, key, message", [
    ('impl = "get_tbfreq"', 'impl = "get_tbfreq"\nwhere = "core"', "export[6].where",
     "get_tbfreq has no implementation in the core"),
    ('[entry]', '[getcpu]\nfragment = "sprg"\n\n[entry]', "getcpu.fragment",
     "no export implements getcpu in the core (an arch entry has its own)"),
])
def test_arch_entry_where(project_copy, tmp_path, old, new, key, message):
    """An export's `where` moves a core function to an arch entry, never an arch one to the core,
    and a C getcpu hook needs the core's getcpu."""
    edit(project_copy / "specs/ppc64le.toml", old, new)
    (project_copy / "arch/powerpc/getcpu-sprg.h.j2").write_text("/* a hook */\n")
    proc = run_cli(project_copy, "build", "--arch=ppc64le", f"--out={tmp_path / 'out'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"specs/ppc64le.toml: {key}: {message}" in proc.stderr, proc.stderr


def test_unknown_target(tmp_path):
    proc = run_cli(ROOT, "build", "--arch=vax", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2
    assert "no spec for target 'vax'" in proc.stderr and "x86_64" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_one_bad_spec_stops_every_target(project_copy, tmp_path):
    edit(project_copy / "specs/x86_64.toml", 'abi = "x86_64"', 'abi = "x86"')
    proc = run_cli(project_copy, "build", "--arch=arm64,x86_64", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2 and "abi: unknown ABI 'x86'" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_every_shipped_spec_loads():
    from vdsogen.spec.model import list_targets, load_target
    names = list_targets()
    assert {"x86_64", "arm64", "ppc64le"} <= set(names)
    for n in names:
        load_target(n)


# Identity and trampoline words come from the ABI catalogue: a spec cannot contradict it.
CATALOGUE_CASES = [
    ("ppc64le", "flags = 2", "flags = 1", "elf.flags", "breaks the ppc64le ABI's constraint: EF_PPC64_ABI 2"),
    ("ppc64le", 'name = "__kernel_sigtramp_rt64"', 'name = "__kernel_sigtramp_rt32"', "trampoline[0].name",
     "the ppc64le ABI has no trampoline '__kernel_sigtramp_rt32' (known: __kernel_sigtramp_rt64)"),
    ("arm64", "flags = 0", 'flags = 0\nendian = "middle"', "elf.endian", "is not one of big, little"),
]


@pytest.mark.parametrize("case", CATALOGUE_CASES, ids=[c[3] for c in CATALOGUE_CASES])
def test_spec_against_catalogue(project_copy, tmp_path, case):
    target, old, new, key, message = case
    edit(project_copy / f"specs/{target}.toml", old, new)
    proc = run_cli(project_copy, "build", f"--arch={target}", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"specs/{target}.toml: {key}: " in proc.stderr and message in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


# The ABI catalogue (vdsogen/spec/abi.toml) is no spec: a test edits a copy of it, put in its place.

HASH_STYLES_CASES = [
    ('hash_styles = ["sysv", "elf"]', "mips-n64.hash_styles[1]", "'elf' is not one of sysv, gnu"),
    ('hash_styles = ["sysv", "sysv"]', "mips-n64.hash_styles[1]", "'sysv' is listed twice"),
    ('hash_styles = []', "mips-n64.hash_styles", "empty: a vDSO needs at least one of sysv, gnu"),
    ('hash_styles = "sysv"', "mips-n64.hash_styles", "expected an array, got string"),
    ('hash_styles = [1]', "mips-n64.hash_styles[0]", "expected a string, got integer"),
]


@pytest.mark.parametrize("case", HASH_STYLES_CASES, ids=[c[0] for c in HASH_STYLES_CASES])
def test_bad_hash_styles_in_the_catalogue(catalogue_copy, tmp_path, capsys, case):
    """A bad hash_styles is an error naming the catalogue and the key, for every target."""
    from vdsogen import cli
    new, key, message = case
    head, tail = catalogue_copy.read_text().split("[mips-n64]\n", 1)
    assert 'hash_styles = ["sysv"]' in tail.split("\n[", 1)[0]
    catalogue_copy.write_text(head + "[mips-n64]\n" + tail.replace('hash_styles = ["sysv"]', new, 1))
    out = tmp_path / "o"
    assert cli.main(["build", "--arch=x86_64", f"--out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{catalogue_copy}: {key}: {message}" in err, err
    assert not out.exists()


def test_hash_styles_default_to_both():
    from vdsogen.spec import abi
    for a in abi.catalogue().values():
        want = ("sysv",) if a.machine == 8 else ("sysv", "gnu")      # EM_MIPS: Linux links sysv only
        assert a.hash_styles == want, a.name
        assert a.hash_style == ("sysv" if a.machine == 8 else "both")


def test_the_link_takes_its_hash_style_from_the_catalogue(catalogue_copy, tmp_path, capsys):
    """x86_64's image has DT_GNU_HASH; with the catalogue's x86_64 entry
    saying sysv only, the same spec links without it, check agrees (X002
    follows the catalogue) and the harness is told (H_HASH_GNU 0)."""
    from vdsogen import cli
    from vdsogen.elf.reader import ElfImage
    from vdsogen.harness.driver import harness_sources
    from vdsogen.spec import abi
    from vdsogen.spec.model import load_target

    def build(out):
        assert cli.main(["build", "--arch=x86_64", f"--out={out}"]) == 0, capsys.readouterr()
        img = ElfImage(str(out / "vdso.so"))
        return img.dyn("HASH") is not None, img.dyn("GNU_HASH") is not None

    assert build(tmp_path / "both") == (True, True)
    text = catalogue_copy.read_text()
    assert text.count("[x86_64]\n") == 1
    catalogue_copy.write_text(text.replace("[x86_64]\n", '[x86_64]\nhash_styles = ["sysv"]\n'))
    abi.catalogue.cache_clear()
    assert abi.get("x86_64").hash_styles == ("sysv",)
    assert build(tmp_path / "sysv") == (True, False)
    assert cli.main(["check", "--arch=x86_64", str(tmp_path / "sysv" / "vdso.so")]) == 0
    assert "0 error(s), 0 warning(s)" in capsys.readouterr().out
    header = dict(harness_sources(load_target("x86_64")))["harness_target.h"]
    assert "#define H_HASH_GNU\t\t0" in header and "#define H_HASH_SYSV\t\t1" in header
