# shellcheck shell=sh
# Sourced by the scripts that build or boot loongarch64 programs
# (kernel-e2e.sh, getrandom-selftests.sh): Debian 12 has no LoongArch gcc
# or glibc, and its qemu-system 7.2, given the kernel with -kernel and no
# firmware, prints nothing, not even earlycon (nothing hands the kernel an
# EFI system table, command line or memory map).  trixie's, through a
# private apt (scripts/private-apt.sh), unpacked into a cache, nothing
# installed: the cross glibc 2.41 and libgcc (packages "all") as clang's
# sysroot, and qemu-system-misc 10.0 with the libraries it links (its
# binaries want glibc 2.38: run them with trixie's own dynamic loader).
#
#   ROOT=...; . "$ROOT/scripts/loong64-trixie.sh"
#   loong64_trixie      # sets LOONG; fetches unless $LOONG/stamp says it is there
#
# LOONG is $VDSOGEN_LOONG64 (default ~/.cache/vdsogen/kernel-loong64):
#   cross/   the sysroot: cross/usr/loongarch64-linux-gnu/{include,lib,lib64}
#   qemu/    qemu-system-misc and its libraries: qemu/usr/bin, qemu/usr/lib/x86_64-linux-gnu
#   apt/     the private apt
#   stamp    what cross/ and qemu/ hold, written last
# The mirror is $VDSOGEN_DEBIAN_MIRROR, default deb.debian.org.

loong64_trixie() {
	LOONG=${VDSOGEN_LOONG64:-$HOME/.cache/vdsogen/kernel-loong64}
	LOONG_DEBS="libc6-loong64-cross libc6-dev-loong64-cross linux-libc-dev-loong64-cross
		libgcc-14-dev-loong64-cross libgcc-s1-loong64-cross"
	QEMU_DEBS="qemu-system-misc libc6 libgcc-s1 libatomic1 libaio1t64 libbpf1 libcapstone5 libfdt1
		libfuse3-4 libglib2.0-0t64 libgmp10 libgnutls30t64 libhogweed6t64 libibverbs1 libjpeg62-turbo
		libnettle8t64 libnuma1 libpixman-1-0 libpmem1 libpng16-16t64 librdmacm1t64 libsasl2-2
		libseccomp2 libslirp0 libudev1 liburing2 libvdeplug2t64 libzstd1 zlib1g libffi8 libmount1
		libselinux1 libpcre2-8-0 libblkid1 libp11-kit0 libidn2-0 libunistring5 libtasn1-6 libelf1t64
		libnl-3-200 libnl-route-3-200 libndctl6 libdaxctl1 libkmod2 libuuid1 libcap2 libssl3t64
		liblzma5 libcrypt1"
	# shellcheck disable=SC2086
	WANT=$(echo 1 $LOONG_DEBS / $QEMU_DEBS)
	[ "$(cat "$LOONG/stamp" 2>/dev/null)" != "$WANT" ] || return 0
	. "$ROOT/scripts/private-apt.sh"
	private_apt "$LOONG/apt" amd64 amd64
	echo "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"${VDSOGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian} trixie main" > "$LOONG/apt/etc/sources.list"
	printf '  %-7s %s\n' APT "the loong64 cross glibc and libgcc, qemu-system-misc and its libraries (trixie)" >&2
	apt_get -qq update
	rm -rf "$LOONG/debs" "$LOONG/cross" "$LOONG/qemu"
	mkdir -p "$LOONG/debs"
	# shellcheck disable=SC2086
	(cd "$LOONG/debs" && apt_get -qq download $LOONG_DEBS $QEMU_DEBS)
	for p in $LOONG_DEBS; do dpkg-deb -x "$LOONG/debs/${p}_"*.deb "$LOONG/cross"; done
	for p in $QEMU_DEBS; do dpkg-deb -x "$LOONG/debs/${p}_"*.deb "$LOONG/qemu"; done
	rm -rf "$LOONG/debs"
	echo "$WANT" > "$LOONG/stamp"
}
