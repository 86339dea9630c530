#!/bin/sh
# The test suite: set up, then run every test.  Extra arguments go to pytest.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
cd "$ROOT"
# `make -s test` must not make the vdsogen the tests run silent (vdsogen honours make -s).
unset MAKEFLAGS MFLAGS MAKELEVEL
# --dist=loadgroup: the tests that share an expensive module fixture (marked
# xdist_group) run on one worker, which builds it once.
exec "$ROOT/.venv/bin/python" -m pytest -q -n "${JOBS:-$(nproc)}" --dist=loadgroup "$@"
