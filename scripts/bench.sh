#!/bin/sh
# Benchmark, separate from the tests: ns per clock_gettime() through each
# image and through the raw syscall, natively or under qemu-user (where
# the numbers describe the emulator more than the hardware).
#   sh scripts/bench.sh            # x86_64, i386, x32, arm64, ppc64le
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
TARGETS=${TARGETS:-x86_64,i386,x32,arm64,ppc64le}
OUT=${OUT:-$ROOT/out/bench}
for t in $(echo "$TARGETS" | tr ',' ' '); do
	"$ROOT/.venv/bin/vdsogen" build --arch="$t" --out="$OUT/$t" >/dev/null
	"$ROOT/.venv/bin/vdsogen" test --arch="$t" --image "$OUT/$t/vdso.so" --workdir "$OUT/$t/harness" --bench |
		sed -n "s/^bench /$t: /p"
done
