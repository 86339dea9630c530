#!/bin/sh
# The consumers of the vDSO's getrandom that tests/test_getrandom_consumers.py
# runs through `vdsogen run`, from Debian, unpacked into a cache (nothing is
# installed, nothing of Debian's is committed):
#   - glibc 2.41, trixie's, for each getrandom target: its cross packages
#     (libc6-ARCH-cross, "all", the target's dynamic loader and libraries);
#     riscv64's 2.41 looks up no vDSO getrandom, so unstable's glibc for it;
#   - loongarch64's glibc headers and start files (libc6-dev-loong64-cross,
#     linux-libc-dev-loong64-cross): Debian 12 has no LoongArch gcc, clang
#     builds the C consumer against them;
#   - Go 1.24 (golang-1.24-go, golang-1.24-src), the first Go whose runtime
#     uses the vDSO's getrandom (on amd64, arm64, ppc64, ppc64le, s390x and
#     loong64: no Go has it on riscv64 yet); its build cache is filled once
#     with the Go consumer (scripts/e2e/getrandom-consumer.go) for each of
#     those GOARCHes, so that the tests rebuild it in a second;
#   - trixie's qemu-user (qemu 10.0, static binaries that run on Debian 12):
#     glibc 2.41's loongarch64 dies of SIGILL under the host's qemu 7.2; the
#     tests run every foreign target with it (VDSOGEN_QEMU, README.rst);
#   - the libgcc unwinders tests/test_sh4_unwind.py links (Debian 12's
#     libgcc_eh.a for sh4, built by its gcc 12, drops the tests its branches
#     read): trixie's libgcc for sh4 (libgcc-14-dev-sh4-cross, "all": gcc
#     14's libgcc.a and libgcc_eh.a, little-endian as Debian's sh4), and,
#     for sh4eb, which no Debian libgcc serves, the source the tests build
#     one from: GCC 12.2's libgcc/ and include/ (gcc-12-source, Debian
#     12's) and the sh4 cross gcc's generated headers
#     (gcc-12-plugin-dev-sh4-linux-gnu).  Unpacked apart (libgcc/), so
#     that adding them fetched nothing else again.
# and linux-perf, installed when missing: perf counts the getrandom syscalls
# of the native (x86_64) runs.
#
#   sh scripts/fetch-consumers.sh       (scripts/setup.sh runs it)
#
# The cache is $VDSOGEN_CONSUMERS (default ~/.cache/vdsogen/consumers):
#   apt/      a private apt (trixie and unstable, amd64 indexes: the packages above are amd64 or "all")
#   debs/     the downloads, removed once unpacked
#   root/     the packages unpacked: usr/TRIPLE/lib, usr/lib/go-1.24, usr/bin/qemu-*
#   libgcc/   usr/lib/gcc-cross/sh4-linux-gnu/14/ (trixie's libgcc), gcc/ (GCC 12.2's libgcc/ and
#             include/), usr/lib/gcc-cross/sh4-linux-gnu/12/plugin/include/
#   gocache/  Go's build cache
#   stamp     what root/ holds, written last: a rerun that finds it complete fetches nothing
#   gostamp   the GOARCHes gocache/ was filled for, likewise
#   libgccstamp  what libgcc/ holds, likewise
# The mirror is $VDSOGEN_DEBIAN_MIRROR, default deb.debian.org.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VDSOGEN_CONSUMERS:-$HOME/.cache/vdsogen/consumers}
MIRROR=${VDSOGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TRIXIE="libc6-amd64-cross libc6-arm64-cross libc6-powerpc-cross libc6-ppc64-cross libc6-ppc64el-cross
libc6-s390x-cross libc6-loong64-cross libc6-dev-loong64-cross linux-libc-dev-loong64-cross
golang-1.24-go golang-1.24-src qemu-user"
UNSTABLE="libc6-riscv64-cross"
GOARCHES="amd64 arm64 ppc64 ppc64le s390x loong64"
LIBGCC="libgcc-14-dev-sh4-cross"
LIBGCC_SRC="gcc-12-source gcc-12-plugin-dev-sh4-linux-gnu"
# Another list of packages (or this number) fetches again, another of GOARCHes builds again.
WANT=$(printf '1 %s / %s' "$TRIXIE" "$UNSTABLE" | tr -s ' \n' '  ')

if ! command -v perf >/dev/null; then
	echo "  SETUP   apt-get install linux-perf"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi
fetched() { [ "$(cat "$CACHE/stamp" 2>/dev/null)" = "$WANT" ]; }
built() { [ "$(cat "$CACHE/gostamp" 2>/dev/null)" = "$GOARCHES" ]; }
libgcc_fetched() { [ "$(cat "$CACHE/libgccstamp" 2>/dev/null)" = "$LIBGCC / $LIBGCC_SRC" ]; }
fetched && built && libgcc_fetched && exit 0

mkdir -p "$CACHE/debs"
# One fetch at a time: they share the cache.
exec 9>"$CACHE/.lock"
flock 9
. "$ROOT/scripts/private-apt.sh"
private_apt "$CACHE/apt" amd64 amd64
for suite in trixie unstable bookworm; do
	echo "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main"
done >"$CACHE/apt/etc/sources.list"
if ! fetched; then
	rm -f "$CACHE/stamp" "$CACHE/gostamp"
	echo "  APT     update (trixie, unstable, bookworm)"
	apt_get -qq update
	rm -f "$CACHE"/debs/*.deb
	echo "  APT     $(echo $TRIXIE) (trixie); $UNSTABLE (unstable)"
	# shellcheck disable=SC2046
	(cd "$CACHE/debs" && apt_get -qq download $(for p in $TRIXIE; do echo "$p/trixie"; done) \
		$(for p in $UNSTABLE; do echo "$p/unstable"; done))
	rm -rf "${CACHE:?}/root"
	for deb in "$CACHE"/debs/*.deb; do
		dpkg-deb -x "$deb" "$CACHE/root"
	done
	echo "  UNPACK  $(ls "$CACHE/debs" | wc -l) packages into $CACHE/root"
	rm -f "$CACHE"/debs/*.deb
	echo "$WANT" >"$CACHE/stamp"
fi
if ! libgcc_fetched; then
	rm -f "$CACHE/libgccstamp" "$CACHE"/debs/*.deb
	echo "  APT     $LIBGCC (trixie); $LIBGCC_SRC (bookworm)"
	# shellcheck disable=SC2046
	download() {
		(cd "$CACHE/debs" && apt_get -qq download "$LIBGCC/trixie" $(for p in $LIBGCC_SRC; do echo "$p/bookworm"; done))
	}
	# The indexes of an earlier fetch may lack bookworm's, or name a version the mirror no longer has.
	download 2>/dev/null || { echo "  APT     update (trixie, unstable, bookworm)"; apt_get -qq update && download; }
	rm -rf "${CACHE:?}/libgcc"
	for deb in "$CACHE"/debs/*.deb; do
		dpkg-deb -x "$deb" "$CACHE/libgcc"
	done
	# Of GCC's 80 MB source tarball, libgcc/ and include/, under gcc/
	tar -xJf "$CACHE"/libgcc/usr/src/gcc-12/gcc-12.*.tar.xz -C "$CACHE/libgcc" --transform 's,^gcc-[^/]*/,gcc/,' \
		--wildcards --no-wildcards-match-slash 'gcc-*/libgcc' 'gcc-*/include'
	rm -rf "$CACHE/libgcc/usr/src" "$CACHE/libgcc/usr/share" "$CACHE"/debs/*.deb
	echo "$LIBGCC / $LIBGCC_SRC" >"$CACHE/libgccstamp"
fi
if ! built; then
	GOROOT="$CACHE/root/usr/lib/go-1.24"
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	for arch in $GOARCHES; do
		echo "  GO      getrandom-consumer ($arch)"
		env GOROOT="$GOROOT" GOCACHE="$CACHE/gocache" GOTOOLCHAIN=local GO111MODULE=off CGO_ENABLED=0 \
			GOARCH="$arch" GOFLAGS=-trimpath "$GOROOT/bin/go" build -o "$WORK/consumer" \
			"$ROOT/scripts/e2e/getrandom-consumer.go"
	done
	echo "$GOARCHES" >"$CACHE/gostamp"
fi
