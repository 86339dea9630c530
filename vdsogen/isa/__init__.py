"""The instruction sets vdsogen reads, one module each, keyed by e_machine.

Every module of this package but `base` describes one ISA in a module-level
`ISA` (a vdsogen.isa.base.Isa): its e_machine numbers, its decoder, its
hot-path classifier and its ELF facts.  The registry is found here, not
listed.  The generic code (vdsogen.elf.decode, vdsogen.bench.hotpath, the
ELF reader) asks `for_machine(e_machine)` and tests no e_machine itself.

A new ISA (docs/hacking.rst, "A new ISA"):
  1. vdsogen/isa/ARCH.py, ARCH the name of its arch/ARCH/ directory: the
     EM_ number(s), decoder(img) (length, direct branches and their targets,
     ends of flow; base.fixed_width for 32-bit words), classifier(img) (the
     counter reads, syscalls and returns: base.word_classifier), and only the
     Isa fields where the machine differs from the defaults (code byte
     order, DT_HASH word, r_info, Thumb-like entry modes, delay slots,
     processor dynamic tags and program header types, data loads; for an
     ISA that may reorder loads, what audit rule K009 reads: read_barrier,
     load_address, written, and pc_address or acquire_load where they apply).
  2. its ABI in vdsogen/spec/abi.toml (`machine` = the EM_ number, and
     [ABI.syscalls]: instruction, result convention, numbers);
  3. arch/ARCH/contract.toml and its fragments, its spec(s) in specs/;
  4. the loader stub: a `#elif defined(__ARCH__)` branch of start() in
     runner/loader.c (the entry into a program, as the kernel makes it),
     and, for a harness without a C library, harness/freestanding/arch/ARCH/;
  5. tests: the direct-branch mnemonics llvm-objdump prints, in
     BRANCHES of tests/test_oracle_decode.py.
tests/test_isa.py checks that every ABI of the catalogue has a module.
"""

import importlib
import pkgutil
from functools import lru_cache
from types import MappingProxyType, ModuleType
from typing import Any, Callable, Iterable, Mapping

from vdsogen.isa.base import Isa

SHARED = frozenset({"base"})        # modules of the package that are no ISA


def module_names() -> list[str]:
    """The ISA modules of the package, by name, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in SHARED and not m.ispkg)


def build(modules: Iterable[ModuleType]) -> Mapping[int, Isa]:
    """e_machine -> Isa of `modules`; each must define ISA, and no two may claim one machine."""
    out: dict[int, Isa] = {}
    for mod in modules:
        isa = getattr(mod, "ISA", None)
        if not isinstance(isa, Isa):
            raise TypeError(f"{mod.__name__}: an ISA module must define ISA = vdsogen.isa.base.Isa(...)")
        if not isa.machines:
            raise TypeError(f"{mod.__name__}: ISA {isa.name!r} names no e_machine")
        for machine in isa.machines:
            if machine in out:
                raise TypeError(f"{mod.__name__}: e_machine {machine} is already ISA {out[machine].name!r}'s")
            out[machine] = isa
    return MappingProxyType(out)


@lru_cache(maxsize=None)
def registry() -> Mapping[int, Isa]:
    """e_machine -> Isa, of every module in the package."""
    return build(importlib.import_module(f"{__name__}.{name}") for name in module_names())


def for_machine(e_machine: int) -> Isa | None:
    """The ISA of a machine, or None where vdsogen knows none."""
    return registry().get(e_machine)


def machine_names() -> dict[int, str]:
    """e_machine -> name ("EM_ARM") of every machine an ISA module serves."""
    return {number: name for isa in registry().values() for number, name in isa.machines.items()}


__all__ = ["Isa", "module_names", "build", "registry", "for_machine", "machine_names"]


def module_function(e_machine: int, name: str) -> Callable[..., Any] | None:
    """A function the ISA module of a machine defines beside its ISA (such as
    store_targets, which C002 asks), or None where the machine's module
    has none or no module serves the machine."""
    for module_name in module_names():
        mod = importlib.import_module(f"{__name__}.{module_name}")
        isa = getattr(mod, "ISA", None)
        if isinstance(isa, Isa) and e_machine in isa.machines:
            return getattr(mod, name, None)
    return None
