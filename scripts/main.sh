#!/bin/sh
# The main job: set up, build the vDSO images, validate them, run them in
# the harness, and print one line per target.
#   sh scripts/main.sh                 # every target in specs/ into out/
#   TARGETS=arm64 OUT=/tmp/v sh scripts/main.sh
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
PY="$ROOT/.venv/bin/python"
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
		printf '%-12s FAIL build (see %s)\n' "$t" "$LOG"
		status=1
		continue
	fi
	t1=$(now)
	if "$VDSOGEN" check --arch="$t" "$dir/vdso.so" >>"$LOG" 2>&1; then check=clean; else check=FAIL; status=1; fi
	t2=$(now)
	# Where qemu-user cannot read the counter, the harness runs the test
	# build (its counter injected); check has verified the real one's read.
	image="$dir/vdso.so"
	if "$PY" -c "import sys; from vdsogen.spec.model import load_target
sys.exit(0 if load_target(sys.argv[1]).harness.injected_counter else 1)" "$t"; then
		"$VDSOGEN" build --arch="$t" --test-counter --out="$dir/test-build" >>"$LOG" 2>&1 || true
		image="$dir/test-build/vdso.so"
	fi
	# A booted-only target ([harness] booted: no qemu-user runs its ABI) is
	# built and checked, its harness built, not run: the row says "n/r" and
	# where it runs (scripts/kernel-harness.sh), and does not fail the job.
	if "$VDSOGEN" test --arch="$t" --image "$image" --workdir "$dir/harness" >"$dir/harness.log" 2>&1; then
		harness="ok"
	elif grep -q '^not run harness: ' "$dir/harness.log" && "$PY" -c "import sys; from vdsogen.spec.model import load_target
sys.exit(0 if load_target(sys.argv[1]).harness.booted else 1)" "$t"; then
		harness="not run"
	else
		harness="FAIL"
		status=1
	fi
	t3=$(now)
	cat "$dir/harness.log" >>"$LOG"
	summary=$(tail -n 1 "$dir/harness.log")
	[ "$harness" != "not run" ] || summary=$(sed -n 's/^not run harness: //p' "$dir/harness.log")
	size=$(wc -c <"$dir/vdso.so")
	case $check$harness in
	cleanok) row=ok ;;
	"cleannot run") row=n/r ;;
	*) row=FAIL ;;
	esac
	printf '%-12s %-4s  vdso.so %5d bytes  build %ss  check %s  harness %s (%s, %ss)\n' \
		"$t" "$row" "$size" \
		"$(secs "$t0" "$t1")" "$check" "$harness" "$summary" "$(secs "$t2" "$t3")"
done
exit $status
