"""The functions a vDSO export can implement (functions.toml), declared once.

Each declaration carries the C signature, how the result reports an error,
whether the function reads the time data, its fallback syscall and who
implements it.  The entry points, the core's feature macros, the asm
wrappers and the harness's calls are all written from these objects.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vdsogen.spec.toml import C_IDENT, Table, load_toml

CATALOGUE = Path(__file__).resolve().parent / "functions.toml"
RESULTS = ("errno", "value")
WHERE = ("core", "arch")
_PARAM = re.compile(r"(?P<type>[A-Za-z_][A-Za-z0-9_ ]*?[ *]+)(?P<name>[A-Za-z_][A-Za-z0-9_]*)\Z")


@dataclass(frozen=True)
class Param:
    ctype: str      # "struct vdso_timespec *"
    name: str       # "ts"

    def __str__(self):
        sep = "" if self.ctype.endswith("*") else " "
        return f"{self.ctype}{sep}{self.name}"


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

    @property
    def feature(self):
        """The configuration macro that turns the core's implementation on."""
        return f"VDSO_HAS_{self.name.upper()}"

    @property
    def returns_errno(self):
        return self.result == "errno"

    @property
    def nargs(self):
        return len(self.params)

    @property
    def param_list(self):
        """C parameter list: "clockid_t clock, struct vdso_timespec *ts" ("void" for none)."""
        return ", ".join(str(p) for p in self.params) or "void"

    @property
    def arg_list(self):
        return ", ".join(p.name for p in self.params)

    def prototype(self, symbol):
        return f"{self.returns} {symbol}({self.param_list})"


@lru_cache(maxsize=None)
def catalogue():
    """name -> Function, in declaration order."""
    top = Table(CATALOGUE, load_toml(CATALOGUE))
    out = {}
    for name in top.keys():
        if not C_IDENT.match(name):
            top.error(name, f"{name!r} is not a C identifier")
        t = top.table(name)
        params = []
        for i, text in enumerate(t.list("params", str, kindname="a string")):
            m = _PARAM.match(text.strip())
            if not m:
                t.error(f"params[{i}]", f"{text!r} is not a C parameter \"type name\"")
            params.append(Param(m["type"].strip(), m["name"]))
        out[name] = Function(name, t.str("returns"), tuple(params), t.ident("syscall", None),
                             t.str("result", choices=RESULTS), t.bool("data"), t.str("where", choices=WHERE),
                             t.bool("c_call", True))
        t.done()
    top.done()
    return out


def get(name):
    return catalogue().get(name)
