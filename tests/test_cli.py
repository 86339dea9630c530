"""The command line as a kernel Makefile and a user drive it."""

import os
import subprocess

import pytest

from conftest import ROOT, edit, run_cli, vdsogen
from elfmut import Mutant


def test_list():
    proc = vdsogen("list")
    assert proc.returncode == 0
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert {"x86_64", "arm64", "ppc64le"} <= set(names)
    assert "linux-vdso64.so.1" in proc.stdout


def test_build_quiet_progress_and_outputs(tmp_path):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()     # progress
    tags = [line.split()[0] for line in lines]
    assert list(dict.fromkeys(tags)) == ["GEN", "CC", "AS", "LD", "OBJCOPY", "CHECK"]
    assert all(line.startswith("  ") for line in lines)
    for name in ("vdso.so", "vdso.so.dbg", "src/vdso.c", "src/vdso.lds", "src/datapage.h"):
        assert (tmp_path / name).is_file(), name
    assert not list(tmp_path.glob(".*tmp*"))


def test_build_v1_prints_commands(tmp_path):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}", env={"V": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "clang-19 --target=x86_64-linux-gnu" in proc.stderr
    assert "--ld-path=ld.lld-19" in proc.stderr and "-Wl,-z,defs" in proc.stderr


def test_build_several_targets(tmp_path):
    proc = vdsogen("build", "--arch=x86_64,arm64,ppc64le", f"--out={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    for t in ("x86_64", "arm64", "ppc64le"):
        assert (tmp_path / t / "vdso.so").is_file()
        assert (tmp_path / t / "vdso.so.dbg").is_file()


@pytest.mark.parametrize("env", [{"CROSS_COMPILE": "x86_64-linux-gnu-"}, {"LLVM": "-19"},
                                 {"LLVM": "/usr/lib/llvm-19/bin/"}])
def test_toolchain_selection(tmp_path, env):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}", env={**env, "V": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stderr.splitlines()[1]
    if "CROSS_COMPILE" in env:
        assert first.startswith("x86_64-linux-gnu-gcc ")
    else:
        assert "clang" in first.split()[0]
    assert vdsogen("check", "--arch=x86_64", str(tmp_path / "vdso.so")).returncode == 0


@pytest.mark.parametrize("name", ["arm64", "ppc64le"])
def test_gnu_cross_toolchain(tmp_path, name):
    from vdsogen.spec.model import load_target
    triple = load_target(name).toolchain.gnu_triple
    proc = vdsogen("build", f"--arch={name}", f"--out={tmp_path}", env={"CROSS_COMPILE": f"{triple}-"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert vdsogen("check", f"--arch={name}", str(tmp_path / "vdso.so")).returncode == 0


def test_missing_toolchain_is_an_error(tmp_path):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}", env={"LLVM": "-99"})
    assert proc.returncode == 1
    assert "clang-99: not found" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "vdso.so").exists()


def test_compile_failure_leaves_no_image(project_copy, tmp_path):
    out = tmp_path / "out"
    assert run_cli(project_copy, "build", "--arch=x86_64", f"--out={out}").returncode == 0
    assert (out / "vdso.so").exists()
    edit(project_copy / "arch/x86/barrier.h.j2", '"pause"', '"pauze"')
    proc = run_cli(project_copy, "build", "--arch=x86_64", f"--out={out}")
    assert proc.returncode == 1
    assert "AS" in proc.stderr or "CC" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / "vdso.so").exists() and not (out / "vdso.so.dbg").exists()


def test_validation_failure_leaves_no_image(project_copy, tmp_path):
    # A linker flag that drops DT_HASH: the image links, but must not be published.
    edit(project_copy / "specs/x86_64.toml", "ldflags = []", 'ldflags = ["--hash-style=gnu"]')
    out = tmp_path / "out"
    proc = run_cli(project_copy, "build", "--arch=x86_64", f"--out={out}")
    assert proc.returncode == 1
    assert "fails validation" in proc.stderr and "X001" in proc.stderr
    assert not (out / "vdso.so").exists() and not (out / "vdso.so.dbg").exists()
    assert not list(out.glob(".*tmp*"))


def test_check_exit_codes(built, tmp_path):
    target, so, _ = built("x86_64")
    ok = vdsogen("check", "--arch=x86_64", str(so))
    assert ok.returncode == 0 and "0 error(s)" in ok.stdout

    m = Mutant(so)
    m.set_e_type(2)
    bad = vdsogen("check", "--arch=x86_64", str(m.save(tmp_path / "bad.so")))
    assert bad.returncode == 1
    assert "H001 error" in bad.stdout

    for junk in (b"", b"\x7fELF", b"not an elf at all", so.read_bytes()[:100]):
        p = tmp_path / "junk"
        p.write_bytes(junk)
        proc = vdsogen("check", "--arch=x86_64", str(p))
        assert proc.returncode == 2, junk[:8]
        assert "Traceback" not in proc.stderr and str(p) in proc.stderr

    missing = vdsogen("check", "--arch=x86_64", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_check_wrong_target(built):
    _, so, _ = built("arm64")
    proc = vdsogen("check", "--arch=x86_64", str(so))
    assert proc.returncode == 1
    assert "H003" in proc.stdout


def test_check_json(built):
    import json
    _, so, _ = built("x86_64")
    proc = vdsogen("check", "--arch=arm64", "--format=json", str(so))
    image, = json.loads(proc.stdout)["images"]
    assert image["counts"]["error"] > 0 and {"rule", "severity", "where", "message"} <= set(image["findings"][0])


def test_main_job_builds_checks_and_runs(tmp_path):
    """scripts/main.sh, the README's main command, on a native target and on
    one whose harness runs the injected-counter test build."""
    env = dict(os.environ, TARGETS="x86_64,arm", OUT=str(tmp_path))
    proc = subprocess.run(["sh", str(ROOT / "scripts" / "main.sh")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.split()[:1] in (["x86_64"], ["arm"])]
    assert len(lines) == 2 and all(ln.split()[1] == "ok" for ln in lines), proc.stdout
    assert (tmp_path / "arm" / "test-build" / "vdso.so").is_file()
