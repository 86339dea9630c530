#!/bin/sh
# The kernel's own getrandom selftests on vdsogen's images, by hand (they
# need Debian's linux-source-6.12, /usr/src/linux-source-6.12.tar.xz):
#
#   sh scripts/getrandom-selftests.sh [TARGET...]
#
# vdso_test_chacha, linked with each target's rendered chacha20.S instead of
# the kernel's routine, natively on x86_64 and under qemu-user elsewhere
# (its GNU cross compiler and C library, static); vdso_test_getrandom on
# x86_64's image under `vdsogen run`.  Of the latter, test 1 ("getrandom":
# the vDSO's bytes against the syscall's, threads, fork) must pass; test 2
# ("getrandom timens") traces its child with ptrace, which no program
# inside `vdsogen run` can (the supervisor is its tracer: README), and
# qemu-user has no MAP_DROPPABLE for the test's states, so it runs natively
# only.  Default targets: every one whose spec exports getrandom and has a
# GNU cross compiler (loongarch64 has none).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
TARBALL=${LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
[ -f "$TARBALL" ] || { echo "$0: $TARBALL: not found (apt-get install linux-source-6.12)" >&2; exit 2; }
[ $# -gt 0 ] || set -- x86_64 arm64 ppc32 ppc64 ppc64le s390x riscv64

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "  TAR     $(basename "$TARBALL") (tools/testing/selftests/vDSO and its headers)"
tar -xJf "$TARBALL" -C "$WORK" --strip-components=1 --wildcards '*/tools/testing/selftests/vDSO/*' \
	'*/tools/testing/selftests/kselftest.h' '*/tools/include/*' '*/include/uapi/*'
T="$WORK/tools/testing/selftests/vDSO"

status=0
for t in "$@"; do
	triple=$("$ROOT/.venv/bin/python" -c "from vdsogen.spec.model import load_target; print(load_target('$t').toolchain.gnu_triple or '')")
	[ -n "$triple" ] || { echo "$t: no GNU cross compiler"; status=1; continue; }
	case $t in
	x86_64) cc=gcc ;;
	*) cc=$triple-gcc ;;
	esac
	# qemu-user where the target is foreign (the harness driver's runner), nothing natively.
	run=$("$ROOT/.venv/bin/python" -c "from vdsogen.spec.model import load_target
from vdsogen.harness.driver import runner
print(' '.join(runner(load_target('$t'))))")
	"$VDSOGEN" build -q --arch="$t" --out="$WORK/$t"
	$cc -static -std=gnu99 -O2 -idirafter "$WORK/tools/include" -idirafter "$WORK/include" -Wa,--noexecstack \
		-o "$WORK/$t/chacha" "$T/vdso_test_chacha.c" "$WORK/$t/src/chacha20.S"
	line=$($run "$WORK/$t/chacha" | grep -E '^(not )?ok ' || true)
	echo "$t vdso_test_chacha (vdsogen's chacha20.S): $line"
	case $line in "ok 1 "*) ;; *) status=1 ;; esac
done

# vdso_test_getrandom, natively: the running kernel's vDSO, then vdsogen's x86_64 image.
gcc -std=gnu99 -O2 -D_GNU_SOURCE -isystem "$WORK/tools/include" -isystem "$WORK/include/uapi" \
	-o "$WORK/getrandom" "$T/vdso_test_getrandom.c" "$T/parse_vdso.c" -lpthread
echo "kernel vdso_test_getrandom: $("$WORK/getrandom" | grep -E '^(not )?ok ' | tr '\n' ' ')"
[ -d "$WORK/x86_64" ] || "$VDSOGEN" build -q --arch=x86_64 --out="$WORK/x86_64"
line=$("$VDSOGEN" run --arch=x86_64 --image "$WORK/x86_64/vdso.so" -- "$WORK/getrandom" 2>&1 |
	grep -E '^(not )?ok |Bail out' | tr '\n' ' ' || true)
echo "vdsogen x86_64 vdso_test_getrandom: $line"
case $line in "ok 1 getrandom: PASS"*) ;; *) status=1 ;; esac
exit $status
