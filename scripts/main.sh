#!/bin/sh
# The main job: set up, build the vDSO images, validate them, run them in
# the harness, and print one line per target.
#   sh scripts/main.sh                 # every target in specs/ into out/
#   TARGETS=arm64 OUT=/tmp/v sh scripts/main.sh
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
TARGETS=${TARGETS:-$(cd "$ROOT/specs" && ls *.toml | sed 's/\.toml$//' | paste -sd, -)}
OUT=${OUT:-$ROOT/out}
LOG="$OUT/main.log"
mkdir -p "$OUT"
: > "$LOG"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

status=0
for t in $(echo "$TARGETS" | tr ',' ' '); do
	dir="$OUT/$t"
	t0=$(now)
	if ! "$VDSOGEN" build --arch="$t" --out="$dir" >>"$LOG" 2>&1; then
		printf '%-8s FAIL build (see %s)\n' "$t" "$LOG"
		status=1
		continue
	fi
	t1=$(now)
	if "$VDSOGEN" check --arch="$t" "$dir/vdso.so" >>"$LOG" 2>&1; then check=clean; else check=FAIL; status=1; fi
	t2=$(now)
	if "$VDSOGEN" test --arch="$t" --image "$dir/vdso.so" --workdir "$dir/harness" >"$dir/harness.log" 2>&1; then
		harness="ok"
	else
		harness="FAIL"
		status=1
	fi
	t3=$(now)
	cat "$dir/harness.log" >>"$LOG"
	summary=$(tail -n 1 "$dir/harness.log")
	size=$(wc -c <"$dir/vdso.so")
	printf '%-8s %-4s  vdso.so %5d bytes  build %ss  check %s  harness %s (%s, %ss)\n' \
		"$t" "$([ "$check$harness" = cleanok ] && echo ok || echo FAIL)" "$size" \
		"$(secs "$t0" "$t1")" "$check" "$harness" "$summary" "$(secs "$t2" "$t3")"
done
exit $status
