#!/bin/sh
# Audit every image scripts/fetch-real-vdso.sh carved into the cache
# against the expectation file tests/real-vdso-expect.toml: one line per
# image (ok, MISMATCH, NEW), then the counts.  Exit 1 when an image does
# not match its entry or has none.  Too heavy for every CI run, like the
# kernel boot: run it by hand after a fetch.
#
#   scripts/audit-corpus.sh [-v] [--draft FILE]
#
# The cache is $VDSOGEN_REAL_VDSO (default ~/.cache/vdsogen/real-vdso).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VDSOGEN_REAL_VDSO:-$HOME/.cache/vdsogen/real-vdso}
[ -x "$ROOT/.venv/bin/python" ] || sh "$ROOT/scripts/setup.sh"
exec "$ROOT/.venv/bin/python" -m vdsogen.audit.corpus --cache "$CACHE" \
	--expect "$ROOT/tests/real-vdso-expect.toml" "$@"
