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
# inside `vdsogen run` can (the supervisor is its tracer: README).
#
# loongarch64, which has no GNU cross compiler in Debian 12: both tests built
# by clang-19 (--target=loongarch64-linux-gnu, ld.lld-19) against trixie's
# loong64 glibc 2.41 (scripts/loong64-trixie.sh fetches it), linked
# dynamically (a static link of that glibc by clang-19 and ld.lld 19
# crashes at startup: scripts/kernel-e2e.sh) and run with QEMU_LD_PREFIX
# on that sysroot, under trixie's qemu-user 10.0 from
# scripts/fetch-consumers.sh's cache ($VDSOGEN_QEMU, when unset): Debian
# 12's qemu-loongarch64 7.2 has no LSX and dies of SIGILL in glibc 2.41.
# vdso_test_getrandom runs there under `vdsogen run` too, but only its
# start can: it finds __vdso_getrandom@LINUX_5.10 in the image and queries
# its parameters (both must succeed), then maps its states with the flags
# the image asks for, MAP_DROPPABLE|MAP_ANONYMOUS, which qemu-user refuses
# (EINVAL), and stops ("Bail out! Assertion failed: state") before test 1;
# test 2 could not run either (ptrace, above).  So the script requires
# exactly that stop there, and says why.
#
# Default targets: every one whose spec exports getrandom.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sh "$ROOT/scripts/setup.sh"
VDSOGEN="$ROOT/.venv/bin/vdsogen"
TARBALL=${LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
[ -f "$TARBALL" ] || { echo "$0: $TARBALL: not found (apt-get install linux-source-6.12)" >&2; exit 2; }
[ $# -gt 0 ] || set -- x86_64 arm64 ppc32 ppc64 ppc64le s390x riscv64 loongarch64
case " $* " in
*" loongarch64 "*)
	. "$ROOT/scripts/loong64-trixie.sh"
	loong64_trixie
	LOONG_CC="clang-19 --target=loongarch64-linux-gnu --sysroot=$LOONG/cross -fuse-ld=lld --ld-path=ld.lld-19"
	LOONG_QEMU=${VDSOGEN_QEMU:-${VDSOGEN_CONSUMERS:-$HOME/.cache/vdsogen/consumers}/root/usr/bin}
	[ -x "$LOONG_QEMU/qemu-loongarch64" ] ||
		{ echo "$0: $LOONG_QEMU/qemu-loongarch64: not found (sh scripts/fetch-consumers.sh fetches trixie's)" >&2; exit 2; }
	;;
esac

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "  TAR     $(basename "$TARBALL") (tools/testing/selftests/vDSO and its headers)"
tar -xJf "$TARBALL" -C "$WORK" --strip-components=1 --wildcards '*/tools/testing/selftests/vDSO/*' \
	'*/tools/testing/selftests/kselftest.h' '*/tools/include/*' '*/include/uapi/*'
T="$WORK/tools/testing/selftests/vDSO"

status=0
for t in "$@"; do
	# qemu-user where the target is foreign (the harness driver's runner), nothing natively.
	qemu=${VDSOGEN_QEMU:-}
	case $t in
	x86_64) cc=gcc static=-static ;;
	loongarch64)
		cc=$LOONG_CC static= qemu=$LOONG_QEMU
		export QEMU_LD_PREFIX="$LOONG/cross/usr/loongarch64-linux-gnu"
		;;
	*)
		triple=$("$ROOT/.venv/bin/python" -c "from vdsogen.spec.model import load_target; print(load_target('$t').toolchain.gnu_triple or '')")
		[ -n "$triple" ] || { echo "$t: no GNU cross compiler"; status=1; continue; }
		cc=$triple-gcc static=-static
		;;
	esac
	run=$(VDSOGEN_QEMU=$qemu "$ROOT/.venv/bin/python" -c "from vdsogen.spec.model import load_target
from vdsogen.harness.driver import runner
print(' '.join(runner(load_target('$t'))))")
	"$VDSOGEN" build -q --arch="$t" --out="$WORK/$t"
	$cc $static -std=gnu99 -O2 -idirafter "$WORK/tools/include" -idirafter "$WORK/include" -Wa,--noexecstack \
		-o "$WORK/$t/chacha" "$T/vdso_test_chacha.c" "$WORK/$t/src/chacha20.S"
	line=$($run "$WORK/$t/chacha" | grep -E '^(not )?ok ' || true)
	echo "$t vdso_test_chacha (vdsogen's chacha20.S): $line"
	case $line in "ok 1 chacha: PASS") ;; *) status=1 ;; esac
	if [ "$t" = loongarch64 ]; then
		$cc -std=gnu99 -O2 -D_GNU_SOURCE -isystem "$WORK/tools/include" -isystem "$WORK/include/uapi" \
			-o "$WORK/$t/getrandom" "$T/vdso_test_getrandom.c" "$T/parse_vdso.c" -lpthread
		line=$(VDSOGEN_QEMU=$qemu "$VDSOGEN" run --arch="$t" --image "$WORK/$t/vdso.so" -- "$WORK/$t/getrandom" 2>&1 |
			grep -E '^(not )?ok |Bail out|# SKIP' | tr '\n' ' ' || true)
		echo "vdsogen $t vdso_test_getrandom: $line"
		case $line in
		"Bail out! Assertion failed: state ")
			echo "  (__vdso_getrandom@LINUX_5.10 found and its parameters queried; the states' mmap with" \
				"MAP_DROPPABLE|MAP_ANONYMOUS is refused by qemu-user (EINVAL): tests 1 and 2 cannot run)" ;;
		*) status=1 ;;
		esac
		unset QEMU_LD_PREFIX
	fi
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
