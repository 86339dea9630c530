"""The functions a vDSO export can implement (functions.toml), declared once.

Each declaration carries the C signature, how the result reports an error,
whether the function reads the time data, its fallback syscall and who
implements it, and for a core function its harness wiring ([NAME.harness]:
its check groups, how its result is compared with its syscall, its
benchmark rows and hot paths).  The entry points, the core's feature
macros, the asm wrappers, the harness's calls, checks and benchmark rows
(templates/harness_functions.*.j2) are all written from these objects.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vdsogen import paths
from vdsogen.spec.toml import C_IDENT, Table, load_toml

CATALOGUE = Path(__file__).resolve().parent / "functions.toml"
RESULTS = ("errno", "value")
WHERE = ("core", "arch")
# How the harness compares a result with its syscall: "timespec", a clock id
# in and a timespec out (harness/internal.h: struct ts_flavour fl_NAME).
FLAVOURS = ("timespec",)
# Checks of harness/checks-clock.c that take a flavour: check_NAME(&fl_FUNCTION).
FLAVOUR_CHECKS = ("clocks", "resolutions", "ids")
# Checks with code of one function's own: check_FUNCTION(void), named after it.
FUNCTION_CHECKS = ("gettimeofday", "time", "getcpu", "getrandom")
# Call shapes of harness/bench.c (SH_<SHAPE>): the flavour ones take a clock per row.
FLAVOUR_SHAPES = ("gettime", "getres")
FUNCTION_SHAPES = ("gettimeofday", "time", "getcpu", "getrandom")
# Shapes whose rows are byte counts (the length each line asks for), not clocks.
SIZED_SHAPES = ("getrandom",)
# The data pages (layout roles) a function may read: the page its entry passes to the core.
DATA_PAGES = ("time", "rng")
# Linux's clock ids (uapi linux/time.h) a benchmark row may name; C_<NAME> in harness/internal.h.
CLOCK_IDS = {"REALTIME": 0, "MONOTONIC": 1, "PROCESS_CPUTIME_ID": 2, "MONOTONIC_RAW": 4, "REALTIME_COARSE": 5,
             "MONOTONIC_COARSE": 6, "BOOTTIME": 7, "BOOTTIME_ALARM": 9, "TAI": 11}
# The clocks the counter advances: a row of one reads the counter where the function's hot path does.
COUNTER_CLOCKS = ("REALTIME", "MONOTONIC", "MONOTONIC_RAW", "BOOTTIME", "TAI")
_PARAM = re.compile(r"(?P<type>[A-Za-z_][A-Za-z0-9_ ]*?[ *]+)(?P<name>[A-Za-z_][A-Za-z0-9_]*)\Z")


@dataclass(frozen=True)
class Param:
    ctype: str      # "struct vdso_timespec *"
    name: str       # "ts"

    def __str__(self):
        sep = "" if self.ctype.endswith("*") else " "
        return f"{self.ctype}{sep}{self.name}"


@dataclass(frozen=True)
class Bench:
    """How `vdsogen bench` times a core function ([NAME.harness.bench])."""
    shape: str              # SH_<SHAPE> of harness/bench.c
    rows: tuple             # clock names, one line each ("function:CLOCK"); () for one line "function"
    syscall: str | None     # the syscall the "syscall" way times
    hot_paths: tuple        # ((label, (counter reads the path may make, ...)), ...); label "" for one path

    def reads_counter(self, row: str | None) -> bool:
        """Whether the line of `row` (a clock name, or "") answers from one counter read."""
        if not any(reads == (1,) for _, reads in self.hot_paths):
            return False
        return not row or row in COUNTER_CLOCKS


@dataclass(frozen=True)
class Harness:
    """A core function's harness wiring ([NAME.harness])."""
    flavour: str | None     # how its result is compared with its syscall (FLAVOURS), or None
    checks: tuple           # its check groups, in order (FLAVOUR_CHECKS, or its own name)
    y2038: bool             # the y2038 group checks it past 2038 and 2^32 seconds
    bench: Bench | None

    def group(self, function: str, check: str) -> str:
        """The name the harness gives the group of `check`."""
        return function if check == function else f"{function} {check}"


@dataclass(frozen=True)
class Function:
    name: str
    returns: str
    params: tuple           # of Param
    syscall: str | None
    result: str             # "errno" or "value"
    uses_data: bool
    where: str              # "core" or "arch"
    c_call: bool            # callable as a C function of its prototype
    harness: Harness | None = None  # core functions: the harness's checks and benchmark rows
    page: str = "time"      # the data page (layout role) it reads, when uses_data
    arch_fragments: tuple = ()  # optional fragment kinds its core implementation calls into (chacha)
    header: str | None = None   # templates/HEADER holds its core code, included only where exported

    @property
    def feature(self) -> str:
        """The configuration macro that turns the core's implementation on."""
        return f"VDSO_HAS_{self.name.upper()}"

    @property
    def returns_errno(self) -> bool:
        return self.result == "errno"

    @property
    def nargs(self) -> int:
        return len(self.params)

    @property
    def param_list(self) -> str:
        """C parameter list: "clockid_t clock, struct vdso_timespec *ts" ("void" for none)."""
        return ", ".join(str(p) for p in self.params) or "void"

    @property
    def arg_list(self) -> str:
        return ", ".join(p.name for p in self.params)

    def prototype(self, symbol: str) -> str:
        return f"{self.returns} {symbol}({self.param_list})"

    @property
    def timespec(self) -> str:
        """The timespec type of a "timespec" flavour: "struct vdso_timespec64"."""
        return self.params[1].ctype.rstrip(" *")


def _harness(t, name, params, syscall, where):
    """[NAME.harness] of one declaration, checked."""
    h = t.table("harness", None)
    if h is None:
        return None
    if where != "core":
        t.error("harness", "only a core function has one: an arch function's check is "
                           "arch/ARCH/harness-check-NAME.c.j2")
    flavour = h.str("flavour", None, choices=FLAVOURS)
    if flavour == "timespec":
        if (len(params) != 2 or params[0].ctype != "clockid_t" or not params[1].ctype.startswith("struct ")
                or not params[1].ctype.endswith("*")):
            h.error("flavour", f'"timespec" takes (clockid_t, struct ... *), {name} takes '
                               f'({", ".join(str(p) for p in params)})')
        if syscall is None:
            h.error("flavour", f"{name} has no syscall to be compared with")
    checks = h.list("checks", str, [], kindname="a string")
    for i, c in enumerate(checks):
        if c in FLAVOUR_CHECKS and flavour is None:
            h.error(f"checks[{i}]", f"{c!r} compares through a flavour: {name} has none (flavour = \"timespec\")")
        if c not in FLAVOUR_CHECKS and c != name:
            h.error(f"checks[{i}]", f"{c!r} is not a harness check: one of {', '.join(FLAVOUR_CHECKS)}, or "
                                    f"{name!r} (check_{name}() of its own"
                                    f"{'' if name in FUNCTION_CHECKS else ', which harness/*.c does not have'})")
        if c == name and c not in FUNCTION_CHECKS:
            h.error(f"checks[{i}]", f"harness/*.c has no check_{c}(): one of {', '.join(FLAVOUR_CHECKS)}")
    if len(set(checks)) != len(checks):
        h.error("checks", "a check is listed twice")
    y2038 = h.bool("y2038", False)
    if y2038 and flavour is None:
        h.error("y2038", "the y2038 group checks a flavour: this function has none")
    bench = None
    b = h.table("bench", None)
    if b is not None:
        shape = b.str("shape", choices=FLAVOUR_SHAPES + FUNCTION_SHAPES)
        if shape in FLAVOUR_SHAPES:
            if flavour is None:
                b.error("shape", f"{shape!r} calls through a flavour: {name} has none")
            rows = b.list("rows", str, kindname="a string")
            if not rows:
                b.error("rows", "no rows: each names a clock")
            for i, r in enumerate(rows):
                if r not in CLOCK_IDS:
                    b.error(f"rows[{i}]", f"{r!r} is not a clock: one of {', '.join(CLOCK_IDS)}")
        else:
            if shape != name:
                b.error("shape", f"{shape!r} is {shape}()'s own call: {name} takes one of "
                                 f"{', '.join(FLAVOUR_SHAPES)} or a shape of its own in harness/bench.c")
            rows = []
            if shape in SIZED_SHAPES:
                sizes = b.list("sizes", int, kindname="an integer")
                if not sizes or any(n <= 0 or n > 65536 for n in sizes):
                    b.error("sizes", "the byte counts of the lines, each 1 to 65536")
                rows = [str(n) for n in sizes]
        paths_ = []
        if b.has("hot_path") == b.has("hot_paths"):
            b.error("hot_paths", "give hot_path (one path: the counter reads it may make) or hot_paths "
                                 "(label = reads, for each class of call), not both")
        if b.has("hot_path"):
            paths_.append(("", tuple(b.list("hot_path", int, kindname="an integer"))))
        else:
            hp = b.table("hot_paths")
            for label in hp.keys():
                paths_.append((label, tuple(hp.list(label, int, kindname="an integer"))))
            hp.done()
        bench = Bench(shape, tuple(rows), b.ident("syscall", syscall), tuple(paths_))
        b.done()
    h.done()
    return Harness(flavour, tuple(checks), y2038, bench)


def load_catalogue(path: Path) -> dict:
    """name -> Function of the declarations in `path`, in declaration order."""
    top = Table(path, load_toml(path))
    out = {}
    for name in top.keys():
        if not C_IDENT.match(name):
            top.error(name, f"{name!r} is not a C identifier")
        t = top.table(name)
        params = []
        for i, text in enumerate(t.list("params", str, kindname="a string")):
            m = _PARAM.match(text.strip())
            if m is None:
                t.error(f"params[{i}]", f"{text!r} is not a C parameter \"type name\"")
            params.append(Param(m["type"].strip(), m["name"]))
        syscall, where = t.ident("syscall", None), t.str("where", choices=WHERE)
        data = t.bool("data")
        page = t.str("page", "time", choices=DATA_PAGES)
        if page != "time" and not data:
            t.error("page", "a function that reads no data page (data = false) names none")
        needs = tuple(t.list("arch_fragments", str, [], kindname="a string"))
        if needs and where != "core":
            t.error("arch_fragments", "only the core's implementation of a function calls into arch fragments")
        header = t.str("header", None)
        if header is not None and (where != "core" or not (paths.TEMPLATES / header).is_file()):
            t.error("header", f"{header!r} is not a file of templates/ (a core function's code of its own)")
        out[name] = Function(name, t.str("returns"), tuple(params), syscall,
                             t.str("result", choices=RESULTS), data, where,
                             t.bool("c_call", True), _harness(t, name, params, syscall, where), page, needs,
                             header)
        t.done()
    top.done()
    return out


@lru_cache(maxsize=None)
def catalogue() -> "dict[str, Function]":
    """name -> Function of functions.toml, in declaration order."""
    return load_catalogue(CATALOGUE)


def get(name: str) -> "Function | None":
    return catalogue().get(name)
