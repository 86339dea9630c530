"""A small checked reader over parsed TOML tables.

Every accessor names the file and the dotted key in its error, and `done()`
rejects keys nobody asked for, so a typo in a spec is an error rather than a
silently ignored setting; where a known key or value is close, the error
says "did you mean".  A `Problems` collector lets one load report every
error of a file instead of stopping at the first.
"""

from __future__ import annotations

import builtins
import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar, overload

from vdsogen.errors import SpecError, SpecErrors

C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MISSING: Any = object()
_T = TypeVar("_T")


def load_toml(path: str | os.PathLike) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise SpecError(path, None, f"cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, None, f"invalid TOML: {e}") from None
    except UnicodeDecodeError as e:
        # TOML is UTF-8; tomllib decodes the whole file first, so the offset is the file's.
        raise SpecError(path, None, f"not UTF-8: byte 0x{e.object[e.start]:02x} at offset {e.start} "
                                    f"(TOML files are UTF-8)") from None


def did_you_mean(word: object, known: Iterable[object]) -> str:
    """" (did you mean 'x'?)" when `known` holds a name close to `word`, else ""."""
    close = difflib.get_close_matches(str(word), sorted({str(k) for k in known}), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _typename(value: object) -> str:
    return {bool: "boolean", int: "integer", str: "string", float: "float",
            list: "array", dict: "table"}.get(type(value), type(value).__name__)


class Problems:
    """The errors of one load.  `section()` runs a part of the parse and
    keeps its error instead of stopping; `check()` raises them all."""

    def __init__(self) -> None:
        self.errors: list[SpecError] = []

    def add(self, error: SpecError) -> None:
        if isinstance(error, SpecErrors):
            self.errors.extend(error.errors)
        elif str(error) not in {str(e) for e in self.errors}:
            self.errors.append(error)

    @contextmanager
    def section(self) -> Iterator[None]:
        try:
            yield
        except SpecError as e:
            self.add(e)

    def check(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise SpecErrors(self.errors)


class Table:
    """One TOML table with the file and key path it came from."""

    def __init__(self, path: builtins.str | Path, data: dict, key: builtins.str = "",
                 problems: Problems | None = None):
        self.path = path
        self.key = key
        self._data = data
        self._used: set[str] = set()
        self._asked: set[str] = set()
        # where done() reports every unknown key (else it raises the first)
        self.problems = problems

    def error(self, key: builtins.str | None, message: builtins.str) -> NoReturn:
        raise SpecError(self.path, self._join(key), message)

    def _join(self, key: builtins.str | None) -> builtins.str | None:
        if key is None:
            return self.key or None
        return f"{self.key}.{key}" if self.key else key

    def _misspelt(self, key: builtins.str) -> builtins.str:
        """" (the table has 'x': misspelt?)" when a key nobody asked for is close to `key`."""
        close = difflib.get_close_matches(key, [k for k in self._data if k not in self._asked], n=1, cutoff=0.6)
        return f" (the table has {close[0]!r}: misspelt?)" if close else ""

    def has(self, key: builtins.str) -> builtins.bool:
        return key in self._data

    def _get(self, key, default, kinds, kindname):
        self._asked.add(key)
        if key not in self._data:
            if default is _MISSING:
                self.error(key, f"missing required key{self._misspelt(key)}")
            return default
        self._used.add(key)
        value = self._data[key]
        # bool is an int in Python; TOML keeps them apart, so do we.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            self.error(key, f"expected {kindname}, got {_typename(value)}")
        return value

    def str(self, key: builtins.str, default: Any = _MISSING, choices: Iterable[builtins.str] | None = None) -> Any:
        value = self._get(key, default, (str,), "a string")
        if choices is not None and value not in choices and value is not default:
            self.error(key, f"{value!r} is not one of {', '.join(sorted(choices))}"
                            f"{did_you_mean(value, choices)}")
        return value

    def ident(self, key: builtins.str, default: Any = _MISSING) -> Any:
        value = self.str(key, default)
        if value is not default and not C_IDENT.match(value):
            self.error(key, f"{value!r} is not a C identifier")
        return value

    def int(self, key: builtins.str, default: Any = _MISSING, lo: builtins.int | None = None,
            hi: builtins.int | None = None) -> Any:
        value = self._get(key, default, (int,), "an integer")
        if value is default:
            return value
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            self.error(key, f"{value} is out of range [{lo}, {hi}]")
        return value

    def bool(self, key: builtins.str, default: Any = _MISSING) -> Any:
        return self._get(key, default, (bool,), "a boolean")

    def list(self, key: builtins.str, kind: type | tuple[type, ...], default: Any = _MISSING,
             kindname: builtins.str | None = None) -> Any:
        value = self._get(key, default, (list,), "an array")
        if value is default:
            return value
        for i, item in enumerate(value):
            if not isinstance(item, kind) or (isinstance(item, bool) and kind is not bool):
                what = kindname or (kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind))
                self.error(f"{key}[{i}]", f"expected {what}, got {_typename(item)}")
        return list(value)

    @overload
    def table(self, key: builtins.str) -> Table: ...

    @overload
    def table(self, key: builtins.str, default: dict) -> Table: ...

    @overload
    def table(self, key: builtins.str, default: _T) -> Table | _T: ...

    def table(self, key: builtins.str, default: Any = _MISSING) -> Any:
        """The table `key`; when it is absent, `default`, or with a dict
        default an empty table (its done() then passes)."""
        value = self._get(key, default, (dict,), "a table")
        if value is default and not isinstance(default, dict):
            return value
        return Table(self.path, value, self._join(key) or "", self.problems)

    @overload
    def tables(self, key: builtins.str) -> builtins.list[Table]: ...

    @overload
    def tables(self, key: builtins.str, default: _T) -> builtins.list[Table] | _T: ...

    def tables(self, key: builtins.str, default: Any = _MISSING) -> Any:
        value = self._get(key, default, (list,), "an array of tables")
        if value is default:
            return value
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.error(f"{key}[{i}]", f"expected a table, got {_typename(item)}")
            out.append(Table(self.path, item, f"{self._join(key)}[{i}]", self.problems))
        return out

    def raw(self, key: builtins.str, default: Any = _MISSING) -> Any:
        """A value of any type, for parameter tables handed to templates."""
        self._asked.add(key)
        if key not in self._data:
            if default is _MISSING:
                self.error(key, f"missing required key{self._misspelt(key)}")
            return default
        self._used.add(key)
        return self._data[key]

    def keys(self) -> builtins.list[builtins.str]:
        return list(self._data)

    def done(self) -> None:
        """Every key nobody asked for is an error ("did you mean" a key
        that was asked for); with a Problems collector all are reported."""
        errors = []
        for k in self._data:
            if k not in self._used:
                errors.append(SpecError(self.path, self._join(k),
                                        f"unknown key{did_you_mean(k, self._asked)}"))
        if not errors:
            return
        if self.problems is None:
            raise errors[0]
        for e in errors[1:]:
            self.problems.add(e)
        raise errors[0]
