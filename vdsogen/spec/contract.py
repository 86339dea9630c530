"""Fragment contracts: what each arch/ARCH/ declares of its fragments, checked.

arch/ARCH/contract.toml names the arch's clock modes (name, number, the data
pages a mode's counter reads), each counter fragment's modes and parameters,
and the fragments the arch has beyond those a spec names: optional ones
(`provides`, kinds of vdsogen/spec/fragments.toml), trampolines and pieces
other fragments include.  A --specs=DIR tree may hold its own
DIR/arch/ARCH/contract.toml: its modes and counters replace vdsogen's of the
same name, and its lists add to vdsogen's, as its fragments add to or
replace vdsogen's.

Every file of arch/ARCH/ must be a fragment some kind, spec key or contract
key names, and every fragment a contract declares must exist, so a misspelt
name is an error rather than a fragment silently left out.  The model checks
a spec's [counter] against the contract (modes by name, parameters by type
and value, the pages and time-data fields a counter reads, against the
layout), so the fragments need not validate what they are given, and the
numbers of the modes reach the C from here.
"""

import functools
import re
from dataclasses import dataclass, field
from collections.abc import Iterable
from pathlib import Path

from vdsogen.errors import SpecError
from vdsogen.spec.functions import Function
from vdsogen.spec.layout import PAGE_ROLES, Layout
from vdsogen.spec.toml import C_IDENT, Table, did_you_mean, load_toml

CONTRACT = "contract.toml"
CATALOGUE = Path(__file__).with_name("fragments.toml")
NEEDS = ("required", "spec", "optional")
PARAM_TYPES = {"string": (str,), "boolean": (bool,), "integer": (int,)}
MODE_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
KIND_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
FILE_STEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
# Pages every layout has whatever the counter: no clock mode "needs" them.
CORE_PAGE_ROLES = ("time", "timens", "reserved")


@dataclass(frozen=True)
class ClockMode:
    name: str
    number: int
    pages: tuple = ()      # layout page roles the counter reads in this mode

    @property
    def macro(self) -> str:
        return f"VDSO_CLOCKMODE_{self.name.upper()}"

    @property
    def literal(self) -> str:
        """The number as the generated C spells it."""
        return str(self.number) if self.number < 10 else f"{self.number:#x}"


# The clock modes of every architecture (Linux: include/vdso/clocksource.h,
# include/vdso/datapage.h): the home of their numbers, which the model, the
# fragments (target.contract.core_mode(NAME)) and `vdsogen run` take from
# here: the core's VDSO_CLOCKMODE_* are generated into vdso_config.h, the
# harness's CLOCKMODE_* into harness_target.h.
MODE_NONE = ClockMode("none", 0)                # no counter: the syscall answers
MODE_TIMENS = ClockMode("timens", 0x7FFFFFFF)   # a time namespace's page: the real data is on the next
CORE_MODES = (MODE_NONE, MODE_TIMENS)


@dataclass(frozen=True)
class Kind:
    """One kind of fragment (vdsogen/spec/fragments.toml)."""
    name: str
    file: str              # file name; "{name}" stands for the name a spec or contract gives
    need: str              # "required", "spec" or "optional"
    key: str               # the spec or contract key naming it
    defines: tuple         # hooks or macros it must define ("a|b": one of them)
    included_by: str
    what: str

    @property
    def named(self) -> bool:
        return "{name}" in self.file

    def filename(self, name: str = "") -> str:
        return self.file.replace("{name}", name)

    def match(self, filename: str) -> str | None:
        """The name part of `filename` if it is a file of this kind, else None."""
        if not self.named:
            return "" if filename == self.file else None
        head, tail = self.file.split("{name}")
        if filename.startswith(head) and filename.endswith(tail) and len(filename) > len(head) + len(tail):
            return filename[len(head):len(filename) - len(tail)]
        return None


@functools.cache
def kinds() -> tuple:
    """The catalogue of fragment kinds, checked, in its order."""
    top = Table(CATALOGUE, load_toml(CATALOGUE))
    out: list[Kind] = []
    for t in top.tables("kind"):
        name = t.str("name")
        if not KIND_NAME.match(name) or any(k.name == name for k in out):
            t.error("name", f"{name!r} is not a new kind name (lower case, digits and '-')")
        file = t.str("file")
        if not file.endswith(".j2") or file.count("{name}") > 1:
            t.error("file", f"{file!r}: a template file name (.j2) with at most one {{name}}")
        kind = Kind(name, file, t.str("need", choices=NEEDS), t.str("key"),
                    tuple(t.list("defines", str, kindname="a string")), t.str("included_by"), t.str("what"))
        if kind.need == "optional" and kind.named and name != "include":
            t.error("need", "an optional kind is one file: contracts name it in `provides`")
        t.done()
        out.append(kind)
    top.done()
    return tuple(out)


def kind(name: str) -> Kind:
    return next(k for k in kinds() if k.name == name)


def _optional_kinds():
    return [k.name for k in kinds() if k.need == "optional" and not k.named]




@dataclass(frozen=True)
class Param:
    name: str
    type: str              # a key of PARAM_TYPES
    values: tuple | None   # the values allowed, or None: any of the type
    default: object = None
    has_default: bool = False
    elf_class: int | None = None   # only a spec of this ELF class may set it, or None: any


@dataclass(frozen=True)
class CounterContract:
    """What a counter fragment (counter-NAME.h.j2) serves and takes."""
    name: str
    path: str              # the contract file that declares it
    modes: tuple           # ClockMode: every mode the fragment serves, as the contract lists them
    params: tuple          # Param
    time_fields: tuple     # fields of the layout's time data the fragment reads

    def mode_of(self, number: int) -> ClockMode:
        return next(m for m in self.modes if m.number == number)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class Contract:
    """arch/ARCH/contract.toml of every tree, merged."""
    arch: str
    files: tuple           # contract files, vdsogen's first
    modes: tuple           # ClockMode, by number
    counters: dict = field(hash=False)    # name -> CounterContract
    provides: tuple = ()   # optional kinds the arch has
    trampolines: tuple = ()
    includes: tuple = ()
    entry_registers: int | None = None   # arguments entry.S.j2 passes in registers, the data pointer included
    c_pages: tuple = ()    # data pages (layout roles) the C halves of an asm entry reach by their symbols
    fragments: dict = field(default_factory=dict, hash=False)   # kind -> names of its files in arch/ARCH/
    core_modes: tuple = CORE_MODES

    def core_mode(self, name: str) -> ClockMode:
        """A clock mode of every architecture (MODE_NONE, MODE_TIMENS) by name."""
        return next(m for m in self.core_modes if m.name == name)

    def passes_page(self, f: "Function") -> bool:
        """The asm entry of core function `f` passes its data page (else it needs none, or its C
        half reaches it by its symbol: `c_pages`)."""
        return f.uses_data and f.page not in self.c_pages

    def has(self, kind_name: str) -> bool:
        """The arch provides optional fragment `kind_name` (its contract's `provides`)."""
        if kind_name not in _optional_kinds():
            raise KeyError(f"{kind_name!r} is not an optional fragment kind (vdsogen/spec/fragments.toml)")
        return kind_name in self.provides

    def suggest(self, filename: str) -> str:
        """A ' (did you mean ...?)' for a fragment file that does not exist, from the files of its kind."""
        for k in _ordered_kinds():
            name = k.match(filename)
            if name is not None and k.named:
                return did_you_mean(name, self.fragments.get(k.name, ()))
        return ""


def _ordered_kinds():
    """Kinds in the order a file name is matched: fixed names, then named
    kinds with a prefix, then those a contract lists (trampolines, includes)."""
    ks = kinds()
    return ([k for k in ks if not k.named] + [k for k in ks if k.named and not k.file.startswith("{name}")]
            + [k for k in ks if k.file.startswith("{name}")])


class _File:
    """One contract file, parsed; the tables keep where each value came from."""

    def __init__(self, path):
        self.path = path
        self.top = Table(path, load_toml(path))
        top = self.top
        self.modes = {}
        mt = top.table("modes", {})
        for name in mt.keys():
            t = mt.table(name)
            if not MODE_NAME.match(name):
                mt.error(name, f"{name!r} is not a mode name (lower case, digits and '_')")
            if name in {m.name for m in CORE_MODES}:
                mt.error(name, f"mode {name!r} is every architecture's (vdsogen/spec/contract.py)")
            number = t.int("number", lo=1, hi=MODE_TIMENS.number - 1)
            pages = t.list("pages", str, [], "a string")
            for i, role in enumerate(pages):
                if role not in PAGE_ROLES or role in CORE_PAGE_ROLES:
                    roles = [r for r in PAGE_ROLES if r not in CORE_PAGE_ROLES]
                    t.error(f"pages[{i}]", f"{role!r} is not a page role a counter reads "
                                           f"({', '.join(roles)}){did_you_mean(role, roles)}")
            t.done()
            self.modes[name] = (ClockMode(name, number, tuple(pages)), t)
        mt.done()

        self.counters = {}
        ct = top.table("counter", {})
        for name in ct.keys():
            t = ct.table(name)
            if not FILE_STEM.match(name):
                ct.error(name, f"{name!r} cannot be part of a file name")
            modes = t.list("modes", str, kindname="a string")
            if not modes:
                t.error("modes", "at least one clock mode is needed")
            params = []
            pt = t.table("params", {})
            for pname in pt.keys():
                if not C_IDENT.match(pname):
                    pt.error(pname, f"{pname!r} is not a C identifier")
                params.append(self._param(pt.table(pname), pname))
            pt.done()
            # Each a field, or fields separated by "|" of which the layout must have one.
            fields = t.list("time_fields", str, [], "a string")
            for i, f in enumerate(fields):
                if not all(C_IDENT.match(a) for a in f.split("|")):
                    t.error(f"time_fields[{i}]", f"{f!r} is not a C identifier (or several, separated by |)")
            t.done()
            self.counters[name] = (modes, tuple(params), tuple(fields), t)
        ct.done()

        optional = _optional_kinds()
        self.provides = self._names("provides", lambda i, n: n in optional or top.error(
            f"provides[{i}]", f"{n!r} is not an optional fragment kind (vdsogen/spec/fragments.toml: "
                              f"{', '.join(optional)}){did_you_mean(n, optional)}"))
        self.trampolines = self._names("trampolines")
        self.includes = self._names("includes")
        self.entry_registers = top.int("entry_registers", None, lo=1, hi=16)
        self.c_pages = self._names("c_pages", lambda i, n: n in PAGE_ROLES or top.error(
            f"c_pages[{i}]", f"{n!r} is not a page role ({', '.join(PAGE_ROLES)})"))
        top.done()

    def _names(self, key, check=None):
        names = self.top.list(key, str, [], "a string")
        for i, n in enumerate(names):
            if not FILE_STEM.match(n):
                self.top.error(f"{key}[{i}]", f"{n!r} cannot be a file name")
            if names.index(n) != i:
                self.top.error(f"{key}[{i}]", f"{n!r} listed twice")
            if check:
                check(i, n)
        return names

    @staticmethod
    def _param(t, name):
        ptype = t.str("type", choices=PARAM_TYPES)
        kinds_ = PARAM_TYPES[ptype]
        what = f"a {ptype}"
        values = t.list("values", kinds_, None, what) if ptype != "boolean" else None
        if values is not None and not values:
            t.error("values", "an empty list allows nothing")
        has_default = t.has("default")
        default = t.raw("default", None)
        elf_class = t.int("elf_class", None)
        if elf_class not in (None, 32, 64):
            t.error("elf_class", f"{elf_class} is not an ELF class (32 or 64)")
        if has_default:
            if not isinstance(default, kinds_) or (isinstance(default, bool) and ptype != "boolean"):
                t.error("default", f"expected {what}")
            if values is not None and default not in values:
                t.error("default", f"{default!r} is not one of its values")
        t.done()
        return Param(name, ptype, tuple(values) if values is not None else None, default, has_default, elf_class)


def load_contract(arch: str, roots: Iterable[str | Path]) -> Contract:
    """The contract of arch/ARCH/ over the trees `roots` (the user's first,
    vdsogen's last), checked against the fragments those trees hold."""
    trees = [Path(r) for r in roots]
    dirs = [r / "arch" / arch for r in reversed(trees) if (r / "arch" / arch).is_dir()]
    files = [_File(d / CONTRACT) for d in dirs if (d / CONTRACT).is_file()]
    if not files:
        raise SpecError(dirs[-1] / CONTRACT if dirs else Path("arch") / arch / CONTRACT, None,
                        "missing: every arch/ARCH/ declares its clock modes and fragments here "
                        "(docs/hacking.rst, \"Fragments\")")

    # Merge: a later (user's) file overrides modes and counters by name, and adds to the lists.
    modes: dict = {}
    counters: dict = {}
    lists: dict[str, dict] = {"provides": {}, "trampolines": {}, "includes": {}, "c_pages": {}}
    entry_registers = None
    for f in files:
        entry_registers = f.entry_registers if f.entry_registers is not None else entry_registers
        modes.update(f.modes)
        counters.update(f.counters)
        for key in lists:
            for i, name in enumerate(getattr(f, key)):
                lists[key].setdefault(name, (f, i))

    by_number: dict[int, str] = {}
    for f in files:                 # a clash is reported where the later mode is declared
        for name, (mode, t) in f.modes.items():
            if modes[name][1] is not t:
                continue            # overridden by a later file
            if mode.number in by_number:
                t.error("number", f"{mode.number} is already the number of mode {by_number[mode.number]!r}")
            by_number[mode.number] = name

    ccs = {}
    for name, (mnames, params, fields, t) in counters.items():
        served = []
        for i, m in enumerate(mnames):
            if m not in modes:
                t.error(f"modes[{i}]", f"unknown clock mode {m!r}{did_you_mean(m, modes)} (the contract "
                                       f"declares {', '.join(modes) or 'none'})")
            if mnames.index(m) != i:
                t.error(f"modes[{i}]", f"mode {m!r} listed twice")
            served.append(modes[m][0])
        ccs[name] = CounterContract(name, str(t.path), tuple(served), params, fields)

    contract = Contract(arch, tuple(str(f.path) for f in files),
                        tuple(sorted((m for m, _ in modes.values()), key=lambda m: m.number)), ccs,
                        tuple(lists["provides"]), tuple(lists["trampolines"]), tuple(lists["includes"]),
                        entry_registers, tuple(lists["c_pages"]))
    _check_files(contract, dirs, counters, lists)
    return contract


def _check_files(contract, dirs, counters, lists):
    """Every file of arch/ARCH/ is a fragment someone names; every declared one exists."""
    present: dict[str, Path] = {}
    for d in dirs:
        for p in sorted(d.iterdir()):
            if p.is_file() and p.name != CONTRACT:
                present.setdefault(p.name, p)
    declared = {"trampoline": set(lists["trampolines"]), "include": set(lists["includes"]),
                "counter": set(counters)}
    where = ", ".join(contract.files)
    found: dict = {}
    for fname, p in present.items():
        for k in _ordered_kinds():
            name = k.match(fname)
            if name is None:
                continue
            if k.name in declared and name not in declared[k.name]:
                if k.file.startswith("{name}"):
                    continue       # maybe another free-named kind's
                raise SpecError(p, None, f"no {k.name} entry declares it in {where} "
                                         f"(add [counter.{name}] with its modes){did_you_mean(name, declared[k.name])}")
            if not k.named and k.need == "optional" and k.name not in contract.provides:
                raise SpecError(p, None, f"an optional {k.name} fragment, not in `provides` of {where}: "
                                         f"it would never be included")
            found.setdefault(k.name, []).append(name)
            break
        else:
            expected = [k.file for k in kinds() if not k.named] + [
                kind(kn).filename(n) for kn, names in declared.items() for n in names]
            raise SpecError(p, None, f"not a fragment: no kind of vdsogen/spec/fragments.toml and no key of "
                                     f"{where} names it{did_you_mean(fname, expected)}")
    contract.fragments.update({k: tuple(v) for k, v in found.items()})

    def need(f, key, i, filename):
        if filename not in present:
            f.top.error(f"{key}[{i}]", f"no fragment arch/{contract.arch}/{filename}")

    for key, kname in (("provides", None), ("trampolines", "trampoline"), ("includes", "include")):
        for name, (f, i) in lists[key].items():
            need(f, key, i, kind(name).file if kname is None else kind(kname).filename(name))
    for k in kinds():
        if k.need == "required" and k.file not in present:
            raise SpecError(contract.files[-1], None, f"no fragment arch/{contract.arch}/{k.file}: "
                                                      f"every arch has one ({k.what})")
    for name, (_, _, _, t) in counters.items():
        if kind("counter").filename(name) not in present:
            t.error(None, f"no fragment arch/{contract.arch}/{kind('counter').filename(name)}")


def check_entry(contract: Contract, top: Table, exports: list) -> None:
    """An asm entry (entry.S.j2) passes every argument of each core export in registers."""
    limit = contract.entry_registers
    for i, e in enumerate(exports):
        f = e.function
        if limit is not None and not e.arch_impl and f.nargs + (1 if contract.passes_page(f) else 0) > limit:
            top.error(f"export[{i}]", f"{e.name}: the {contract.arch} entry passes {limit} arguments in registers "
                                      f"({', '.join(contract.files)}: entry_registers), {f.name} needs more")


# --- a spec's [counter], checked against the contract ----------------------

def counter_contract(contract: Contract, ct: Table, fragment: str) -> CounterContract:
    cc = contract.counters.get(fragment)
    if cc is None:
        ct.error("fragment", f"the arch's contract ({', '.join(contract.files)}) declares no counter "
                             f"{fragment!r}{did_you_mean(fragment, contract.counters)}")
    return cc


def counter_modes(cc: CounterContract, ct: Table) -> tuple:
    """The numbers of the modes [counter] modes names, in its order."""
    served = {m.name: m for m in cc.modes}
    names = ct.list("modes", (str, int), kindname="a mode name")
    if not names:
        ct.error("modes", "at least one clock mode is needed")
    served_text = f"the {cc.name} counter serves {', '.join(served)} ({cc.path})"
    out = []
    for i, m in enumerate(names):
        if isinstance(m, int):
            hint = next((f" (did you mean {s!r}?)" for s, mode in served.items() if mode.number == m), "")
            ct.error(f"modes[{i}]", f"{m} is a number: name the mode{hint}; {served_text}")
        if m not in served:
            ct.error(f"modes[{i}]", f"unknown clock mode {m!r}{did_you_mean(m, served)}: {served_text}")
        if names.index(m) != i:
            ct.error(f"modes[{i}]", f"mode {m!r} listed twice")
        out.append(served[m].number)
    return tuple(out)


def counter_params(cc: CounterContract, ct: Table, elf_class: int) -> dict:
    """[counter.params] checked against the contract (for a spec of ELF class
    `elf_class`), with its defaults filled in."""
    pt = ct.table("params", {})
    given = pt.keys()
    out = {}
    declared = [p.name for p in cc.params]
    for key in given:
        p = cc.param(key)
        if p is None:
            pt.error(key, f"unknown key: the {cc.name} counter fragment takes no such parameter "
                          f"({cc.path} declares {', '.join(declared) or 'none'}){did_you_mean(key, declared)}")
        value = pt.raw(key)
        kinds_ = PARAM_TYPES[p.type]
        if not isinstance(value, kinds_) or (isinstance(value, bool) and p.type != "boolean"):
            pt.error(key, f"expected a {p.type}")
        if p.values is not None and value not in p.values:
            pt.error(key, f"must be one of {', '.join(map(repr, p.values))}{did_you_mean(value, p.values)}")
        if p.elf_class not in (None, elf_class):
            pt.error(key, f"the {cc.name} counter fragment takes it for {p.elf_class}-bit targets only "
                          f"({cc.path}), and this one is {elf_class}-bit")
        out[key] = value
    pt.done()
    for q in cc.params:
        if q.name not in out:
            if not q.has_default:
                ct.error(f"params.{q.name}", f"missing: the {cc.name} counter fragment needs it ({cc.path})")
            out[q.name] = q.default
    return {q.name: out[q.name] for q in cc.params}


def check_layout(cc: CounterContract, numbers: tuple, layout: Layout, ct: Table, dt: Table) -> None:
    """The pages the served modes read, and the time-data fields the counter reads, are in the layout."""
    for i, n in enumerate(numbers):
        mode = cc.mode_of(n)
        for role in mode.pages:
            page = layout.page(role)
            if not (page and page.struct and page.symbol):
                ct.error(f"modes[{i}]", f"clock mode {mode.name} reads the {role} page: layout {layout.name} "
                                        f"has none with a struct and a symbol")
    for f in cc.time_fields:
        if not any(layout.time_field(a) for a in f.split("|")):
            dt.error("layout", f"the {cc.name} counter reads {' or '.join(f.split('|'))} in the time data "
                               f"({cc.path}: counter.{cc.name}.time_fields): layout {layout.name} has none")


# --- the table of docs/hacking.rst -----------------------------------------

def fragments_table() -> str:
    """The catalogue as the reStructuredText table docs/hacking.rst shows
    ("Fragments"); a test keeps the two the same."""
    rows = [("Kind", "File in arch/ARCH/", "Need", "Named by", "Must define", "Included by", "For")]
    for k in kinds():
        defines = ", ".join(" or ".join(f"``{x}``" for x in d.split("|")) for d in k.defines) or "-"
        rows.append((k.name, f"``{k.file}``", k.need, k.key or "-", defines, k.included_by, k.what))
    out = [".. list-table:: Fragment kinds (vdsogen/spec/fragments.toml)", "   :header-rows: 1", ""]
    for row in rows:
        out.append(f"   * - {row[0]}")
        out += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(out) + "\n"
