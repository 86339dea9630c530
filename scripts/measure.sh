#!/bin/sh
# Regenerate the measured sections of docs/measurements.rst from the tools
# (scripts/measure.py does the work; each section says when and how it was
# made).  Sections:
#   images    vdso.so bytes of every target, default toolchain  (seconds)
#   harness   harness checks passed per target, `vdsogen test` time  (minutes)
#   corpus    Debian's images next to vdsogen's: sizes, hot-path counts,
#             the corpus audit, the harness on each image (minutes).
#             Opt-in: needs scripts/fetch-real-vdso.sh first
#   bench     ns per call against the running kernel's vDSO, x86_64 with
#             clang and gcc (RUNS=7 runs each).  Opt-in: a minute, idle machine
#
#   sh scripts/measure.sh                  # images harness
#   sh scripts/measure.sh corpus bench     # the opt-in ones
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/measure.py" "$@"
