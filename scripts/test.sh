#!/bin/sh
# The test suite: set up, then run every test.  Extra arguments go to pytest.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest -q -n "${JOBS:-$(nproc)}" "$@"
