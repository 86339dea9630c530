#!/bin/sh
# Build the real-image corpus of `vdsogen audit`: download Debian's kernel
# packages (bookworm, trixie, unstable; every architecture they ship a
# kernel for), QEMU's user-mode emulators and one kernel debug package, and
# carve the vDSO images out of them into a cache outside the repository.
# Nothing of Debian's is ever committed: the images are Linux's (and
# QEMU's) code.  scripts/audit-corpus.sh audits what this leaves.
#
#   scripts/fetch-real-vdso.sh [--no-dbg] [--no-qemu] [--keep-debs]
#
# The cache is $VDSOGEN_REAL_VDSO (default ~/.cache/vdsogen/real-vdso):
#   apt/        a private apt configuration and its package lists
#   debs/       downloads (removed after carving unless --keep-debs)
#   images/     SUITE/DEBARCH/NAME.so, QEMU's under qemu/SUITE/NAME.so
#   manifest.json   what each image is and where it came from
# The mirror is the one the host's apt uses ($VDSOGEN_DEBIAN_MIRROR
# overrides it).  A rerun downloads only what changed.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VDSOGEN_REAL_VDSO:-$HOME/.cache/vdsogen/real-vdso}
DBG=1
QEMU=1
KEEP=0
for arg in "$@"; do
	case $arg in
	--no-dbg) DBG=0 ;;
	--no-qemu) QEMU=0 ;;
	--keep-debs) KEEP=1 ;;
	*) echo "usage: $0 [--no-dbg] [--no-qemu] [--keep-debs]" >&2; exit 2 ;;
	esac
done

# setup.sh installs zstd too: it unpacks the payloads python cannot (Debian's
# newer kernels).  dpkg-deb and flock are in every Debian system.
sh "$ROOT/scripts/setup.sh"
PY="$ROOT/.venv/bin/python"

mirror() {
	if [ -n "${VDSOGEN_DEBIAN_MIRROR:-}" ]; then
		echo "$VDSOGEN_DEBIAN_MIRROR"
		return
	fi
	# deb822 sources first, then one-line sources: the first Debian archive URI.
	cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		sed -n -e 's/^URIs:[[:space:]]*\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]]*$/\1/p' \
		       -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]].*/\2/p' |
		head -n 1
}
MIRROR=$(mirror)
[ -n "$MIRROR" ] || { echo "$0: no Debian mirror in the host's apt sources; set VDSOGEN_DEBIAN_MIRROR" >&2; exit 2; }


ARCHES=amd64,i386,arm64,armhf,mips64el,ppc64el,riscv64,s390x,loong64
APT="$CACHE/apt"
mkdir -p "$CACHE/debs" "$CACHE/images"
# One fetch at a time: they share the cache.
exec 9>"$CACHE/.lock"
flock -n 9 || { echo "$0: another fetch is using $CACHE" >&2; exit 2; }
. "$ROOT/scripts/private-apt.sh"
private_apt "$APT" amd64 "$ARCHES"
: >"$APT/etc/sources.list"
for suite in bookworm trixie sid; do
	echo "deb [arch=$ARCHES signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main" \
		>>"$APT/etc/sources.list"
done
# The stable suites' kernels move on through the security archive; a mirror
# may have dropped a pool file its index still names, and the security
# archive keeps the earlier builds of the same kernel.
for suite in bookworm trixie; do
	echo "deb [arch=$ARCHES signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR-security $suite-security main" \
		>>"$APT/etc/sources.list"
done

echo "  APT     update ($MIRROR: bookworm trixie sid; $ARCHES)"
# A mirror without the security archive costs only the fallbacks.
apt_get -qq update || echo "  WARN    apt update failed for some suites (above); going on with the rest"

field() {	# FIELD PACKAGE:ARCH/SUITE: the first value of a control field
	apt_cache show "$2" 2>/dev/null | sed -n "s/^$1: //p" | head -n 1
}

# The package that holds a flavour's kernel image: the metapackage's
# versioned linux-image-* dependency, or the linux-binary-* package that one
# depends on (unstable splits them).
kernel_package() {	# SUITE ARCH FLAVOUR
	dep=$(field Depends "linux-image-$3:$2/$1" | tr ',' '\n' |
		sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)
	[ -n "$dep" ] || return 0
	bin=$(field Depends "$dep:$2/$1" | tr ',' '\n' | sed -n 's/^ *\(linux-binary-[0-9][^ ]*\).*/\1/p' | head -n 1)
	echo "${bin:-$dep}"
}

# Download PACKAGE:ARCH/RELEASE into debs/ (unless it was carved before) and
# carve it as SUITE's.  KIND is kernel, dbg or qemu; RELEASE is apt's suite
# (SUITE unless given: SUITE-security).  Returns 3 when the download failed.
carve() {	# SUITE ARCH PACKAGE KIND FLAVOUR [RELEASE]
	rel=${6:-$1}
	ver=$(field Version "$3:$2/$rel")
	if [ -z "$ver" ]; then
		echo "  SKIP    $3 ($rel/$2): not in the archive"
		return 0
	fi
	if grep -qxF "$1 $2 $3 $ver" "$CACHE/carved" 2>/dev/null; then
		return 0
	fi
	dir="$CACHE/debs/$1-$2-$3"
	deb=$(ls "$dir"/*.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		echo "  GET     $3 $ver ($rel/$2)"
		mkdir -p "$dir"
		(cd "$dir" && apt_get -qq download "$3:$2/$rel" >/dev/null) || true
		deb=$(ls "$dir"/*.deb 2>/dev/null | head -n 1)
		if [ -z "$deb" ]; then
			echo "  SKIP    $3 $ver ($rel/$2): the download failed"
			rmdir "$dir" 2>/dev/null || true
			return 3
		fi
	fi
	if "$PY" -m vdsogen.audit.carve --cache "$CACHE" --suite "$1" --arch "$2" --package "$3" \
		--version "$ver" --kind "$4" --flavour "$5" "$deb"; then
		echo "$1 $2 $3 $ver" >>"$CACHE/carved"
	else
		FAILED="$FAILED $1/$2/$3(carving)"
	fi
	[ "$KEEP" -eq 1 ] || rm -rf "$dir"
}

# The other builds of a flavour's kernel in SUITE and its security suite,
# newest first, as "VERSION PACKAGE RELEASE" lines: the ones to try when the
# newest cannot be downloaded.
other_kernels() {	# SUITE ARCH FLAVOUR
	for rel in "$1" "$1-security"; do
		apt_cache pkgnames linux-image-6 2>/dev/null | grep -x "linux-image-[0-9][^ ]*-$3" |
			while read -r p; do
				v=$(field Version "$p:$2/$rel")
				[ -z "$v" ] || echo "$v $p $rel"
			done
	done | sort -rV -u
}

# Every architecture each suite ships a kernel for, with its main flavour
# (two for mips64el, whose flavours differ in clocksource).  trixie and
# unstable have no i386 or mips64el kernels; loong64 is in unstable only.
KERNELS="bookworm:amd64:amd64 bookworm:i386:686-pae bookworm:arm64:arm64 bookworm:armhf:armmp
bookworm:mips64el:5kc-malta bookworm:mips64el:loongson-3 bookworm:ppc64el:powerpc64le bookworm:s390x:s390x
trixie:amd64:amd64 trixie:arm64:arm64 trixie:armhf:armmp trixie:ppc64el:powerpc64le trixie:riscv64:riscv64
trixie:s390x:s390x
sid:amd64:amd64 sid:arm64:arm64 sid:armhf:armmp sid:ppc64el:powerpc64le sid:riscv64:riscv64 sid:s390x:s390x
sid:loong64:loong64"

start=$(date +%s)
FAILED=""
for k in $KERNELS; do
	suite=${k%%:*} rest=${k#*:}
	arch=${rest%%:*} flavour=${rest#*:}
	pkg=$(kernel_package "$suite" "$arch" "$flavour")
	if [ -z "$pkg" ]; then
		echo "  SKIP    linux-image-$flavour ($suite/$arch): no kernel package"
		continue
	fi
	carve "$suite" "$arch" "$pkg" kernel "$flavour" && continue
	got=0
	for alt in $(other_kernels "$suite" "$arch" "$flavour" | tr ' ' ':'); do
		v=${alt%%:*} rest=${alt#*:}
		[ "${rest%%:*}" != "$pkg" ] || continue
		echo "  TRY     ${rest%%:*} $v instead"
		if carve "$suite" "$arch" "${rest%%:*}" kernel "$flavour" "${rest#*:}"; then
			got=1
			break
		fi
	done
	[ "$got" -eq 1 ] || FAILED="$FAILED $suite/$arch/$pkg"
done
if [ "$DBG" -eq 1 ]; then
	# The smallest debug package with unstripped 32-bit ARM vDSOs (~620 MB).
	pkg=$(kernel_package bookworm armhf armmp)
	[ -z "$pkg" ] || carve bookworm armhf "$pkg-dbg" dbg armmp || FAILED="$FAILED bookworm/armhf/$pkg-dbg"
fi
if [ "$QEMU" -eq 1 ]; then
	for suite in trixie sid; do
		carve "$suite" amd64 qemu-user qemu qemu-user || FAILED="$FAILED $suite/amd64/qemu-user"
	done
fi
"$PY" -m vdsogen.audit.carve --cache "$CACHE" --summary
[ -z "$FAILED" ] || echo "  FAILED  downloads:$FAILED (run again later)"
echo "  DONE    $(($(date +%s) - start)) s for fetch and carve; images in $CACHE/images"
