"""`vdsogen run`: run a program with a generated vDSO image in place of the kernel's.

Natively (x86_64, i386, x32 on an x86-64 host) the supervisor
(runner/supervise.c, built with the host compiler and cached) runs the
program under ptrace and, at every exec of it and of its descendants,
replaces the kernel's [vdso] mapping with the image at the same address,
directly above the kernel's own data pages; so first the running kernel's
data pages are checked against the target's layout (live.py).  The
supervisor replaces this process, so the exit status is the program's
(128+N when signal N killed it).  Targets qemu-user runs get a guest loader
instead (foreign.py), on the target's test build where qemu-user cannot read
its counter ([harness] injected_counter).  The program named `vdsogen-probe` is the project's
probe (runner/probe.c), built for the target.

The image is read once, into a sealed memory file (snapshot()): `check`
and the supervisor or loader read those bytes, whatever becomes of the
file meanwhile.
"""

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from vdsogen import paths
from vdsogen.errors import VdsogenError

PROBE = "vdsogen-probe"
EM_386 = 3
HOST_CC = "gcc"
CFLAGS = ("-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror")


class RunError(VdsogenError):
    """`vdsogen run` cannot start the program; the exit status is the shell's for the same case."""

    def __init__(self, message, exit_code=2):
        super().__init__(message)
        self.exit_code = exit_code


def runner_dir():
    return paths.ROOT / "runner"


def cache_dir():
    base = os.environ.get("VDSOGEN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vdsogen")
    return Path(base) / "run"


def _quiet_builder(target):
    from vdsogen.build.toolchain import Builder

    verbose = os.environ.get("V", "0") not in ("", "0")
    return Builder(target, stream=sys.stderr if verbose else io.StringIO())


def install_cached(tmp, exe):
    """Move a fresh build into the cache, in place of the older builds of its name."""
    os.replace(tmp, exe)
    stem = exe.name.rsplit("-", 1)[0]
    for old in exe.parent.glob(f"{stem}-*"):
        if old != exe and old.name.rsplit("-", 1)[0] == stem:
            old.unlink(missing_ok=True)


def compile_cached(name, cc, flags, source):
    """Compile one C file with `cc flags`, once per content; returns the executable's path."""
    text = Path(source).read_bytes()
    key = hashlib.sha256("\0".join([cc, *flags]).encode() + b"\0" + text).hexdigest()[:16]
    exe = cache_dir() / f"{name}-{key}"
    if exe.is_file():
        return exe
    if shutil.which(cc) is None:
        raise RunError(f"{cc}: not found (`vdsogen run` builds {Path(source).name} with it)", 1)
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(f".{exe.name}.{os.getpid()}")
    proc = subprocess.run([cc, *flags, str(source), "-o", str(tmp)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RunError(f"{source}: does not compile with {cc}:\n{proc.stdout.rstrip()}", 1)
    install_cached(tmp, exe)
    return exe


def build_probe(target):
    """The probe for `target` (a static program of its ABI)."""
    from vdsogen.harness.driver import compiler
    from vdsogen.run.foreign import build_with_headers, freestanding

    if freestanding(target):
        return build_with_headers("probe", target, [runner_dir() / "probe.c"])
    flags = (*CFLAGS, "-static", *target.toolchain.harness_cflags)
    return compile_cached(f"probe-{target.name}", target.toolchain.program_cc or compiler(target), flags,
                          runner_dir() / "probe.c")


def build_supervisor():
    return compile_cached("supervise", HOST_CC, CFLAGS, runner_dir() / "supervise.c")


SNAPSHOT = "/proc/self/fd/"


def snapshot(path):
    """The bytes of the file at `path`, once, in a memory file sealed against change, named
    /proc/self/fd/N: what this process execs, or spawns with pass_fds=(snapshot_fd(name),), opens
    that name to read the same bytes."""
    from vdsogen.elf.bounds import read_image_file

    return sealed(read_image_file(path))


def sealed(data) -> str:
    """`data` in a memory file sealed against change, named as snapshot() names one."""
    fd = os.memfd_create("vdsogen-image", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW |
                fcntl.F_SEAL_WRITE)
    os.set_inheritable(fd, True)
    return f"{SNAPSHOT}{fd}"


def snapshot_fd(name):
    """The descriptor of a snapshot() name."""
    return int(name[len(SNAPSHOT):])


def image_inputs(target, builder, files) -> str:
    """A digest of everything an image built into the cache comes from: the target, the rendered
    sources, the toolchain's commands and programs (by path, size and time), and vdsogen's build code."""
    digest = hashlib.sha256(repr(target).encode())
    for name, text in files:
        digest.update(b"\0" + name.encode() + b"\0" + text.encode())
    tools = builder.tools
    digest.update(repr((tools, builder.cflags())).encode())
    for program in sorted({tools.cc[0], tools.link[0], tools.objcopy, *(a.split("=", 1)[1] for a in tools.ld)}):
        found = shutil.which(program)
        st = os.stat(found) if found else None
        digest.update(repr((program, found, st and (st.st_size, st.st_mtime_ns))).encode())
    for path in sorted((paths.ROOT / "vdsogen" / "build").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cached_image(target) -> tuple[str, Path]:
    """A snapshot() of the target's image in the cache, and its path: built once per content of its
    inputs (image_inputs()), into a directory of their own (images/NAME/DIGEST), whose lock is held
    throughout, so concurrent runs build it once and each reads a whole image, and runs of another
    vdsogen never write there.  Entries of the name left for a day, which no run holds, go."""
    from vdsogen.audit.check import build_validator
    from vdsogen.build.image import build_target
    from vdsogen.fsutil import locked_dir, write_atomic
    from vdsogen.gen.render import sources

    builder = _quiet_builder(target)
    files = sources(target)
    key = image_inputs(target, builder, files)
    outdir = cache_dir() / "images" / (f"{target.name}-test" if target.test_counter else target.name) / key[:16]
    stamp, image = outdir / "inputs", outdir / "vdso.so"
    with locked_dir(outdir):
        try:
            fresh = image.is_file() and stamp.read_text() == key
        except OSError:
            fresh = False
        if not fresh:
            build_target(target, outdir, builder=builder, validate=build_validator, files=files, lock=False)
            write_atomic(stamp, key.encode())
        os.utime(stamp)
        snap = snapshot(image)
    _prune(outdir)
    return snap, image


STALE_SECONDS = 86400


def _prune(keep):
    """Remove the cache entries beside `keep` not used for STALE_SECONDS that no run holds locked."""
    from vdsogen.fsutil import LOCK_NAME

    for entry in keep.parent.iterdir():
        try:
            if entry == keep or time.time() - (entry / "inputs").stat().st_mtime < STALE_SECONDS:
                continue
            fd = os.open(entry / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass
        finally:
            os.close(fd)


def checked_image(target, image):
    """A snapshot() of `image`, or of the target's image built into the cache, that passes `vdsogen check`."""
    from vdsogen.audit.check import check_report
    from vdsogen.errors import ImageError

    if image is None:
        snap, image = cached_image(target)
    else:
        path = Path(image)
        if not path.is_file():
            raise RunError(f"{image}: no such image")
        snap = None
    try:
        snap = snap or snapshot(image)
        ours = is_vdsogen_image(snap)
        findings = (check_report(target, snap) if ours else audit_as(target, snap)).findings
    except ImageError as e:
        raise RunError(f"{image}: not a usable image: {e.args[0].replace(e.path, str(image), 1)}") from None
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        from vdsogen.audit.report import finding_line

        how = "check" if ours else "audit"
        more = f" (and {len(errors) - 1} more: see `vdsogen {how} --arch {target.name if ours else target.abi.name} " \
            f"{image}`)" if len(errors) > 1 else ""
        raise RunError(f"{image}: fails `vdsogen {how}` for {target.name}: {finding_line(errors[0])}{more}")
    return booted_image(image, snap)


def booted_image(image, snap):
    """The snapshot() `snap` of `image` as its kernel maps it: patched by the
    alternatives its kernel applies at boot on the CPU the program runs on
    (vdsogen/harness/alternatives.py, as `vdsogen test` maps it), said in one
    line on stderr; `snap` itself when its kernel patches nothing."""
    from vdsogen.harness.alternatives import boot

    try:
        booted = boot(snap)
    except VdsogenError as e:
        raise RunError(str(e.args[0]).replace(snap, str(image), 1)) from None
    if booted is None:
        return snap
    print(f"vdsogen run: {image}: {booted.line[2:]}", file=sys.stderr, flush=True)
    os.close(snapshot_fd(snap))
    return sealed(booted.data)


def image_target(target, image):
    """The target as the image reads its data pages: a kernel's image (not vdsogen's) reads them as
    the kernel its version note names lays them out, at the page size its code reads them at
    (vdsogen/harness/layouts.py, as `vdsogen test --image` plays them), said in one line on stderr."""
    from vdsogen.errors import ImageError
    from vdsogen.harness.layouts import choose

    if target.datapage is None:
        return target       # no time data (sh4, parisc): no data pages to lay out
    try:
        if image is None or not Path(image).is_file() or is_vdsogen_image(image):
            return target
    except ImageError:
        return target       # checked_image() says what is wrong with it
    try:
        choice = choose(target, image)
    except VdsogenError as e:
        raise RunError(str(e.args[0])) from None
    dp = choice.target.datapage
    size = f", {dp.page_size}-byte pages as the image's code reads them" if choice.sized else ""
    print(f"vdsogen run: {image}: not built by vdsogen, so judged by `vdsogen audit` as of the {target.abi.name} "
          f"ABI; its data pages are laid out as {dp.layout.name} ({choice.why}{size})", file=sys.stderr, flush=True)
    return choice.target


def is_vdsogen_image(path) -> bool:
    """Whether the image at `path` is one vdsogen built (its notes of owner "vdsogen"); ImageError when unreadable."""
    from vdsogen.elf.reader import ElfImage

    return any(n.name == "vdsogen" for n in ElfImage(str(path)).notes)


def audit_as(target, path):
    """The audit of an image vdsogen did not build (a kernel's), as of the target's ABI: what any
    consumer of a vDSO needs of it, not the export list of vdsogen's spec."""
    from vdsogen.audit.run import expect_for, judge
    from vdsogen.elf.reader import ElfImage
    from vdsogen.spec.abi import Detection

    img = ElfImage(str(path))
    detection = Detection(target.abi, f"spec {target.name}")
    return judge(img, detection, expect_for(img, detection), "linux")


def _symbol(image, name):
    """The offset of `name` from the image's start (its first PT_LOAD), or None."""
    from vdsogen.elf.reader import ElfImage

    img = ElfImage(image)
    for sym in img.dynsym:
        if sym.name == name and sym.defined:
            return sym.value - img.loads[0].vaddr
    return None


def resolve_program(target, program):
    """The executable `program` names: the probe, a path, or a name on $PATH."""
    if program == PROBE:
        return str(build_probe(target))
    if "/" in program:
        if not os.path.exists(program):
            raise RunError(f"{program}: no such file", 127)
        if os.path.isdir(program) or not os.access(program, os.X_OK):
            raise RunError(f"{program}: not an executable file", 126)
        return program
    found = shutil.which(program)
    if found is None:
        raise RunError(f"{program}: command not found", 127)
    return found


def elf_abi(path) -> "tuple[int, int, str] | None":
    """(ELF class, machine, byte order) of an ELF file; None for a file that is no ELF;
    OSError when it cannot be read."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order = "little" if head[5] == 1 else "big"
    return 32 if head[4] == 1 else 64, int.from_bytes(head[18:20], order), order


def check_abi(target, program):
    """An ELF program must be of the target's ABI (scripts go by their interpreter)."""
    try:
        abi = elf_abi(program)
    except OSError as e:
        raise RunError(f"{program}: {e.strerror}", 126) from None
    if abi is None:
        return
    elf_class, machine, order = abi
    if (elf_class, machine, order) != (target.elf.elf_class, target.elf.machine, target.elf.endian):
        raise RunError(f"{program}: an ELF{elf_class} {order}-endian program for machine {machine}, not of the "
                       f"{target.name} ABI (ELF{target.elf.elf_class} {target.elf.endian}-endian, machine "
                       f"{target.elf.machine}): its vDSO cannot be the {target.name} image")


def prepare(target, argv, image=None, syscall_counts=None, verbose=False):
    """The argv that runs `argv` under the image; raises RunError when it cannot.  `verbose`
    (-v): under qemu-user, say where a dynamically linked program's libraries come from."""
    from vdsogen.run.live import check_live_layout

    if not argv:
        raise RunError("no program given: vdsogen run --arch=T [--image FILE] -- PROGRAM [ARG...]")
    if target.datapage is None and target.toolchain.qemu is None:
        raise RunError(f"{target.path}: no time data (no [counter], no [datapage]): the supervisor keeps data "
                       f"pages current, and this image has none; `vdsogen run` runs such a target under "
                       f"qemu-user only")
    if target.toolchain.qemu is not None:
        from vdsogen.run.foreign import check_supported

        check_supported(target)
    program = resolve_program(target, argv[0])
    check_abi(target, program)
    if argv[0] == PROBE:
        argv = [program, *argv[1:]]
    target = image_target(target, image)
    if target.toolchain.qemu is not None:
        from vdsogen.run.foreign import prepare_foreign

        return prepare_foreign(target, argv, image, program, verbose)
    if os.uname().machine != "x86_64":
        raise RunError(f"{target.name}: the supervisor needs an x86-64 host, this is {os.uname().machine}")
    check_live_layout(target)
    given, image = image, checked_image(target, image)
    from vdsogen.run.foreign import is_test_build

    if is_test_build(image):
        raise RunError(f"{given or 'the image'}: a test build (`vdsogen build --test-counter`): its counter read loads a count "
                       f"that only the harness and the qemu-user loader keep; natively give the real build")
    sup = build_supervisor()
    options = ["--exec", str(Path(program).resolve())]
    if syscall_counts:
        options += ["--counts", str(Path(syscall_counts).resolve())]
    vsyscall = _symbol(image, "__kernel_vsyscall")
    if vsyscall is not None:
        options += ["--sysinfo", str(vsyscall)]
    # i386 handlers without SA_RESTORER return through the image's trampolines (supervise.c).
    restorers = [_symbol(image, name) for name in ("__kernel_sigreturn", "__kernel_rt_sigreturn")]
    if target.elf.machine == EM_386 and None not in restorers:
        options += ["--sigreturn", str(restorers[0]), "--rt-sigreturn", str(restorers[1])]
    data_bytes = target.datapage.pages * target.datapage.page_size
    return [str(sup), *options, image, str(data_bytes), *argv]


def run(target, argv, image=None, syscall_counts=None, verbose=False):
    """`vdsogen run`: exec the supervisor (never returns), or run qemu-user and return
    the program's status; RunError when the program cannot run.  `verbose` (-v): under qemu-user,
    say where the clocks and a dynamically linked program's libraries come from."""
    args = prepare(target, argv, image, syscall_counts, verbose)
    if target.toolchain.qemu is not None:
        from vdsogen.run.foreign import run_foreign

        return run_foreign(target, args, syscall_counts, verbose)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(args[0], args)
    except OSError as e:
        raise RunError(f"{args[0]}: cannot start: {e.strerror}", 1) from None


__all__ = ["run", "prepare", "build_probe", "build_supervisor", "compile_cached", "install_cached", "checked_image",
           "snapshot", "sealed", "snapshot_fd", "cached_image", "image_inputs",
           "check_abi", "elf_abi", "cache_dir", "runner_dir", "RunError", "PROBE"]
