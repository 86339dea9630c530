#!/bin/sh
# Kernel end to end: Debian's linux-source-6.12 configured small for one
# family, its vDSO replaced by vdsogen's through the glue in docs/kernel/
# (docs/kernel.rst), built with the kernel's own make (which runs vdsogen),
# and booted under qemu-system (TCG) with scripts/e2e/init.c as /init.  In
# the guest: the kernel's own vDSO selftests built from the same source
# (vdso_test_abi, vdso_test_correctness, vdso_test_gettimeofday,
# vdso_test_getcpu, and vdso_test_getrandom where v6.12's vDSO has
# getrandom: x86_64, arm64, powerpc, s390x, loongarch64; dynamically linked,
# with the cross glibc in the initramfs), on x86_64 scripts/e2e/vdsotest.c,
# on riscv64 scripts/e2e/riscv-exports.c, on loongarch64
# scripts/e2e/loongarch-exports.c and on powerpc scripts/e2e/ppc-exports.c
# (every export, through glibc or, getrandom, through the symbol), and
# vdsogen's probe (runner/probe.c, glibc's clocks through the vDSO), which
# must see vdsogen's build-id and no clock syscall.  x86_64's kernel also
# runs i386 and x32 programs, so the glue builds vdsogen's vdso32 and
# vdsox32 too: its guest runs the four selftests as i386 and as x32
# programs, and scripts/e2e/compat-checks.c (each image's build-id; i386's
# signal trampolines).  arm64's kernel runs 32-bit ARM programs too
# (COMPAT, COMPAT_VDSO): the glue in vdso32 builds vdsogen's arm64-compat
# image, and its guest runs vdso_test_abi, vdso_test_correctness and
# vdso_test_gettimeofday as armhf programs, compat-checks.c (the image's
# build-id) and scripts/e2e/arm-exports.c (every export).  ppc64's kernel
# (big-endian, COMPAT) runs 32-bit programs, so the glue builds vdsogen's
# vdso32 too: its guest runs the four selftests, scripts/e2e/ppc-exports.c
# (every export, the two signal trampolines among them) and compat-checks.c's
# build-id as 32-bit programs.  Each check has 30 s
# (scripts/e2e/init.c): a broken image that hangs a check fails it.
# vdso_test_chacha tests the kernel source's vgetrandom-chacha.S against a
# C reference and never calls the booted vDSO, so it says nothing of
# vdsogen's image (scripts/getrandom-selftests.sh runs it on vdsogen's own
# chacha20.S); only loongarch64's guest runs it, as a check of the guest's
# toolchain (the one check its negative control passes).
#
#   sh scripts/kernel-e2e.sh --arch=FAMILY [--negative]
#
# FAMILY: arm64, loongarch64, ppc64 (big-endian, ELFv1), ppc64le, riscv64,
# s390x or x86_64 (the families whose v6.12 data pages vdsogen has a layout
# for).  --negative then builds the same kernel with a deliberately broken
# image (arm64, loongarch64, powerpc, riscv64, s390x: the data pages one
# page lower than the kernel maps them, arm64's compat image too; x86_64: the clock records read
# where v6.13 keeps them, in the i386 and x32 images too) and requires the
# guest checks to FAIL (ppc64le's hangs its clock reads: the 'S' of the
# systemcfg page's "SYSTEMCFG" is an odd sequence word).
#
# Not part of the test suite: it installs what it needs (linux-source-6.12,
# the family's qemu-system, the kernel's build dependencies; loongarch64's
# glibc and qemu-system from trixie, into a cache), builds in
# $VDSOGEN_KERNEL_CACHE/FAMILY (default /var/tmp/vdsogen-kernel-6.12,
# outside the repository; a second run rebuilds only what changed), and
# prints one line: family, kernel build time, boot-and-test time, checks
# passed.  Exit 0 only when every check passed, vdso_test_getrandom not
# skipped where it runs (--negative: when a check failed).  JOBS=N sets
# make's parallelism (default 2); everything heavy runs under nice -n 19.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FAMILY=
NEGATIVE=
for a in "$@"; do
	case $a in
	--arch=*) FAMILY=${a#--arch=} ;;
	--negative) NEGATIVE=1 ;;
	*) echo "usage: sh scripts/kernel-e2e.sh --arch=arm64|loongarch64|ppc64|ppc64le|riscv64|s390x|x86_64 [--negative]" >&2; exit 2 ;;
	esac
done
CACHE=${VDSOGEN_KERNEL_CACHE:-/var/tmp/vdsogen-kernel-6.12}/$FAMILY
JOBS=${JOBS:-2}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
VDSOGEN=$ROOT/.venv/bin/vdsogen
say() { printf '  %-7s %s\n' "$1" "$2" >&2; }

# -- the family: kernel ARCH, toolchain, qemu, where the glue goes --------------
# (IMAGE_DIR: vdsogen's output directory, in VDSO_DIR.)
IMAGE_DIR=vdsogen
LLVM= MUST_CONFIG= MORE_SPECS=
case $FAMILY in
x86_64)
	KARCH=x86 CROSS= TRIPLE=x86_64-linux-gnu QEMU=qemu-system-x86_64 QEMU_PKG=qemu-system-x86
	GCC_PKG="gcc gcc-i686-linux-gnu gcc-x86-64-linux-gnux32"
	LIBC_PKG="libc6-dev libc6-dev-i386-cross libc6-dev-x32-cross"
	KIMAGE=arch/x86/boot/bzImage
	QEMU_ARGS="-accel tcg -cpu max -smp 1 -m 512"
	# TCG's TSC runs at the host's; given its rate the kernel need not
	# calibrate it against the PIT, which fails on a loaded host.
	APPEND="console=ttyS0 tsc=reliable clocksource=tsc no_timer_check"
	APPEND="$APPEND tsc_early_khz=$(awk '/^cpu MHz/ { print int($4 * 1000); exit }' /proc/cpuinfo)"
	CONFIG="-e 64BIT -e SERIAL_8250 -e SERIAL_8250_CONSOLE -e X86_IOPL_IOPERM -d KERNEL_XZ -e KERNEL_GZIP"
	# i386 and x32 programs, with the 32-bit time system calls the
	# selftests compare the clocks with: the glue builds vdsogen's vdso32
	# and vdsox32 too (COMPAT_32, X86_X32_ABI).
	CONFIG="$CONFIG -e IA32_EMULATION -e X86_X32_ABI -e COMPAT_32BIT_TIME"
	MUST_CONFIG="IA32_EMULATION=y COMPAT_32=y X86_X32_ABI=y COMPAT_32BIT_TIME=y"
	VDSO_DIR=arch/x86/entry/vdso SPEC=x86_64 SELFTEST_GETRANDOM=1
	# The other specs the glue builds from, in the same directory.
	MORE_SPECS="i386 x32"
	# The kernel maps the pages where the image says (struct vdso_image), so
	# the break is inside a page: v6.13's layout reads the clock records at
	# +0 of the vvar page, where v6.12 keeps them at +128 (in all three
	# images).
	BREAK='/^layout = / { print "layout = \"linux-6.14-x86\"   # broken on purpose"; next } { print }'
	;;
arm64)
	KARCH=arm64 CROSS=aarch64-linux-gnu- TRIPLE=aarch64-linux-gnu QEMU=qemu-system-aarch64
	QEMU_PKG=qemu-system-arm GCC_PKG="gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf"
	LIBC_PKG="libc6-dev-arm64-cross libc6-dev-armhf-cross"
	KIMAGE=arch/arm64/boot/Image
	QEMU_ARGS="-M virt -cpu max -smp 1 -m 512"
	APPEND="console=ttyAMA0"
	CONFIG="-e SERIAL_AMBA_PL011 -e SERIAL_AMBA_PL011_CONSOLE"
	# 32-bit ARM programs, with the 32-bit time system calls the selftests
	# compare the clocks with: the glue builds vdsogen's compat vDSO too
	# (COMPAT_VDSO, which Kconfig offers once CROSS_COMPILE_COMPAT names
	# the compiler of arch/arm64/kernel/vdso32).
	CONFIG="$CONFIG -e COMPAT -e COMPAT_VDSO -e COMPAT_32BIT_TIME"
	MUST_CONFIG="COMPAT=y COMPAT_VDSO=y COMPAT_32BIT_TIME=y"
	export CROSS_COMPILE_COMPAT=arm-linux-gnueabihf-
	VDSO_DIR=arch/arm64/kernel/vdso SPEC=arm64 SELFTEST_GETRANDOM=1
	# The compat vDSO's spec, in the same directory.
	MORE_SPECS=arm64-compat
	# The data pages one page lower than the kernel maps them.
	BREAK='/^pages = / { print "pages = " $3 + 1 "   # broken on purpose"; next } { print }'
	;;
s390x)
	KARCH=s390 CROSS=s390x-linux-gnu- TRIPLE=s390x-linux-gnu QEMU=qemu-system-s390x
	QEMU_PKG=qemu-system-misc GCC_PKG=gcc-s390x-linux-gnu LIBC_PKG=libc6-dev-s390x-cross
	KIMAGE=arch/s390/boot/bzImage
	# The machine's serial is its SCLP VT220 console (ttysclp0).
	QEMU_ARGS="-M s390-ccw-virtio -accel tcg -cpu max -smp 1 -m 512"
	APPEND="console=ttysclp0"
	CONFIG="-e SCLP_TTY -e SCLP_VT220_TTY -e SCLP_VT220_CONSOLE -d COMPAT -d KVM -d PCI"
	VDSO_DIR=arch/s390/kernel/vdso64 SPEC=s390x
	# vdso_test_getrandom with the cache line TCG does not tell glibc
	# (scripts/e2e/cacheline.c).
	SELFTEST_GETRANDOM=1 CACHELINE=256
	# The data pages one page lower than the kernel maps them.
	BREAK='/^pages = / { print "pages = " $3 + 1 "   # broken on purpose"; next } { print }'
	;;
riscv64)
	KARCH=riscv CROSS=riscv64-linux-gnu- TRIPLE=riscv64-linux-gnu QEMU=qemu-system-riscv64
	QEMU_PKG="qemu-system-misc opensbi" GCC_PKG=gcc-riscv64-linux-gnu LIBC_PKG=libc6-dev-riscv64-cross
	KIMAGE=arch/riscv/boot/Image
	# OpenSBI (Debian's opensbi) as the M-mode firmware; it also powers off.
	QEMU_ARGS="-M virt -cpu rv64 -smp 1 -m 512 -bios /usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin"
	APPEND="console=ttyS0"
	# tinyconfig says no to what riscv would say yes to: the MMU, the FPU
	# (glibc's lp64d), compressed instructions; the PLIC and the 8250 found
	# in the device tree for the console; the ISA read from "riscv,isa" (qemu 7.2
	# has no "riscv,isa-extensions": else no F and D, and user FP traps); no
	# 32-bit compat vDSO.
	CONFIG="-e MMU -e FPU -e RISCV_ISA_C -e SIFIVE_PLIC -e SERIAL_8250 -e SERIAL_8250_CONSOLE -e SERIAL_OF_PLATFORM -e RISCV_ISA_FALLBACK -d COMPAT"
	VDSO_DIR=arch/riscv/kernel/vdso SPEC=riscv64
	# The data pages one page lower than the kernel maps them.
	BREAK='/^pages = / { print "pages = " $3 + 1 "   # broken on purpose"; next } { print }'
	;;
loongarch64)
	# No LoongArch gcc in Debian 12: the kernel with LLVM=-19 (clang-19,
	# ld.lld-19, llvm-*-19), the guest's programs with clang-19 against
	# trixie's loong64 glibc (below).
	KARCH=loongarch CROSS= LLVM=-19 TRIPLE=loongarch64-linux-gnu QEMU=qemu-system-loongarch64
	QEMU_PKG=qemu-system-misc GCC_PKG=clang-19 LIBC_PKG=lld-19
	KIMAGE=vmlinux
	# qemu 10 boots the ELF vmlinux itself (its own EFI system table, the
	# device tree); -display and -audio none: it loads no display or audio
	# module (the host's are qemu 7.2's).
	QEMU_ARGS="-M virt -cpu la464 -smp 1 -m 1024 -display none -audio none"
	# The virt machine's ns16550 at 0x1fe001e0.
	APPEND="earlycon=uart,mmio,0x1fe001e0 console=ttyS0,115200"
	# Debian's loong64 kernels' NR_CPUS (256 lines of per-CPU data fill the
	# layout's first arch page) and page size (16 KiB); the 8250 and the
	# GED's poweroff and reboot found in the device tree qemu hands over; no
	# virtual terminal and input layer: their PS/2 drivers select the i8042,
	# whose probe of the PC's ports faults on this machine.
	CONFIG="-e SMP --set-val NR_CPUS 256 -e 16KB_3LEVEL -e SERIAL_8250 -e SERIAL_8250_CONSOLE -e SERIAL_OF_PLATFORM"
	CONFIG="$CONFIG -e POWER_RESET -e POWER_RESET_SYSCON -e POWER_RESET_SYSCON_POWEROFF"
	# LSX for user code, as Debian's kernels: clang-19 emits it for
	# loongarch64 by default, and trixie's glibc uses it.
	CONFIG="$CONFIG -e CPU_HAS_LSX"
	CONFIG="$CONFIG -d VT -d INPUT -d SERIO"
	MUST_CONFIG="NR_CPUS=256 PAGE_SIZE_16KB=y POWER_RESET_SYSCON_POWEROFF=y CPU_HAS_LSX=y"
	VDSO_DIR=arch/loongarch/vdso SPEC=loongarch64
	SELFTEST_GETRANDOM=1 SELFTEST_CHACHA=1
	# The data pages one page lower than the kernel maps them.
	BREAK='/^pages = / { print "pages = " $3 + 1 "   # broken on purpose"; next } { print }'
	;;
ppc64|ppc64le)
	# pseries under TCG: a POWER9 guest with the hypervisor's console, booted
	# by SLOF through prom_init (PPC_OF_BOOT_TRAMPOLINE).
	if [ "$FAMILY" = ppc64 ]; then
		# COMPAT: 32-bit programs, with the 32-bit time system calls the
		# selftests compare the clocks with; the glue builds vdsogen's
		# vdso32 too (docs/kernel/linux-6.12/ppc32.toml), the guest's
		# 32-bit programs come from the ppc32 cross gcc and glibc.
		TRIPLE=powerpc64-linux-gnu TRIPLE32=powerpc-linux-gnu
		LIBC_PKG="libc6-dev-ppc64-cross libc6-dev-powerpc-cross"
		CONFIG="-e CPU_BIG_ENDIAN -d CPU_LITTLE_ENDIAN -e COMPAT -e COMPAT_32BIT_TIME"
		MUST_CONFIG="COMPAT=y VDSO32=y COMPAT_32BIT_TIME=y" MORE_SPECS=ppc32
	else
		# Debian's ppc64el glibc is built for POWER8: VSX in its memset.
		# No COMPAT (Kconfig's default for little-endian; Debian has no
		# 32-bit little-endian powerpc port to run): vdso64 only.
		TRIPLE=powerpc64le-linux-gnu LIBC_PKG=libc6-dev-ppc64el-cross TRIPLE32=
		CONFIG="-d CPU_BIG_ENDIAN -e CPU_LITTLE_ENDIAN -e ALTIVEC -e VSX -d COMPAT"
	fi
	KARCH=powerpc CROSS=$TRIPLE- QEMU=qemu-system-ppc64 QEMU_PKG=qemu-system-ppc GCC_PKG="gcc-$TRIPLE${TRIPLE32:+ gcc-$TRIPLE32}"
	KIMAGE=vmlinux
	QEMU_ARGS="-M pseries -cpu power9 -smp 1 -m 512"
	APPEND="console=hvc0"
	CONFIG="-e PPC64 -e PPC_BOOK3S_64 $CONFIG -e PPC_PSERIES -e PPC_OF_BOOT_TRAMPOLINE -e HVC_CONSOLE"
	VDSO_DIR=arch/powerpc/kernel/vdso SPEC=$FAMILY IMAGE_DIR=vdsogen64 SELFTEST_GETRANDOM=1
	# The data pages one page lower than the kernel maps them (vdso32's too).
	BREAK='/^pages = / { print "pages = " $3 + 1 "   # broken on purpose"; next } { print }'
	;;
*)
	echo "kernel-e2e: --arch=FAMILY: arm64, loongarch64, ppc64, ppc64le, riscv64, s390x or x86_64 (got '${FAMILY}')" >&2
	exit 2
	;;
esac

# -- packages -----------------------------------------------------------------
sh "$ROOT/scripts/setup.sh" linux-source-6.12 "$QEMU_PKG" "$GCC_PKG" "$LIBC_PKG" \
	flex bison bc libelf-dev libssl-dev cpio xz-utils >&2
# loongarch64: trixie's loong64 glibc as clang's sysroot and trixie's
# qemu-system 10.0 (Debian 12 has neither that boots), from the cache that
# scripts/loong64-trixie.sh fills.
GUEST_CC= GUEST_LIBS=
if [ "$FAMILY" = loongarch64 ]; then
	. "$ROOT/scripts/loong64-trixie.sh"
	loong64_trixie
	QLIB=$LOONG/qemu/usr/lib/x86_64-linux-gnu
	QEMU=$LOONG/qemu-system-loongarch64
	# Its modules from its own tree (none), not the host's qemu 7.2 ones.
	printf '#!/bin/sh\nQEMU_MODULE_DIR="%s" exec "%s/ld-linux-x86-64.so.2" --library-path "%s" "%s" "$@"\n' \
		"$QLIB/qemu" "$QLIB" "$QLIB" "$LOONG/qemu/usr/bin/qemu-system-loongarch64" > "$QEMU"
	chmod 755 "$QEMU"
	if "$QLIB/ld-linux-x86-64.so.2" --library-path "$QLIB" --list "$LOONG/qemu/usr/bin/qemu-system-loongarch64" |
		grep 'not found' >&2; then
		echo "kernel-e2e: qemu-system-loongarch64 lacks these libraries: add their packages to QEMU_DEBS in scripts/loong64-trixie.sh" >&2
		exit 1
	fi
	GUEST_CC="clang-19 --target=$TRIPLE --sysroot=$LOONG/cross -fuse-ld=lld"
	GUEST_LIBS=$LOONG/cross/usr/$TRIPLE/lib
fi

# -- the source tree, with the glue copied in (docs/kernel.rst) -----------------
SRC=$CACHE/linux-source-6.12
OBJ=$CACHE/build
RUN=$CACHE/run
mkdir -p "$CACHE" "$RUN"
if [ ! -f "$SRC/Makefile" ]; then
	say UNPACK /usr/src/linux-source-6.12.tar.xz
	nice -n 19 tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$CACHE"
fi
VMK=$SRC/$VDSO_DIR/Makefile
mkdir -p "$SRC/arch/$KARCH/vdsogen"
for s in $SPEC $MORE_SPECS; do
	cp "$ROOT/docs/kernel/linux-6.12/$s.toml" "$SRC/arch/$KARCH/vdsogen/$s.toml"
done
case $FAMILY in
x86_64)
	cp "$ROOT/docs/Makefile.vdsogen" "$SRC/$VDSO_DIR/Makefile.vdsogen"
	cp "$ROOT/docs/kernel/vdsogen-image-64.c" "$ROOT/docs/kernel/vdsogen-image-x32.c" \
		"$ROOT/docs/kernel/vdsogen-image-32.c" "$SRC/$VDSO_DIR/"
	# Each edit finds nothing to do once made: a tree patched before gets what it lacks.
	say PATCH "$VDSO_DIR/Makefile: the vdso-image-*.o and the rules of vdso*.so.dbg -> Makefile.vdsogen"
	sed -i -e 's|^obj-\$(CONFIG_X86_64)[[:space:]]*+= vdso-image-64.o$|include $(src)/Makefile.vdsogen|' \
		-e '/^obj-\$(CONFIG_X86_X32_ABI)[[:space:]]*+= vdso-image-x32.o$/d' \
		-e 's|^\(obj-\$(CONFIG_COMPAT_32)[[:space:]]*+= \)vdso-image-32.o |\1|' \
		-e '/^\$(obj)\/vdso\(64\|x32\|32\).so.dbg: \$(obj)\/.*lds .*FORCE$/,+1d' "$VMK"
	;;
arm64)
	cp "$ROOT/docs/kernel/arm64/Makefile.vdsogen" "$SRC/$VDSO_DIR/Makefile.vdsogen"
	if ! grep -q 'Makefile.vdsogen' "$VMK"; then
		say PATCH "$VDSO_DIR/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$VMK"
	fi
	# The compat vDSO: its own fragment in arch/arm64/kernel/vdso32.
	cp "$ROOT/docs/kernel/arm64/Makefile.vdsogen32" "$SRC/${VDSO_DIR}32/Makefile.vdsogen"
	if ! grep -q 'Makefile.vdsogen' "$SRC/${VDSO_DIR}32/Makefile"; then
		say PATCH "${VDSO_DIR}32/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$SRC/${VDSO_DIR}32/Makefile"
	fi
	;;
s390x)
	cp "$ROOT/docs/kernel/s390/Makefile.vdsogen" "$SRC/$VDSO_DIR/Makefile.vdsogen"
	if ! grep -q 'Makefile.vdsogen' "$VMK"; then
		say PATCH "$VDSO_DIR/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$VMK"
	fi
	;;
loongarch64)
	cp "$ROOT/docs/kernel/loongarch/Makefile.vdsogen" "$SRC/$VDSO_DIR/Makefile.vdsogen"
	if ! grep -q 'Makefile.vdsogen' "$VMK"; then
		say PATCH "$VDSO_DIR/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$VMK"
	fi
	;;
riscv64)
	cp "$ROOT/docs/kernel/riscv/Makefile.vdsogen" "$SRC/$VDSO_DIR/Makefile.vdsogen"
	if ! grep -q 'Makefile.vdsogen' "$VMK"; then
		say PATCH "$VDSO_DIR/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$VMK"
	fi
	;;
ppc64|ppc64le)
	cp "$ROOT/docs/kernel/powerpc/Makefile.vdsogen" "$ROOT/docs/kernel/powerpc/vdsogen-fixups.sh" "$SRC/$VDSO_DIR/"
	if ! grep -q 'Makefile.vdsogen' "$VMK"; then
		say PATCH "$VDSO_DIR/Makefile: + include Makefile.vdsogen"
		printf '\ninclude $(src)/Makefile.vdsogen\n' >> "$VMK"
	fi
	;;
esac
grep -q 'Makefile.vdsogen' "$VMK" || { echo "kernel-e2e: could not patch $VMK" >&2; exit 1; }
if [ "$FAMILY" = x86_64 ] && grep -q 'vdso64.so.dbg: \$(obj)/vdso.lds' "$VMK"; then
	echo "kernel-e2e: $VMK still links its own vdso64.so.dbg" >&2
	exit 1
fi

# -- a small configuration ---------------------------------------------------------
KMAKE="make -s -C $SRC O=$OBJ ARCH=$KARCH CROSS_COMPILE=$CROSS${LLVM:+ LLVM=$LLVM}"
mkdir -p "$OBJ"
if [ ! -f "$OBJ/.config" ]; then
	say CONFIG "tinyconfig + console, initramfs, ELF, proc/sys/devtmpfs, POSIX timers, seccomp, time namespaces, HZ=250"
	nice -n 19 $KMAKE tinyconfig >/dev/null
	# shellcheck disable=SC2086
	"$SRC/scripts/config" --file "$OBJ/.config" $CONFIG \
		-e PRINTK -e TTY -e BINFMT_ELF -e BLK_DEV_INITRD -e RD_GZIP -e PROC_FS -e SYSFS -e DEVTMPFS \
		-e MULTIUSER -e FUTEX -e EXPERT -e POSIX_TIMERS -e HIGH_RES_TIMERS -d HZ_100 -e HZ_250 \
		-e NET -e SECCOMP -e SECCOMP_FILTER -e NAMESPACES -e TIME_NS -e SHMEM -e TMPFS
	nice -n 19 $KMAKE olddefconfig >/dev/null
fi
# A tree configured before the family's options grew: set them again.
for opt in $MUST_CONFIG; do
	if ! grep -q "^CONFIG_$opt\$" "$OBJ/.config"; then
		say CONFIG "+ $CONFIG"
		# shellcheck disable=SC2086
		"$SRC/scripts/config" --file "$OBJ/.config" $CONFIG
		nice -n 19 $KMAKE olddefconfig >/dev/null
		break
	fi
done
for opt in HZ=250 SECCOMP_FILTER=y TIME_NS=y BLK_DEV_INITRD=y DEVTMPFS=y $MUST_CONFIG; do
	grep -q "^CONFIG_$opt\$" "$OBJ/.config" || { echo "kernel-e2e: CONFIG_$opt did not stick" >&2; exit 1; }
done

# -- build: vdsogen runs from the kernel's own Makefile ------------------------------
# --negative: the same spec, broken as $BREAK says.
SPECS=$SRC/arch/$KARCH/vdsogen
if [ -n "$NEGATIVE" ]; then
	SPECS=$CACHE/negative-specs
	mkdir -p "$SPECS"
	for s in $SPEC $MORE_SPECS; do
		awk "$BREAK" "$ROOT/docs/kernel/linux-6.12/$s.toml" > "$SPECS/$s.toml"
		cmp -s "$SPECS/$s.toml" "$ROOT/docs/kernel/linux-6.12/$s.toml" && { echo "kernel-e2e: nothing broken in $s.toml" >&2; exit 1; }
	done
fi
# The fragments run vdsogen when an input is newer than its outputs, not when
# make's command line names other specs: switching between the negative
# control and the real build, drop vdsogen's outputs.
if [ "$(cat "$CACHE/specs-used" 2>/dev/null)" != "$SPECS" ]; then
	rm -rf "$OBJ/$VDSO_DIR"/vdsogen*
	[ "$FAMILY" != arm64 ] || rm -rf "$OBJ/${VDSO_DIR}32/vdsogen"
	echo "$SPECS" > "$CACHE/specs-used"
fi
say MAKE "$KIMAGE with -j$JOBS in $OBJ${NEGATIVE:+ (negative control: $SPECS)}"
start=$(date +%s)
nice -n 19 $KMAKE -j"$JOBS" VDSOGEN="$VDSOGEN" VDSOGEN_SPECS="$SPECS" "$(basename "$KIMAGE")"
build_s=$(( $(date +%s) - start ))
IMAGE=$OBJ/$VDSO_DIR/$IMAGE_DIR/vdso.so
[ -f "$IMAGE" ] || { echo "kernel-e2e: $IMAGE was not built" >&2; exit 1; }
BUILD_ID=$(readelf -n "$IMAGE" | awk '/Build ID/ { print $3 }')
RELEASE=$(cat "$OBJ/include/config/kernel.release")
say BUILT "$RELEASE in ${build_s} s; vDSO build-id $BUILD_ID"

# -- the guest's programs ----------------------------------------------------------------
CC=${CROSS}gcc
[ -n "$CROSS" ] || CC=gcc
[ -z "$GUEST_CC" ] || CC=$GUEST_CC
T=$RUN/root
rm -rf "$T"
mkdir -p "$T/t" "$T/lib"
ST=$SRC/tools/testing/selftests/vDSO
for t in vdso_test_abi vdso_test_gettimeofday vdso_test_getcpu; do
	$CC -std=gnu99 -O2 -I"$ST" "$ST/parse_vdso.c" "$ST/$t.c" -o "$T/t/$t"
done
$CC -std=gnu99 -O2 -I"$ST" "$ST/vdso_test_correctness.c" -ldl -o "$T/t/vdso_test_correctness"
if [ -n "${SELFTEST_GETRANDOM:-}" ]; then
	# As its Makefile builds it, v6.12's uapi headers from the source (vgetrandom_opaque_params).
	$CC -std=gnu99 -O2 -D_GNU_SOURCE -isystem "$SRC/tools/include" -isystem "$SRC/include/uapi" -I"$ST" \
		"$ST/parse_vdso.c" "$ST/vdso_test_getrandom.c" -o "$T/t/vdso_test_getrandom"
fi
if [ -n "${CACHELINE:-}" ]; then
	$CC -shared -fPIC -O2 -Wall -Wextra -Werror -DLINE="$CACHELINE" "$ROOT/scripts/e2e/cacheline.c" \
		-o "$T/lib/e2e-cacheline.so"
	APPEND="$APPEND LD_PRELOAD=/lib/e2e-cacheline.so"
fi
if [ "$FAMILY" = x86_64 ]; then
	# x86-64's own check: build-id, offsets, no clock syscall, time namespaces, alternatives, getcpu.
	gcc -static -O2 -Wall -Wextra -Werror -I"$OBJ/$VDSO_DIR/vdsogen" -DVDSOGEN_BUILD_ID="\"$BUILD_ID\"" \
		"$ROOT/scripts/e2e/vdsotest.c" -o "$T/t/vdsogen_vdsotest"
	# The i386 and x32 images: the selftests as i386 and x32 programs,
	# dynamically linked as the x86-64 ones (vdso_test_correctness finds the
	# vDSO with dlopen) against the cross glibc in /lib32 and /libx32
	# (DT_RPATH, searched before LD_LIBRARY_PATH's /lib of x86-64's), and
	# scripts/e2e/compat-checks.c once per check (ABI-CHECK: the build-id of
	# vdsogen's image; i386's signal trampolines).
	for name in i386 x32; do
		case $name in
		i386) triple=i686-linux-gnu dir=vdsogen32 libdir=lib32 ;;
		x32) triple=x86_64-linux-gnux32 dir=vdsogenx32 libdir=libx32 ;;
		esac
		id=$(readelf -n "$OBJ/$VDSO_DIR/$dir/vdso.so" | awk '/Build ID/ { print $3 }')
		[ -n "$id" ] || { echo "kernel-e2e: no $OBJ/$VDSO_DIR/$dir/vdso.so (IA32_EMULATION, X86_X32_ABI?)" >&2; exit 1; }
		say BUILT "$name vDSO build-id $id"
		link="-Wl,-rpath,/$libdir -Wl,--disable-new-dtags"
		for t in vdso_test_abi vdso_test_gettimeofday vdso_test_getcpu; do
			$triple-gcc -std=gnu99 -O2 $link -I"$ST" "$ST/parse_vdso.c" "$ST/$t.c" -o "$T/t/$name-$t"
		done
		$triple-gcc -std=gnu99 -O2 $link -I"$ST" "$ST/vdso_test_correctness.c" -ldl -o "$T/t/$name-vdso_test_correctness"
		$triple-gcc -static -std=gnu99 -O2 -Wall -Wextra -Werror -DVDSOGEN_BUILD_ID="\"$id\"" \
			"$ROOT/scripts/e2e/compat-checks.c" -o "$T/t/$name-build-id"
		if [ "$name" = i386 ]; then
			ln "$T/t/i386-build-id" "$T/t/i386-sigreturn"
			ln "$T/t/i386-build-id" "$T/t/i386-rt-sigreturn"
		fi
		interp=$(readelf -l "$T/t/$name-vdso_test_abi" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
		mkdir -p "$T$(dirname "$interp")" "$T/$libdir"
		cp -L "/usr/$triple/lib/$(basename "$interp")" "$T$interp"
		for lib in libc.so.6 libdl.so.2; do cp -L "/usr/$triple/lib/$lib" "$T/$libdir/$lib"; done
	done
fi
if [ "$FAMILY" = arm64 ]; then
	# The compat vDSO, which vdsogen built through the glue in vdso32 and
	# vdsomunge copied byte for byte: the selftests as 32-bit ARM programs
	# (no vdso_test_getcpu: the compat vDSO has no getcpu), dynamically
	# linked as the arm64 ones (vdso_test_correctness finds the vDSO with
	# dlopen) against the armhf glibc in /lib32 (DT_RPATH, searched before
	# LD_LIBRARY_PATH's /lib of arm64's); static, scripts/e2e/compat-checks.c
	# (the build-id of vdsogen's image) and scripts/e2e/arm-exports.c (every
	# export of the image, without a clock syscall).
	D32=$OBJ/${VDSO_DIR}32
	id=$(readelf -n "$D32/vdsogen/vdso.so" | awk '/Build ID/ { print $3 }')
	[ -n "$id" ] || { echo "kernel-e2e: no $D32/vdsogen/vdso.so (COMPAT_VDSO?)" >&2; exit 1; }
	cmp "$D32/vdso32.so.dbg" "$D32/vdsogen/vdso.so.dbg" >&2 || { echo "kernel-e2e: vdso32.so.dbg is not vdsogen's" >&2; exit 1; }
	say BUILT "arm64-compat vDSO build-id $id"
	acc=arm-linux-gnueabihf-gcc link="-Wl,-rpath,/lib32 -Wl,--disable-new-dtags"
	for t in vdso_test_abi vdso_test_gettimeofday; do
		# shellcheck disable=SC2086
		$acc -std=gnu99 -O2 $link -I"$ST" "$ST/parse_vdso.c" "$ST/$t.c" -o "$T/t/arm-$t"
	done
	# shellcheck disable=SC2086
	$acc -std=gnu99 -O2 $link -I"$ST" "$ST/vdso_test_correctness.c" -ldl -o "$T/t/arm-vdso_test_correctness"
	$acc -static -std=gnu99 -O2 -Wall -Wextra -Werror -DVDSOGEN_BUILD_ID="\"$id\"" \
		"$ROOT/scripts/e2e/compat-checks.c" -o "$T/t/arm-build-id"
	# shellcheck disable=SC2016
	EXPORTS=$(readelf -W --dyn-syms "$D32/vdsogen/vdso.so" | awk '$4 == "FUNC" && $7 != "UND" { sub(/@.*/, "", $8); printf "\"%s\",", $8 }')
	$acc -static -std=gnu99 -O2 -Wall -Wextra -Werror -I"$ST" -DVDSOGEN_EXPORTS="$EXPORTS" \
		"$ST/parse_vdso.c" "$ROOT/scripts/e2e/arm-exports.c" -o "$T/t/arm-vdsogen_exports"
	interp=$(readelf -l "$T/t/arm-vdso_test_abi" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
	mkdir -p "$T$(dirname "$interp")" "$T/lib32"
	cp -L "/usr/arm-linux-gnueabihf/lib/$(basename "$interp")" "$T$interp"
	for lib in libc.so.6 libdl.so.2; do cp -L "/usr/arm-linux-gnueabihf/lib/$lib" "$T/lib32/$lib"; done
fi
if [ "$FAMILY" = riscv64 ]; then
	# Every export through glibc (hwprobe through the image's symbols), the clocks without a
	# syscall, getcpu and flush_icache from the vDSO, a signal returning through __vdso_rt_sigreturn.
	$CC -std=gnu99 -O2 -Wall -Wextra -Werror -I"$ST" "$ST/parse_vdso.c" "$ROOT/scripts/e2e/riscv-exports.c" \
		-o "$T/t/vdsogen_exports"
fi
if [ -n "${SELFTEST_CHACHA:-}" ]; then
	# As its Makefile builds it: the arch's vgetrandom-chacha.S against a reference ChaCha20.
	$CC -std=gnu99 -O2 -idirafter "$SRC/tools/include" -idirafter "$SRC/tools/include/generated" \
		-idirafter "$SRC/arch/$KARCH/include" -idirafter "$SRC/include" -Wa,--noexecstack \
		"$ST/vdso_test_chacha.c" "$ST/vgetrandom-chacha.S" -o "$T/t/vdso_test_chacha"
fi
if [ "$FAMILY" = loongarch64 ]; then
	# Every export through glibc 2.41, the clocks and getcpu without a syscall, getrandom's
	# only from the vDSO, a signal returning through __vdso_rt_sigreturn.
	$CC -std=gnu99 -O2 -Wall -Wextra -Werror -I"$ST" "$ST/parse_vdso.c" "$ROOT/scripts/e2e/loongarch-exports.c" \
		-o "$T/t/vdsogen_exports"
fi
if [ "$KARCH" = powerpc ]; then
	# Every export of vdsogen's image (its entry points and trampoline in
	# vdso-offsets.h), used through glibc.
	EXPORTS=$(sed -n 's/^#define vdso64_offset_\(__kernel_[A-Za-z0-9_]*\)	.*\/\* \(entry point\|trampoline\) \*\/$/"\1",/p' \
		"$OBJ/$VDSO_DIR/$IMAGE_DIR/vdso-offsets.h" | tr -d '\n')
	[ -n "$EXPORTS" ] || { echo "kernel-e2e: no exports in $OBJ/$VDSO_DIR/$IMAGE_DIR/vdso-offsets.h" >&2; exit 1; }
	$CC -std=gnu99 -O2 -Wall -Wextra -Werror -DVDSOGEN_EXPORTS="$EXPORTS" "$ROOT/scripts/e2e/ppc-exports.c" -ldl \
		-o "$T/t/vdsogen_exports"
fi
if [ "$FAMILY" = ppc64 ]; then
	# The compat vdso32: the four selftests and ppc-exports.c (every export
	# of vdsogen's vdso32, its two signal trampolines among them) as 32-bit
	# programs, dynamically linked as the 64-bit ones (vdso_test_correctness
	# and ppc-exports.c find the vDSO with dlopen, which a static program
	# cannot: the selftest would skip its clocks and pass) against the ppc32
	# glibc in /lib32 (DT_RPATH, searched before LD_LIBRARY_PATH's /lib of
	# ppc64's), its loader at /lib/ld.so.1; and compat-checks.c's build-id,
	# static.
	H32=$OBJ/$VDSO_DIR/vdsogen32/vdso-offsets.h
	id=$(readelf -n "$OBJ/$VDSO_DIR/vdsogen32/vdso.so" | awk '/Build ID/ { print $3 }')
	[ -n "$id" ] || { echo "kernel-e2e: no $OBJ/$VDSO_DIR/vdsogen32/vdso.so (COMPAT?)" >&2; exit 1; }
	say BUILT "ppc32 vDSO build-id $id"
	link="-Wl,-rpath,/lib32 -Wl,--disable-new-dtags"
	for t in vdso_test_abi vdso_test_gettimeofday vdso_test_getcpu; do
		$TRIPLE32-gcc -std=gnu99 -O2 $link -I"$ST" "$ST/parse_vdso.c" "$ST/$t.c" -o "$T/t/ppc32-$t"
	done
	$TRIPLE32-gcc -std=gnu99 -O2 $link -I"$ST" "$ST/vdso_test_correctness.c" -ldl -o "$T/t/ppc32-vdso_test_correctness"
	EXPORTS32=$(sed -n 's/^#define vdso32_offset_\(__kernel_[A-Za-z0-9_]*\)	.*\/\* \(entry point\|trampoline\) \*\/$/"\1",/p' "$H32" | tr -d '\n')
	[ -n "$EXPORTS32" ] || { echo "kernel-e2e: no exports in $H32" >&2; exit 1; }
	$TRIPLE32-gcc -std=gnu99 -O2 -Wall -Wextra -Werror $link -DVDSOGEN_EXPORTS="$EXPORTS32" \
		"$ROOT/scripts/e2e/ppc-exports.c" -ldl -o "$T/t/ppc32-vdsogen_exports"
	$TRIPLE32-gcc -static -std=gnu99 -O2 -Wall -Wextra -Werror -DVDSOGEN_BUILD_ID="\"$id\"" \
		"$ROOT/scripts/e2e/compat-checks.c" -o "$T/t/ppc32-build-id"
	interp=$(readelf -l "$T/t/ppc32-vdso_test_abi" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
	mkdir -p "$T$(dirname "$interp")" "$T/lib32"
	cp -L "/usr/$TRIPLE32/lib/$(basename "$interp")" "$T$interp"
	for lib in libc.so.6 libdl.so.2; do cp -L "/usr/$TRIPLE32/lib/$lib" "$T/lib32/$lib"; done
fi
# Their C library: the loader at the path the programs name, the libraries in /lib.
INTERP=$(readelf -l "$T/t/vdso_test_abi" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
SYSROOT=/usr/$TRIPLE/lib
[ -n "$CROSS" ] || SYSROOT=/lib/$TRIPLE
[ -z "$GUEST_LIBS" ] || SYSROOT=$GUEST_LIBS
mkdir -p "$T$(dirname "$INTERP")"
cp -L "$SYSROOT/$(basename "$INTERP")" "$T$INTERP"
for lib in libc.so.6 libdl.so.2 libm.so.6; do
	[ -e "$SYSROOT/$lib" ] && cp -L "$SYSROOT/$lib" "$T/lib/$lib"
done
if [ "$FAMILY" = loongarch64 ]; then
	# vdsogen's probe for loongarch64 is freestanding (no LoongArch glibc in
	# Debian 12), which counts no syscalls: the same source against trixie's
	# glibc, which calls the vDSO and takes the seccomp filter.
	$CC -std=gnu11 -O2 -Wall -Wextra -Werror "$ROOT/runner/probe.c" -o "$T/probe"
else
	"$ROOT/.venv/bin/python" -c 'import shutil, sys
from vdsogen.run import build_probe
from vdsogen.spec.model import load_target
shutil.copyfile(build_probe(load_target(sys.argv[1])), sys.argv[2])' "$SPEC" "$T/probe"
fi
chmod 755 "$T/probe"
# /init static, but on loongarch64 dynamic as the tests: a static link of
# trixie's glibc 2.41 by clang-19 and ld.lld 19 crashed at startup (seen
# under qemu-loongarch64 10.0, -O0 or -O2, -static-pie or not).
STATIC=-static
[ "$FAMILY" != loongarch64 ] || STATIC=
$CC $STATIC -O2 -Wall -Wextra -Werror -DVDSOGEN_BUILD_ID="\"$BUILD_ID\"" "$ROOT/scripts/e2e/init.c" -o "$T/init"
{
	echo "dir /dev 0755 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	(cd "$T" && find . -mindepth 1 | sort) | while read -r p; do
		p=${p#.}
		if [ -d "$T$p" ]; then echo "dir $p 0755 0 0"; else echo "file $p $T$p 0755 0 0"; fi
	done
} > "$RUN/initramfs.list"
"$OBJ/usr/gen_init_cpio" "$RUN/initramfs.list" | gzip -1 > "$RUN/initramfs.cpio.gz"

# -- boot under TCG ------------------------------------------------------------------------
say QEMU "$QEMU (timeout ${BOOT_TIMEOUT} s)"
start=$(date +%s)
set +e
# shellcheck disable=SC2086
timeout "$BOOT_TIMEOUT" nice -n 19 "$QEMU" $QEMU_ARGS -nographic -no-reboot -nic none -monitor none -serial stdio \
	-kernel "$OBJ/$KIMAGE" -initrd "$RUN/initramfs.cpio.gz" \
	-append "$APPEND panic=-1 LD_LIBRARY_PATH=/lib" > "$RUN/console.log" 2>&1 </dev/null
set -e
boot_s=$(( $(date +%s) - start ))
tr -d '\r' < "$RUN/console.log" | grep -a -E '^(ok |skip |FAIL |# |e2e:)' >&2 || true
summary=$(tr -d '\r' < "$RUN/console.log" | grep -a -o -E 'e2e: [0-9]+ passed, [0-9]+ skipped, [0-9]+ failed' || true)
passed=$(echo "$summary" | awk '{ print $2 }')
skipped=$(echo "$summary" | awk '{ print $4 }')
failed=$(echo "$summary" | awk '{ print $6 }')
printf '%-8s %s  build %4d s  boot+checks %4d s  %s/%s checks passed, %s skipped%s\n' "$FAMILY" "$RELEASE" \
	"$build_s" "$boot_s" "${passed:-0}" "$(( ${passed:-0} + ${skipped:-0} + ${failed:-0} ))" "${skipped:-0}" \
	"${NEGATIVE:+ (negative control)}"
if [ -z "$summary" ]; then
	echo "kernel-e2e: $FAMILY: no result from the guest (console: $RUN/console.log)" >&2
	exit 1
fi
# A skip of vdso_test_getrandom (no __kernel_getrandom/__vdso_getrandom in the
# image) is no pass.
if [ -z "$NEGATIVE" ] && [ -n "${SELFTEST_GETRANDOM:-}" ] &&
	! tr -d '\r' < "$RUN/console.log" | grep -a -q -x 'ok vdso_test_getrandom'; then
	echo "kernel-e2e: $FAMILY FAIL: vdso_test_getrandom did not pass (console: $RUN/console.log)"
	exit 1
fi
if [ -n "$NEGATIVE" ]; then
	[ "$failed" -gt 0 ] && { echo "kernel-e2e: $FAMILY negative control: the broken image FAILS, as it must"; exit 0; }
	echo "kernel-e2e: $FAMILY negative control: the broken image passed"; exit 1
fi
[ "$failed" -eq 0 ] && { echo "kernel-e2e: $FAMILY PASS"; exit 0; }
echo "kernel-e2e: $FAMILY FAIL (console: $RUN/console.log)"
exit 1
