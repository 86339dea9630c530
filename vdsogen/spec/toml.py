"""A small checked reader over parsed TOML tables.

Every accessor names the file and the dotted key in its error, and `done()`
rejects keys nobody asked for, so a typo in a spec is an error rather than a
silently ignored setting.
"""

import re
import tomllib

from vdsogen.errors import SpecError

C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MISSING = object()


def load_toml(path):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise SpecError(path, None, f"cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, None, f"invalid TOML: {e}") from None


def _typename(value):
    return {bool: "boolean", int: "integer", str: "string", float: "float",
            list: "array", dict: "table"}.get(type(value), type(value).__name__)


class Table:
    """One TOML table with the file and key path it came from."""

    def __init__(self, path, data, key=""):
        self.path = path
        self.key = key
        self._data = data
        self._used = set()

    def error(self, key, message):
        raise SpecError(self.path, self._join(key), message)

    def _join(self, key):
        if key is None:
            return self.key or None
        return f"{self.key}.{key}" if self.key else key

    def has(self, key):
        return key in self._data

    def _get(self, key, default, kinds, kindname):
        if key not in self._data:
            if default is _MISSING:
                self.error(key, "missing required key")
            return default
        self._used.add(key)
        value = self._data[key]
        # bool is an int in Python; TOML keeps them apart, so do we.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            self.error(key, f"expected {kindname}, got {_typename(value)}")
        return value

    def str(self, key, default=_MISSING, choices=None):
        value = self._get(key, default, (str,), "a string")
        if choices is not None and value not in choices and value is not default:
            self.error(key, f"{value!r} is not one of {', '.join(sorted(choices))}")
        return value

    def ident(self, key, default=_MISSING):
        value = self.str(key, default)
        if value is not default and not C_IDENT.match(value):
            self.error(key, f"{value!r} is not a C identifier")
        return value

    def int(self, key, default=_MISSING, lo=None, hi=None):
        value = self._get(key, default, (int,), "an integer")
        if value is default:
            return value
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            self.error(key, f"{value} is out of range [{lo}, {hi}]")
        return value

    def bool(self, key, default=_MISSING):
        return self._get(key, default, (bool,), "a boolean")

    def list(self, key, kind, default=_MISSING, kindname=None):
        value = self._get(key, default, (list,), "an array")
        if value is default:
            return value
        for i, item in enumerate(value):
            if not isinstance(item, kind) or (isinstance(item, bool) and kind is not bool):
                self.error(f"{key}[{i}]", f"expected {kindname or kind.__name__}, got {_typename(item)}")
        return list(value)

    def table(self, key, default=_MISSING):
        value = self._get(key, default, (dict,), "a table")
        if value is default:
            return value
        return Table(self.path, value, self._join(key))

    def tables(self, key, default=_MISSING):
        value = self._get(key, default, (list,), "an array of tables")
        if value is default:
            return value
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.error(f"{key}[{i}]", f"expected a table, got {_typename(item)}")
            out.append(Table(self.path, item, f"{self._join(key)}[{i}]"))
        return out

    def raw(self, key, default=_MISSING):
        """A value of any type, for parameter tables handed to templates."""
        if key not in self._data:
            if default is _MISSING:
                self.error(key, "missing required key")
            return default
        self._used.add(key)
        return self._data[key]

    def keys(self):
        return list(self._data)

    def done(self):
        unknown = [k for k in self._data if k not in self._used]
        if unknown:
            self.error(unknown[0], "unknown key")
