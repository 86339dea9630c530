"""Incremental builds (`vdsogen build` with nothing changed writes nothing)
and --depfile, as a kernel Makefile uses them."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, vdsogen
from vdsogen.build.depfile import render_depfile

OUTPUTS = ("vdso.so", "vdso.so.dbg", "vdso-image.c", "vdso-offsets.h")


def snapshot(directory):
    """Every file below directory with its mtime and inode: a rewrite changes one of them."""
    out = {}
    for dirpath, _, names in os.walk(directory):
        for n in names:
            st = os.stat(os.path.join(dirpath, n))
            out[os.path.relpath(os.path.join(dirpath, n), directory)] = (st.st_mtime_ns, st.st_ino, st.st_size)
    return out


def build(out, *extra, env=None, root=None, cwd=None):
    if root is not None:
        env = dict(env or {}, VDSOGEN_ROOT=str(root))
    return vdsogen("build", "--arch=x86_64", f"--out={out}", "--emit=c", *extra, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """One build with a depfile, shared by the tests that only look."""
    base = tmp_path_factory.mktemp("incr")
    out, dep = base / "out", base / "vdso.d"
    proc = build(out, f"--depfile={dep}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, dep


def test_no_change_writes_nothing(first):
    out, dep = first
    before, dep_before = snapshot(out), os.stat(dep).st_mtime_ns
    proc = build(out, f"--depfile={dep}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert snapshot(out) == before
    assert os.stat(dep).st_mtime_ns == dep_before


def test_no_change_loads_no_spec_and_no_template_engine(first):
    """The no-change path decides from the recorded hashes alone: it imports
    neither the spec model nor Jinja2 nor the validator, which is what keeps
    it well under 0.2 s (measured, not asserted: no test asserts a timing)."""
    out, dep = first
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vdsogen", "build", "--arch=x86_64",
                           f"--out={out}", "--emit=c", f"--depfile={dep}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"vdsogen.spec.model", "jinja2", "vdsogen.audit.check", "vdsogen.gen.render"}


def test_depfile_names_every_input(first):
    out, dep = first
    text = dep.read_text()
    head, _, rest = text.partition(":")
    targets = head.split()
    assert targets == [str(out / n) for n in ("vdso.so.dbg", "vdso.so", "vdso-image.c", "vdso-offsets.h")]
    deps = {line.strip(" \\") for line in rest.split("\n\n")[0].splitlines() if line.strip(" \\")}
    for needed in ("specs/x86_64.toml", "specs/layouts/linux-6.17-x86.toml", "specs/layouts/linux-6.17.toml",
                   "vdsogen/spec/abi.toml", "vdsogen/spec/functions.toml", "templates/vdso_core.h",
                   "templates/vdso.lds.j2", "templates/emit-vdso-image.c.j2", "arch/x86/counter-rdtsc.h.j2",
                   "arch/x86/syscall-syscall.h.j2", "vdsogen/build/image.py"):
        assert str(ROOT / needed) in deps, needed
    assert shutil.which("clang-19") in deps and shutil.which("ld.lld-19") in deps
    assert not any("harness" in d.rsplit("/", 1)[-1] for d in deps), "the harness's templates are no input"
    # One empty rule per input: make does not stop when an input goes away.
    assert all(f"{d}:" in text.splitlines() for d in deps)


def test_no_change_with_a_kernel_trees_specs(tmp_path):
    """--specs=DIR without layouts/ (docs/kernel/, as a kernel tree keeps it):
    a directory that does not exist is recorded as such, not as a change."""
    out = tmp_path / "out"
    assert build(out, f"--specs={ROOT / 'docs' / 'kernel'}").returncode == 0
    before = snapshot(out)
    proc = build(out, f"--specs={ROOT / 'docs' / 'kernel'}")
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    assert snapshot(out) == before


def test_depfile_escapes_what_make_would_misread():
    text = render_depfile(["out dir/vdso.so"], ["/a b/x$y.toml", "/c#d"])
    assert text.splitlines()[:3] == ["out\\ dir/vdso.so: \\", " /a\\ b/x$$y.toml \\", " /c\\#d"]


def test_make_runs_vdsogen_only_when_an_input_changes(tmp_path, project_copy):
    """A Makefile that -includes the depfile, the way docs/Makefile.vdsogen does."""
    vdsogen_cmd = f"{sys.executable} -m vdsogen"
    (tmp_path / "Makefile").write_text(
        f"out/vdso-image.c:\n\t{vdsogen_cmd} build --arch=x86_64 --out=out --emit=c --depfile=out.d\n"
        "-include out.d\n")
    env = dict(os.environ, VDSOGEN_ROOT=str(project_copy), PYTHONPATH=str(ROOT))

    def make():
        return subprocess.run(["make", "-C", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)

    first_run = make()
    assert first_run.returncode == 0 and "LD" in first_run.stderr, first_run.stdout + first_run.stderr
    assert "is up to date" in make().stdout
    image = tmp_path / "out" / "vdso.so"
    before = os.stat(image).st_mtime_ns
    layout = project_copy / "specs" / "layouts" / "linux-6.17-x86.toml"
    data = image.read_bytes()
    while layout.stat().st_mtime_ns <= before:
        os.utime(layout)        # touched, same bytes
    again = make()
    # vdsogen runs, builds nothing, and gives its outputs the time of now: make is content after one run.
    assert "vdsogen" in again.stdout and "LD" not in again.stderr, again.stdout + again.stderr
    assert image.read_bytes() == data and os.stat(image).st_mtime_ns >= layout.stat().st_mtime_ns
    assert "is up to date" in make().stdout
    layout.write_text(layout.read_text().replace('name = "max_cycles", type = "u64"',
                                                 'name = "max_cycles", type = "u64"', 1) + "\n# edited\n")
    edited = make()
    assert "LD" in edited.stderr, edited.stderr
    # A comment changes no byte of the image: rebuilt, the same bytes, and up to date for make.
    assert image.read_bytes() == data
    assert "is up to date" in make().stdout


def test_a_change_rebuilds(tmp_path, project_copy):
    out = tmp_path / "out"
    assert build(out, root=project_copy).returncode == 0
    image = (out / "vdso.so").read_bytes()
    spec = project_copy / "specs" / "x86_64.toml"
    spec.write_text(spec.read_text().replace('ordered = "lfence"', 'ordered = "rdtscp"'))
    proc = build(out, root=project_copy)
    assert proc.returncode == 0 and "LD" in proc.stderr, proc.stdout + proc.stderr
    assert (out / "vdso.so").read_bytes() != image
    assert b"rdtscp" not in image and "rdtscp" in (out / "src" / "vdso_arch.h").read_text()


def test_other_options_are_other_builds(first, tmp_path):
    """An option that changes the outputs (another --emit) is not up to date."""
    out, _ = first
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    proc = build(copy, "--emit=incbin")
    assert proc.returncode == 0 and "LD" in proc.stderr
    assert (copy / "vdso-wrap.S").is_file()
    assert build(copy, "--emit=incbin").stderr == ""


def test_a_deleted_or_edited_output_is_rebuilt(first, tmp_path):
    out, _ = first
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "vdso-image.c").unlink()
    assert "GEN" in build(copy).stderr and (copy / "vdso-image.c").is_file()
    (copy / "vdso.so").write_bytes(b"scribbled")
    assert "LD" in build(copy).stderr
    assert (copy / "vdso.so").read_bytes() == (out / "vdso.so").read_bytes()


def test_a_failed_rebuild_leaves_nothing(tmp_path, project_copy):
    out = tmp_path / "out"
    assert build(out, root=project_copy).returncode == 0
    core = project_copy / "templates" / "vdso_core.h"
    core.write_text(core.read_text() + "\n#error broken on purpose\n")
    proc = build(out, root=project_copy)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert not any((out / n).exists() for n in OUTPUTS + (".vdsogen-state.json",))
    core.write_text(core.read_text().replace("\n#error broken on purpose\n", ""))
    assert build(out, root=project_copy).returncode == 0
    assert all((out / n).is_file() for n in OUTPUTS)
