#!/bin/sh
# Kernel end to end: Debian's linux-source-6.1 with its x86-64 vDSO replaced
# by one vdsogen builds for that kernel (docs/kernel.rst), booted under
# qemu-system-x86_64 (TCG) with scripts/e2e/vdsotest.c as /init.  The kernel
# runs x32 programs too (CONFIG_X86_X32_ABI): /init also runs the x32 probe
# (runner/probe.c) through runner/supervise.c with vdsogen's x32 image for
# this kernel (docs/kernel/x32.toml) in place of the kernel's x32 vDSO.
#
#   sh scripts/kernel-e2e.sh
#
# Not part of the test suite: it installs what it needs (qemu-system-x86,
# linux-source-6.1, the kernel's build dependencies), builds a small kernel
# in $VDSOGEN_KERNEL_CACHE (default /var/tmp/vdsogen-kernel, outside the
# repository; a second run rebuilds only what changed), prints the build
# and boot times and the test program's output, and exits 0 only when
# every check passed.  JOBS=N sets make's parallelism (default: the CPUs);
# everything heavy runs under nice.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VDSOGEN_KERNEL_CACHE:-/var/tmp/vdsogen-kernel}
JOBS=${JOBS:-$(nproc)}
SRC=$CACHE/linux-source-6.1
OBJ=$CACHE/build-6.1-vdsogen
RUN=$CACHE/run
VDSOGEN=$ROOT/.venv/bin/vdsogen
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}

say() { printf '  %-7s %s\n' "$1" "$2"; }

# -- packages -----------------------------------------------------------------
sh "$ROOT/scripts/setup.sh" qemu-system-x86 linux-source-6.1 flex bison bc libelf-dev cpio xz-utils \
	gcc-x86-64-linux-gnux32 libc6-dev-x32-cross

# -- the source tree, with vdsogen's integration copied in (docs/kernel.rst) ---
mkdir -p "$CACHE" "$RUN"
if [ ! -f "$SRC/Makefile" ]; then
	say UNPACK /usr/src/linux-source-6.1.tar.xz
	nice -n 19 tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$CACHE"
fi
VDSO=$SRC/arch/x86/entry/vdso
cp "$ROOT/docs/Makefile.vdsogen" "$VDSO/Makefile.vdsogen"
cp "$ROOT/docs/kernel/vdsogen-image-64.c" "$VDSO/vdsogen-image-64.c"
mkdir -p "$SRC/arch/x86/vdsogen"
cp "$ROOT/docs/kernel/x86_64.toml" "$SRC/arch/x86/vdsogen/x86_64.toml"
if ! grep -q 'Makefile.vdsogen' "$VDSO/Makefile"; then
	say PATCH arch/x86/entry/vdso/Makefile
	sed -i 's|^vdso_img-\$(VDSO64-y)[[:space:]]*+= 64$|include $(srctree)/$(src)/Makefile.vdsogen|' "$VDSO/Makefile"
	grep -q 'Makefile.vdsogen' "$VDSO/Makefile" || { echo "kernel-e2e: could not patch $VDSO/Makefile" >&2; exit 1; }
fi

# -- a small x86-64 configuration ----------------------------------------------
mkdir -p "$OBJ"
if [ ! -f "$OBJ/.config" ]; then
	say CONFIG "tinyconfig + serial console, initramfs, ELF, POSIX timers, seccomp, time namespaces, HZ=250"
	nice -n 19 make -s -C "$SRC" O="$OBJ" tinyconfig >/dev/null
	"$SRC/scripts/config" --file "$OBJ/.config" \
		-e 64BIT -e PRINTK -e EARLY_PRINTK -e TTY -e SERIAL_8250 -e SERIAL_8250_CONSOLE \
		-e BINFMT_ELF -e BLK_DEV_INITRD -e PROC_FS -e MULTIUSER -e FUTEX \
		-e EXPERT -e POSIX_TIMERS -e HIGH_RES_TIMERS -d HZ_100 -e HZ_250 \
		-e NET -e SECCOMP -e SECCOMP_FILTER -e NAMESPACES -e TIME_NS -e X86_IOPL_IOPERM \
		-d KERNEL_XZ -e KERNEL_GZIP -e X86_X32_ABI
	nice -n 19 make -s -C "$SRC" O="$OBJ" olddefconfig >/dev/null
fi
# Options added since: an existing .config gets them too (make then rebuilds
# what they change).  X86_X32_ABI runs x32 programs, for the x32 check.
if ! grep -q '^CONFIG_X86_X32_ABI=y$' "$OBJ/.config"; then
	say CONFIG "+ X86_X32_ABI (x32 programs) in the existing $OBJ/.config"
	"$SRC/scripts/config" --file "$OBJ/.config" -e X86_X32_ABI
	nice -n 19 make -s -C "$SRC" O="$OBJ" olddefconfig >/dev/null
fi
for opt in HZ=250 SECCOMP_FILTER=y TIME_NS=y SERIAL_8250_CONSOLE=y BLK_DEV_INITRD=y X86_X32_ABI=y; do
	grep -q "^CONFIG_$opt\$" "$OBJ/.config" || { echo "kernel-e2e: CONFIG_$opt did not stick" >&2; exit 1; }
done

# -- build: vdsogen runs from the kernel's own Makefile --------------------------
say MAKE "bzImage with $JOBS job(s) in $OBJ"
start=$(date +%s)
nice -n 19 make -s -C "$SRC" O="$OBJ" -j"$JOBS" VDSOGEN="$VDSOGEN" bzImage
build_s=$(( $(date +%s) - start ))
IMAGE=$OBJ/arch/x86/entry/vdso/vdsogen/vdso.so
[ -f "$IMAGE" ] || { echo "kernel-e2e: $IMAGE was not built" >&2; exit 1; }
BUILD_ID=$(readelf -n "$IMAGE" | awk '/Build ID/ { print $3 }')
say BUILT "bzImage in ${build_s} s; vDSO $IMAGE, build-id $BUILD_ID"

# -- x32: vdsogen's x32 image for this kernel, run by the supervisor -------------
# The kernel keeps its own x32 vDSO; inside it /init runs
# `/supervise --counts FILE /x32.so DATA_BYTES /probe-x32` as
# `vdsogen run --arch=x32 -- vdsogen-probe` would (vdsogen/run/__init__.py).
X32=$RUN/x32
say VDSOGEN "x32 image (docs/kernel/x32.toml) in $X32"
"$VDSOGEN" build -q --arch=x32 --specs="$ROOT/docs/kernel" --kconfig="$OBJ/.config" --out="$X32"
X32_IMAGE=$X32/vdso.so
X32_BUILD_ID=$(readelf -n "$X32_IMAGE" | awk '/Build ID/ { print $3 }')
# The data pages below the image, as `vdsogen run` passes them (the model's,
# with this kernel's configuration, as the image was built).
X32_DATA_BYTES=$("$ROOT/.venv/bin/python" -c 'import sys
from vdsogen.spec.model import load_target
d = load_target("x32", specs=sys.argv[1], kconfig=sys.argv[2]).datapage
print(d.pages * d.page_size)' "$ROOT/docs/kernel" "$OBJ/.config")
say BUILT "x32 vDSO $X32_IMAGE, build-id $X32_BUILD_ID, $X32_DATA_BYTES bytes of data pages"
say CC "$RUN/supervise (static), $RUN/probe-x32 (vdsogen run's x32 probe)"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -static "$ROOT/runner/supervise.c" -o "$RUN/supervise"
"$ROOT/.venv/bin/python" -c 'import shutil, sys
from vdsogen.run import build_probe
from vdsogen.spec.model import load_target
shutil.copyfile(build_probe(load_target("x32")), sys.argv[1])' "$RUN/probe-x32"

# -- the initramfs: the test program as /init ------------------------------------
say CC "$RUN/vdsotest (static)"
gcc -static -O2 -Wall -Wextra -Werror -I"$OBJ/arch/x86/entry/vdso/vdsogen" \
	-DVDSOGEN_BUILD_ID="\"$BUILD_ID\"" -DVDSOGEN_X32_BUILD_ID="\"$X32_BUILD_ID\"" \
	-DVDSOGEN_X32_DATA_BYTES="$X32_DATA_BYTES" "$ROOT/scripts/e2e/vdsotest.c" -o "$RUN/vdsotest"
cat > "$RUN/initramfs.list" <<EOF
dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
dir /proc 0755 0 0
dir /tmp 1777 0 0
file /init $RUN/vdsotest 0755 0 0
file /supervise $RUN/supervise 0755 0 0
file /probe-x32 $RUN/probe-x32 0755 0 0
file /x32.so $X32_IMAGE 0644 0 0
EOF
"$OBJ/usr/gen_init_cpio" "$RUN/initramfs.list" > "$RUN/initramfs.cpio"

# -- boot under TCG ----------------------------------------------------------------
# random.trust_cpu=on: the CRNG is ready at once (TCG's -cpu max has RDRAND),
# so glibc's startup in the x32 probe makes no clock syscall of its own.
say QEMU "qemu-system-x86_64 -accel tcg (timeout ${BOOT_TIMEOUT} s)"
start=$(date +%s%N)
set +e
timeout "$BOOT_TIMEOUT" nice -n 19 qemu-system-x86_64 -accel tcg -cpu max -smp 1 -m 256 \
	-nographic -no-reboot -monitor none -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-kernel "$OBJ/arch/x86/boot/bzImage" -initrd "$RUN/initramfs.cpio" \
	-append "console=ttyS0 tsc=reliable clocksource=tsc no_timer_check random.trust_cpu=on panic=-1" > "$RUN/console.log" 2>&1
status=$?
set -e
boot_ms=$(( ($(date +%s%N) - start) / 1000000 ))
# The serial console, without the firmware's terminal escapes: the kernel's
# version and clocksource, then every line of the test program.
sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' -e 's/\r//g' "$RUN/console.log" |
	grep -a -o -E 'Linux version [^ ]+|clocksource: Switched.*|Run /init.*|^(ok |FAIL |# |vdsotest:).*' || true
echo
echo "kernel build: ${build_s} s (make -j$JOBS, nice 19); boot and test under TCG: $((boot_ms / 1000)).$(printf %03d $((boot_ms % 1000))) s"
# isa-debug-exit: status (value << 1) | 1, value 0 = every check passed.
if [ "$status" -eq 1 ]; then
	echo "kernel-e2e: PASS"
	exit 0
fi
echo "kernel-e2e: FAIL (qemu exit status $status; console: $RUN/console.log)"
exit 1
