"""vdsogen's command line."""

import argparse
import math
import os
import signal
import sys
import threading

from vdsogen import __version__
from vdsogen.errors import SpecErrors, VdsogenError


def load_target(*args, **kwargs):
    # Imported on first use: a `vdsogen build` with nothing to do loads no spec.
    from vdsogen.spec.model import load_target as load
    return load(*args, **kwargs)


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {n}")
    return n


def _seconds(text):
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(n) or n <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0: {text!r}")
    return n


def _timeout_option(s, default, what):
    """--timeout=SECONDS; `default` computes the default on first use (in --help)."""
    option = s.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                            help=f"stop {what} after SECONDS (default %(seconds)s; the build is not counted): "
                                 f"its process group is killed")
    option.seconds = _Later(default)


def _targets(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no target given")
    return names


def cmd_list(args):
    from vdsogen.spec.model import list_targets

    rows = []
    for name in list_targets(args.specs):
        t = load_target(name, args.specs)
        rows.append((name, t.soname, ", ".join(t.versions), t.description))
    widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else []
    for r in rows:
        print("  ".join(f"{c:<{w}}" for c, w in zip(r, widths)), r[3])
    return 0


def cmd_build(args):
    from vdsogen.build.image import build_images

    def validate(target, so, dbg):
        from vdsogen.audit.check import build_validator
        return build_validator(target, so, dbg)

    # Targets whose inputs did not change are left alone (nothing written);
    # the others are all loaded and rendered before anything is written.
    return build_images(args.arch, args.out, specs=args.specs, emit=args.emit, emit_name=args.emit_name,
                        kconfig=args.kconfig, depfile_path=args.depfile, validate=validate,
                        test_counter=args.test_counter)


def cmd_check(args):
    from vdsogen.audit.check import check_file

    return check_file(load_target(args.arch, args.specs), args.file, fmt=args.format)


def cmd_audit(args):
    from vdsogen.audit.run import main

    if not args.files and not args.live:
        print("vdsogen audit: nothing to audit: give FILE... or --live", file=sys.stderr)
        return 2
    return main(args.files, live=args.live, arch=args.arch, profile=args.profile, fmt=args.format,
                verbose=args.verbose)


def cmd_diff(args):
    from vdsogen.audit.diff import main

    return main(args.old, args.new, fmt=args.format)


def cmd_rules(args):
    from vdsogen.audit import rules

    if args.id:
        r = rules.get_rule(args.id)
        if r is None:
            print(f"vdsogen: no rule {args.id!r} (`vdsogen rules` lists them)", file=sys.stderr)
            return 2
        print(f"{r.id}: {r.reason}")
        print()
        print("severity: " + ", ".join(f"{p} {r.severity[p]}" for p in rules.PROFILES)
              + (f"; {r.check} when `vdsogen check` checks vdsogen's own images" if r.check else ""))
        print("runs in:  " + ("audit and check" if r.in_audit else "check only (compares with the target spec)"))
        print()
        print(r.explain)
        if r.relief:
            print()
            print("lowered: " + r.relief)
        return 0
    print(f"{'ID':<5} {'linux':<8} {'qemu-user':<9} {'strict':<7} reason")
    for r in rules.all_rules():
        sev = [r.severity[p] for p in rules.PROFILES]
        mark = "" if r.in_audit else " [check only]"
        print(f"{r.id:<5} {sev[0]:<8} {sev[1]:<9} {sev[2]:<7} {r.reason}{mark}")
    return 0


def _soak_seconds(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds from 0 to 86400")
    return value


def cmd_test(args):
    from vdsogen.harness.driver import RUN_TIMEOUT, run_tests

    return run_tests(load_target(args.arch, args.specs), args.image, workdir=args.workdir, bench=args.bench,
                     timeout=args.timeout or RUN_TIMEOUT, aux_clocks=args.aux_clocks, layout=args.layout,
                     soak=args.soak)


def cmd_run(args):
    from vdsogen.run import run

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    return run(load_target(args.arch, args.specs), program, image=args.image, syscall_counts=args.syscall_counts)


def cmd_bench(args):
    from vdsogen.bench import run_bench
    from vdsogen.bench.run import RUN_TIMEOUT

    return run_bench(load_target(args.arch, args.specs), args.image, workdir=args.workdir, fmt=args.format,
                     rounds=args.rounds, batch_us=args.batch_us, cpu=args.cpu, references=args.reference,
                     timeout=args.timeout or RUN_TIMEOUT)


def _profiles():
    from vdsogen.audit.rules import PROFILE_HELP
    return PROFILE_HELP


def _abi_names():
    from vdsogen.spec import abi
    try:
        return abi.names()
    except VdsogenError:
        return []


class _Later:
    """A value computed on first use.  The audit options show the ABI
    catalogue and the rule profiles in their choices and help, which costs
    more than a `vdsogen build` with nothing to do may take (0.2 s)."""

    def __init__(self, compute):
        self._compute = compute
        self._value = None

    @property
    def value(self):
        if self._value is None:
            self._value = self._compute()
        return self._value

    def __contains__(self, item):
        return item in self.value

    def __iter__(self):
        return iter(self.value)

    def __str__(self):
        return str(self.value)


def _test_timeout():
    from vdsogen.harness.driver import RUN_TIMEOUT
    return RUN_TIMEOUT


def _bench_timeout():
    from vdsogen.bench.run import RUN_TIMEOUT
    return RUN_TIMEOUT


def _specs_option(s):
    s.add_argument("--specs", metavar="DIR",
                   help="a directory of target specs (T.toml), with layouts/ and arch/ARCH/ fragments that "
                        "override or add to vdsogen's own")


def parser():
    p = argparse.ArgumentParser(prog="vdsogen", description="Generate, validate and test Linux vDSO images.")
    p.add_argument("--version", action="version", version=f"vdsogen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("list", help="list the targets in specs/ (or in --specs=DIR)")
    _specs_option(s)
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("build", help="build vDSO images")
    s.add_argument("--arch", required=True, type=_targets, metavar="T[,T...]")
    s.add_argument("--out", required=True, metavar="DIR")
    _specs_option(s)
    s.add_argument("--emit", type=_targets, action="extend", default=[], metavar="KIND[,KIND...]",
                   help="also write what a kernel embeds, each with vdso-offsets.h: c (vdso-image.c), "
                        "incbin (vdso-wrap.S), lds-offsets (vdso-offsets.lds)")
    s.add_argument("--emit-name", default="vdso", metavar="NAME",
                   help="prefix of the embedded identifiers (default vdso: vdso_start, vdso_offset_SYMBOL)")
    s.add_argument("--depfile", metavar="FILE", help="write the outputs' inputs as a make rule")
    s.add_argument("--kconfig", metavar="FILE",
                   help="a kernel .config: the tick (CONFIG_HZ) and page size come from it, and the "
                        "spec's layout is checked against it")
    s.add_argument("--test-counter", action="store_true",
                   help="build the test variant: its counter read loads a value the test harness injects "
                        "(for ABIs whose counter qemu-user cannot read); `check` shows it as a test build")
    s.set_defaults(func=cmd_build)

    s = sub.add_parser("check", help="validate an image against its target spec")
    s.add_argument("--arch", required=True, metavar="T")
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.add_argument("file", metavar="FILE")
    _specs_option(s)
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("audit", help="judge any vDSO image for glibc, musl, Go and other consumers",
                       description="Audit vDSO images rule by rule and simulate the lookups of glibc, musl, "
                                   "the Go runtime and a DT_HASH-only parser.  Exit 0 without errors, 1 with "
                                   "errors, 2 when an input is unusable.")
    s.add_argument("files", nargs="*", metavar="FILE", help="vDSO images (.so or unstripped .so.dbg)")
    s.add_argument("--live", action="store_true", help="also audit the vDSO mapped into this process")
    s.add_argument("--arch", choices=_Later(_abi_names), metavar="ABI",
                   help="the image's ABI, instead of detecting it: %(choices)s")
    profile = s.add_argument("--profile", choices=_Later(_profiles), default="linux",
                             help="what counts as an error: %(profiles)s")
    profile.profiles = _Later(lambda: "; ".join(f"{k}: {v}" for k, v in _profiles().items()))
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.add_argument("-v", "--verbose", action="store_true", help="list every consumer lookup")
    s.set_defaults(func=cmd_audit)

    s = sub.add_parser("diff", help="what changed between two vDSO images for their users",
                       description="Compare two vDSO images of one ABI: exports, version nodes, soname, "
                                   "e_flags, notes, consumer verdicts, signal trampolines and their CFI, the "
                                   "data offsets each export reads, hot-path instruction counts, sizes.  Exit 1 "
                                   "when a change breaks a consumer (glibc, musl, Go, a DT_HASH-only parser, "
                                   "unwinders, callers of a removed export), 0 otherwise, 2 when an input is "
                                   "unusable or the two are of different ABIs.")
    s.add_argument("old", metavar="OLD", help="the image before (.so or unstripped .so.dbg)")
    s.add_argument("new", metavar="NEW", help="the image after")
    s.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (one change a line, the breaking ones first) or JSON (schema vdsogen-diff/1)")
    s.set_defaults(func=cmd_diff)

    s = sub.add_parser("rules", help="list the validator rules, or explain one")
    s.add_argument("id", nargs="?", metavar="ID")
    s.set_defaults(func=cmd_rules)

    s = sub.add_parser("test", help="run an image in the harness")
    s.add_argument("--arch", required=True, metavar="T")
    s.add_argument("--image", metavar="FILE", help="image to test (default: build one)")
    s.add_argument("--workdir", metavar="DIR", help="where to build (default: a temporary directory)")
    s.add_argument("--bench", action="store_true",
                   help="run the harness's benchmark instead of its checks, printing its raw lines "
                        "(`vdsogen bench` makes the table)")
    _timeout_option(s, _test_timeout, "the harness, naming the check it was running,")
    s.add_argument("--layout", metavar="NAME",
                   help="the data-page layout to play (specs/layouts/NAME.toml), for the image built too; default: "
                        "with --image, the layout of the kernel its Linux version note names, among those of the "
                        "target's ABI; else the spec's")
    s.add_argument("--aux-clocks", choices=("served", "none"),
                   help="how the image treats the aux clocks of a v6.17+ layout: served from their records "
                        "(a kernel with CONFIG_POSIX_AUX_CLOCKS; vdsogen's own images), or none (a kernel built "
                        "without it: every aux id makes the syscall); default: served for an image built here, "
                        "else the image's answer for the enabled AUX0 tells")
    s.add_argument("--soak", type=_soak_seconds, default=0, metavar="SECONDS",
                   help="run each racing writer of the seqcount checks for SECONDS instead of 100 ms, against "
                        "readers of every clock (the timeout grows to match); seqcount.inside.* needs no soak: "
                        "it puts an update inside the read on purpose")
    _specs_option(s)
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("bench", help="time an image against the running kernel's vDSO and the syscall",
                       description="ns per call of every export and clock class through the image, the "
                                   "running kernel's vDSO (natively) and the raw syscall, with the ordered "
                                   "counter read alone as the floor, in interleaved batches pinned to one "
                                   "CPU; and each export's hot-path instruction count next to real Linux "
                                   "images of the same ABI.  A benchmark: it passes or fails nothing.")
    s.add_argument("--arch", required=True, metavar="T")
    s.add_argument("--image", metavar="FILE", help="image to time (default: build one)")
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.add_argument("--workdir", metavar="DIR", help="where to build (default: a temporary directory)")
    s.add_argument("--rounds", type=_positive, default=31, metavar="N",
                   help="rounds of interleaved batches (default 31)")
    s.add_argument("--batch-us", type=_positive, default=500, metavar="US",
                   help="length of one batch in microseconds (default 500)")
    s.add_argument("--cpu", type=int, metavar="N", help="the CPU to pin to (default: the one it starts on)")
    s.add_argument("--reference", action="append", metavar="FILE",
                   help="a real vDSO image of the same ABI to count hot paths in (repeatable; default: "
                        "those under $VDSOGEN_BENCH_REFERENCES, or /var/tmp/vdso-cache)")
    _timeout_option(s, _bench_timeout, "the benchmark")
    _specs_option(s)
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("run", help="run a program with an image as its vDSO",
                       description="Run PROGRAM so that it, and every process it forks or execs, has the "
                                   "image as its vDSO (AT_SYSINFO_EHDR); natively the image sits on the "
                                   "running kernel's data pages, whose layout must be the target's.  "
                                   "PROGRAM `vdsogen-probe` is vdsogen's probe, built for the target.  "
                                   "The exit status is the program's (128+N when signal N killed it).  "
                                   "Natively a ptrace supervisor runs it: a stop signal stops it until SIGCONT "
                                   "(job control works); SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to vdsogen run go "
                                   "on to it; its processes die with the supervisor, and what it leaves running "
                                   "when it ends is killed then.  A process has one tracer: strace and gdb inside "
                                   "vdsogen run fail (strace: ptrace(PTRACE_TRACEME, ...): Operation not "
                                   "permitted; gdb: warning: ptrace: Operation not permitted); perf trace -p PID "
                                   "traces it without ptrace, --syscall-counts counts its clock syscalls.")
    s.add_argument("--arch", required=True, metavar="T")
    s.add_argument("--image", metavar="FILE", help="image to use (default: build one); it must pass check, and be "
                   "a `build --test-counter` image where qemu-user cannot read the counter")
    s.add_argument("--syscall-counts", metavar="FILE",
                   help="count the clock syscalls the program's processes make (a seccomp filter natively, "
                        "qemu's syscall log under qemu-user) and write them to FILE, one NAME CLOCK COUNT a line")
    _specs_option(s)
    s.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARG...]")
    s.set_defaults(func=cmd_run)
    return p


class Terminated(BaseException):
    """SIGTERM or SIGHUP: unwound like ^C, so temporary directories go and
    the harness's process group is stopped on the way out."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, _frame):
    raise Terminated(signum)


def main(argv=None):
    args = parser().parse_args(argv)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _dispatch(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _dispatch(args):
    try:
        return args.func(args)
    except Terminated as e:
        print(f"vdsogen: stopped by {signal.Signals(e.signum).name}", file=sys.stderr)
        return 128 + e.signum
    except SpecErrors as e:
        for err in e.errors:
            print(f"vdsogen: {err}", file=sys.stderr)
        return e.exit_code
    except VdsogenError as e:
        print(f"vdsogen: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `vdsogen rules | head` closed our stdout: not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:
        # A file the user named cannot be used (a directory, no space left...).
        print(f"vdsogen: {e.filename or 'error'}: {e.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
