#!/bin/sh
# glibc 2.41's getrandom through vdsogen's x86_64 image, by hand (it
# downloads Debian trixie's libc6, as fetch-real-vdso.sh its kernels):
#
#   sh scripts/getrandom-glibc.sh
#
# Unpacks trixie's libc6 into a sysroot under $VDSOGEN_GLIBC (default
# ~/.cache/vdsogen/glibc-trixie), builds scripts/e2e/getrandom-consumer.c
# against the host's headers, and runs it with trixie's dynamic loader three
# ways: on the running kernel's vDSO, under `vdsogen run` on vdsogen's
# image, and under `vdsogen run` on the same image without getrandom (a
# spec that drops the export).  glibc answers getrandom from the vDSO when
# it exports __vdso_getrandom and makes the syscall otherwise: perf counts
# the getrandom syscalls of each run (a few reseeds, or one per call), and
# the same 16 bytes never come back after a fork.  Exit 0 when all of that
# holds.  Needs perf (linux-perf) and root, for the syscall tracepoint.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
CACHE=${VDSOGEN_GLIBC:-$HOME/.cache/vdsogen/glibc-trixie}
MIRROR=${VDSOGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CALLS=${CALLS:-200000}
mkdir -p "$CACHE/debs"

. "$ROOT/scripts/private-apt.sh"
private_apt "$CACHE/apt" amd64 amd64
echo "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main" \
	>"$CACHE/apt/etc/sources.list"
if ! ls "$CACHE"/debs/libc6_*.deb >/dev/null 2>&1; then
	echo "  APT     libc6 (trixie)"
	apt_get -qq update
	(cd "$CACHE/debs" && apt_get -qq download libc6:amd64)
fi
DEB=$(ls "$CACHE"/debs/libc6_*.deb | head -n 1)
SYSROOT="$CACHE/sysroot"
rm -rf "$SYSROOT"
dpkg-deb -x "$DEB" "$SYSROOT"
LOADER="$SYSROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
LIBS="$SYSROOT/usr/lib/x86_64-linux-gnu"
echo "  GLIBC   $(basename "$DEB")"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/consumer" "$ROOT/scripts/e2e/getrandom-consumer.c"

# The image without getrandom: vdsogen's x86_64 with its other exports.
mkdir "$WORK/specs"
cat >"$WORK/specs/x86_64-nogetrandom.toml" <<'EOF'
extends = "x86_64"

[[export]]
name = "__vdso_clock_gettime"
impl = "clock_gettime"
aliases = ["clock_gettime"]

[[export]]
name = "__vdso_gettimeofday"
impl = "gettimeofday"
aliases = ["gettimeofday"]

[[export]]
name = "__vdso_time"
impl = "time"
aliases = ["time"]

[[export]]
name = "__vdso_clock_getres"
impl = "clock_getres"
aliases = ["clock_getres"]

[[export]]
name = "__vdso_getcpu"
impl = "getcpu"
aliases = ["getcpu"]
EOF
"$VDSOGEN" build -q --arch=x86_64 --out="$WORK/with"
"$VDSOGEN" build -q --specs="$WORK/specs" --arch=x86_64-nogetrandom --out="$WORK/without"

# getrandom syscalls of the whole run (perf's tracepoint counter follows every process): the
# vDSO's leave only the reseeds (and vdsogen's own Python's), the fallback one per call.
syscalls() {
	perf stat -x, -e syscalls:sys_enter_getrandom -o "$WORK/perf" -- "$@" >"$WORK/out"
	cut -d, -f1 <"$WORK/perf" | grep -E '^[0-9]+$'
}

run() {	# WAY [vdsogen run options]: the consumer's line, then the count of getrandom syscalls
	way=$1
	shift
	if [ $# -eq 0 ]; then
		set -- "$LOADER" --library-path "$LIBS" "$WORK/consumer"
	else
		set -- "$VDSOGEN" run "$@" -- "$LOADER" --library-path "$LIBS" "$WORK/consumer"
	fi
	n=$(syscalls "$@" "$CALLS")
	line=$(cat "$WORK/out")
	fork=$("$@" fork)
	printf '%-34s %s, %s getrandom syscalls, %s\n' "$way" "$line" "$n" "$fork" >&2
	[ "$fork" = "fork distinct" ] || return 1
	echo "$n"
}

command -v perf >/dev/null || { echo "$0: perf (linux-perf) counts the getrandom syscalls: install it" >&2; exit 2; }
k=$(run "kernel (the running kernel's vDSO)")
v=$(run "vdsogen (its image)" --arch=x86_64 --image "$WORK/with/vdso.so")
w=$(run "without (no getrandom export)" --specs="$WORK/specs" --arch=x86_64-nogetrandom \
	--image "$WORK/without/vdso.so")
# The vDSO's runs reseed a few times, the fallback makes every call a syscall.
[ "$k" -lt $((CALLS / 100)) ] && [ "$v" -lt $((CALLS / 100)) ] && [ "$w" -ge "$CALLS" ] || {
	echo "$0: glibc did not use vdsogen's getrandom as expected" >&2
	exit 1
}
echo "glibc 2.41 answered $CALLS getrandom calls from vdsogen's image with $v syscalls (without the export: $w)"
