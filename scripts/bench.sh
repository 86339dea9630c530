#!/bin/sh
# Benchmark, separate from the tests: `vdsogen bench` for each target, the
# image against the running kernel's vDSO (natively) and the raw syscall,
# with each export's hot-path instruction count next to real Linux images
# of its ABI.  Under qemu-user the timings describe the emulator.
#   sh scripts/bench.sh            # x86_64, i386, x32, arm64, ppc64le
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
TARGETS=${TARGETS:-x86_64,i386,x32,arm64,ppc64le}
for t in $(echo "$TARGETS" | tr ',' ' '); do
	"$ROOT/.venv/bin/vdsogen" bench --arch="$t" 2>/dev/null
	echo
done
