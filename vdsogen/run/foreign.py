"""`vdsogen run` for targets qemu-user runs: the guest loader (runner/loader.c).

qemu-user gives its guests no vDSO.  The loader, a static program of the
target built with its GNU cross compiler beside the harness's timekeeper
(harness/*.c but main.c, with the headers rendered for the target), runs
twice: as the timekeeper, under a qemu of its own, keeping data pages in a
shared file current from the host's clocks (and a test build's injected
counter moving), and under the program's qemu, where it maps those pages
with the image above them, loads the program and enters it with
AT_SYSINFO_EHDR pointing at the image.  Clock syscalls are counted from the
program's qemu's syscall log (-d strace), where the timekeeper's are not.
"""

import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from vdsogen import paths
from vdsogen.fsutil import scratch_dir
from vdsogen.harness.driver import die_with_parent
from vdsogen.run import RunError, cache_dir, checked_image, install_cached, runner_dir, snapshot_fd

# Where the loader sits: clear of the addresses programs are linked at, and
# within 2 GiB of address 0 (the weak undefined symbols of static C libraries).
LOADER_ADDRESS = 0x60000000
# How long the timekeeper may take to measure the counter and fill the pages.
TIMEKEEPER_START = 30

CLOCK_IDS = {"CLOCK_REALTIME": 0, "CLOCK_MONOTONIC": 1, "CLOCK_PROCESS_CPUTIME_ID": 2,
             "CLOCK_THREAD_CPUTIME_ID": 3, "CLOCK_MONOTONIC_RAW": 4, "CLOCK_REALTIME_COARSE": 5,
             "CLOCK_MONOTONIC_COARSE": 6, "CLOCK_BOOTTIME": 7, "CLOCK_REALTIME_ALARM": 8,
             "CLOCK_BOOTTIME_ALARM": 9, "CLOCK_TAI": 11}
# The time64 syscalls of 32-bit ABIs count as the calls they stand for.
SYSCALLS = {"clock_gettime": "clock_gettime", "clock_gettime64": "clock_gettime", "gettimeofday": "gettimeofday",
            "time": "time", "clock_getres": "clock_getres", "clock_getres_time64": "clock_getres"}
# "PID name(args)": threads' lines interleave in the log (a call's result may
# follow another's start, and some starts have no closing parenthesis), so
# calls are found anywhere in a line, by their first two arguments.
CALL = re.compile(r"\d+ (" + "|".join(sorted(SYSCALLS, key=len, reverse=True)) + r")\(([^,()\s]*)(?:,([^,()\s]*))?")


def check_supported(target):
    """RunError unless the loader can run the target's programs."""
    if target.toolchain.gnu_triple is None and not freestanding(target):
        raise RunError(f"{target.name}: no GNU cross compiler (toolchain.gnu_triple) and C library for the guest "
                       f"loader, and its harness is not freestanding ([harness] libc): `vdsogen run` does not run it")


def is_test_build(image):
    """Whether `image` is a vdsogen test build (its N006 note); False for what is no image at all."""
    from vdsogen.audit.rules.notes import test_build
    from vdsogen.elf.reader import ElfImage
    from vdsogen.errors import VdsogenError

    try:
        return test_build(ElfImage(str(image))) is not None
    except (VdsogenError, OSError, ValueError):
        return False    # checked_image() says what is wrong with it


def run_target(target, image):
    """The target whose image the loader runs: the test build (Target.test_build: the counter read
    loads a count the loader advances) for a test build given, and where qemu-user cannot read the
    spec's counter ([harness] injected_counter), saying so in one line on stderr."""
    if target.test_counter:
        return target
    given = image is not None and Path(image).is_file() and is_test_build(image)
    if target.harness.injected_counter:
        if image is not None and Path(image).is_file() and not given:
            raise RunError(f"{image}: not a test build, and qemu-user cannot read the {target.name} counter "
                           f"([harness] injected_counter): give `vdsogen run` a `vdsogen build --test-counter` "
                           f"image (`vdsogen check` verifies the real one's counter read)")
        why = f"qemu-user cannot read the {target.name} counter ([harness] injected_counter)"
    elif given:
        why = f"{image} is one (its N006 note)"
    else:
        return target
    print(f"vdsogen run: {target.name}: running the test build (`vdsogen build --test-counter`), whose counter "
          f"read loads a count the loader advances at 24 MHz from the host's CLOCK_MONOTONIC_RAW: {why}",
          file=sys.stderr, flush=True)
    return target.test_build()


def emulator(target) -> list[str]:
    """The qemu-user that runs the target, as the harness finds it: qemu-NAME ([toolchain] qemu) of
    the directory $VDSOGEN_QEMU when set (another qemu than the host's, such as Debian trixie's that
    scripts/fetch-consumers.sh unpacks), else the host's."""
    from vdsogen.errors import HarnessError
    from vdsogen.harness.driver import runner

    try:
        return runner(target)
    except HarnessError as e:
        raise RunError(str(e)) from None


def interpreter(program) -> str | None:
    """The dynamic loader an ELF program asks for (its PT_INTERP), None for a static one or a script."""
    from vdsogen.elf.consts import PT_INTERP
    from vdsogen.elf.reader import ElfImage
    from vdsogen.errors import VdsogenError

    try:
        img = ElfImage(str(program))
    except (VdsogenError, OSError, ValueError):
        return None     # no ELF (a script): qemu-user runs its interpreter as it finds it
    for seg in img.segments_of_type(PT_INTERP):
        return bytes(img.data[seg.offset:seg.offset + seg.filesz]).split(b"\0")[0].decode(errors="replace")
    return None


def _holds(root, interp, target) -> bool:
    """Whether ROOT/INTERP (INTERP absolute) is an ELF file of the target's ABI."""
    from vdsogen.run import elf_abi

    try:
        return elf_abi(root + interp) == (target.elf.elf_class, target.elf.machine, target.elf.endian)
    except OSError:
        return False


def library_root(target, program, verbose=False) -> str | None:
    """The directory qemu-user takes a dynamically linked program's libraries from (its -L, as
    QEMU_LD_PREFIX): $QEMU_LD_PREFIX when set, else Debian's cross sysroot of the target's GNU
    triple, /usr/TRIPLE, when it holds the program's interpreter; None for a static program, or
    where the host's own path holds the interpreter, of the target's ABI (a multiarch libc), and no
    QEMU_LD_PREFIX says otherwise.  RunError when no root holds it.  `verbose`: say which."""
    interp = interpreter(program)
    if interp is None or not interp.startswith("/"):
        return None
    given = os.environ.get("QEMU_LD_PREFIX")
    triple = target.toolchain.gnu_triple
    if given:
        root, label = given, "QEMU_LD_PREFIX"
    elif triple:
        root, label = f"/usr/{triple}", f"Debian's cross sysroot of {triple}"
    else:
        root, label = None, ""
    if root is not None and _holds(root.rstrip("/"), interp, target):
        if verbose:
            print(f"vdsogen run: {target.name}: {program} is dynamically linked: its interpreter {interp} and "
                  f"libraries from {root} ({label}{'' if given else ', QEMU_LD_PREFIX being unset'})",
                  file=sys.stderr, flush=True)
        return root
    if _holds("", interp, target):
        return given or None
    tried = ([f"{root}{interp} ({label})"] if root is not None else []) + [f"{interp} (this host's)"]
    no_root = "" if root is not None else f"; {target.name} has no GNU triple, so no Debian cross sysroot"
    raise RunError(f"{program}: dynamically linked, and its interpreter is at none of {', '.join(tried)}{no_root}: "
                   f"set QEMU_LD_PREFIX to the directory that holds the {target.name} C library, with the "
                   f"interpreter at DIR{interp} (Debian's cross packages, libc6-ARCH-cross, put it in /usr/TRIPLE)",
                   127)


def prepare_foreign(target, argv, image, program=None, verbose=False):
    """qemu-user (with -L, the program's library root, where it needs one: library_root), the
    target's loader, the image, the program (`program`: argv[0] resolved)."""
    from vdsogen.harness.driver import harness_view

    qemu = emulator(target)
    root = library_root(target, program or argv[0], verbose)
    if root is not None:
        qemu += ["-L", root]
    test = run_target(target, image)
    if test is not target and image is None:
        # As `vdsogen test` does: the real build is made and checked, its counter read by its words (T002).
        checked_image(target, None)
    snap = checked_image(test, image)
    # harness_view: a target without time data gets a loader over nominal data pages, which the image never reads.
    return [*qemu, str(build_loader(harness_view(test))), *getcpu_options(target, snap), "--", snap, *argv]


def getcpu_options(target, image):
    """The loader's options for the image's getcpu: where it answers in user space from a register
    qemu-user does not keep (the target's getcpu is in user space), the loader makes it the syscall,
    said in one line on stderr."""
    from vdsogen.elf.reader import ElfImage

    if not target.getcpu_in_user_space:
        return []
    img = ElfImage(str(image))
    found = {s.value - img.loads[0].vaddr for s in img.dynsym if s.defined and s.name.endswith("getcpu")}
    if not found:
        return []
    print(f"vdsogen run: {target.name}: qemu-user keeps no CPU number where the image's getcpu reads it in user "
          f"space (it would answer CPU 0): the loader makes it the getcpu syscall, which answers the CPU the "
          f"program runs on", file=sys.stderr, flush=True)
    return [arg for at in sorted(found) for arg in ("--getcpu-syscall", str(at))]


def freestanding(target):
    """Whether the target's loader and probe are built as its harness is, freestanding
    ([harness] libc = "freestanding": clang, or gcc where LLVM has no backend, and
    harness/freestanding/, no C library)."""
    return target.harness.libc == "freestanding"


def c_program_argv(target, work, csources, exe, extra=()):
    """The command that builds a static program of the target from `csources` with the harness's
    flags and the headers rendered into `work`: with its GNU cross compiler, or freestanding."""
    from vdsogen.harness.driver import HARNESS_CFLAGS, compiler, freestanding_argv

    if freestanding(target):
        argv = freestanding_argv(target, work, csources, exe)
        at = argv.index("-o")
        return [*argv[:at], "-DLOADER_FREESTANDING", *extra, *argv[at:]]
    return [compiler(target), *HARNESS_CFLAGS, f"-DH_IMAGE_CLASS={target.elf.elf_class}",
            *target.toolchain.harness_cflags, *extra, "-I", str(work), "-I", str(paths.HARNESS),
            *map(str, csources), "-o", str(exe)]


def build_with_headers(kind, target, csources, extra=()):
    """Build `csources` (and the generated harness sources when `kind` is the loader) into the
    cache, once per content of all of it; returns the executable's path."""
    from vdsogen.harness.driver import harness_sources

    generated = harness_sources(target)
    inputs = [*csources, *sorted(runner_dir().glob("*.h")), *sorted(paths.HARNESS.glob("*.h"))]
    if freestanding(target):
        inputs += sorted(p for p in (paths.HARNESS / "freestanding").rglob("*") if p.is_file())
    key_argv = c_program_argv(target, Path("W"), [Path(p.name) for p in csources], Path("E"), extra)
    digest = hashlib.sha256("\0".join(key_argv).encode())
    for path in inputs:
        digest.update(str(path.relative_to(paths.ROOT)).encode() + b"\0" + path.read_bytes())
    for name, text in generated:
        digest.update(name.encode() + b"\0" + text.encode())
    name = f"{target.name}-test" if target.test_counter else target.name
    exe = cache_dir() / f"{kind}-{name}-{digest.hexdigest()[:16]}"
    if exe.is_file():
        return exe
    cc = key_argv[0]
    if shutil.which(cc) is None:
        raise RunError(f"{cc}: not found (`vdsogen run` builds the {target.name} {kind} with it)", 1)
    work = exe.with_name(f".{exe.name}.{os.getpid()}.d")
    work.mkdir(parents=True, exist_ok=True)
    sources = list(csources)
    for fname, text in generated:
        (work / fname).write_text(text)
        if fname.endswith(".c") and kind == "loader":
            sources.append(work / fname)
    tmp = work / kind
    proc = subprocess.run(c_program_argv(target, work, sources, tmp, extra), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RunError(f"the {target.name} {kind} does not compile with {cc}:\n{proc.stdout.rstrip()}", 1)
    install_cached(tmp, exe)
    shutil.rmtree(work, ignore_errors=True)
    return exe


def build_loader(target):
    """The target's guest loader: runner/loader.c with the harness's timekeeper (harness/*.c but
    main.c), its headers rendered for the target."""
    csources = [runner_dir() / "loader.c", *sorted(p for p in paths.HARNESS.glob("*.c") if p.name != "main.c")]
    from vdsogen.harness.driver import freestanding_gnu

    lld = freestanding(target) and not freestanding_gnu(target)
    where = "--image-base" if lld else "-Ttext-segment"     # lld's, GNU ld's
    return build_with_headers("loader", target, csources, [f"-Wl,{where}={LOADER_ADDRESS:#x}"])


def count_qemu_log(log, own, out):
    """The clock syscalls in qemu's -d strace log, less those into `own` (buffers
    not to count: an address, or [(start, end)]), written to `out` as the
    supervisor writes its counts."""
    ranges = [(own, own + 1)] if isinstance(own, int) else list(own)
    counts = {}
    for m in CALL.finditer(Path(log).read_text(errors="replace")):
        name, clock, buf = SYSCALLS[m.group(1)], m.group(2), m.group(3) or ""
        if name.startswith("clock_"):
            if re.fullmatch(r"0x[0-9a-fA-F]+", buf) and any(lo <= int(buf, 16) < hi for lo, hi in ranges):
                continue
            key = (name, str(CLOCK_IDS.get(clock, "other")))
        else:
            key = (name, "-")
        counts[key] = counts.get(key, 0) + 1
    Path(out).write_text("".join(f"{n} {c} {k}\n" for (n, c), k in sorted(counts.items())))


def start_timekeeper(qemu, loader, pages, feeder=None):
    """The timekeeper process (loader --timekeeper PAGES), under a qemu of its own, once the
    pages are current, and where its clocks come from (its "ready HZ SOURCE" line's SOURCE); it
    ends when its standard input does.  With a hostclock.Feeder, it asks it for the host
    kernel's own timekeeping where its counter is the host's TSC (runner/loader.c, host_update())."""
    argv, fds = [qemu, str(loader), "--timekeeper", str(pages)], ()
    if feeder is not None:
        fds = feeder.start()
        argv += ["--host-clock", *map(str, fds)]
    try:
        keeper = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=fds,
                                  preexec_fn=die_with_parent)
    except OSError as e:
        raise RunError(f"{qemu}: cannot start: {e.strerror}", 1) from None
    finally:
        for fd in fds:
            os.close(fd)
    ready, _, _ = select.select([keeper.stdout], [], [], TIMEKEEPER_START)
    line = keeper.stdout.readline() if ready else b""
    if not line.startswith(b"ready "):
        stop_timekeeper(keeper)
        raise RunError(f"{loader}: the timekeeper did not start (within {TIMEKEEPER_START} s)", 1)
    return keeper, line.decode(errors="replace").split(maxsplit=2)[-1].strip()


HOST_SOURCE = "the-host-kernel's-TSC-timekeeping"     # runner/loader.c's hz_source for it


def say_clocks(target, source, feeder):
    """`run -v`'s line on stderr: where the timekeeper's clocks come from."""
    if not target.datapage:
        how = "none: the image reads no time data"
    elif source == HOST_SOURCE:
        how = ("the host kernel's own (qemu-user's counter is the host's TSC, the host's clocksource): its "
               "cycle_last, mult, shift and bases, copied every tick, so they read what the host's clocks read")
    else:
        how = f"disciplined against the host's within 50 us, the counter's rate {source.replace('-', ' ')}"
        if feeder.why:
            how += f"; the host kernel's own timekeeping is not used: {feeder.why}"
    print(f"vdsogen run: {target.name}: the clocks are {how}", file=sys.stderr, flush=True)


def stop_timekeeper(keeper):
    try:
        keeper.stdin.close()
    except OSError:
        pass
    try:
        keeper.wait(timeout=5)
    except subprocess.TimeoutExpired:
        keeper.kill()
        keeper.wait()
    keeper.stdout.close()


# What is sent to vdsogen is meant for the program (as the native supervisor forwards it).
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _run_forwarding(argv, fd):
    """Run argv (qemu and the program) to its end: the signals of FORWARDED go
    on to it, and it dies with vdsogen (PR_SET_PDEATHSIG), so that a
    SIGKILLed vdsogen leaves no program running with a stale time page."""
    proc = subprocess.Popen(argv, pass_fds=(fd,), preexec_fn=die_with_parent)
    previous = {sig: signal.signal(sig, lambda signum, _frame: proc.send_signal(signum)) for sig in FORWARDED}
    try:
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_foreign(target, args, syscall_counts, verbose=False):
    """Run [qemu, (-L ROOT,) loader, loader options..., "--", image, program...] beside its timekeeper, the image a snapshot() the loader
    opens; with counts, through qemu's syscall log, in which the timekeeper (another qemu) is not.
    Returns the program's exit status.  `verbose`: say where the clocks come from (say_clocks())."""
    from vdsogen.run.hostclock import Feeder

    # [qemu, (-L ROOT,) loader, options..., "--", image, program...] (prepare_foreign).
    qemu, libs = args[0], args[1:3] if args[1] == "-L" else []
    at = 1 + len(libs)
    loader, end = args[at], args.index("--", at + 1)
    options, image, argv = args[at + 1:end], args[end + 1], args[end + 2:]
    with scratch_dir("run") as tmp:
        log, pages = Path(tmp) / "strace", Path(tmp) / "pages"
        trace = ["-d", "strace", "-D", str(log)] if syscall_counts else []
        feeder = Feeder("<" if target.elf.endian == "little" else ">")
        keeper, source = start_timekeeper(qemu, loader, pages, feeder)
        if verbose:
            say_clocks(target, source, feeder)
        try:
            rc = _run_forwarding([qemu, *libs, *trace, loader, *options, str(pages), image, *argv],
                                 snapshot_fd(image))
        except OSError as e:
            raise RunError(f"{qemu}: cannot start: {e.strerror}", 1) from None
        finally:
            stop_timekeeper(keeper)
        if syscall_counts:
            count_qemu_log(log, [], syscall_counts)
    if rc < 0:
        sig = signal.Signals(-rc)
        print(f"vdsogen run: {argv[0]}: killed by {sig.name} ({signal.strsignal(sig)})", file=sys.stderr)
        return 128 - rc
    return rc


__all__ = ["check_supported", "emulator", "run_target", "is_test_build", "prepare_foreign", "run_foreign",
           "interpreter", "library_root",
           "build_loader", "build_with_headers", "freestanding", "getcpu_options", "start_timekeeper", "stop_timekeeper", "count_qemu_log",
           "say_clocks"]
