#!/bin/sh
# Static checks, as CI runs them before the tests (`make lint`):
#   pyflakes over vdsogen/ and tests/;
#   every public function of the typed packages has type hints;
#   Debian's mypy over those packages, configured by mypy.ini.
# Every check runs; the exit status is non-zero when any of them failed.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TYPED="vdsogen/spec vdsogen/elf vdsogen/isa vdsogen/audit"
failed=""

echo "  PYFLAKES vdsogen tests"
/usr/bin/python3 -m pyflakes vdsogen tests || failed="$failed pyflakes"

echo "  HINTS   $TYPED"
# A public function (no leading underscore, in a module or a public class)
# names the type of each parameter but self/cls, and of its return (__init__'s
# return excepted).  Nested functions are private to their function.
/usr/bin/python3 - $TYPED <<'PY'
import ast
import pathlib
import sys

missing = []


def visit(path, body, owner=""):
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            visit(path, node.body, f"{owner}{node.name}.")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_") and node.name != "__init__":
                continue
            a = node.args
            params = a.posonlyargs + a.args + a.kwonlyargs
            if owner and params and params[0].arg in ("self", "cls"):
                params = params[1:]
            params += [p for p in (a.vararg, a.kwarg) if p is not None]
            names = [p.arg for p in params if p.annotation is None]
            if node.returns is None and node.name != "__init__":
                names.append("the return")
            if names:
                missing.append(f"{path}:{node.lineno}: {owner}{node.name}: no type hint for {', '.join(names)}")


for root in sys.argv[1:]:
    for path in sorted(pathlib.Path(root).rglob("*.py")):
        visit(path, ast.parse(path.read_text(), str(path)).body)
if missing:
    sys.exit("\n".join(missing) + f"\n{len(missing)} public function(s) without type hints")
PY
[ $? -eq 0 ] || failed="$failed hints"

echo "  MYPY    $TYPED"
mypy --config-file mypy.ini || failed="$failed mypy"

if [ -n "$failed" ]; then
	echo "lint: failed:$failed" >&2
	exit 1
fi
