"""The harness finds symbols as glibc does: through DT_GNU_HASH, and through
DT_HASH only where an image has no DT_GNU_HASH.

Linux links some vDSOs with one table only (arm64: DT_HASH only in 6.1,
DT_GNU_HASH only from 6.11; riscv64 and loongarch64: DT_GNU_HASH only in
7.2), so a table the image lacks is no harness failure; that vdsogen's own
images carry every table of their ABI is `vdsogen check`'s (X001, X002).
Where an image has both, both must find the same symbol; a corrupt
DT_GNU_HASH fails the image check with the offset of the word at fault, and
nothing after it runs.  The images are vdsogen's own, linked with one hash
style (the spec's ldflags) or edited here: no download.
"""

import dataclasses
import io
import re
import struct

import pytest

from vdsogen import cli
from vdsogen.build.toolchain import Builder
from vdsogen.elf.consts import GNU_HASH
from vdsogen.elf.reader import ElfImage
from vdsogen.harness.driver import build_harness
from vdsogen.spec.model import load_target

from conftest import build_broken, run_broken


def one_style(target, style):
    """The target linked with --hash-style=STYLE after the ABI's own (the last one wins)."""
    tc = target.toolchain
    return dataclasses.replace(target, toolchain=dataclasses.replace(tc, ldflags=(*tc.ldflags, f"--hash-style={style}")))


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """linked(name, style) -> an image of the target with that hash style only, built once."""
    cache = {}

    def get(name, style):
        if (name, style) not in cache:
            target = load_target(name)
            cache[name, style] = build_broken(one_style(target, style), tmp_path_factory.mktemp(f"{name}-{style}"), {})
        return cache[name, style]

    return get


def symbol_checks(outcome):
    return {c for c in [*outcome.passed, *outcome.failed] if c.startswith("symbol.")}


@pytest.mark.parametrize("name", ["x86_64", "arm64"])
def test_gnu_hash_only_image_resolves(name, linked, harnesses):
    """An image with DT_GNU_HASH only (as Linux 7.2 links arm64, riscv64 and
    loongarch64): every symbol found through it, every check passes."""
    image = linked(name, "gnu")
    img = ElfImage(str(image))
    assert img.dyn("HASH") is None and img.dyn("GNU_HASH") is not None
    status, outcome, output = run_broken(load_target(name), harnesses(name), image)
    assert status == 0 and not outcome.failed, output
    assert len(symbol_checks(outcome)) == len(load_target(name).symbols()), output
    assert "# symbols: found through DT_GNU_HASH, as glibc finds them (no DT_HASH)" in output, output


def test_hash_only_image_resolves(linked, harnesses):
    """An image with DT_HASH only (as Linux 6.1 links arm64): found through it."""
    image = linked("arm64", "sysv")
    assert ElfImage(str(image)).dyn("GNU_HASH") is None
    status, outcome, output = run_broken(load_target("arm64"), harnesses("arm64"), image)
    assert status == 0 and not outcome.failed, output
    assert "# symbols: found through DT_HASH, as glibc finds them (no DT_GNU_HASH)" in output, output


@pytest.mark.parametrize("style, rule", [("gnu", "X001"), ("sysv", "X002")])
def test_check_wants_every_table_of_the_abi(style, rule, linked, capsys):
    """The harness runs such an image; `vdsogen check` refuses it as a vdsogen
    image of x86_64, whose ABI has both tables."""
    image = linked("x86_64", style)
    assert cli.main(["check", "--arch", "x86_64", str(image)]) == 1
    out = capsys.readouterr().out
    want = {"X001": "no DT_HASH", "X002": "no DT_GNU_HASH"}[rule]
    assert re.search(rf": {rule} error +dynamic: {want}$", out, re.M), out


class Edit:
    """An image with both tables, its words rewritten in place."""

    def __init__(self, path):
        self.data = bytearray(path.read_bytes())
        self.img = ElfImage(str(path))
        self.e = "<" if self.img.little else ">"
        self.gnu = self.img.gnu_hash_table()
        self.wsize = self.img.wsize

    def u32(self, off, value):
        struct.pack_into(self.e + "I", self.data, off, value)

    def header(self, **fields):
        GNU_HASH.update_into(self.data, self.gnu["offset"], self.img.elf_class, self.img.endian, **fields)

    def save(self, path):
        path.write_bytes(bytes(self.data))
        return path


def last_chain_word(e):
    """Offset of the chain word of the last symbol DT_GNU_HASH covers (its end marker)."""
    return e.gnu["chain_off"] + 4 * (len(e.img.dynsym) - 1 - e.gnu["symoffset"])


# Each corruption of x86_64's DT_GNU_HASH: (edit, the image check's message as a pattern).
CORRUPT = {
    "bloom-not-power-of-two": (lambda e: e.header(bloom_size=3), r"3 bloom words, not a power of two"),
    "bloom-shift": (lambda e: e.header(bloom_shift=40), r"bloom shift 40, not below 32 \(at offset 0x[0-9a-f]+\)"),
    "no-buckets": (lambda e: e.header(nbuckets=0), r"0 buckets"),
    "buckets-past-eof": (lambda e: e.header(nbuckets=1 << 28), r"\d+ bloom words and 268435456 buckets run past the end of the file"),
    "bucket-below-symoffset": (lambda e: e.header(symoffset=max(e.gnu["buckets"]) + 1),
                               r"bucket \d+ \(offset 0x[0-9a-f]+\) holds symbol \d+, below symoffset \d+"),
    "chain-never-ends": (lambda e: e.u32(last_chain_word(e), 2),
                         r"the chain of bucket \d+ reaches symbol \d+ \(offset 0x[0-9a-f]+\), past DT_HASH's \d+"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_gnu_hash_is_named_by_offset(case, good_runs, harnesses, tmp_path):
    """A corrupt DT_GNU_HASH fails the image check, naming the table's offset
    (and the word's), and the rest does not run: no crash, no hang."""
    edit, pattern = CORRUPT[case]
    _, _, _, good = good_runs("x86_64")
    e = Edit(good)
    edit(e)
    image = e.save(tmp_path / "vdso.so")
    status, outcome, output = run_broken(load_target("x86_64"), harnesses("x86_64"), image, timeout=60)
    assert status == 1 and set(outcome.failed) == {"image"}, output
    where = f"DT_GNU_HASH at offset {e.gnu['offset']:#x}: "
    assert re.fullmatch(re.escape(where) + pattern, outcome.failed["image"]), output
    assert outcome.summary is not None and "symbols" in outcome.not_run, output


def test_both_tables_must_agree(good_runs, harnesses, tmp_path):
    """An image with both tables whose DT_HASH loses a symbol DT_GNU_HASH
    finds: that symbol's check fails, naming DT_HASH; the others pass."""
    target = load_target("x86_64")
    _, _, _, good = good_runs("x86_64")
    e = Edit(good)
    name = target.exports[0].name
    img = e.img
    nbucket, nchain, buckets, chains = img.sysv_hash()
    base = img.offset_of(img.dyn("HASH"))
    index = img.sysv_lookup(name, img.dynsym)
    # Unlink the export from its DT_HASH chain.
    b = img.elf_hash(name) % nbucket
    if buckets[b] == index:
        e.u32(base + 4 * (2 + b), chains[index])
    else:
        prev = buckets[b]
        while chains[prev] != index:
            prev = chains[prev]
        e.u32(base + 4 * (2 + nbucket + prev), chains[index])
    image = e.save(tmp_path / "vdso.so")
    status, outcome, output = run_broken(target, harnesses("x86_64"), image)
    assert status == 1 and set(outcome.failed) == {f"symbol.{name}"}, output
    assert outcome.failed[f"symbol.{name}"] == "not found through DT_HASH", output


def test_a_table_the_abi_has_not_still_fails_the_image(linked, tmp_path):
    """The ABI's hash_styles still bounds what an image may carry: a harness
    of an ABI with DT_HASH only refuses a DT_GNU_HASH-only image."""
    target = load_target("x86_64")
    sysv_abi = dataclasses.replace(target, abi=dataclasses.replace(target.abi, hash_styles=("sysv",)))
    harness = build_harness(sysv_abi, tmp_path / "harness", Builder(sysv_abi, stream=io.StringIO()))
    status, outcome, output = run_broken(sysv_abi, harness, linked("x86_64", "gnu"))
    assert status == 1 and set(outcome.failed) == {"image"}, output
    assert outcome.failed["image"] == "DT_GNU_HASH present, the ABI's vDSO has DT_HASH only (hash_styles)", output
