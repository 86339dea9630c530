"""docs/hacking.rst's recipes are checked: the whole spec of "A target of a
known ISA" builds, checks clean and passes the harness from a temporary
--specs=DIR, and a misspelt name in it is an error naming its key."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT

NAME = "arm64-64k-hz1000"


def recipe_spec():
    """The TOML code block of the "A target of a known ISA" recipe."""
    text = (ROOT / "docs" / "hacking.rst").read_text()
    section = text.split("\nA target of a known ISA\n", 1)[1].split("\nA new ISA\n", 1)[0]
    block = section.split(".. code-block:: toml\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip() + "\n"


def vdsogen(*args):
    return subprocess.run([sys.executable, "-m", "vdsogen", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_the_known_isa_recipe_builds_checks_and_passes_the_harness(tmp_path):
    specs, out = tmp_path / "specs", tmp_path / "out"
    specs.mkdir()
    (specs / f"{NAME}.toml").write_text(recipe_spec())
    opt, arch = f"--specs={specs}", f"--arch={NAME}"
    build = vdsogen("build", opt, arch, f"--out={out}")
    assert build.returncode == 0, build.stderr
    check = vdsogen("check", opt, arch, str(out / "vdso.so"))
    assert check.returncode == 0 and "0 error(s), 0 warning(s)" in check.stdout, check.stdout
    test = vdsogen("test", opt, arch, "--image", str(out / "vdso.so"), "--workdir", str(tmp_path / "h"))
    assert test.returncode == 0, test.stdout[-2000:] + test.stderr
    passed, failed = map(int, re.search(r"(\d+) passed, (\d+) failed", test.stdout).groups())
    assert failed == 0 and passed > 50, test.stdout[-500:]


@pytest.mark.parametrize("old, new, key, message", [
    ('fragment = "cntvct"', 'fragment = "cntvtc"', "counter.fragment",
     "no fragment arch/arm64/counter-cntvtc.h.j2 (did you mean"),
    ('fragment = "sigreturn"', 'fragment = "sigretrun"', "trampoline[0].fragment",
     "no fragment arch/arm64/sigretrun.S.j2 (did you mean"),
    ('fragment = "svc"', 'fragment = "scv"', "syscall.fragment", "no fragment arch/arm64/syscall-scv.h.j2"),
    ('modes = ["archtimer"]', 'modes = ["archtimr"]', "counter.modes[0]", "(did you mean 'archtimer'?)"),
    ('modes = ["archtimer"]', 'modes = [1]', "counter.modes[0]", "1 is a number: name the mode (did you mean 'archtimer'?)"),
    ('page_size = 65536', 'pagesize = 65536', "datapage.page_size",
     "missing required key (the table has 'pagesize': misspelt?)"),
    ('page_size = 65536', 'page_size = 65536\npages_size = 1', "datapage.pages_size",
     "unknown key (did you mean 'page_size'?)"),
])
def test_a_misspelt_name_in_the_recipe_is_an_error_naming_its_key(tmp_path, old, new, key, message):
    text = recipe_spec()
    assert old in text
    (tmp_path / f"{NAME}.toml").write_text(text.replace(old, new, 1))
    proc = vdsogen("build", f"--specs={tmp_path}", f"--arch={NAME}", f"--out={tmp_path / 'out'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{tmp_path / (NAME + '.toml')}: {key}: " in proc.stderr and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
