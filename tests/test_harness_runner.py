"""The harness's emulator: the host's qemu-user, or DIR/qemu-NAME where
VDSOGEN_QEMU=DIR says so (as for `vdsogen run`): the corpus runs Linux 7.2's
riscv64-cfi image under a newer qemu that way."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from vdsogen.errors import HarnessError
from vdsogen.harness.driver import runner
from vdsogen.spec.model import load_target


def test_the_hosts_qemu_by_default(monkeypatch):
    monkeypatch.delenv("VDSOGEN_QEMU", raising=False)
    assert runner(load_target("arm64")) == ["qemu-aarch64-static"]
    assert runner(load_target("x86_64")) == []


def test_vdsogen_qemu_names_the_directory(monkeypatch, tmp_path):
    (tmp_path / "qemu-aarch64").symlink_to("/usr/bin/qemu-aarch64-static")
    monkeypatch.setenv("VDSOGEN_QEMU", str(tmp_path))
    assert runner(load_target("arm64")) == [str(tmp_path / "qemu-aarch64")]
    with pytest.raises(HarnessError, match=rf"VDSOGEN_QEMU={tmp_path}: no executable qemu-riscv64 there "
                                           r"\(the emulator of riscv64\)"):
        runner(load_target("riscv64"))


def test_vdsogen_test_refuses_a_directory_without_the_emulator(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "vdsogen", "test", "--arch=arm64", f"--workdir={tmp_path / 'w'}"],
                          capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, VDSOGEN_QEMU=str(tmp_path)), timeout=300)
    assert proc.returncode != 0
    assert f"VDSOGEN_QEMU={tmp_path}: no executable qemu-aarch64 there" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
