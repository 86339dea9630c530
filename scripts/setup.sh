#!/bin/sh
# One set-up for everyone: README, Makefile and CI all call this script.
# Installs the Debian packages vdsogen needs (when missing) and makes
# .venv with the project installed editable.  Scripts that need more (a
# kernel boot's qemu-system) name their packages as arguments:
#   sh scripts/setup.sh [PACKAGE...]
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKGS="python3-jinja2 python3-pyelftools python3-pytest python3-hypothesis
python3-setuptools python3-venv python3-pip python3-cryptography
clang-19 lld-19 llvm-19 qemu-user-static make zstd
gcc libc6-dev
gcc-aarch64-linux-gnu libc6-dev-arm64-cross
gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross
gcc-i686-linux-gnu libc6-dev-i386-cross
gcc-x86-64-linux-gnux32 libc6-dev-x32-cross
gcc-powerpc-linux-gnu libc6-dev-powerpc-cross
gcc-powerpc64-linux-gnu libc6-dev-ppc64-cross
gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
gcc-s390x-linux-gnu libc6-dev-s390x-cross
binutils-sh4-linux-gnu
gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
gcc-mipsel-linux-gnu libc6-dev-mipsel-cross libc6-dev-mipsn32el-cross
gcc-mips-linux-gnu libc6-dev-mips-cross libc6-dev-mipsn32-cross
gcc-mips64el-linux-gnuabi64 libc6-dev-mips64el-cross
libc6-dev-mipsn32-mips64el-cross libn32gcc-12-dev-mips64el-cross
gcc-mips64-linux-gnuabi64 libc6-dev-mips64-cross
gcc-sparc64-linux-gnu libc6-dev-sparc64-cross
gcc-hppa-linux-gnu
libc6-dev-mipsn32-mips64-cross libn32gcc-12-dev-mips64-cross
python3-pytest-xdist musl-tools golang-go strace python3-pyflakes mypy $*"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "  SETUP   apt-get install$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -x "$ROOT/.venv/bin/vdsogen" ]; then
	echo "  SETUP   .venv"
	/usr/bin/python3 -m venv --system-site-packages "$ROOT/.venv"
	"$ROOT/.venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$ROOT"
fi

# The getrandom consumers tests/test_getrandom_consumers.py runs (glibc 2.41, Go 1.24, qemu 10: from Debian, into
# a cache) and linux-perf.
sh "$ROOT/scripts/fetch-consumers.sh"
