"""s390-compat: the 31-bit compat vDSO of s390x kernels (arch/s390/kernel/
vdso32/, Linux 5.11 to 6.12), its trampolines alone, and where its harness
runs.

qemu-user runs no 31-bit s390, so the harness (freestanding, gcc -m31) runs
only as a compat task of a booted s390x kernel (scripts/kernel-harness.sh
s390-compat, by hand: docs/measurements.rst has its results on vdsogen's
image and on Debian's bookworm and trixie images).  Here, with no download
and no boot: the spec's facts (Linux 6.12's, written out by hand), the
image's code against Linux's words, `check` and `audit` failing a wrong
image, `vdsogen test` and scripts/main.sh saying "not run" (never a pass),
and the dry run of the booted harness building the 31-bit harness the
guest runs."""

import json
import os
import subprocess

import pytest

from conftest import ROOT, vdsogen
from vdsogen.harness import corpus
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target

NAME = "s390-compat"
EM_S390 = 22

# Linux 6.12's vdso32 (vdso_user_wrapper.S): svc NR, then .word 0; the numbers
# of arch/s390/kernel/syscalls/syscall.tbl, common to the 31- and 64-bit ABIs.
LINUX = {"__kernel_compat_restart_syscall": (7, 0x0a070000),
         "__kernel_compat_sigreturn": (119, 0x0a770000),
         "__kernel_compat_rt_sigreturn": (173, 0x0aad0000)}


def ident(path):
    """(ELF class, e_machine) of a big-endian ELF file."""
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[5] == 2, path
    return 32 if head[4] == 1 else 64, int.from_bytes(head[18:20], "big")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("s390-compat")
    r = vdsogen("build", f"--arch={NAME}", f"--out={out}")
    assert r.returncode == 0, r.stderr
    return out / "vdso.so"


def test_the_spec_is_linux_6_12s_vdso32():
    t = load_target(NAME)
    assert (t.abi.name, t.elf.elf_class, t.elf.machine, t.soname, t.versions) == \
        ("s390", 32, EM_S390, "linux-vdso32.so.1", ("LINUX_2.6.29",))
    assert t.exports == () and t.counter is None and t.datapage is None
    assert [(x.name, x.syscall) for x in t.trampolines] == \
        [("__kernel_compat_restart_syscall", "restart_syscall"), ("__kernel_compat_sigreturn", "sigreturn"),
         ("__kernel_compat_rt_sigreturn", "rt_sigreturn")]
    assert {x.name: t.syscalls.numbers[x.syscall] for x in t.trampolines} == {n: nr for n, (nr, _) in LINUX.items()}
    assert t.harness.booted and t.harness.libc == "freestanding" and t.toolchain.qemu is None
    assert t.harness.checks == ("restart_syscall", "compat_signal")


def test_the_image_has_linuxs_trampolines(image):
    img = ElfImage(str(image))
    assert ident(image) == (32, EM_S390)
    data = image.read_bytes()
    syms = {s.name: s for s in img.dynsym if s.defined and s.name.startswith("__kernel")}
    assert sorted(syms) == sorted(LINUX)
    for name, (_, word) in LINUX.items():
        s = syms[name]
        assert s.value % 8 == 0 and s.size == 4, name
        assert int.from_bytes(data[s.value:s.value + 4], "big") == word, name
    linux = [n for n in img.notes if n.name == "Linux" and n.type == 0]
    assert len(linux) == 1 and bytes(linux[0].desc) == (6 << 16 | 12 << 8).to_bytes(4, "big")


def test_check_and_audit_know_it(image):
    r = vdsogen("check", f"--arch={NAME}", str(image))
    assert r.returncode == 0, r.stdout + r.stderr
    r = vdsogen("audit", str(image))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ABI s390 (detected)" in r.stdout
    assert "exports: the set of Linux 5.11 and later; of the newest set (Linux 5.11 and later) it lacks: nothing" \
        in r.stdout, r.stdout


@pytest.mark.parametrize("which, nr", [("__kernel_compat_sigreturn", 173),       # the rt frame's, for a plain one
                                       ("__kernel_compat_restart_syscall", 6)])   # close
def test_a_wrong_trampoline_fails_check_and_audit(image, tmp_path, which, nr):
    """The negative control without a boot: the booted harness's compat_signal
    and restart_syscall fail such an image (docs/measurements.rst); here the
    validator (T001) and audit do, naming the trampoline."""
    data = bytearray(image.read_bytes())
    s = next(s for s in ElfImage(str(image)).dynsym if s.name == which)
    assert data[s.value] == 0x0a
    data[s.value + 1] = nr
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    for argv in (["check", f"--arch={NAME}", str(bad)], ["audit", str(bad)]):
        r = vdsogen(*argv)
        assert r.returncode == 1, (argv, r.stdout, r.stderr)
        assert "T001" in r.stdout and which in r.stdout, (argv, r.stdout)


def test_vdsogen_test_builds_the_harness_and_says_it_did_not_run(image, tmp_path):
    r = vdsogen("test", f"--arch={NAME}", "--image", str(image), "--workdir", str(tmp_path), "--format=json")
    assert r.returncode == 1, r.stdout + r.stderr       # nothing was tested: not a pass
    doc = json.loads(r.stdout)
    assert doc["totals"] == {"passed": 0, "failed": 0, "not_run": 1}
    assert [(c["name"], c["result"]) for c in doc["checks"]] == [("harness", "not run")]
    assert "scripts/kernel-harness.sh s390-compat" in doc["checks"][0]["message"]
    assert ident(tmp_path / "harness" / "harness") == (32, EM_S390)      # what scripts/kernel-harness.sh boots

    assert b"compat_signal.%s" in (tmp_path / "harness" / "harness").read_bytes()


def test_main_sh_says_not_run(tmp_path):
    r = subprocess.run(["sh", str(ROOT / "scripts" / "main.sh")], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "TARGETS": NAME, "OUT": str(tmp_path)})
    assert r.returncode == 0, r.stdout + r.stderr        # declared booted-only: not a failure of the job
    row = r.stdout.strip().splitlines()[-1]
    assert row.startswith(f"{NAME}  n/r ") and "check clean" in row and "harness not run (" in row, row
    assert "scripts/kernel-harness.sh s390-compat" in row, row


def test_the_booted_harness_is_31_bit_and_init_64_bit(tmp_path):
    cache = tmp_path / "cache"
    r = subprocess.run(["sh", str(ROOT / "scripts" / "kernel-harness.sh"), "--dry-run", NAME], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "VDSOGEN_KERNEL_CACHE": str(cache)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TEST    not run: qemu-user runs no code of the s390 ABI" in r.stdout, r.stdout
    rootfs = cache / "s390x" / "run-s390-compat" / "rootfs"       # the s390x kernel's cache
    assert ident(rootfs / "harness") == (32, EM_S390) and ident(rootfs / "init") == (64, EM_S390)
    assert b"linux-vdso32.so.1\0" in (rootfs / "vdso.so").read_bytes()
    qemu = [line for line in r.stdout.splitlines() if line.startswith("qemu-system-s390x ")]
    assert len(qemu) == 1, r.stdout


def test_the_corpus_lists_linuxs_31_bit_images_for_the_booted_harness(tmp_path):
    """Debian's carved s390.so (bookworm 6.1, trixie 6.12) runs through s390-compat's target, booted:
    the corpus row says where, and runs nothing here."""
    entry = {"path": "trixie/s390x/s390.so", "abi": "s390", "linux": "6.12.113"}
    row = corpus.run_one(tmp_path, entry, tmp_path / "work", 10)
    assert (row.passed, row.failed) == (None, None) and not row.ok
    assert row.note == "qemu-user runs no s390 code: scripts/kernel-harness.sh s390-compat"
    assert corpus.target_of("s390").name == NAME and corpus.target_of("s390x").name == "s390x"
