"""What each target's images must show, in one table per kind of test:
clean under `check` and `audit` with each toolchain, every harness check
passing, and the harness able to fail (a breakage of the rendered sources
draws the FAIL that names it).

A new target adds its rows here; its own test file keeps what only it has
(identity bytes, its CFI read by an independent decoder, its spec errors).
The generic checks of every target (test_harness.py: every check passes on
the default build, the core's breakages) stay parametrised over TARGETS.
"""

import pytest

from conftest import build_broken, expected_checks, harness_target, run_broken
from vdsogen.audit.check import check_image
from vdsogen.audit.run import audit_path
from vdsogen.spec.model import load_target


def toolchain_env(name, kind):
    """The environment that selects a toolchain: clang is every target's default here."""
    return {"gnu": {"CROSS_COMPILE": f"{load_target(name).toolchain.gnu_triple}-"}, "llvm": {}}[kind]


# (target, toolchain) -> the warnings `check` may report on its vdso.so and
# vdso.so.dbg (an error never).
CHECK_CLEAN = {
    # Linux's identity, no float-ABI bits, no undefined personality routine.
    ("arm", "llvm"): set(), ("arm", "gnu"): set(),
    ("arm64-compat", "llvm"): set(), ("arm64-compat", "gnu"): set(),
    # The time entries (the core inlined three times with 32-bit arithmetic)
    # spread over two pages (S006).
    ("i386", "llvm"): {"S006"}, ("i386", "gnu"): {"S006"},
    # GNU ld leaves an empty DT_RELA on RISC-V (D007), as in Linux's own riscv64 images.
    ("riscv64", "llvm"): set(), ("riscv64", "gnu"): {"D007"},
    # The C bodies come first in .text and push the last entry wrappers onto
    # the second page (S006), gcc's and, since the aux clocks' cold path,
    # clang's: only Go's profiler page check cares.
    ("s390x", "llvm"): {"S006"}, ("s390x", "gnu"): {"S006"},
    # GNU ld gives every sparc64 shared object an empty DT_RELA (D007): Linux's images too.
    ("sparc64", "gnu"): {"D007"}, ("sparc32-compat", "gnu"): {"D007"},
    # No time data, GNU only (LLVM has no SuperH backend).
    ("sh4", "gnu"): set(), ("sh4eb", "gnu"): set(),
}

# (target, toolchain) -> the ABIs audit may detect in vdso.so and vdso.so.dbg, in which every
# consumer (glibc, musl, Go, the DT_HASH-only parser) must find what it looks for.
AUDIT_CLEAN = {
    # Without trampolines nothing tells arm's image from arm64-compat's.
    ("arm", "llvm"): {"arm", "arm64-compat"}, ("arm", "gnu"): {"arm", "arm64-compat"},
    ("arm64-compat", "llvm"): {"arm", "arm64-compat"}, ("arm64-compat", "gnu"): {"arm", "arm64-compat"},
    ("i386", "llvm"): {"i386"}, ("i386", "gnu"): {"i386"},
    ("riscv64", "llvm"): {"riscv64"}, ("riscv64", "gnu"): {"riscv64"},
    # The DT_HASH-only parser reads s390x's 8-byte words.
    ("s390x", "llvm"): {"s390x"}, ("s390x", "gnu"): {"s390x"},
    ("sh4", "gnu"): {"sh4"}, ("sh4eb", "gnu"): {"sh4eb"},
}
# Targets whose ABI no consumer calls into: glibc, musl, Go and the DT_HASH parser make no vDSO
# call on SuperH (signals return through sa_restorer), so each says n/a rather than works.
NO_CONSUMER = {"sh4", "sh4eb"}

# (target, toolchain) whose harness runs the real image -> checks it must report beyond
# expected_checks (conftest), named here so that a spec that stops declaring them fails.
KERNEL_SIGRETURNS = {f"{c}.{t}" for t in ("__kernel_sigreturn", "__kernel_rt_sigreturn") for c in ("unwind", "sigreturn")}
RISCV64 = {"unwind.__vdso_rt_sigreturn", "sigreturn.__vdso_rt_sigreturn", "riscv_hwprobe", "flush_icache", "getcpu"}
S390X = KERNEL_SIGRETURNS | {"tod_steering", "restart_syscall", "trampoline.__kernel_restart_syscall"}
# sh4: no unwind checks (Debian 12's libgcc cannot unwind: tests/test_sh4_unwind.py unwinds without it);
# vsyscall's, its arguments in r4-r7.
SH4 = {"vsyscall.getpid", "vsyscall.error", "vsyscall.four_arguments", "trampoline.__kernel_sigreturn",
       "trampoline.__kernel_rt_sigreturn"}
HARNESS_CLEAN = {
    ("i386", "llvm"): KERNEL_SIGRETURNS, ("i386", "gnu"): KERNEL_SIGRETURNS,
    ("riscv64", "llvm"): RISCV64, ("riscv64", "gnu"): RISCV64,
    ("s390x", "llvm"): S390X, ("s390x", "gnu"): S390X,
    ("sh4", "gnu"): SH4, ("sh4eb", "gnu"): SH4,
}


@pytest.fixture
def image(built_with):
    """image(name, toolchain) -> (target, vdso.so, vdso.so.dbg), built once per session."""
    return lambda name, kind: built_with(name, toolchain_env(name, kind))


@pytest.mark.parametrize("name,kind", sorted(CHECK_CLEAN))
def test_check_is_clean(name, kind, image):
    target, so, dbg = image(name, kind)
    for path in (so, dbg):
        findings = check_image(target, path)
        assert not [f for f in findings if f.severity == "error"], findings
        assert {f.rule for f in findings} <= CHECK_CLEAN[name, kind], findings


@pytest.mark.parametrize("name,kind", sorted(AUDIT_CLEAN))
def test_audit_finds_no_error(name, kind, image):
    _, so, dbg = image(name, kind)
    for path in (so, dbg):
        report = audit_path(str(path))
        assert report.detection.abi.name in AUDIT_CLEAN[name, kind], report.detection
        assert not [f for f in report.findings if f.severity == "error"], report.findings
        verdict = "n/a" if name in NO_CONSUMER else "works"
        assert report.consumers and all(v.verdict == verdict for v in report.consumers), report.consumers


@pytest.mark.parametrize("name,kind", sorted(HARNESS_CLEAN))
def test_every_harness_check_passes(name, kind, image, harnesses):
    target, so, _ = image(name, kind)
    status, outcome, output = run_broken(target, harnesses(name), so)
    assert not outcome.failed, output
    assert status == 0, output
    missing = [c for c in expected_checks(target) if c not in outcome.passed]
    assert not missing, f"checks not reported: {missing}\n{output}"
    missing = sorted(HARNESS_CLEAN[name, kind] - set(outcome.passed))
    assert not missing, f"checks not reported: {missing}\n{output}"


# --- the harness can fail ----------------------------------------------------

def breakage(edits, fails, passes=(), only=None):
    """edits: {rendered file: [(old, new)]}, each old present; fails: {check: words its FAIL line
    must hold}; passes: checks that must still pass; only: prefixes of the checks among which
    the failures must be exactly those of fails ("" for every check)."""
    return {"edits": edits, "fails": fails, "passes": passes, "only": only}


RISCV_TRAMPOLINE = "unwind.__vdso_rt_sigreturn"
S390_TOD = "return vdso_read_tod() - (uint64_t)vdso_tod_data()->tod_delta;"

BREAKAGES = {
    # i386's trampolines: each breakage of the CFI fails its unwind check and no other
    # unwind or sigreturn check; the time64 clocks still pass.
    ("i386", "cfa-offset"): breakage(  # the CFA read from sc.esp + 4 (sc.ebx) instead of sc.esp
        {"rt_sigreturn.S": [("0x0f, 4, 0x74, 0xbc, 0x01, 0x06", "0x0f, 4, 0x74, 0xc0, 0x01, 0x06")]},
        {"unwind.__kernel_rt_sigreturn": "CFA is"}, ["clock_gettime64.REALTIME"], ("unwind.", "sigreturn.")),
    ("i386", "first-row"): breakage(  # the first row (the one unwinders use at the symbol) as if the popl had run
        {"sigreturn.S": [("0x0f, 3, 0x74, 0x20, 0x06", "0x0f, 3, 0x74, 0x1c, 0x06")]},
        {"unwind.__kernel_sigreturn": "CFA is"}, ["clock_gettime64.REALTIME"], ("unwind.", "sigreturn.")),
    ("i386", "eip"): breakage(  # eip taken from sc.cs
        {"sigreturn.S": [("0x10, 8, 2, 0x74, 0x3c", "0x10, 8, 2, 0x74, 0x40")]},
        {"unwind.__kernel_sigreturn": "not to the interrupted function"}, ["clock_gettime64.REALTIME"],
        ("unwind.", "sigreturn.")),
    ("i386", "register"): breakage(  # ebx taken from sc.edx: the rt check compares every register
        {"rt_sigreturn.S": [("0x10, 3, 3, 0x74, 0xc0, 0x01", "0x10, 3, 3, 0x74, 0xc4, 0x01")]},
        {"unwind.__kernel_rt_sigreturn": "DWARF register 3 unwinds to"}, ["clock_gettime64.REALTIME"],
        ("unwind.", "sigreturn.")),
    ("i386", "no-signal-frame"): breakage(  # no 'S': the interrupted pc taken for a return address
        {"sigreturn.S": [("\t.cfi_signal_frame\n", "")]},
        {"unwind.__kernel_sigreturn": "no signal frame"}, ["clock_gettime64.REALTIME"], ("unwind.", "sigreturn.")),
    # A trampoline that makes the wrong syscall does not return to the
    # interrupted code: it runs on past its end (into a ud2 here, not into
    # whatever the layout puts there), and the first check through it fails.
    ("i386", "sigreturn-nr"): breakage(
        {"rt_sigreturn.S": [("movl\t$173, %eax", "movl\t$20, %eax"), ("int\t$0x80\n", "int\t$0x80\n\tud2\n")]},
        {"trampoline.__kernel_rt_sigreturn": "", "unwind.__kernel_rt_sigreturn": "killed by signal 4"}),
    # A __kernel_vsyscall that changes a register other than eax.
    ("i386", "vsyscall-clobbers-esi"): breakage(
        {"impl-vsyscall.S": [("\tint\t$0x80\n", "\tint\t$0x80\n\tmovl\t$0x1234, %esi\n")]},
        {c: "esi was" for c in ("vsyscall.getpid", "vsyscall.error", "vsyscall.six_arguments")}),
    # A clock_gettime64 that goes through the native timespec fails past 2038.
    ("i386", "time64-truncates"): breakage(
        {"vdso_core.h": [("\tif (likely(r == VDSO_OK))\n\t\treturn 0;",
                          "\tif (likely(r == VDSO_OK)) {\n\t\tts->tv_sec = (long)ts->tv_sec;\n\t\treturn 0;\n\t}")]},
        {"y2038.clock_gettime64.REALTIME": ""}, ["clock_gettime64.REALTIME"]),

    # riscv64: the trampoline's CFI, __vdso_riscv_hwprobe and flush_icache.
    ("riscv64", "cfa"): breakage(  # the CFA read from sc.a0's neighbour, not sc.sp
        {"rt_sigreturn.S": [("0x0f, 4, 0x72, 0xc0, 0x02, 0x06", "0x0f, 4, 0x72, 0xc8, 0x02, 0x06")]},
        {RISCV_TRAMPOLINE: "CFA is"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "pc"): breakage(  # the pc taken from sc.sp
        {"rt_sigreturn.S": [("0x10, 64, 3, 0x72, 0xb0, 0x02", "0x10, 64, 3, 0x72, 0xc0, 0x02")]},
        {RISCV_TRAMPOLINE: "not to the interrupted function"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "register"): breakage(  # s0 taken from the pc's slot: every register is compared
        {"rt_sigreturn.S": [("0x10, 8, 3, 0x72, 0xf0, 0x02", "0x10, 8, 3, 0x72, 0xb0, 0x02")]},
        {RISCV_TRAMPOLINE: "DWARF register 8 unwinds to"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "no-signal-frame"): breakage(
        {"rt_sigreturn.S": [("\t.cfi_signal_frame\n", "")]},
        {RISCV_TRAMPOLINE: "no signal frame"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "hwprobe-key-bound"): breakage(  # a key past the page's last answered from beyond the array
        {"impl-riscv_hwprobe.S": [("li\tt3, 13", "li\tt3, 14")]},
        {"riscv_hwprobe": "unknown key 14"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "hwprobe-ready"): breakage(  # the page answers before the kernel marked it ready
        {"impl-riscv_hwprobe.S": [("(t0)\t\t/* ready */\n\tbeqz\tt1, 4f", "(t0)\t\t/* ready */")]},
        {"riscv_hwprobe": "page not ready"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "hwprobe-homogeneous"): breakage(  # a CPU set answered from the page though the CPUs differ
        {"impl-riscv_hwprobe.S": [("/* homogeneous_cpus */\n\tbeqz\tt1, 4f", "/* homogeneous_cpus */")]},
        {"riscv_hwprobe": "CPUs that differ"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "hwprobe-flags"): breakage(  # a flag answered from the page
        {"impl-riscv_hwprobe.S": [("bnez\ta4, 4f", "nop")]},
        {"riscv_hwprobe": "flags 2"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "hwprobe-which-bitmask"): breakage(  # WHICH_CPUS: a bitmask key's value compared whole
        {"impl-riscv_hwprobe.S": [("and\tt2, t2, t6", "nop")]},
        {"riscv_hwprobe": "WHICH_CPUS, a bitmask's bits"}, ["clock_gettime.MONOTONIC"]),
    ("riscv64", "flush_icache-nr"): breakage(  # flush_icache makes the wrong syscall
        {"impl-flush_icache.S": [("li\ta7, 259", "li\ta7, 258")]},
        {"flush_icache": "returned"}, ["clock_gettime.MONOTONIC"]),

    # s390x: the TOD clock less tod_delta, the restart trampoline, getcpu's field, the trampolines' CFI.
    ("s390x", "tod-delta-ignored"): breakage(  # the TOD clock as it is, as before v6.17 without steering
        {"vdso_arch.h": [(S390_TOD, "return vdso_read_tod();")]},
        {"tod_steering": "boot a day ago: MONOTONIC read"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "tod-delta-sign"): breakage(  # the boot's TOD clock added, not subtracted
        {"vdso_arch.h": [(S390_TOD, "return vdso_read_tod() + (uint64_t)vdso_tod_data()->tod_delta;")]},
        {"tod_steering": "the TOD clock less tod_delta says"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "restart-nr"): breakage(  # the restart trampoline makes getpid instead
        {"restart_syscall.S": [("svc\t7\t", "svc\t20\t")]},
        {"restart_syscall": "r2 is"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "restart-no-trap"): breakage(  # ... or runs on past its svc
        {"restart_syscall.S": [("\t.short\t0\n", "\tbcr\t0, %r7\n")]},
        {"restart_syscall": "not at the word after the svc"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "getcpu-field"): breakage(  # the clock's own bits (bytes 8-9), not the programmable field
        {"vdso_arch.h": [("*cpu = (unsigned int)clk[14] << 8 | clk[15];", "*cpu = (unsigned int)clk[8] << 8 | clk[9];")]},
        {"getcpu": "the syscall says"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "cfa"): breakage(  # the rt frame's r15 taken from its r14 slot
        {"rt_sigreturn.S": [("0x0f, 7, 0x7f, 0xd8, 0x03", "0x0f, 7, 0x7f, 0xd0, 0x03")]},
        {"unwind.__kernel_rt_sigreturn": "CFA is"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "pc"): breakage(  # the plain frame's pc taken from psw.mask
        {"sigreturn.S": [("0x10, 32, 3, 0x7f, 0xb8, 0x01", "0x10, 32, 3, 0x7f, 0xb0, 0x01")]},
        {"unwind.__kernel_sigreturn": "the unwinder faulted"}, ["clock_gettime.MONOTONIC_COARSE"]),
    ("s390x", "register"): breakage(  # r6 taken from r7's slot in the rt frame
        {"rt_sigreturn.S": [("0x10, 6, 3, 0x7f, 0x90, 0x03", "0x10, 6, 3, 0x7f, 0x98, 0x03")]},
        {"unwind.__kernel_rt_sigreturn": "DWARF register 6 unwinds to"}, ["clock_gettime.MONOTONIC_COARSE"]),

    # x32: edits of the image (the harness keeps the spec's numbers), caught by the SIGSYS traps.
    ("x32", "wrong-number"): breakage(  # the fallback makes another syscall than the spec's clock_gettime
        {"vdso_arch.h": [("#define VDSO_NR_clock_gettime\t228", "#define VDSO_NR_clock_gettime\t229")]},
        {"trap.clock_gettime": ""}, ["trap.none"]),
    # The clock id reaches the kernel cut to a byte: -1 becomes 255, which
    # the kernel refuses with the same EINVAL, so only the trap sees it.
    ("x32", "cut-argument"): breakage(
        {"vdso_core.h": [("return vdso_syscall(VDSO_NR_clock_gettime, clock, (long)ts, 0);",
                          "return vdso_syscall(VDSO_NR_clock_gettime, clock & 0xff, (long)ts, 0);")]},
        {"trap.clock_gettime.invalid": ""}, ["trap.none"]),

    # loongarch64: a getcpu that reads the next CPU's line of the arch page fails getcpu, and only it.
    ("loongarch64", "getcpu-wrong-line"): breakage(
        {"vdso_arch.h": [("->pdata[(unsigned int)id].node", "->pdata[(unsigned int)id + 1].node")]},
        {"getcpu": ""}, only=("",)),

    # sh4: a __kernel_vsyscall that changes an argument register, a trampoline with the wrong syscall.
    ("sh4", "vsyscall-clobbers-r5"): breakage(
        {"impl-vsyscall.S": [("\tnop\n\trts\n", "\tmov\t#1, r5\n\trts\n")]},
        {c: "r5 was" for c in ("vsyscall.getpid", "vsyscall.error", "vsyscall.four_arguments")}, only=("vsyscall.",)),
    ("sh4", "sigreturn-nr"): breakage(
        {"rt_sigreturn.S": [("1:\t.short\t173\t", "1:\t.short\t20\t")]},
        {"trampoline.__kernel_rt_sigreturn": ""}, ["trampoline.__kernel_sigreturn", "vsyscall.getpid"], ("",)),

    # powerpc: a trampoline's CFI, which the harness's unwinder steps through.
    ("ppc32", "cfa-from-r2"): breakage(  # the CFA read from the r2 slot instead of the saved r1
        {"sigtramp_rt32.S": [("\t.byte\t0x23\t\t\t/* DW_OP_plus_uconst: gpr[1] */\n\t.uleb128 4",
                              "\t.byte\t0x23\t\t\t/* DW_OP_plus_uconst: gpr[1] */\n\t.uleb128 8")]},
        {"unwind.__kernel_sigtramp_rt32": ""}),
    ("ppc64le", "nip-from-lr"): breakage(  # the interrupted pc taken from the LR slot
        {"sigtramp_rt64.S": [("#define PT_NIP\t\t32", "#define PT_NIP\t\t36")]},
        {"unwind.__kernel_sigtramp_rt64": ""}),
    # ppc64's getcpu from USPRG3, which the generic getcpu check cannot see
    # under qemu-user (USPRG3 reads 0 there): the arch check feeds it values.
    ("ppc64le", "getcpu-node-shift"): breakage(
        {"impl-getcpu.S": [("srwi\t%r5, %r5, 16", "srwi\t%r5, %r5, 15")]}, {"getcpu.usprg3": ""}, only=("",)),
    ("ppc64le", "getcpu-cpu-mask"): breakage(
        {"impl-getcpu.S": [("clrlwi\t%r6, %r5, 16", "clrlwi\t%r6, %r5, 0")]}, {"getcpu.usprg3": ""}, only=("",)),
    ("ppc64le", "getcpu-no-register"): breakage(
        {"impl-getcpu.S": [("mfspr\t%r5, 259", "li\t%r5, 0")]}, {"getcpu.usprg3": ""}, only=("",)),
    ("ppc64le", "getcpu-result"): breakage(
        {"impl-getcpu.S": [("1:\tli\t%r3, 0", "1:\tli\t%r3, 1")]}, {"getcpu": "", "getcpu.usprg3": ""},
        only=("",)),
}


@pytest.mark.parametrize("name,case", sorted(BREAKAGES), ids=[f"{n}-{c}" for n, c in sorted(BREAKAGES)])
def test_harness_catches_breakage(name, case, harnesses, tmp_path):
    b = BREAKAGES[name, case]
    target = harness_target(name)
    image = build_broken(target, tmp_path / "image", b["edits"])
    status, outcome, output = run_broken(target, harnesses(name), image)
    assert status == 1, output
    for check, words in b["fails"].items():
        assert check in outcome.failed and words in outcome.failed[check], f"{check} did not fail:\n{output}"
    for check in b["passes"]:
        assert check in outcome.passed, output
    if b["only"] is not None:
        failed = {c for c in outcome.failed if c.startswith(b["only"])}
        assert failed == {c for c in b["fails"] if c.startswith(b["only"])}, output
