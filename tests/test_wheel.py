"""A wheel built from the tree, installed in a fresh virtualenv, builds and
checks every target, and tests one of each harness kind, from a directory
that is not the tree: the specs, layouts, templates, arch fragments and
harness sources travel in it."""

import shutil
import subprocess

import pytest

from conftest import ROOT, TARGETS
from vdsogen.spec.model import load_target

# One worker builds and installs the wheel for every test here (under xdist's
# --dist=loadgroup, which scripts/test.sh asks for), not one per worker.
pytestmark = pytest.mark.xdist_group("wheel")

# What a wheel is built from: the files pyproject.toml names.
TREE = ("pyproject.toml", "README.rst", "vdsogen", "specs", "arch", "templates", "harness", "runner", "docs/kernel")


def run(argv, cwd, timeout=300):
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The vdsogen command of a fresh virtualenv that has only the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in TREE:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                         if (ROOT / name).is_dir() else {}))
    # A copy, since setuptools writes build/ and *.egg-info beside the sources.
    run(["/usr/bin/python3", "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", tmp / "dist", src], cwd=tmp)
    wheel, = (tmp / "dist").glob("vdsogen-*.whl")
    venv = tmp / "venv"
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], cwd=tmp)
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], cwd=tmp)
    shutil.rmtree(src)            # nothing may come from the tree it was built from
    work = tmp / "work"
    work.mkdir()
    return venv / "bin" / "vdsogen", work


def test_installed_wheel_lists_the_targets(installed):
    exe, work = installed
    names = [line.split()[0] for line in run([exe, "list"], cwd=work).splitlines()]
    assert set(TARGETS) <= set(names)
    where = run([installed[0].parent / "python", "-c", "import vdsogen.paths as p; print(p.ROOT)"], cwd=work)
    assert "site-packages" in where and str(ROOT) not in where


def harness_kinds():
    """One target per way the harness runs (x86_64 natively, then the first of
    each kind): the wheel must carry what each kind builds from.  Every target's
    harness runs from the tree in test_targets.py and scripts/main.sh."""
    kinds = {}
    for name in ("x86_64", *TARGETS):
        h = load_target(name).harness
        kinds.setdefault((name == "x86_64", h.libc, h.injected_counter, h.trap_syscalls), name)
    return list(kinds.values())


def test_installed_wheel_builds_and_checks_every_target(installed):
    exe, work = installed
    run([exe, "build", f"--arch={','.join(TARGETS)}", "--out=out"], cwd=work)
    for name in TARGETS:
        so = work / "out" / name / "vdso.so"
        assert "0 error(s)" in run([exe, "check", f"--arch={name}", so], cwd=work)


@pytest.mark.parametrize("name", harness_kinds())
def test_installed_wheel_tests_each_harness_kind(installed, name):
    exe, work = installed
    out = run([exe, "test", f"--arch={name}", f"--workdir=h-{name}"], cwd=work)
    assert out.splitlines()[-1].endswith(" 0 failed"), out


def test_installed_wheel_runs_and_benches(installed):
    """`run` and `bench` find their C sources (runner/, harness/) in the wheel."""
    exe, work = installed
    out = run([exe, "run", "--arch=x86_64", "--", "vdsogen-probe"], cwd=work)
    assert "build-id" in out, out
    out = run([exe, "bench", "--arch=x86_64", "--rounds=1", "--batch-us=20"], cwd=work)
    assert "clock_gettime(MONOTONIC)" in out, out
