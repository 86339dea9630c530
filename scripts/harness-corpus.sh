#!/bin/sh
# Run the harness on every kernel image scripts/fetch-real-vdso.sh carved
# into the cache: one line per image (the layout played, checks passed and
# failed, the failed checks), then the counts; --format=rst prints the
# table docs/measurements.rst holds.  Images of an ABI whose counter
# qemu-user cannot read (arm, arm64-compat, MIPS), or of an ABI qemu-user
# runs no code of (s390: 31-bit), are listed, not run:
# scripts/kernel-harness.sh boots a kernel for them.  Minutes: by hand,
# like scripts/audit-corpus.sh.
#
#   scripts/harness-corpus.sh [--only TEXT] [--timeout S] [--format=rst]
#
# The cache is $VDSOGEN_REAL_VDSO (default ~/.cache/vdsogen/real-vdso).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VDSOGEN_REAL_VDSO:-$HOME/.cache/vdsogen/real-vdso}
[ -x "$ROOT/.venv/bin/python" ] || sh "$ROOT/scripts/setup.sh"
exec nice -n 10 "$ROOT/.venv/bin/python" -m vdsogen.harness.corpus --cache "$CACHE" "$@"
