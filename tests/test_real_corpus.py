"""The real-image corpus machinery on synthetic inputs: carving vDSO images
out of kernel-like blobs, compressed payloads and Debian packages
(vdsogen.audit.carve), and auditing a cache against an expectation file
(vdsogen.audit.corpus).  The real corpus itself is Debian's and is fetched
by scripts/fetch-real-vdso.sh, outside the repository and outside CI."""

import bz2
import gzip
import io
import json
import lzma
import os
import random
import shutil
import subprocess

import pytest

from vdsogen.audit import carve
from vdsogen.audit import corpus as real


def noise(n, seed):
    return random.Random(seed).randbytes(n)


def kernel_like(*images, seed=1):
    """A blob like a decompressed kernel: code-like noise with the images inside."""
    out = noise(5000, seed)
    for i, img in enumerate(images):
        out += img + noise(3000 + 17 * i, seed + i + 1)
    return out


def test_carves_raw_images_sized_by_their_headers(corpus):
    x86, i386 = corpus("x86_64").read_bytes(), corpus("i386").read_bytes()
    found = carve.carve(kernel_like(x86, i386))
    assert [f.data for f in found] == [x86, i386]
    assert [f.soname for f in found] == ["linux-vdso.so.1", "linux-gate.so.1"]
    assert {f.stream for f in found} == {"raw"}
    assert carve.elf_extent(x86 + noise(100, 5), 0) == len(x86)


def test_ignores_shared_objects_that_are_not_vdsos_and_damaged_ones(corpus):
    lib = (corpus.workdir / "libdummy.so").read_bytes()
    x86 = corpus("x86_64").read_bytes()
    found = carve.carve(kernel_like(lib, x86[:len(x86) // 2], b"\x7fELF" + noise(60, 9)))
    assert found == []


def _zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout


COMPRESSORS = {"gzip": gzip.compress, "xz": lzma.compress, "bzip2": bz2.compress, "zstd": _zstd,
               "lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE)}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_carves_images_out_of_a_compressed_payload(corpus, kind):
    """A self-decompressing kernel: a stub, the compressed payload, a trailer."""
    if kind == "zstd" and shutil.which("zstd") is None:
        pytest.fail("zstd: not found (scripts/setup.sh installs it)")
    arm64, compat = corpus("arm64").read_bytes(), corpus("arm64-compat").read_bytes()
    payload = kernel_like(arm64, compat, noise(1 << 20, 7), seed=3)
    blob = noise(0x52CC, 11) + COMPRESSORS[kind](payload) + noise(999, 12)
    found = carve.carve(blob)
    assert [f.data for f in found] == [arm64, compat]
    assert all(f.stream == f"{kind}@0x52cc" for f in found)


def test_streams_are_bounded():
    bomb = gzip.compress(bytes(8 << 20))
    assert len(carve.decompress("gzip", bomb, 0, limit=1 << 20)) <= (1 << 20) + (1 << 16)
    assert carve.decompress("xz", noise(4096, 2), 0) == b""


def _deb(tmp_path, name, files):
    """A Debian package holding files {path: bytes}, made with dpkg-deb."""
    root = tmp_path / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(f"Package: {name}\nVersion: 1.0\nArchitecture: all\n"
                                             "Maintainer: vdsogen tests <tests@invalid>\nDescription: test\n")
    for path, data in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    deb = tmp_path / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb


def test_carve_package_names_images_by_abi_and_writes_the_manifest(corpus, tmp_path):
    arm64, compat = corpus("arm64").read_bytes(), corpus("arm64-compat").read_bytes()
    deb = _deb(tmp_path, "linux-binary-test", {
        "/usr/lib/modules/9.9.9-test/vmlinuz": gzip.compress(kernel_like(arm64, compat)),
        "/usr/share/doc/linux-binary-test/README": b"not a kernel\n"})
    cache = tmp_path / "cache"
    entries = carve.carve_package(cache, deb, "sid", "arm64", "linux-binary-test", "1.0", "kernel", "arm64")
    assert [e.path for e in entries] == ["sid/arm64/arm64.so", "sid/arm64/arm64-compat.so"]
    assert [e.abi for e in entries] == ["arm64", "arm64-compat"]       # the ELF alone says arm
    assert entries[0].linux == "6.17.0" and entries[0].member == "usr/lib/modules/9.9.9-test/vmlinuz"
    assert (cache / "images" / "sid/arm64/arm64-compat.so").read_bytes() == compat
    manifest = json.loads((cache / "manifest.json").read_text())
    assert [m["path"] for m in manifest] == ["sid/arm64/arm64-compat.so", "sid/arm64/arm64.so"]
    # Carving a newer package of the same flavour replaces the old images.
    x86 = corpus("x86_64").read_bytes()
    deb2 = _deb(tmp_path, "linux-image-test", {"/boot/vmlinuz-9.9.9-test": kernel_like(x86)})
    carve.carve_package(cache, deb2, "sid", "arm64", "linux-image-test", "2.0", "kernel", "arm64")
    assert [m["path"] for m in carve.load_manifest(cache)] == ["sid/arm64/x86_64.so"]


def test_qemu_and_debug_packages(corpus, tmp_path):
    x86, ppc = corpus("x86_64").read_bytes(), corpus("ppc64le").read_bytes()
    qemu = _deb(tmp_path, "qemu-user", {"/usr/bin/qemu-x86_64": kernel_like(x86),
                                        "/usr/bin/qemu-ppc64le": kernel_like(ppc)})
    cache = tmp_path / "cache"
    got = carve.carve_package(cache, qemu, "sid", "amd64", "qemu-user", "1:9.0", "qemu", "qemu-user")
    assert sorted(e.path for e in got) == ["sid/qemu-user/qemu-ppc64le.so", "sid/qemu-user/qemu-x86_64.so"]
    dbg = _deb(tmp_path, "linux-image-test-dbg", {"/usr/lib/debug/lib/modules/9.9.9/vdso/vdso.so": x86,
                                                  "/usr/lib/debug/lib/modules/9.9.9/vmlinux": b"x" * 100})
    got = carve.carve_package(cache, dbg, "sid", "amd64", "linux-image-test-dbg", "1.0", "dbg", "amd64")
    assert [e.path for e in got] == ["sid/amd64-dbg/vdso.so"] and got[0].abi == "x86_64"


def _cache(corpus, tmp_path):
    cache = tmp_path / "cache"
    deb = _deb(tmp_path, "linux-image-test", {"/boot/vmlinuz-9.9.9": kernel_like(
        corpus("x86_64").read_bytes(), corpus("arm64-gnu-hash-only").read_bytes())})
    carve.carve_package(cache, deb, "sid", "amd64", "linux-image-test", "1.0", "kernel", "amd64")
    return cache


def test_audit_corpus_matches_the_expectations(corpus, tmp_path):
    cache = _cache(corpus, tmp_path)
    expect = tmp_path / "expect.toml"
    expect.write_text('["sid/amd64/x86_64"]\nlinux = "6.17.0"\nfindings = []\nwhy = "clean"\n\n'
                      '["sid/amd64/arm64"]\nfindings = ["X001 warning", "L002 warning"]\n'
                      'consumers = {musl = "degraded", sysv = "degraded"}\nwhy = "no DT_HASH"\n')
    out = io.StringIO()
    assert real.run(cache, expect, stream=out) == 0, out.getvalue()
    assert "2 images: 1 clean, 1 with warnings only, 0 with errors" in out.getvalue()
    expect.write_text('["sid/amd64/x86_64"]\nfindings = ["S006 warning"]\n')
    out = io.StringIO()
    drafts = []
    assert real.run(cache, expect, drafts=drafts, stream=out) == 1
    text = out.getvalue()
    assert "MISMATCH  sid/amd64/x86_64" in text and "missing S006 warning" in text
    assert "NEW       sid/amd64/arm64" in text and len(drafts) == 1 and '"X001 warning"' in drafts[0]


def test_scripts_are_posix_shell():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in ("fetch-real-vdso.sh", "audit-corpus.sh"):
        subprocess.run(["sh", "-n", os.path.join(root, "scripts", name)], check=True)
