"""The ChaCha20 block routine of each target (arch/ARCH/chacha20.S.j2,
__arch_chacha20_blocks_nostack), built on its own and run under qemu-user.

The fragment is rendered and assembled as the image's sources are (the
target's toolchain and flags), linked with tests/chacha_driver.c (compiled
as the target's harness is) and run: RFC 8439's vectors, the reference of
the driver for block counts 0-17, 31, 63, 64 at counters that carry into
the high word and wrap, dst's neighbours untouched, the counter advanced,
no secret word left on the stack or in a register and the callee-saved
registers kept (the routines of STACKLESS write no stack word at all).
The keystream is also compared with OpenSSL's (python3-cryptography), an
implementation of its own.  Each routine, broken in a way the driver must
notice, fails.
"""

import io
import subprocess

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from conftest import ROOT, TARGETS
from vdsogen import paths
from vdsogen.build.toolchain import Builder
from vdsogen.gen.render import Renderer
from vdsogen.harness.driver import (HARNESS_CFLAGS, compiler, freestanding_argv, qemu_options,
                                    runner)
from vdsogen.spec.model import load_target

DRIVER = ROOT / "tests" / "chacha_driver.c"
# The ABIs Linux serves getrandom on, where the arch has the routine.
GETRANDOM = ("x86_64", "arm64", "ppc32", "ppc64", "ppc64le", "s390x", "loongarch64", "riscv64")
ROUTINES = [n for n in GETRANDOM if n in TARGETS and (paths.ARCH / load_target(n).arch / "chacha20.S.j2").exists()]
# Routines that keep everything in caller-saved registers; the others save
# callee-saved ones on the stack, as Linux's do (never a secret).
STACKLESS = {"x86", "arm64", "s390"}


def e_flags(path, target):
    with open(path, "rb") as f:
        head = f.read(52)
    return int.from_bytes(head[48:52] if target.elf.elf_class == 64 else head[36:40], target.elf.endian)


def build(target, work, source=None):
    """The driver linked with the target's routine (`source`: the rendered
    fragment, else rendered here); returns the executable."""
    builder = Builder(target, stream=io.StringIO())
    asm = work / "chacha20.S"
    asm.write_text(source if source is not None else Renderer(target).render(target.fragment("chacha20.S.j2")))
    routine = work / "chacha20.o"
    builder.compile(asm, routine)
    exe = work / "chacha"
    defines = ["-DSTACKLESS"] if target.arch in STACKLESS else []
    if target.harness.libc == "freestanding":
        # the harness's command: compiler and flags, the sources, -o exe
        argv = freestanding_argv(target, work, [DRIVER], exe)
        cc, libc = argv[:argv.index(str(DRIVER))], argv[argv.index(str(DRIVER)) + 1:]
    else:
        cc, libc = [compiler(target), *HARNESS_CFLAGS, *target.toolchain.harness_cflags], ["-o", str(exe)]
    cc += ["-fomit-frame-pointer", *defines]
    compile_driver = [*(a for a in cc if not a.startswith("--ld-path=")), "-c", str(DRIVER), "-o", str(work / "driver.o")]
    link = [*cc, str(work / "driver.o"), str(routine), *libc]
    proc = subprocess.run(compile_driver, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The routine touches no floating-point state, so its object's float ABI
    # (the image's, soft-float where the harness's is hard) is the driver's.
    want = e_flags(work / "driver.o", target)
    if e_flags(routine, target) != want:
        builder.rewrite_flags(routine, want)
    proc = subprocess.run(link, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return exe


def run(target, exe, *args):
    return subprocess.run([*runner(target), *qemu_options(target), str(exe), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def executables(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            target = load_target(name)
            cache[name] = (target, build(target, tmp_path_factory.mktemp(f"chacha-{name}")))
        return cache[name]

    return get


@pytest.mark.parametrize("name", ROUTINES)
def test_routine_against_rfc_and_reference(name, executables):
    target, exe = executables(name)
    proc = run(target, exe)
    assert (proc.returncode, proc.stdout) == (0, "ok\n"), proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ROUTINES)
def test_keystream_is_openssls(name, executables):
    """Key 00 01 .. 1f, counter 2^32 - 3: five blocks that carry into the high word."""
    target, exe = executables(name)
    proc = run(target, exe, "5")
    assert proc.returncode == 0, proc.stderr
    stream, counter = proc.stdout.split()
    nonce = (2**32 - 3).to_bytes(8, "little") + bytes(8)     # OpenSSL's: the 64-bit counter, then zeros
    openssl = Cipher(algorithms.ChaCha20(bytes(range(32)), nonce), mode=None).encryptor().update(bytes(320))
    assert bytes.fromhex(stream) == openssl
    assert int(counter, 16) == 2**32 + 2


# A routine broken in each way the driver must notice: target, [(what, old, new)].
BROKEN = {
    "arm64": [
        ("a key register left", "\tmovi\tv5.16b, #0\n", ""),
        ("one double round short", "mov\tw8, #10", "mov\tw8, #9"),
        ("the counter's carry lost", "add\td7, d7, d16", "add\tv7.2s, v7.2s, v16.2s"),
        ("a block too many", "subs\tx3, x3, #1\n\tb.ne\t.Lblock", "subs\tx3, x3, #1\n\tb.pl\t.Lblock"),
        ("a spill", "\tst1\t{v7.2s}, [x2]", "\tst1\t{v7.2s}, [x2]\n\tstr\tq5, [sp, #-16]"),
    ],
    "riscv64": [
        ("a keystream register left", "\tli\ta5, 0\n", ""),
        ("s0 not restored", "\tld\ts0, 0(sp)\n", ""),
        ("one double round short", "li\ta4, 10", "li\ta4, 9"),
        ("the counter's carry lost", "\tsrli\tt0, t0, 32\n\tsw\tt0, 4(a2)\n", ""),
        ("a block too many", "bnez\ta3, .Lblock", "bgez\ta3, .Lblock"),
        ("a spill into the frame", ".Ldoubleround:\n", ".Ldoubleround:\n\tsw\tt1, 56(sp)\n"),
    ],
    "loongarch64": [
        ("a keystream register left", "\tmove\t$t0, $zero\n", ""),
        ("one double round short", "li.w\t$a4, 10", "li.w\t$a4, 9"),
        ("the counter's carry lost", "\tsrli.d\t$a4, $a4, 32\n\tst.w\t$a4, $a2, 4\n", ""),
        ("a block too many", "bnez\t$a3, .Lblock", "bgez\t$a3, .Lblock"),
        ("a spill below sp", ".Ldoubleround:\n", ".Ldoubleround:\n\tst.w\t$a5, $sp, -4\n"),
    ],
    "s390x": [
        ("a keystream register left", "\tvzero\t%v1\n", ""),
        ("one double round short", "lghi\t%r0, 10", "lghi\t%r0, 9"),
        ("the counter's carry lost", "aghi\t%r1, 1", "ahi\t%r1, 1"),
        ("a block too many", "ltgr\t%r5, %r5", "aghi\t%r5, 1"),
        ("a spill into the caller's frame", ".Ldoubleround:\n", ".Ldoubleround:\n\tvst\t%v5, 48(%r15)\n"),
    ],
    "ppc32": [
        ("a keystream register left", "\tli\t%r7, 0\n", ""),
        ("r22 not restored", "\tlwz\t%r22, 40(%r1)\n", ""),
        ("one double round short", "li\t%r12, 10", "li\t%r12, 9"),
        ("the counter's carry lost", "\taddze\t%r16, %r16\n", ""),
        ("a block too many", "bne\t.Lblock", "bge\t.Lblock"),
        ("a spill below sp", ".Ldoubleround:\n", ".Ldoubleround:\n\tstw\t%r7, -4(%r1)\n"),
    ],
    "ppc64": [
        ("a big-endian word", "\tstwbrx\t%r14, 0, %r3\n", "\tstwx\t%r14, 0, %r3\n"),
    ],
    "ppc64le": [
        ("one double round short", "li\t%r12, 10", "li\t%r12, 9"),
        ("the counter's carry lost", "\trldimi\t%r15, %r16, 32, 0\n", ""),
        ("a block too many", "bne\t.Lblock", "bge\t.Lblock"),
        ("a spill into the protected zone", ".Ldoubleround:\n", ".Ldoubleround:\n\tstw\t%r7, -80(%r1)\n"),
    ],
}


@pytest.mark.parametrize("name, what, old, new", [(n, *b) for n, bs in BROKEN.items() for b in bs],
                         ids=[f"{n}-{b[0]}" for n, bs in BROKEN.items() for b in bs])
def test_broken_routine_fails(name, what, old, new, tmp_path):
    target = load_target(name)
    text = Renderer(target).render(target.fragment("chacha20.S.j2"))
    assert text.count(old) == 1, what
    proc = run(target, build(target, tmp_path, text.replace(old, new)))
    assert proc.returncode != 0 and proc.stdout.startswith("FAIL: "), (what, proc.stdout, proc.stderr)
