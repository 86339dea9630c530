"""`vdsogen test`: build the C test harness for a target and run an image in it.

The harness (harness/*.c) is one static program per target, compiled with
the target's GNU cross compiler and libc, or, for an ABI Debian has no libc
for ([harness] libc = "freestanding"), with clang against harness/freestanding/
(its own start-up, syscalls and the libc subset the harness uses), and
against headers rendered from the spec:
vdso_config.h, vdso_types.h, datapage.h and vdso_arch.h (the vDSO's own
configuration, types, data-page structures, counter read and barriers) and
harness_target.h
(templates/harness_target.h.j2: the exported functions with a typed call
wrapper each, the return convention, versions, trampolines, layout facts,
syscall numbers), and harness_functions.h and .c
(templates/harness_functions.*.j2: the core functions' wiring from
functions.toml's [NAME.harness]: their flavours, check groups and benchmark
rows).  Each function an arch fragment implements has its check
beside it, arch/ARCH/harness-check-NAME.c.j2, rendered and compiled in for
the targets that export it.  The harness runs natively or under qemu-user,
prints one line per check and a summary, and stops after a fatal failure
(the groups left are "not run"); this module relays those lines, stops a
harness that outlives its timeout, and turns the outcome into an exit
status.
"""

import contextlib
import ctypes
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path


from vdsogen import paths
from vdsogen.errors import HarnessError, VdsogenError
from vdsogen.fsutil import scratch_dir, write_atomic
from vdsogen.build.toolchain import Builder

# Headers of the vDSO build the harness compiles against.
VDSO_HEADERS = ("vdso_config.h", "vdso_types.h", "datapage.h", "vdso_arch.h")
HARNESS_CFLAGS = ("-std=gnu11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-static", "-pthread")
# Seconds a harness run may take (`vdsogen test --timeout`): a whole run takes
# 3-9 s, natively or under qemu-user; the harness's own watchdog gives up on a
# hung group after 30 s.
RUN_TIMEOUT = 120
# After SIGTERM, the harness has this long to say what it was running before SIGKILL.
TERM_GRACE = 2.0


def compiler(target):
    if target.toolchain.gnu_triple is None:
        raise HarnessError(f"{target.path}: toolchain.gnu_triple: none, so no GNU cross compiler for the "
                           f"{target.name} harness")
    return f"{target.toolchain.gnu_triple}-gcc"


def freestanding_gnu(target):
    """Whether the target's freestanding harness is built with its GNU cross
    gcc rather than clang: for an ABI LLVM has no backend for (no
    clang_target, SuperH)."""
    return not (target.harness.clang_target or target.toolchain.clang_target)


def freestanding_programs(target):
    """The compiler (and linker, None for gcc's own) of a freestanding
    harness: clang and lld as LLVM= selects them (CROSS_COMPILE= names a GNU
    toolchain, which has no freestanding libc either: clang-19 then), or
    the target's GNU cross gcc (freestanding_gnu)."""
    from vdsogen.build.toolchain import select_programs

    if freestanding_gnu(target):
        return compiler(target), None
    p = select_programs()
    if p.kind != "llvm":
        p = select_programs({})
    return p.cc, p.linker


def gcc_include(cc):
    """gcc's own header directory (stddef.h, stdint.h, limits.h), which
    -nostdinc drops with the C library's."""
    try:
        out = subprocess.run([cc, "-print-file-name=include"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise HarnessError(f"{cc}: cannot run (the freestanding harness is built with it; run scripts/setup.sh)") \
            from None
    return out.strip()


def freestanding_argv(target, hdir, csources, exe):
    """The compile-and-link command of a freestanding harness ([harness] libc =
    "freestanding"): clang and lld for the target, or its GNU cross gcc
    (freestanding_gnu), no C library nor libgcc, and in their place
    harness/freestanding/ (headers, the C half, and the start-up, thread
    entry, setjmp and any compiler helper of arch/ARCH/)."""
    fs = paths.HARNESS / "freestanding"
    arch = fs / "arch" / target.arch
    if not arch.is_dir():
        raise HarnessError(f"{arch}: missing (the {target.name} harness is freestanding: "
                           f"[harness] libc in {target.path})")
    cc, ld = freestanding_programs(target)
    flags = [f for f in HARNESS_CFLAGS if f not in ("-static", "-pthread")]
    sources = [*csources, *sorted(fs.glob("*.c")), *sorted(arch.glob("*.S"))]
    if ld is None:
        # _LIBC_LIMITS_H_: gcc's limits.h stands alone rather than include the C library's
        head = [cc, "-ffreestanding", "-nostdinc", "-isystem", gcc_include(cc), "-D_LIBC_LIMITS_H_", "-nostdlib",
                "-fno-pic", "-static"]
    else:
        head = [cc, f"--target={target.harness.clang_target or target.toolchain.clang_target}",
                "-ffreestanding", "-nostdlibinc", "-nostdlib", "-fno-pic", "-static", f"--ld-path={ld}"]
    return [*head, *flags, f"-DH_IMAGE_CLASS={target.elf.elf_class}", *target.toolchain.harness_cflags,
            "-I", str(hdir), "-I", str(paths.HARNESS), "-isystem", str(fs / "include"), "-isystem", str(arch),
            *(str(s) for s in sources), "-o", str(exe)]


def runner(target):
    """argv prefix that runs a target executable: [] natively, else qemu-user:
    DIR/qemu-NAME where $VDSOGEN_QEMU names a directory DIR (a newer qemu
    than the system's, as `vdsogen run` takes it), else from PATH."""
    qemu = target.toolchain.qemu
    if qemu is None:
        return []
    where = os.environ.get("VDSOGEN_QEMU")
    if where:
        if not os.access(Path(where) / f"qemu-{qemu}", os.X_OK):
            raise HarnessError(f"VDSOGEN_QEMU={where}: no executable qemu-{qemu} there (the emulator of "
                               f"{target.name})")
        return [str(Path(where) / f"qemu-{qemu}")]
    for name in (f"qemu-{qemu}-static", f"qemu-{qemu}"):
        if shutil.which(name):
            return [name]
    raise HarnessError(f"qemu-{qemu}-static: not found (the {target.name} harness runs under "
                       f"qemu-user; run scripts/setup.sh)")


def qemu_options(target):
    """qemu-user's options for the harness: the CPU the spec names ([toolchain] qemu_cpu), where the
    harness needs a feature (arm64's BTI) that it must not leave to qemu's default."""
    return ["-cpu", target.toolchain.qemu_cpu] if target.toolchain.qemu_cpu else []


@dataclass(frozen=True)
class ArchCheck:
    """A check of the arch's own, not of a function ([harness] checks)."""
    name: str


def arch_checks(target):
    """The target's functions an arch fragment implements: each is checked by
    arch/ARCH/harness-check-NAME.c.j2, beside its implementation; then the
    arch's own checks the spec lists, by fragments of the same name."""
    return list(target.arch_functions) + [ArchCheck(name) for name in target.harness.checks]


def function_wiring(target) -> dict:
    """What templates/harness_functions.*.j2 render from functions.toml's
    [NAME.harness] tables: `wired`, the exported functions that have one, in
    declaration order; `syscalls`, every syscall a core function's checks or
    benchmark make (NR_<SYSCALL>); `rows`, the benchmark's (function, clock
    name or None) lines."""
    from vdsogen.spec import functions

    order = list(functions.catalogue())
    wired = sorted((f for f in target.functions if f.harness),
                   key=lambda f: order.index(f.name) if f.name in order else len(order))
    syscalls = []
    for f in functions.catalogue().values():
        if f.harness:
            syscalls += [s for s in (f.syscall, f.harness.bench and f.harness.bench.syscall) if s]
    rows = [(f, row) for f in wired if f.harness.bench for row in (f.harness.bench.rows or (None,))]
    return {"wired": wired, "syscalls": list(dict.fromkeys(syscalls)), "rows": rows, "nrows": len(rows)}


# The data pages a target without time data is harnessed against (harness_view).
VIEW_LAYOUT = "linux-6.17"


def harness_view(target):
    """The target the harness's C is built for.  A target without time data
    (Target.counter None: no counter, no data pages) is harnessed as its
    test build over nominal data pages (layout VIEW_LAYOUT, the ABI's page
    size), so that the one harness program compiles; harness_target.h says
    H_TIME_DATA 0, and the harness neither calibrates a counter nor checks a
    clock, it runs the image, symbol, syscall, arch and unwind checks.  The
    image under test is the real one, mapped above pages it never reads."""
    from dataclasses import replace
    from vdsogen.spec.layout import load_layout
    from vdsogen.spec.model import Counter, DataPages

    if target.datapage is not None:
        return target
    layout = load_layout(VIEW_LAYOUT, (paths.LAYOUTS,))
    return replace(target, test_counter=True,       # clock mode 1: an arch's first, as every arch numbers it
                   counter=Counter("injected", {}, (1,), False, False, (), None),
                   datapage=DataPages(layout, target.abi.page_size, layout.page_count, 4000000, "page"))


def harness_sources(target):
    """[(file name, text)] of the generated files the harness needs: headers,
    the core functions' wiring, then the arch checks (check-NAME.c).
    Everything renders through the one Renderer of vdsogen/gen/render.py, as
    the vDSO's sources do."""
    from vdsogen.gen.render import Renderer, sources

    time_data = target.datapage is not None
    target = harness_view(target)
    rendered = dict(sources(target))
    out = [(name, rendered[name]) for name in VDSO_HEADERS]
    out += [(f.header, rendered[f.header]) for f in target.core_functions if f.header]
    r = Renderer(target)
    checks = arch_checks(target)
    out.append(("harness_target.h", r.render("harness_target.h.j2", arch_checks=checks, time_data=time_data)))
    wiring = function_wiring(target)
    out.append(("harness_functions.h", r.render("harness_functions.h.j2", **wiring)))
    out.append(("harness_functions.c", r.render("harness_functions.c.j2", **wiring)))
    for f in checks:
        out.append((f"check-{f.name}.c", r.render(target.fragment(f"harness-check-{f.name}.c.j2"), f=f,
                                                  missing="every function an arch fragment implements "
                                                          "is checked by a fragment beside it")))
    return out


def build_harness(target, workdir, builder=None):
    """Render the headers and compile the harness into workdir; returns its path."""
    workdir = Path(workdir)
    builder = builder or Builder(target)
    freestanding = target.harness.libc == "freestanding"
    cc = freestanding_programs(target)[0] if freestanding else compiler(target)
    if shutil.which(cc) is None:
        raise HarnessError(f"{cc}: not found (the {target.name} harness needs it; run scripts/setup.sh)")
    csources = sorted(paths.HARNESS.glob("*.c"))
    if not csources:
        raise HarnessError(f"{paths.HARNESS}: no harness sources")

    hdir = workdir / "harness"
    hdir.mkdir(parents=True, exist_ok=True)
    builder.log("GEN", hdir / "harness_target.h")
    for name, text in harness_sources(target):
        write_atomic(hdir / name, text.encode())
        if name.endswith(".c"):
            csources.append(hdir / name)

    exe = hdir / "harness"
    if freestanding:
        argv = freestanding_argv(target, hdir, csources, exe)
    else:
        argv = [cc, *HARNESS_CFLAGS, f"-DH_IMAGE_CLASS={target.elf.elf_class}",
                *target.toolchain.harness_cflags, "-I", str(hdir), "-I", str(paths.HARNESS),
                *(str(s) for s in csources), "-o", str(exe)]
    builder.log("HOSTCC", exe, argv)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise HarnessError(f"{cc}: {e.strerror}") from None
    if proc.returncode != 0:
        print(proc.stdout.rstrip(), file=sys.stderr, flush=True)
        raise HarnessError(f"compiling the {target.name} harness failed ({cc} exit {proc.returncode}; "
                           f"its messages are above)")
    return exe


def _build_image(target, outdir, builder):
    from vdsogen.build.image import build_target
    from vdsogen.audit.check import build_validator

    so, _ = build_target(target, outdir, builder=builder, validate=build_validator)
    return so


def _is_test_build(image):
    from vdsogen.audit.rules.notes import test_build
    from vdsogen.elf.reader import ElfImage

    try:
        return test_build(ElfImage(image)) is not None
    except VdsogenError:
        return False    # the harness's own checks say what is wrong with it


def _test_build(target, image, workdir, builder, stream):
    """(target, image) the harness runs.  A test build (N006) is run by the
    harness of the target's test build.  Where qemu-user cannot read the
    spec's counter ([harness] injected_counter), the real build is made and
    checked, its counter read by its words (T002), and the harness runs the
    test build made beside it; an image given must be a test build."""
    if image is not None and _is_test_build(image):
        return target.test_build(), image
    if not target.harness.injected_counter or target.test_counter:
        return target, image
    if image is not None:
        raise HarnessError(f"{image}: not a test build, and the {target.name} harness cannot read its counter under "
                           f"qemu-user: give it a `vdsogen build --test-counter` image (`vdsogen check` verifies "
                           f"the real one's counter read)")
    real = _build_image(target, workdir / "image", builder)
    words = " ".join(f"{w:08x}" for w in target.counter.words)
    print(f"# {real}: the real build; check found its counter read {words} (T002)", file=stream, flush=True)
    test = target.test_build()
    return test, _build_image(test, workdir / "test-image", builder)


SUMMARY = re.compile(r"(\d+) passed, (\d+) failed(?:, (\d+) not run)?")
STOPPED_IN = "# stopped by SIGTERM in "


class Outcome:
    """What one harness run printed: check names by verdict, and its summary."""

    def __init__(self):
        self.checks = {}       # name -> [verdict ("passed", "failed", "not run"), message], in order
        self.diagnostics = []  # the "#" lines
        self.layout = None     # the line saying which data-page layout the run played
        self.passed = []
        self.failed = {}       # name -> detail of its (first) FAIL line
        self.fail_lines = 0
        self.not_run = []      # groups and steps a fatal failure left out
        self.summary = None    # (passed, failed)
        self.summary_not_run = 0
        self.stopped_in = None  # the check or group SIGTERM stopped
        self.last = None       # the check that reported last
        self.timed_out = False  # stopped at the driver's timeout
        self.other = []        # lines that are none of the above

    def feed(self, line):
        if line.startswith("ok "):
            self.last = line[3:].strip()
            self.passed.append(self.last)
            self.checks.setdefault(self.last, ["passed", ""])
        elif line.startswith("FAIL "):
            name, _, detail = line[5:].partition(": ")
            self.last = name.strip()
            self.failed.setdefault(self.last, detail)
            self.fail_lines += 1
            if self.checks.get(self.last, ["passed"])[0] == "passed":
                self.checks[self.last] = ["failed", detail]
        elif line.startswith("not run "):
            name, _, why = line[8:].partition(": ")
            self.not_run.append(name.strip())
            self.checks.setdefault(name.strip(), ["not run", why])
        elif line.startswith(STOPPED_IN):
            self.stopped_in = line[len(STOPPED_IN):].strip()
            self.diagnostics.append(line)
        elif line.startswith("#"):
            self.diagnostics.append(line)
        elif not line.strip():
            pass
        elif m := SUMMARY.fullmatch(line.strip()):
            self.summary = (int(m[1]), int(m[2]))
            self.summary_not_run = int(m[3] or 0)
        else:
            self.other.append(line)

    @property
    def consistent(self):
        return (self.summary == (len(self.passed), self.fail_lines)
                and self.summary_not_run == len(self.not_run))


_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Run in a harness's child before exec: SIGKILL it when vdsogen dies,
    however vdsogen dies (the harness runs in a process group of its own,
    which a signal to vdsogen's does not reach)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# How the image treats the aux clocks of a v6.17+ layout (`vdsogen test --aux-clocks`):
# "served" from their records (a kernel with CONFIG_POSIX_AUX_CLOCKS, and
# vdsogen's own images), "none" (a kernel built without it: every aux id makes
# the syscall).  Unsaid, the harness tells by the image's answer for AUX0.
AUX_CLOCKS = ("served", "none")


# What Linux's own vDSO of each ABI does where vdsogen's images promise more (linux.toml).
LINUX_FACTS = Path(__file__).with_name("linux.toml")
LINUX_READS = ("syscall", "counter", "zero")


def linux_behaviour(abi: str) -> dict[str, str]:
    """{"unserved": ..., "none": ...}: how the Linux vDSO of ABI `abi` treats
    a clock mode its counter does not serve, and mode NONE (linux.toml)."""
    from vdsogen.spec.toml import Table, load_toml

    top = Table(LINUX_FACTS, load_toml(LINUX_FACTS))
    abis = top.table("abi")
    if not abis.has(abi):
        abis.error(abi, f"no entry for the {abi} ABI")
    t = abis.table(abi)
    out = {key: t.str(key, choices=LINUX_READS) for key in ("unserved", "none")}
    t.done()
    return out


def is_vdsogens(image) -> bool:
    """The image is one vdsogen built: it carries vdsogen's data-pages note."""
    from vdsogen.audit.rules.notes import LAYOUT_NOTE
    from vdsogen.elf.reader import ElfImage

    try:
        return any((n.name, n.type) == LAYOUT_NOTE for n in ElfImage(str(image)).notes)
    except VdsogenError:
        return True     # the harness's own checks say what is wrong with it


def _harness_env(target, image, aux_clocks=None, soak=0):
    """The harness's environment: an image not built for BTI (a Linux image
    of a kernel without BTI) is mapped unguarded, as such a kernel maps it,
    whatever the spec builds ([harness] bti); the aux clocks' treatment, when
    said (VDSOGEN_HARNESS_AUX); how long the racing writers run, when longer
    than their 100 ms (VDSOGEN_HARNESS_SOAK, seconds).  An image vdsogen did
    not build (a kernel's) is held to what its kernel's vDSO does where
    vdsogen's promise more (linux_behaviour: VDSOGEN_HARNESS_LINUX_UNSERVED and
    _NONE; the unserved mode one its kernel's counter read does not serve,
    _UNSERVED_MODE) and may carry any soname of its ABI
    (VDSOGEN_HARNESS_SONAMES, from the ABI catalogue: Linux 6.1's s390x image
    is linux-vdso64.so.1)."""
    env = {}
    labels = _kernel_labels(target, image)
    if labels:
        env["VDSOGEN_HARNESS_LABELS"] = labels
    if not is_vdsogens(image):
        linux = linux_behaviour(target.abi.name)
        env["VDSOGEN_HARNESS_LINUX_UNSERVED"] = linux["unserved"]
        env["VDSOGEN_HARNESS_LINUX_NONE"] = linux["none"]
        env["VDSOGEN_HARNESS_SONAMES"] = " ".join(target.abi.sonames)
        env["VDSOGEN_HARNESS_KERNELS"] = "1"       # a kernel's image: see harness/image.c
        if target.counter is not None:
            # The first mode the ABI's counter read (its fragment's contract, as
            # Linux's) serves none of: MIPS's reads the GIC in mode 2, whatever the spec serves.
            env["VDSOGEN_HARNESS_LINUX_UNSERVED_MODE"] = str(1 + max(m.number for m in target.counter.arch_modes))
    if aux_clocks is not None:
        env["VDSOGEN_HARNESS_AUX"] = aux_clocks
    if soak:
        env["VDSOGEN_HARNESS_SOAK"] = str(soak)
    if target.harness.bti:
        from vdsogen.audit.rules.notes import built_for_bti
        from vdsogen.elf.reader import ElfImage
        if not built_for_bti(ElfImage(str(image))):
            env["VDSOGEN_HARNESS_UNGUARDED"] = "1"
    return {**os.environ, **env} if env else None


def _kernel_labels(target, image):
    """"NAME=OFFSET ..." of the ABI's kernel labels inside entry points
    (abi.toml kernel_labels) that the unstripped image, or vdso.so.dbg of the
    same build beside it, defines: harness/checks-futex.c holds the robust-
    futex unlock's critical section to them.  "" when there is none (a
    stripped image of Linux's: the harness then checks the window it sees)."""
    from vdsogen.elf.consts import NT_GNU_BUILD_ID
    from vdsogen.elf.reader import ElfImage

    def build_id(img):
        return next((bytes(n.desc) for n in img.notes if n.name == "GNU" and n.type == NT_GNU_BUILD_ID), None)

    img = ElfImage(str(image))
    dbg_path = Path(image).with_name(Path(image).name + ".dbg")
    if not img.symtab and dbg_path.is_file():
        dbg = ElfImage(str(dbg_path))
        img = dbg if build_id(dbg) == build_id(img) else img
    base = min((s.vaddr for s in img.loads), default=0)
    names = {k.name for k in target.abi.kernel_labels}
    return " ".join(f"{s.name}={s.value - base:#x}" for s in img.symtab if s.defined and s.name in names)


def _aux_clocks(target, aux_clocks, built):
    """The aux clocks' treatment to tell the harness: as asked, else "served"
    for an image vdsogen built here (its images serve them), else None (the
    harness tells)."""
    aux = target.datapage.layout.aux_clocks if target.datapage else 0
    if aux_clocks is not None:
        if aux_clocks not in AUX_CLOCKS:
            raise HarnessError(f"--aux-clocks={aux_clocks}: not one of {', '.join(AUX_CLOCKS)}")
        if not aux:
            raise HarnessError(f"--aux-clocks={aux_clocks}: {target.path} has no aux clocks"
                               + (f" (layout {target.datapage.layout.name})" if target.datapage else
                                  " (no time data)"))
        return aux_clocks
    return "served" if aux and built else None


def _lines(pipe, out):
    """Put each line of pipe on the queue out, then None."""
    for line in pipe:
        out.put(line)
    out.put(None)


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def run_harness(target, exe, image, builder=None, stream=None, timeout=RUN_TIMEOUT, bench=False,
                aux_clocks=None, soak=0):
    """Run a built harness on image, relaying its lines; returns (exit status, Outcome).

    The harness runs in a process group of its own.  After `timeout` seconds
    it gets SIGTERM (it then names the check it was running), then SIGKILL
    after TERM_GRACE: the whole group goes, and a last FAIL line names the
    check.  With `bench`, the harness times calls instead of checking them.
    `aux_clocks` (AUX_CLOCKS) says how the image treats aux clocks.  An
    image its kernel patches before mapping it (arm64's and s390's
    alternatives: vdsogen/harness/alternatives.py) runs patched, as that kernel on the
    harness's CPU maps it, from a scratch copy; a first line says what was
    patched."""
    from vdsogen.harness import alternatives

    builder = builder or Builder(target)
    stream = stream or sys.stdout
    image = Path(image)
    if not image.is_file():
        raise HarnessError(f"{image}: no such image")
    booted = alternatives.boot(image)
    if booted is None:
        return _run_mapped(target, exe, image, image, builder, stream, timeout, bench, aux_clocks, soak)
    print(booted.line, file=stream, flush=True)
    with scratch_dir("booted") as tmp:
        mapped = Path(tmp) / image.name
        mapped.write_bytes(booted.data)
        rc, outcome = _run_mapped(target, exe, image, mapped, builder, stream, timeout, bench, aux_clocks, soak)
    outcome.diagnostics.insert(0, booted.line)
    return rc, outcome


def _run_mapped(target, exe, image, mapped, builder, stream, timeout, bench, aux_clocks, soak):
    """run_harness on `image`, whose bytes the harness maps from `mapped`."""
    argv = [*runner(target), *qemu_options(target), str(exe), *(["--bench"] if bench else []), str(mapped.resolve())]
    builder.log("TEST", image, argv)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True, preexec_fn=die_with_parent,
                                env=_harness_env(target, image, aux_clocks, soak))
    except OSError as e:
        raise HarnessError(f"{argv[0]}: cannot start: {e.strerror}") from None
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True)
    reader.start()
    outcome = Outcome()
    deadline = time.monotonic() + timeout
    timed_out = eof = False
    try:
        while not eof:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                if timed_out:
                    break
                # Out of time: SIGTERM (the harness names its check), SIGKILL a little later.
                timed_out = True
                _signal_group(proc, signal.SIGTERM)
                deadline = time.monotonic() + TERM_GRACE
                continue
            if line is None:
                eof = True
            else:
                line = line.rstrip("\n")
                print(line, file=stream, flush=True)
                outcome.feed(line)
        if not timed_out:
            try:
                rc = proc.wait(timeout=max(TERM_GRACE, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        if timed_out:
            _signal_group(proc, signal.SIGKILL)
            rc = proc.wait()
    finally:
        # Not reaped until here, so the group id still names the harness's group.
        if proc.returncode is None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        reader.join(TERM_GRACE)
        if not reader.is_alive():      # else a process outside the group still holds the pipe
            proc.stdout.close()
    if timed_out:
        where = (f"FAIL {outcome.stopped_in}: " if outcome.stopped_in else
                 f"FAIL harness: after {outcome.last}, " if outcome.last else "FAIL harness: ")
        line = f"{where}no answer within {timeout:g} s (--timeout={timeout:g}); the {target.name} harness was stopped"
        print(line, file=stream, flush=True)
        outcome.feed(line)
        outcome.timed_out = True
    return rc, outcome


def _verdict(rc, outcome, stream):
    """0 when the run was complete and clean, else 1 (with a last FAIL line saying why)."""
    problem = None
    if outcome.timed_out:
        return 1
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        problem = f"the harness was killed by {name}"
    elif outcome.summary is None:
        problem = f"the harness exited with status {rc} without a summary line"
    elif not outcome.consistent:
        problem = (f"the summary says {outcome.summary[0]} passed, {outcome.summary[1]} failed, "
                   f"but {len(outcome.passed)} ok and {outcome.fail_lines} FAIL lines came")
    elif rc != 0 and not outcome.failed:
        problem = f"the harness exited with status {rc}"
    if problem:
        print(f"FAIL harness: {problem}", file=stream, flush=True)
        outcome.checks.setdefault("harness", ["failed", problem])
        return 1
    return 0 if rc == 0 and not outcome.failed else 1


def run_tests(target, image=None, workdir=None, *, builder=None, stream=None, timeout=RUN_TIMEOUT,
              bench=False, aux_clocks=None, layout=None, soak=0):
    """`vdsogen test`: build the harness (and an image when none is given), run, report.

    Returns 0 when every check passed, 1 otherwise.  A harness that cannot be
    built or started raises HarnessError.  With `bench`, the harness times
    clock_gettime through the image and through the syscall instead.
    `aux_clocks` (AUX_CLOCKS): how the image treats aux clocks.  `layout`
    names the data-page layout to play; else an image's Linux version note
    picks it (vdsogen/harness/layouts.py), and the run says which.  `soak`:
    seconds each racing writer runs (seqcount.concurrent and the clock
    modes' pages), on top of which the timeout grows.
    """
    result = run_tests_full(target, image, workdir, builder=builder, stream=stream, timeout=timeout,
                            bench=bench, aux_clocks=aux_clocks, layout=layout, soak=soak)
    return result[0]


def run_tests_full(target, image=None, workdir=None, *, builder=None, stream=None, timeout=RUN_TIMEOUT,
                   bench=False, aux_clocks=None, layout=None, soak=0):
    """Like run_tests, but returns (status, Outcome) for callers that look at single checks."""
    from vdsogen.harness import layouts

    stream = stream or sys.stdout
    builder = builder or Builder(target)     # progress on standard error, the checks on `stream`
    if image is not None and not Path(image).is_file():
        raise HarnessError(f"{image}: no such image")
    if target.datapage is None and layout is not None:
        raise HarnessError(f"--layout={layout}: {target.path} has no data pages (no time data)")
    choice = layouts.choose(target, image, layout) if target.datapage else None
    if choice is not None:
        target = choice.target
        print(choice.line, file=stream, flush=True)
    aux_clocks = _aux_clocks(target, aux_clocks, built=image is None)
    if target.harness.booted:
        return _booted_only(target, image, workdir, builder, stream)
    runner(target)   # a missing qemu is found before anything builds
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = stack.enter_context(scratch_dir(f"test-{target.name}"))
        # Each racing writer (the time page's, each clock mode's page's) soaks in turn.
        timeout += soak * (1 + (len(target.counter.modes) if target.counter else 0))
        rc, outcome = _run_in(target, image, Path(workdir), builder, stream, timeout, bench, aux_clocks, soak)
        outcome.layout = choice.line if choice is not None else None
        return rc, outcome


def booted_only_reason(target) -> str:
    """Why `vdsogen test` does not run the harness of a booted-only target
    ([harness] booted), and where it runs."""
    return (f"qemu-user runs no code of the {target.abi.name} ABI: the harness built here runs on a booted "
            f"kernel, scripts/kernel-harness.sh {target.name}")


def _booted_only(target, image, workdir, builder, stream):
    """A booted-only target ([harness] booted): the image is built (and
    validated) when none is given and the harness is built into workdir
    (WORKDIR/harness/harness, which scripts/kernel-harness.sh boots with),
    but nothing runs here: one "not run harness" line and a summary of 0
    passed, 0 failed, 1 not run; status 1, since nothing was tested."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = stack.enter_context(scratch_dir(f"test-{target.name}"))
        workdir = Path(workdir)
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            if image is None:
                _build_image(target, workdir / "image", builder)
            build_harness(target, workdir, builder)
        except OSError as e:
            raise HarnessError(f"{e.filename or 'harness'}: {e.strerror}") from None
    outcome = Outcome()
    for line in (f"not run harness: {booted_only_reason(target)}", "0 passed, 0 failed, 1 not run"):
        print(line, file=stream, flush=True)
        outcome.feed(line)
    return 1, outcome


def _run_in(target, image, workdir, builder, stream, timeout, bench, aux_clocks, soak):
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        target, image = _test_build(target, image, workdir, builder, stream)
        if image is None:
            image = _build_image(target, workdir / "image", builder)
        exe = build_harness(target, workdir, builder)
        rc, outcome = run_harness(target, exe, image, builder, stream, timeout, bench, aux_clocks, soak)
        if bench:
            return (0 if rc == 0 else 1), outcome
        return _verdict(rc, outcome, stream), outcome
    except OSError as e:
        raise HarnessError(f"{e.filename or 'harness'}: {e.strerror}") from None


__all__ = ["build_harness", "run_harness", "run_tests", "run_tests_full", "harness_sources", "arch_checks",
           "AUX_CLOCKS",
           "function_wiring",
           "Outcome", "compiler", "runner", "qemu_options", "booted_only_reason"]
