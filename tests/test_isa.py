"""The ISA registry (vdsogen/isa/): one module per instruction set, found, not listed.

Every ABI of the catalogue (vdsogen/spec/abi.toml) must have an ISA module
for its e_machine with a decoder and a hot-path classifier, and the check
must notice when a module goes missing.  A new ISA is one module: a toy one
dropped into the package is decoded, walked and counted with no other
change.  The generic code (the ELF reader, the walk, the hot-path count)
tests no e_machine itself.
"""

import re
import sys
from types import ModuleType, SimpleNamespace

import pytest

from conftest import ROOT, TARGETS
from vdsogen import isa
from vdsogen.bench import hotpath
from vdsogen.elf import decode
from vdsogen.elf.consts import PF_X
from vdsogen.isa.base import COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, Insn, Isa
from vdsogen.spec import abi
from vdsogen.spec.model import load_target

CLASSES = {OTHER, COUNTER, "syscall", RETURN, "creturn"}


def uncovered(registry):
    """["ABI: why"] for every catalogue ABI whose e_machine the registry cannot decode or classify."""
    out = []
    for name, a in abi.catalogue().items():
        entry = registry.get(a.machine)
        if entry is None:
            out.append(f"{name}: no ISA module for e_machine {a.machine}")
            continue
        for endian in a.endians:
            img = SimpleNamespace(e_machine=a.machine, code_endian=entry.code_endian(0, endian))
            decoder, classify = entry.decoder(img), entry.classifier(img)
            insn = decoder(bytes(8), 0, 0x1000, None) if callable(decoder) else "no decoder"
            kind = classify(bytes(4)) if callable(classify) else "no classifier"
            if not isinstance(insn, Insn) or kind not in CLASSES:
                out.append(f"{name} ({endian}): decoder gave {insn!r}, classifier {kind!r}")
    return out


def test_every_catalogue_abi_has_an_isa():
    assert uncovered(isa.registry()) == []


def test_every_module_is_registered():
    """Each module of the package but base is an ISA, and serves a machine of the catalogue."""
    names = isa.module_names()
    files = (ROOT / "vdsogen" / "isa").glob("*.py")
    assert names == sorted(p.stem for p in files if p.stem not in ("__init__", "base"))
    served = {entry.name for entry in isa.registry().values()}
    assert len(served) == len(names)
    machines = {a.machine for a in abi.catalogue().values()}
    assert all(set(entry.machines) & machines for entry in isa.registry().values())


@pytest.mark.parametrize("name", TARGETS)
def test_a_targets_isa_is_named_as_its_arch_directory(name):
    """vdsogen/isa/ARCH.py serves the targets whose fragments are arch/ARCH/."""
    target = load_target(name)
    assert isa.for_machine(target.elf.machine).name == target.arch


@pytest.mark.parametrize("gone", isa.module_names())
def test_a_missing_module_is_caught(gone):
    """The registry without one module leaves that module's ABIs uncovered."""
    modules = [sys.modules[f"vdsogen.isa.{name}"] for name in isa.module_names() if name != gone]
    lost = set(sys.modules[f"vdsogen.isa.{gone}"].ISA.machines)
    missing = uncovered(isa.build(modules))
    expected = {name for name, a in abi.catalogue().items() if a.machine in lost}
    assert expected and {m.split(":")[0] for m in missing} == expected, missing


def test_two_modules_cannot_claim_one_machine():
    twin = ModuleType("vdsogen.isa.twin")
    twin.ISA = Isa("twin", {sys.modules["vdsogen.isa.mips"].EM_MIPS: "EM_MIPS"}, lambda img: None,
                   lambda img: None)
    with pytest.raises(TypeError, match="twin: e_machine 8 is already ISA 'mips'"):
        isa.build([sys.modules["vdsogen.isa.mips"], twin])
    with pytest.raises(TypeError, match="must define ISA"):
        isa.build([ModuleType("vdsogen.isa.empty")])


# -- a new ISA is one module -------------------------------------------------------------------

TOY = '''"""A toy ISA for the test: 32-bit little-endian words."""
from vdsogen.isa.base import COUNTER, JUMP, OTHER, RETURN, SEQ, STOP, Insn, Isa, fixed_width, word_classifier

EM_TOY = 0x7F01


def toy_insn(word, addr):
    if word == 0:
        return Insn(4, STOP)
    if word >> 24 == 0xEA:                              # jump forward by the low byte, in words
        return Insn(4, JUMP, addr + 4 * (word & 0xFF))
    return Insn(4, SEQ)


def toy_class(word):
    return COUNTER if word == 0xC0C0C0C0 else RETURN if word == 0 else OTHER


ISA = Isa("toy", {EM_TOY: "EM_TOY"}, lambda img: fixed_width(toy_insn, img.code_endian),
          lambda img: word_classifier(toy_class, img.code_endian))
'''


@pytest.fixture
def toy_isa(tmp_path, monkeypatch):
    (tmp_path / "toy.py").write_text(TOY)
    monkeypatch.setattr(isa, "__path__", [*isa.__path__, str(tmp_path)])
    isa.registry.cache_clear()
    yield 0x7F01
    isa.registry.cache_clear()
    sys.modules.pop("vdsogen.isa.toy", None)


def test_a_new_isa_is_one_module(toy_isa):
    words = [0x11111111, 0xEA000002, 0x22222222, 0xC0C0C0C0, 0x00000000]     # seq, jump over one, counter, return
    code = b"".join(w.to_bytes(4, "little") for w in words)
    img = SimpleNamespace(e_machine=toy_isa, code_endian="little", data=code, charge=lambda units=1: None,
                          loads=[SimpleNamespace(vaddr=0x1000, offset=0, filesz=len(code), flags=PF_X)])
    assert "toy" in isa.module_names() and isa.machine_names()[toy_isa] == "EM_TOY"
    walked = [(addr, insn.kind) for addr, insn, _raw in decode.walk(img, [(0x1000, code)], [(0x1000, None)])]
    assert walked == [(0x1000, SEQ), (0x1004, JUMP), (0x100C, SEQ), (0x1010, STOP)]
    assert hotpath.hot_path(img, 0x1000, 1) == 4                # the jump skips 0x22222222
    assert hotpath.hot_path(img, 0x1000, 0) is None


def test_without_its_module_a_machine_is_unknown():
    img = SimpleNamespace(e_machine=0x7F01, code_endian="little")
    assert isa.for_machine(0x7F01) is None
    assert decode.decoder_for(img) is None and hotpath.classifier(img) is None


# -- no e_machine ladder outside the ISA modules ------------------------------------------------

GENERIC = ["vdsogen/elf/decode.py", "vdsogen/elf/headers.py", "vdsogen/elf/dynamic.py", "vdsogen/elf/hashes.py",
           "vdsogen/elf/reader.py", "vdsogen/elf/notes.py", "vdsogen/bench/hotpath.py", "vdsogen/bench/run.py",
           "vdsogen/bench/results.py"]


@pytest.mark.parametrize("path", GENERIC)
def test_generic_code_tests_no_machine(path):
    """The walk, the count and the reader name no machine: they ask the ISA module."""
    text = (ROOT / path).read_text()
    assert not re.findall(r"\bEM_[A-Z0-9_]+", text), f"{path} names a machine: ask vdsogen.isa.for_machine()"
