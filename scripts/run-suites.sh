#!/bin/sh
# Third-party vDSO suites through `vdsogen run`, by hand (it unpacks Debian's
# linux-source-6.12 and fetches vdsotest, whose code stays out of vdsogen):
#
#   sh scripts/run-suites.sh [TARGET...]      (default: every target in specs/)
#
# Per target, built with its GNU cross compiler and Debian's cross C library
# (libc6-dev-ARCH-cross; natively gcc): the kernel's vDSO selftests
# (vdso_test_abi, _gettimeofday, _getcpu, _clock_getres static,
# vdso_test_correctness dynamic: it dlopen()s the vDSO) and vdsotest
# (dynamic: it looks its functions up with dlopen) verify and abi for every
# API it has.  Dynamic programs name the cross C library's ld.so and
# libraries by their paths on this machine (--dynamic-linker, -rpath), which
# the loader of `vdsogen run` opens as a kernel opens PT_INTERP.  Each runs
#
#   vdsogen   `vdsogen run --arch=T` (vdsogen's image)
#   linux     the control: Linux's own image of the target under
#             `vdsogen run --arch=T --image REAL` ($VDSOGEN_REAL_IMAGES, by
#             default ~/.cache/vdsogen/real-vdso/images/sid, as
#             scripts/fetch-real-vdso.sh leaves them); natively the running
#             kernel's own vDSO (`run --image` takes no other there); not
#             for a test build's target (qemu-user cannot read the counter
#             Linux's image reads)
#   qemu      the emulator alone, which gives no vDSO (the C library makes
#             the syscalls): a failure here too is qemu's
#
# and the table on standard output has one row per target and suite test:
# "ok", "FAIL(N)" (exit status N), "skip" (kselftest's 4) or "-" (not run:
# no such image, no such program).  vdsotest is fetched once into
# $VDSOGEN_SUITES_CACHE (default ~/.cache/vdsogen/suites) by git from
# $VDSOTEST_GIT (default https://github.com/nathanlynch/vdsotest), or taken
# from $VDSOTEST_SRC (a directory holding its src/); without either its rows
# say "not fetched".  Logs of every run: $VDSOGEN_SUITES_CACHE/logs/T/.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh" >&2
PY="$ROOT/.venv/bin/python"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
TARBALL=${LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
CACHE=${VDSOGEN_SUITES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vdsogen/suites}
REAL=${VDSOGEN_REAL_IMAGES:-$HOME/.cache/vdsogen/real-vdso/images/sid}
VDSOTEST_GIT=${VDSOTEST_GIT:-https://github.com/nathanlynch/vdsotest}
DURATION=${VDSOTEST_DURATION:-1}
[ -f "$TARBALL" ] || { echo "$0: $TARBALL: not found (apt-get install linux-source-6.12)" >&2; exit 2; }
[ $# -gt 0 ] || set -- $(cd "$ROOT/specs" && ls *.toml | sed 's/\.toml$//')

mkdir -p "$CACHE"
K="$CACHE/linux-6.12"
if [ ! -f "$K/tools/testing/selftests/vDSO/vdso_test_abi.c" ]; then
	echo "  TAR     $(basename "$TARBALL") (tools/testing/selftests/vDSO and its headers)" >&2
	mkdir -p "$K"
	tar -xJf "$TARBALL" -C "$K" --strip-components=1 --wildcards '*/tools/testing/selftests/vDSO/*' \
		'*/tools/testing/selftests/kselftest.h' '*/tools/include/*' '*/include/uapi/*'
fi
S="$K/tools/testing/selftests/vDSO"

VT=${VDSOTEST_SRC:-$CACHE/vdsotest}
if [ ! -f "$VT/src/vdsotest.c" ]; then
	echo "  GIT     $VDSOTEST_GIT" >&2
	git clone -q --depth 1 "$VDSOTEST_GIT" "$VT" >&2 || echo "$0: vdsotest: not fetched (give VDSOTEST_SRC)" >&2
fi

# target -> "triple cflags..." (the harness's compiler and flags), and facts for the rows.
facts() {
	"$PY" - "$1" <<'EOF'
import sys
from vdsogen.spec.model import load_target
from vdsogen.harness.driver import runner
from vdsogen.run.foreign import run_target
t = load_target(sys.argv[1])
native = not runner(t)
triple = "x86_64-linux-gnux32" if t.name == "x32" else t.toolchain.gnu_triple
cc = "gcc" if t.name == "x86_64" else (f"{triple}-gcc" if triple else "-")
flags = " ".join(t.toolchain.harness_cflags)
test = "test" if not native and run_target(t, None).test_counter else "real"
print(cc, " ".join(runner(t)) or "-", test, flags)
EOF
}

# The flags that make a dynamic program load the cross C library from this
# machine's paths: its PT_INTERP under the cross sysroot /usr/TRIPLE.
dynamic_flags() {
	cc=$1; shift
	[ "$cc" != gcc ] || return 0
	libdir=$(dirname "$(readlink -f "$($cc "$@" -print-file-name=libc.so.6)")")
	echo 'int main(void) { return 0; }' > "$W/empty.c"
	$cc "$@" "$W/empty.c" -o "$W/empty" || return 1
	interp=$(readelf -l "$W/empty" | sed -n 's/.*program interpreter: \(.*\)]$/\1/p')
	[ ! -e "/usr/${cc%-gcc}$interp" ] || interp="/usr/${cc%-gcc}$interp"
	echo "-Wl,--dynamic-linker=$interp -Wl,-rpath=$libdir"
}

# One run: its cell.  run_cell LOG CMD...
run_cell() {
	log=$1; shift
	timeout 600 "$@" > "$log" 2>&1 </dev/null
	rc=$?
	case $rc in
	0) echo ok ;;
	4) echo skip ;;
	*) echo "FAIL($rc)" ;;
	esac
}

# The control's cell (l) and the emulator's (b) for one program: LOG PROGRAM [ARG...].
cells() {
	log=$1; shift
	if [ -z "$qemu" ]; then
		l=$(run_cell "$log.linux" "$@")
		b=-
		return
	fi
	l=-
	[ -z "$real" ] || l=$(run_cell "$log.linux" "$VDSOGEN" run --arch="$t" --image="$real" -- "$@")
	b=$(run_cell "$log.qemu" $qemu "$@")
}

printf '%-14s %-34s %-10s %-10s %s\n' target test vdsogen linux qemu
for t in "$@"; do
	set -- $(facts "$t")
	cc=$1 qemu=$2 build=$3; shift 3
	cflags="$*"
	[ "$qemu" = - ] && qemu=""
	W="$CACHE/build/$t"
	L="$CACHE/logs/$t"
	rm -rf "$W" "$L"
	mkdir -p "$W" "$L"
	if [ "$cc" = - ] || ! command -v "$cc" >/dev/null; then
		printf '%-14s %-34s %s\n' "$t" "(all)" "no GNU cross compiler and C library: not run"
		continue
	fi
	real=""
	[ -z "$qemu" ] || [ "$build" = test ] || real=$(find "$REAL" -name "$t.so" -not -path '*/qemu-user/*' | head -1)
	dyn=$(dynamic_flags "$cc" $cflags 2>/dev/null) || dyn="-static"
	progs=""
	for p in abi gettimeofday getcpu; do
		$cc $cflags -static -std=gnu99 -O2 -o "$W/vdso_test_$p" "$S/vdso_test_$p.c" "$S/parse_vdso.c" \
			> "$L/build-$p" 2>&1 && progs="$progs vdso_test_$p"
	done
	[ -f "$S/vdso_test_clock_getres.c" ] && $cc $cflags -static -std=gnu99 -O2 -o "$W/vdso_test_clock_getres" \
		"$S/vdso_test_clock_getres.c" > "$L/build-clock_getres" 2>&1 && progs="$progs vdso_test_clock_getres"
	[ "$dyn" != -static ] && $cc $cflags $dyn -std=gnu99 -O2 -o "$W/vdso_test_correctness" "$S/vdso_test_correctness.c" \
		-ldl > "$L/build-correctness" 2>&1 && progs="$progs vdso_test_correctness"
	if [ -f "$VT/src/vdsotest.c" ] && [ "$dyn" != -static ]; then
		printf '#define PACKAGE_VERSION "vdsotest"\n#define PACKAGE_BUGREPORT ""\n' > "$W/config.h"
		$cc $cflags $dyn -std=gnu99 -O2 -D_GNU_SOURCE -include "$W/config.h" -I "$VT/src" -o "$W/vdsotest" \
			$(ls "$VT"/src/*.c | grep -v _template) -lrt -ldl -lpthread > "$L/build-vdsotest" 2>&1 ||
			echo "$0: $t: vdsotest does not build: $L/build-vdsotest" >&2
	fi
	note=""
	[ "$build" = test ] && note=" (test build)"
	for p in $progs; do
		v=$(run_cell "$L/$p.vdsogen" "$VDSOGEN" run --arch="$t" -- "$W/$p")
		cells "$L/$p" "$W/$p"
		printf '%-14s %-34s %-10s %-10s %s\n' "$t" "$p$note" "$v" "$l" "$b"
	done
	if [ ! -x "$W/vdsotest" ]; then
		printf '%-14s %-34s %s\n' "$t" vdsotest "not fetched or not built: -"
		continue
	fi
	apis=$($qemu "$W/vdsotest" --help 2>&1 | sed -n '/API must be one of/,/TEST-TYPE/p' | grep -E '^\s' | tr -d '\t ')
	for api in $apis; do
		for kind in verify abi; do
			p="vdsotest $api $kind"
			v=$(run_cell "$L/$api-$kind.vdsogen" "$VDSOGEN" run --arch="$t" -- "$W/vdsotest" -d "$DURATION" "$api" "$kind")
			cells "$L/$api-$kind" "$W/vdsotest" -d "$DURATION" "$api" "$kind"
			printf '%-14s %-34s %-10s %-10s %s\n' "$t" "$p$note" "$v" "$l" "$b"
		done
	done
done
