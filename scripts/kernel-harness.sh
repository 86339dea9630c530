#!/bin/sh
# The harness on a real kernel: Debian bookworm's stock linux-image (6.1;
# --suite=trixie: 6.12, --suite=sid: unstable's)
# for the ABI, booted under qemu-system (TCG) with two CPUs and an
# initramfs whose /init (scripts/e2e/harness-init.c) prints what the getcpu
# syscall says on each CPU, runs the vdsogen harness on a vdsogen-built
# image, and powers off.  What the kernel gives each CPU is what qemu-user
# cannot show: here the harness's getcpu check compares the image's answer
# with the syscall's on each CPU.
#   ppc64le  two NUMA nodes (CPU 0 on node 0, CPU 1 on node 1); the kernel
#            loads SPR 259 with node << 16 | cpu
#   s390x    no NUMA (the node is always 0); the kernel sets each CPU's TOD
#            programmable field (the last two bytes stcke stores) to its
#            number
#   s390-compat  the same s390x kernel (Debian's has COMPAT) running the
#            31-bit harness (freestanding, gcc -m31) as a compat task, on the
#            31-bit compat vDSO (arch/s390/kernel/vdso32, to Linux 6.12): its
#            trampolines as the kernel uses them, the signal frames 31-bit.
#            qemu-user runs no 31-bit s390, so this is the only place the
#            harness runs (`vdsogen test` builds it and says "not run"); no
#            getcpu.  /init stays 64-bit (no 31-bit C library)
#   arm64    no NUMA; arm64 has no vDSO getcpu, so there is no getcpu check:
#            what this shows is the image's counter read (mrs cntvct_el0)
#            on a real kernel's data page
#   arm64-compat  the same arm64 kernel running the 32-bit (AArch32 EL0)
#            harness.  qemu-user cannot read the AArch32 counter, so
#            `vdsogen test` runs the test build (its counter injected);
#            here the real build runs, with a harness built for it, and its
#            counter read (isb; mrrc cntvct) is the kernel's
#   arm      Debian's armhf (armmp) kernel on the virt board (Cortex-A15), no
#            NUMA, no vDSO getcpu; like arm64-compat, its real build runs
#            (qemu-user cannot read CNTVCT)
#   mips-n64, mips-o32, mips-n32  Debian's mips64el (5kc-malta) kernel on
#            malta with a MIPS64 R2 CPU: one CPU (the kernel's SMP needs the
#            MT ASE), no vDSO getcpu; the real builds run, their counter read
#            (rdhwr $2, the CP0 Count) the kernel's.  o32 and n32 boot the
#            n64 kernel, as arm64-compat does the arm64 one
#
#   mips on loongson3-virt (--machine=loongson3-virt): Debian's mips64el
#            loongson-3 kernel (16 KiB pages) on qemu's Loongson-3 board with
#            a Loongson-3A1000 (the one it takes under TCG), one CPU: what Debian's loongson-3 image needs
#            (its n32 and n64 code multiply with Loongson's dmultu.g, which
#            malta's CPU does not have)
#
#   sh scripts/kernel-harness.sh [--image=FILE] [--suite=SUITE] [--machine=loongson3-virt] [--dry-run] [ppc64le|s390x|s390-compat|arm64|arm64-compat|arm|mips-n64|mips-o32|mips-n32]
#
# --suite=SUITE  boots the kernel of Debian SUITE: bookworm (the default),
#            trixie or sid (where it has one for the ABI: no MIPS after
#            bookworm).  Its cache is $VDSOGEN_KERNEL_CACHE/SUITE/ABI
#            (bookworm's: $VDSOGEN_KERNEL_CACHE/ABI).
# --image=FILE  runs the harness on FILE (a real Linux image, one that
#            scripts/fetch-real-vdso.sh carved) instead of vdsogen's image,
#            as `vdsogen test --image FILE` does natively: the harness plays
#            the layout of the kernel FILE's Linux version note names (the
#            page size its code reads), and gets the environment that holds a
#            kernel's image to what its kernel's vDSO does
#            (vdsogen/harness/linux.toml), in the initramfs's /harness.env,
#            which /init passes on to /harness.
# --dry-run  builds the harness and the initramfs's tree, prints the qemu
#            command, and stops: no package, no kernel fetch, no boot.
#
# Not part of the test suite.  It runs scripts/setup.sh, then installs what
# else it needs when missing (the ABI's qemu-system-*, cpio; apt-get), downloads
# the kernel package from the Debian mirror the host's apt uses
# ($VDSOGEN_DEBIAN_MIRROR overrides it) through a private apt configuration,
# and keeps everything outside the repository, in
# $VDSOGEN_KERNEL_CACHE/ABI (default /var/tmp/vdsogen-kernel/ABI):
#   apt/          the private apt configuration and its package lists
#   vmlinux-REL   the kernel image (s390x: the vmlinuz; arm64: the vmlinuz,
#                 gunzipped), carved out of the .deb (which is not kept)
#   kernel        "PACKAGE VERSION REL" of that kernel
#   run/          the image, the harness, the initramfs, console.log
# (arm64-compat boots the arm64 kernel: it uses $VDSOGEN_KERNEL_CACHE/arm64,
# with its own run-arm64-compat/ there; mips-o32 and mips-n32 likewise use
# mips-n64's)
# A rerun reuses the kernel; the package lists are refreshed once a day
# (VDSOGEN_KERNEL_REFRESH=1: now), and a failed refresh falls back to the
# kernel already there.  BOOT_TIMEOUT (seconds, default 600) bounds the
# boot; qemu and the builds run under nice.
#
# Prints the harness's output, init's cpu/node lines and the fetch, build
# and boot times.  Exit status 0 only when the harness exited 0, its
# summary says 0 failed, "ok getcpu" is there (where the ABI's vDSO has
# getcpu) and init saw CPU 1 where the ABI puts it (ppc64le: node 1; s390x,
# arm64, arm: node 0; mips, with one CPU: CPU 0 on node 0);
# 1 with a one-line reason otherwise; 2 for a usage or set-up error.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
USAGE="usage: $0 [--image=FILE] [--suite=bookworm|trixie|sid] [--machine=loongson3-virt] [--dry-run] [ppc64le|s390x|s390-compat|arm64|arm64-compat|arm|mips-n64|mips-o32|mips-n32]"
ABI=""
IMAGE_ARG=""
SUITE=bookworm
MACHINE=""
DRY_RUN=0
for arg; do
	case $arg in
	--machine=loongson3-virt) MACHINE=${arg#--machine=} ;;
	--image=?*) IMAGE_ARG=${arg#--image=} ;;
	--suite=bookworm|--suite=trixie|--suite=sid) SUITE=${arg#--suite=} ;;
	--dry-run) DRY_RUN=1 ;;
	-*) echo "kernel-harness: $arg: unknown option" >&2; echo "$USAGE" >&2; exit 2 ;;
	*) [ -z "$ABI" ] || { echo "$USAGE" >&2; exit 2; }; ABI=$arg ;;
	esac
done
ABI=${ABI:-ppc64le}
if [ -n "$IMAGE_ARG" ]; then
	[ -f "$IMAGE_ARG" ] || { echo "kernel-harness: --image=$IMAGE_ARG: no such file" >&2; exit 2; }
	IMAGE_ARG=$(cd "$(dirname "$IMAGE_ARG")" && pwd)/$(basename "$IMAGE_ARG")
fi
VDSOGEN=$ROOT/.venv/bin/vdsogen
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}

say() { printf '  %-7s %s\n' "$1" "$2"; }
die() { echo "kernel-harness: $*" >&2; exit 2; }
fail() { echo "kernel-harness: FAIL ($*)"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { echo "$(( $1 / 1000 )).$(printf %03d $(( $1 % 1000 )))"; }

# -- the ABI: what Debian calls it, its kernel, its cross compiler, its qemu --
# Another ABI is one more entry: the same variables, and boot_args printing
# qemu's machine arguments (everything but -kernel, -initrd and -append).
# LAYOUT says what boot_args makes; CPU1 is what init must print for CPU 1
# ("init: $CPU1") for the getcpu comparison to prove anything.  GETCPU=0
# where the ABI's vDSO has no getcpu (no "ok getcpu" is then required);
# KABI, the ABI whose kernel (and cache) it boots, where not its own.
GETCPU=1
KABI=$ABI
case $ABI in
ppc64le)
	DEBARCH=ppc64el
	FLAVOUR=powerpc64le
	KIMAGE='./boot/vmlinux-*'	# where the .deb keeps the kernel
	CC=powerpc64le-linux-gnu-gcc
	QEMU=qemu-system-ppc64
	QEMU_PKG=qemu-system-ppc
	CONSOLE=hvc0
	LAYOUT="2 CPUs on 2 NUMA nodes"
	CPU1="cpu 1 node 1"
	# pseries under TCG, POWER9, one CPU per socket so each can sit on its
	# own node; the spectre capabilities TCG cannot give are declared off
	# (qemu warns otherwise); memory in 256 MiB blocks, 512 MiB per node.
	boot_args() {
		echo "-M pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off" \
			"-cpu power9 -smp 2,sockets=2,cores=1,threads=1 -m 1G" \
			"-object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M" \
			"-numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1"
	}
	;;
s390x|s390-compat)
	DEBARCH=s390x
	FLAVOUR=s390x
	KIMAGE='./boot/vmlinuz-*'	# the compressed image qemu's -kernel loads
	CC=s390x-linux-gnu-gcc	# /init: 64-bit, static; s390-compat's /harness is 31-bit, built by vdsogen
	if [ "$ABI" = s390-compat ]; then
		KABI=s390x
		GETCPU=0	# the 31-bit vDSO has no getcpu (nor any time function)
	fi
	QEMU=qemu-system-s390x
	QEMU_PKG=qemu-system-misc
	CONSOLE=ttysclp0	# the SCLP VT220 console qemu puts on -serial
	LAYOUT="2 CPUs, no NUMA"
	CPU1="cpu 1 node 0"
	# s390-ccw-virtio under TCG with TCG's fullest CPU model; s390 has no
	# NUMA for getcpu (the node is always 0).
	boot_args() {
		echo "-M s390-ccw-virtio -cpu max -smp 2 -m 1G"
	}
	;;
arm64|arm64-compat)
	DEBARCH=arm64
	FLAVOUR=arm64
	KIMAGE='./boot/vmlinuz-*'	# a gzipped Image: gunzipped below
	CC=aarch64-linux-gnu-gcc
	if [ "$ABI" = arm64-compat ]; then
		# Its harness and init are 32-bit ARM (EABI, hard-float), run at
		# AArch32 EL0 (CONFIG_COMPAT; TCG's -cpu max has AArch32 EL0).
		CC=arm-linux-gnueabihf-gcc
		KABI=arm64
	fi
	QEMU=qemu-system-aarch64
	QEMU_PKG=qemu-system-arm
	CONSOLE=ttyAMA0	# the virt board's PL011
	LAYOUT="2 CPUs, no NUMA"
	CPU1="cpu 1 node 0"
	GETCPU=0	# arm64's vDSOs (both) have no getcpu
	# virt under TCG with TCG's fullest CPU model (its generic timer is
	# what the image's cntvct_el0 read sees); no NUMA.
	boot_args() {
		echo "-M virt -cpu max -smp 2 -m 1G"
	}
	;;
arm)
	DEBARCH=armhf
	FLAVOUR=armmp
	KIMAGE='./boot/vmlinuz-*'	# a zImage (self-decompressing): booted as it is
	CC=arm-linux-gnueabihf-gcc
	QEMU=qemu-system-arm
	QEMU_PKG=qemu-system-arm
	CONSOLE=ttyAMA0	# the virt board's PL011
	LAYOUT="2 CPUs, no NUMA"
	CPU1="cpu 1 node 0"
	GETCPU=0	# arm's vDSO has no getcpu
	# virt under TCG (qemu makes the device tree: no DTB file) with a
	# Cortex-A15, whose generic timer is what the image's CNTVCT read
	# (isb; mrrc) sees; armmp is not LPAE, so 1 GiB is lowmem plus highmem.
	boot_args() {
		echo "-M virt -cpu cortex-a15 -smp 2 -m 1G"
	}
	;;
mips-n64|mips-o32|mips-n32)
	DEBARCH=mips64el
	FLAVOUR=5kc-malta
	KIMAGE='./boot/vmlinuz-*'	# an ELF (self-decompressing), which malta's -kernel loads
	case $ABI in
	mips-n64) CC=mips64el-linux-gnuabi64-gcc ;;
	mips-o32) CC=mipsel-linux-gnu-gcc; KABI=mips-n64 ;;
	mips-n32) CC="mips64el-linux-gnuabi64-gcc -mabi=n32"; KABI=mips-n64 ;;	# the n32 multilib
	esac
	QEMU=qemu-system-mips64el
	QEMU_PKG=qemu-system-mips
	CONSOLE=ttyS0	# malta's first 16550
	# One CPU: the flavour's SMP is MIPS_MT_SMP alone (no CPS), which needs
	# the MT ASE no qemu MIPS64 CPU has, and malta with -smp 2 starts every
	# CPU at the reset vector (the boot hangs before the console).  So init
	# must show the one CPU it has, not a CPU 1.
	LAYOUT="1 CPU (no SMP without MT), no NUMA"
	CPU1="cpu 0 node 0"
	GETCPU=0	# MIPS's vDSOs have no getcpu
	# malta under TCG with a MIPS64 release 2 CPU: the kernel (built for
	# MIPS64 R2) lets user space read the CP0 Count through rdhwr $2 (the
	# image's counter) on R2 and later (the 5Kc the flavour is named after
	# is R1).
	boot_args() {
		echo "-M malta -cpu MIPS64R2-generic -smp 1 -m 1G"
	}
	if [ "$MACHINE" = loongson3-virt ]; then
		# The loongson-3 flavour, in a cache of its own (KABI): qemu's
		# board builds the boot parameters for -kernel; its UART is ttyS0.
		FLAVOUR=loongson-3
		KABI=$KABI-loongson-3
		boot_args() {
			echo "-M loongson3-virt -cpu Loongson-3A1000 -smp 1 -m 1G"
		}
	fi
	;;
*)
	echo "$USAGE" >&2
	exit 2
	;;
esac
case $MACHINE:$ABI in
:*|loongson3-virt:mips-*) ;;
*) echo "kernel-harness: --machine=$MACHINE: only for the MIPS ABIs" >&2; exit 2 ;;
esac
CACHE=${VDSOGEN_KERNEL_CACHE:-/var/tmp/vdsogen-kernel}
[ "$SUITE" = bookworm ] || CACHE=$CACHE/$SUITE
CACHE=$CACHE/$KABI
if [ "$KABI" = "$ABI" ]; then RUN=$CACHE/run; else RUN=$CACHE/run-$ABI; fi

# -- packages -------------------------------------------------------------------
if [ "$DRY_RUN" -eq 1 ]; then
	sh "$ROOT/scripts/setup.sh"
else
	sh "$ROOT/scripts/setup.sh" "$QEMU_PKG" cpio gzip
fi
mkdir -p "$RUN"
exec 9>"$CACHE/.lock"
flock -n 9 || die "another run is using $CACHE"

# -- the image and the harness ----------------------------------------------------
# vdsogen's image: vdsogen test builds it and its harness (and runs them under
# qemu-user); --image: the image given.
t0=$(now_ms)
W=$RUN/work
rm -rf "$W"
if [ -z "$IMAGE_ARG" ]; then
	say TEST "vdsogen test --arch=$ABI --workdir $W (qemu-user)"
	if nice -n 10 "$VDSOGEN" test --arch="$ABI" --workdir "$W" >"$RUN/vdsogen-test.log" 2>&1; then
		say TEST "under qemu-user: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$RUN/vdsogen-test.log" | tail -n 1)"
	elif grep -q '^not run harness: ' "$RUN/vdsogen-test.log"; then
		# A booted-only target (s390-compat): the image and the harness are built, not run.
		say TEST "$(sed -n 's/^not run harness: \([^:]*\):.*/not run: \1/p' "$RUN/vdsogen-test.log")"
	else
		say TEST "under qemu-user: failed (see $RUN/vdsogen-test.log); booting anyway"
	fi
	IMAGE=$W/image/vdso.so
	[ -f "$IMAGE" ] || fail "vdsogen built no $IMAGE (see $RUN/vdsogen-test.log)"
	given=0
else
	IMAGE=$IMAGE_ARG
	: >"$RUN/vdsogen-test.log"
	given=1
fi
# The harness the kernel runs and its environment, as `vdsogen test` makes
# them natively (vdsogen/harness/driver.py).  For --image, the harness of
# the layout the image's kernel reads (layouts.choose), and the environment
# of a kernel's image.  Where qemu-user cannot read the ABI's counter
# ([harness] injected_counter), vdsogen test ran the harness of the test
# build (W/test-image), and W/image is the real build: a real kernel runs
# that, so its harness is built here for the real target (H_TEST_COUNTER 0),
# in W/real; else vdsogen test's own runs.  Its lines: "harness PATH",
# "layout LINE" (--image) and "env NAME=VALUE" for each variable.
nice -n 10 "$ROOT/.venv/bin/python" -c '
import sys
from pathlib import Path
from vdsogen.errors import VdsogenError
from vdsogen.harness import driver, layouts
from vdsogen.spec.model import load_target

abi, image, work, given = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1"
out, sys.stdout = sys.stdout, sys.stderr    # the build log goes with stderr
try:
    t = load_target(abi)
    exe = work / "harness" / "harness"
    if given:
        choice = layouts.choose(t, image) if t.datapage else None
        if choice is not None:
            t = choice.target
            print("layout", choice.line, file=out)
        if driver._is_test_build(image):
            t = t.test_build()
        exe = driver.build_harness(t, work / "real")
    elif t.harness.injected_counter:
        exe = driver.build_harness(t, work / "real")
    env = driver._harness_env(t, image, driver._aux_clocks(t, None, built=not given)) or {}
except VdsogenError as e:
    sys.exit(f"{e}")
print("harness", exe, file=out)
for name, value in env.items():
    if name.startswith("VDSOGEN_HARNESS_"):
        print(f"env {name}={value}", file=out)
' "$ABI" "$IMAGE" "$W" "$given" >"$RUN/harness.txt" 2>>"$RUN/vdsogen-test.log" ||
	fail "$(tail -n 1 "$RUN/vdsogen-test.log") (see $RUN/vdsogen-test.log)"
HARNESS=$(sed -n 's/^harness //p' "$RUN/harness.txt")
[ -f "$HARNESS" ] || fail "vdsogen built no harness (see $RUN/vdsogen-test.log)"
say CC "$HARNESS"
LAYOUT_LINE=$(sed -n 's/^layout # layout: //p' "$RUN/harness.txt")
[ -z "$LAYOUT_LINE" ] || say LAYOUT "$LAYOUT_LINE"
# The environment, in the initramfs's /harness.env, which /init adds to its
# own for /harness (the kernel's command line would do but for its length:
# malta's holds 255 bytes, the initrd's address included).
ENVS=""
while IFS= read -r line; do
	case $line in
	"env "*) ENVS="$ENVS${line#env }
"; say ENV "${line#env }" ;;
	esac
done <"$RUN/harness.txt"
APPEND="console=$CONSOLE quiet loglevel=3 panic=-1"

say CC "$RUN/init (static)"
$CC -static -O2 -Wall -Wextra -Werror "$ROOT/scripts/e2e/harness-init.c" -o "$RUN/init"

# The initramfs: /init, /harness, /vdso.so, /harness.env and, when we may make device
# nodes, /dev/console (init mounts devtmpfs and opens it there otherwise).
ROOTFS=$RUN/rootfs
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS/dev" "$ROOTFS/proc" "$ROOTFS/sys" "$ROOTFS/tmp"
cp "$RUN/init" "$ROOTFS/init"
cp "$HARNESS" "$ROOTFS/harness"
cp "$IMAGE" "$ROOTFS/vdso.so"
[ -z "$ENVS" ] || printf %s "$ENVS" >"$ROOTFS/harness.env"
[ "$(id -u)" -ne 0 ] || mknod "$ROOTFS/dev/console" c 5 1
build_ms=$(( $(now_ms) - t0 ))
if [ "$DRY_RUN" -eq 1 ]; then
	# shellcheck disable=SC2046 # boot_args is a list of words
	echo "$QEMU" $(boot_args) -nodefaults -nographic -no-reboot -monitor none -serial stdio \
		-kernel "$CACHE/vmlinux-REL" -initrd "$RUN/initramfs.cpio.gz" -append "'$APPEND'"
	echo "kernel-harness: dry run: the initramfs's tree is $ROOTFS"
	exit 0
fi

# -- the kernel: SUITE's linux-image-FLAVOUR, through a private apt --------------
# The host's Debian mirror (and its security archive, where the kernel's
# updates land first): the first such URI of its deb822 or one-line sources.
host_uri() {	# SUFFIX: debian or debian-security
	cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		sed -n -e "s/^URIs:[[:space:]]*\(http[^[:space:]]*\/$1\)\/\{0,1\}[[:space:]]*\$/\1/p" \
		       -e "s/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\(http[^[:space:]]*\/$1\)\/\{0,1\}[[:space:]].*/\2/p" |
		head -n 1
}
MIRROR=${VDSOGEN_DEBIAN_MIRROR:-$(host_uri debian)}
SECURITY=${VDSOGEN_DEBIAN_SECURITY:-$(host_uri debian-security)}
[ "$SUITE" != sid ] || SECURITY=""	# unstable has no security suite (nor updates)

APT=$CACHE/apt
. "$ROOT/scripts/private-apt.sh"
private_apt "$APT" "$DEBARCH" "$DEBARCH"

have_kernel() { [ -f "$CACHE/kernel" ] && [ -f "$CACHE/vmlinux-$(awk '{ print $3 }' "$CACHE/kernel")" ]; }

t0=$(now_ms)
refresh=${VDSOGEN_KERNEL_REFRESH:-0}
have_kernel || refresh=1
[ -n "$(find "$APT/state/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ] || refresh=1
fetched=0
if [ "$refresh" -eq 1 ]; then
	if [ -n "$MIRROR" ]; then
		{
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main"
			[ "$SUITE" = sid ] ||
				echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE-updates main"
			[ -z "$SECURITY" ] ||
				echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $SECURITY $SUITE-security main"
		} >"$APT/etc/sources.list"
		say APT "update ($MIRROR${SECURITY:+, $SECURITY}: $SUITE; $DEBARCH)"
		# A list that fails (a mirror mid-sync) is left out; the rest are used.
		apt_get -qq update >"$RUN/apt.log" 2>&1 ||
			say APT "$(grep -c '^E: Failed to fetch' "$RUN/apt.log") list(s) failed; the others are used (see $RUN/apt.log)"
	else
		say APT "no Debian mirror in the host's apt sources (set VDSOGEN_DEBIAN_MIRROR)"
	fi
	# The metapackage's candidate depends on the versioned image package.
	pkg=$(apt_cache depends "linux-image-$FLAVOUR" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-[0-9][^ ]*-$FLAVOUR\)\$/\1/p" | head -n 1)
	# Unstable splits that one: the kernel is in the linux-binary-REL it depends on.
	bin=""
	[ -z "$pkg" ] || bin=$(apt_cache depends "$pkg" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-binary-[0-9][^ ]*-$FLAVOUR\)\$/\1/p" | head -n 1)
	pkg=${bin:-$pkg}
	ver=""
	[ -z "$pkg" ] || ver=$(apt_cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	if [ -z "$pkg" ] || [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		have_kernel || die "no linux-image-$FLAVOUR package for $DEBARCH in $SUITE (see $RUN/apt.log)"
		say APT "no package list: keeping the kernel in $CACHE"
	elif ! grep -qx "$pkg $ver .*" "$CACHE/kernel" 2>/dev/null || ! have_kernel; then
		say GET "$pkg $ver ($DEBARCH)"
		debs=$CACHE/debs
		rm -rf "$debs"
		mkdir -p "$debs"
		(cd "$debs" && apt_get -qq download "$pkg=$ver" >"$RUN/download.log" 2>&1) || if [ -z "$bin" ]; then
			# A mirror may drop the pool file its index still names (trixie's
			# s390x 6.12.117 and .118): the flavour's other builds, in the
			# suite or its security suite, newest first.
			apt_cache pkgnames linux-image- 2>/dev/null | grep -x "linux-image-[0-9][^ ]*-$FLAVOUR" |
				while read -r p; do
					v=$(apt_cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
					[ -z "$v" ] || [ "$v" = "(none)" ] || [ "$p" = "$pkg" ] || echo "$v $p"
				done | sort -rV >"$RUN/other-kernels"
			while read -r v p; do
				say GET "$p $v ($DEBARCH), as $pkg $ver failed"
				if (cd "$debs" && apt_get -qq download "$p=$v" >>"$RUN/download.log" 2>&1); then
					pkg=$p ver=$v
					break
				fi
			done <"$RUN/other-kernels"
		fi
		[ -n "$(ls "$debs"/*.deb 2>/dev/null)" ] || have_kernel ||
			die "could not download $pkg $ver nor an earlier build (see $RUN/download.log)"
		deb=""
		for f in "$debs"/*.deb; do [ -f "$f" ] && deb=$f && break; done
		if [ -n "$deb" ]; then
			rel=${pkg#linux-image-}
			member=$KIMAGE
			if [ -n "$bin" ]; then	# linux-binary-REL keeps it as usr/lib/modules/REL/vmlinuz (or vmlinux)
				rel=${pkg#linux-binary-}
				member=${KIMAGE##*/}
				member="./usr/lib/modules/*/${member%-\*}"
			fi
			say UNPACK "$member from $(basename "$deb")"
			rm -rf "$debs/x"
			mkdir -p "$debs/x"
			dpkg-deb --fsys-tarfile "$deb" | (cd "$debs/x" && tar -x --wildcards "$member")
			img=$(find "$debs/x" -type f | head -n 1)
			[ -n "$img" ] || die "no kernel image in $deb"
			# A gzipped image (arm64's vmlinuz) is kept gunzipped: the raw
			# Image boots the same (qemu-system-aarch64 takes either) and
			# needs no inflating on each boot.
			if [ "$(od -An -tx1 -N2 "$img" | tr -d ' ')" = 1f8b ]; then
				gzip -dc "$img" >"$CACHE/vmlinux-$rel.tmp"
				rm -f "$img"
			else
				mv "$img" "$CACHE/vmlinux-$rel.tmp"
			fi
			mv "$CACHE/vmlinux-$rel.tmp" "$CACHE/vmlinux-$rel"
			echo "$pkg $ver $rel" >"$CACHE/kernel"
			fetched=1
		else
			say GET "download failed: keeping the kernel in $CACHE"
		fi
		rm -rf "$debs"
	fi
fi
have_kernel || die "no kernel in $CACHE"
read -r KPKG KVER KREL <"$CACHE/kernel"
VMLINUX=$CACHE/vmlinux-$KREL
# Kernels this replaced are not kept.
for f in "$CACHE"/vmlinux-*; do
	[ "$f" = "$VMLINUX" ] || rm -f "$f"
done
fetch_ms=$(( $(now_ms) - t0 ))
if [ "$fetched" -eq 1 ]; then how=downloaded; else how=cached; fi
say KERNEL "$KPKG $KVER ($how): $VMLINUX"

# -- the initramfs, and the boot under TCG -----------------------------------------
t0=$(now_ms)
(cd "$ROOTFS" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$RUN/initramfs.cpio.gz"
build_ms=$(( build_ms + $(now_ms) - t0 ))
say CPIO "$RUN/initramfs.cpio.gz ($(wc -c <"$RUN/initramfs.cpio.gz") bytes)"
say QEMU "$QEMU, $LAYOUT (timeout ${BOOT_TIMEOUT} s)"
LOG=$RUN/console.log
t0=$(now_ms)
set +e
# shellcheck disable=SC2046 # boot_args is a list of words
timeout "$BOOT_TIMEOUT" nice -n 19 "$QEMU" $(boot_args) \
	-nodefaults -nographic -no-reboot -monitor none -serial stdio \
	-kernel "$VMLINUX" -initrd "$RUN/initramfs.cpio.gz" \
	-append "$APPEND" </dev/null >"$LOG" 2>&1
status=$?
set -e
boot_ms=$(( $(now_ms) - t0 ))

# The console without the firmware's terminal escapes: the kernel's version,
# init's lines (the early console may share a line with the first) and the
# harness's.
CLEAN=$RUN/console.txt
sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' -e 's/\r//g' "$LOG" >"$CLEAN"
grep -a -o -E 'Linux version [^ ]+|init: .*|^(ok |FAIL |# ).*|^[0-9]+ passed, [0-9]+ failed.*' "$CLEAN" || true
echo
echo "kernel fetch: $(secs "$fetch_ms") s ($how); image, harness and initramfs: $(secs "$build_ms") s;" \
	"boot and harness under TCG: $(secs "$boot_ms") s"

[ "$status" -ne 124 ] || fail "the boot timed out after $BOOT_TIMEOUT s; console: $LOG"
exit_line=$(grep -a -o -E 'init: harness exit -?[0-9]+' "$CLEAN" | tail -n 1)
[ -n "$exit_line" ] || fail "the harness did not finish (qemu exit status $status); console: $LOG"
code=${exit_line##* }
[ "$code" -eq 0 ] || fail "the harness exited $code; console: $LOG"
summary=$(grep -a -E '^[0-9]+ passed, [0-9]+ failed' "$CLEAN" | tail -n 1)
[ -n "$summary" ] || fail "no summary line from the harness; console: $LOG"
echo "$summary" | grep -q ' 0 failed' || fail "the harness says: $summary"
[ "$GETCPU" -eq 0 ] || grep -a -q -x 'ok getcpu' "$CLEAN" ||
	fail "no 'ok getcpu' line: the getcpu check did not run or failed"
grep -a -q -E "init: $CPU1( |\$)" "$CLEAN" ||
	fail "init did not print '$CPU1': the getcpu comparison proves nothing"
if [ -n "$IMAGE_ARG" ]; then
	echo "kernel-harness: PASS ($IMAGE_ARG as $ABI on $KREL${LAYOUT_LINE:+, layout ${LAYOUT_LINE%%[ ,]*}}: $summary)"
else
	echo "kernel-harness: PASS ($ABI on $KREL: $summary)"
fi
