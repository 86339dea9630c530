"""vdsogen's command line.

Conventions (README.rst, "Command-line conventions"): results on standard output,
progress and errors on standard error; every command that reports takes
--format=json, a document whose "schema" is vdsogen-COMMAND/1; -q and -v
where a command builds or reports; exit 0 ok, 1 findings or failures, 2 usage
or unusable input (a missing file is 2 everywhere).
"""

import argparse
import io
import json
import math
import os
import signal
import sys
import threading

from vdsogen import __version__
from vdsogen.errors import SpecError, SpecErrors, VdsogenError


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


def _emit_json(doc):
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _need_image(path):
    """--image=FILE names an input: missing, it is unusable input (exit 2) like every other."""
    if path is not None and not os.path.isfile(path):
        raise VdsogenError(f"{path}: no such image")


def _spec_errors(name, specs, err):
    """The problems of one bad spec as (file, key, message) dicts."""
    from vdsogen.spec.model import spec_path

    errors = err.errors if isinstance(err, SpecErrors) else [err]
    return [{"file": e.path, "key": e.key, "message": e.message} if isinstance(e, SpecError)
            else {"file": str(spec_path(name, specs)), "key": None, "message": str(e)} for e in errors]


def cmd_list(args):
    """The good specs on standard output; each bad one's file and error on
    standard error (and in the JSON document); exit 1 when any was bad."""
    from vdsogen.spec.model import list_targets, spec_path

    rows, bad = [], []
    for name in list_targets(args.specs):
        try:
            t = load_target(name, args.specs)
        except VdsogenError as e:
            bad += [{"target": name, **problem} for problem in _spec_errors(name, args.specs, e)]
            continue
        rows.append((name, t.soname, ", ".join(t.versions), t.description, str(spec_path(name, args.specs))))
    for b in bad:
        where = f"{b['file']}: {b['key']}" if b["key"] else b["file"]
        print(f"vdsogen: {where}: {b['message']}", file=sys.stderr)
    if args.format == "json":
        _emit_json({"schema": "vdsogen-list/1",
                    "targets": [{"name": r[0], "soname": r[1], "versions": r[2].split(", ") if r[2] else [],
                                 "description": r[3], "spec": r[4]} for r in rows],
                    "bad": bad})
    else:
        widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else []
        for r in rows:
            print("  ".join(f"{c:<{w}}" for c, w in zip(r, widths)), r[3])
    return 1 if bad else 0


def cmd_build(args):
    from vdsogen.build.image import build_images

    def validate(target, so, dbg):
        from vdsogen.audit.check import build_validator
        return build_validator(target, so, dbg)

    # Targets whose inputs did not change are left alone (nothing written);
    # the others are all loaded and rendered before anything is written.
    report: list = []
    status = build_images(args.arch, args.out, specs=args.specs, emit=args.emit, emit_name=args.emit_name,
                          kconfig=args.kconfig, depfile_path=args.depfile, validate=validate,
                          test_counter=args.test_counter, report=report)
    if args.format == "json":
        _emit_json({"schema": "vdsogen-build/1", "targets": report, "depfile": args.depfile,
                    "exit_code": status})
    return status


def cmd_check(args):
    from vdsogen.audit.check import check_file

    return check_file(load_target(args.arch, args.specs), args.file, fmt=args.format, quiet=args.quiet)


def cmd_audit(args):
    from vdsogen.audit.run import main

    if not args.files and not args.live:
        print("vdsogen audit: nothing to audit: give FILE... or --live", file=sys.stderr)
        return 2
    return main(args.files, live=args.live, arch=args.arch, profile=args.profile, fmt=args.format,
                verbose=args.verbose, quiet=args.quiet)


def cmd_diff(args):
    from vdsogen.audit.diff import main

    return main(args.old, args.new, fmt=args.format)


def _rule_dict(r):
    from vdsogen.audit import rules

    return {"id": r.id, "reason": r.reason, "severity": {p: r.severity[p] for p in rules.PROFILES},
            "check": r.check, "in_audit": r.in_audit, "explain": r.explain, "relief": r.relief}


def cmd_rules(args):
    from vdsogen.audit import rules

    if args.id:
        r = rules.get_rule(args.id)
        if r is None:
            print(f"vdsogen: no rule {args.id!r} (`vdsogen rules` lists them)", file=sys.stderr)
            return 2
    if args.format == "json":
        chosen = [r] if args.id else rules.all_rules()
        _emit_json({"schema": "vdsogen-rules/1", "profiles": list(rules.PROFILES),
                    "rules": [_rule_dict(x) for x in chosen]})
        return 0
    if args.id:
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


class _QuietLines(io.TextIOBase):
    """`vdsogen test -q`: of the harness's lines, only the FAIL lines and the summary pass."""

    def __init__(self, out):
        self._out = out
        self._partial = ""

    def write(self, text):
        from vdsogen.harness.driver import SUMMARY

        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.startswith("FAIL ") or SUMMARY.fullmatch(line.strip()):
                self._out.write(line + "\n")
        return len(text)

    def flush(self):
        self._out.flush()


def _test_document(args, status, outcome):
    checks = [{"name": name, "result": verdict, "message": message}
              for name, (verdict, message) in outcome.checks.items()]
    totals = {k.replace(" ", "_"): sum(c["result"] == k for c in checks) for k in ("passed", "failed", "not run")}
    layout = outcome.layout[2:] if outcome.layout and outcome.layout.startswith("# ") else outcome.layout
    return {"schema": "vdsogen-test/1", "target": args.arch, "image": args.image, "layout": layout,
            "exit_code": status, "totals": totals, "checks": checks,
            "diagnostics": [d[2:] if d.startswith("# ") else d for d in outcome.diagnostics],
            "other": outcome.other}


def _ktap(status, outcome):
    """KTAP version 1: the plan, then one result line per check; "not ok N
    NAME # not run: WHY" for a check that did not run (no SKIP directive)."""
    out = ["KTAP version 1", f"1..{len(outcome.checks)}"]
    if outcome.layout:
        out.append(outcome.layout)
    for n, (name, (verdict, message)) in enumerate(outcome.checks.items(), 1):
        name = name.replace("#", "_")
        message = " ".join(message.split())
        if verdict == "passed":
            out.append(f"ok {n} {name}")
        elif verdict == "not run":
            out.append(f"not ok {n} {name} # not run: {message or 'a fatal failure stopped the run'}")
        else:
            out.append(f"not ok {n} {name}" + (f" # {message}" if message else ""))
    counts = [sum(v == k for v, _ in outcome.checks.values()) for k in ("passed", "failed", "not run")]
    out.append(f"# {counts[0]} passed, {counts[1]} failed, {counts[2]} not run; exit {status}")
    return "\n".join(out) + "\n"


def cmd_test(args):
    from vdsogen.harness.driver import RUN_TIMEOUT, run_tests_full

    if args.bench and args.format != "text":
        print(f"vdsogen test: --bench prints the harness's raw lines: no --format={args.format} "
              f"(`vdsogen bench --format=json` makes the document)", file=sys.stderr)
        return 2
    _need_image(args.image)
    target = load_target(args.arch, args.specs)
    stream = (io.StringIO() if args.format != "text" else
              _QuietLines(sys.stdout) if args.quiet else sys.stdout)
    status, outcome = run_tests_full(target, args.image, workdir=args.workdir, bench=args.bench, stream=stream,
                                     timeout=args.timeout or RUN_TIMEOUT, aux_clocks=args.aux_clocks,
                                     layout=args.layout, soak=args.soak)
    if args.format == "json":
        _emit_json(_test_document(args, status, outcome))
    elif args.format == "ktap":
        sys.stdout.write(_ktap(status, outcome))
    return status


def cmd_run(args):
    from vdsogen.run import run

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    return run(load_target(args.arch, args.specs), program, image=args.image, syscall_counts=args.syscall_counts,
               verbose=args.verbose)


def cmd_bench(args):
    from vdsogen.bench import run_bench
    from vdsogen.bench.run import RUN_TIMEOUT

    _need_image(args.image)
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


def _format_option(s, command, kinds=("text", "json"), text="the report as text"):
    s.add_argument("--format", choices=kinds, default="text",
                   help=f"{text} (the default), or json: one document on standard output whose \"schema\" "
                        f"is vdsogen-{command}/1" + (", or ktap: KTAP version 1, one result line a check"
                                                     if "ktap" in kinds else ""))


def _verbosity_options(s, quiet, verbose):
    g = s.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help=quiet)
    g.add_argument("-v", "--verbose", action="store_true", help=verbose)


BUILD_QUIET = "no progress lines (\"  CC ...\"): only errors, on standard error"
BUILD_VERBOSE = "each command in full instead of its progress line, as V=1 (on standard error)"


def _arch_option(s):
    s.add_argument("--arch", required=True, metavar="T", help="the target: a spec's name (`vdsogen list`)")


def parser():
    p = argparse.ArgumentParser(prog="vdsogen", description="Generate, validate and test Linux vDSO images.")
    p.add_argument("--version", action="version", version=f"vdsogen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("list", help="list the targets in specs/ (or in --specs=DIR)",
                       description="List the targets whose specs load; each spec that does not is named on "
                                   "standard error with its error, and the exit status is then 1.")
    _specs_option(s)
    _format_option(s, "list", text="one target a line: name, soname, version nodes, description")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("build", help="build vDSO images")
    s.add_argument("--arch", required=True, type=_targets, metavar="T[,T...]",
                   help="the targets to build (spec names, `vdsogen list`)")
    s.add_argument("--out", required=True, metavar="DIR",
                   help="where the image goes (vdso.so, vdso.so.dbg); with several targets, into DIR/T")
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
    _format_option(s, "build", text="nothing on standard output")
    _verbosity_options(s, BUILD_QUIET, BUILD_VERBOSE)
    s.set_defaults(func=cmd_build)

    s = sub.add_parser("check", help="validate an image against its target spec")
    _arch_option(s)
    _format_option(s, "check", text="one line a finding and consumer, then the counts")
    s.add_argument("-q", "--quiet", action="store_true",
                   help="only the error findings and the counts line")
    s.add_argument("file", metavar="FILE", help="the image (.so or unstripped .so.dbg)")
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
    _format_option(s, "audit", text="one line a finding and consumer, then each image's counts")
    _verbosity_options(s, "of each image, only the error findings and the counts line",
                       "list every consumer lookup")
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
    _format_option(s, "diff", text="one change a line, the breaking ones first")
    s.set_defaults(func=cmd_diff)

    s = sub.add_parser("rules", help="list the validator rules, or explain one")
    s.add_argument("id", nargs="?", metavar="ID", help="the rule to explain (e.g. H001); default: list them all")
    _format_option(s, "rules", text="a table, or one rule explained")
    s.set_defaults(func=cmd_rules)

    s = sub.add_parser("test", help="run an image in the harness")
    _arch_option(s)
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
    _format_option(s, "test", kinds=("text", "json", "ktap"),
                   text="the harness's lines as they come (ok NAME, FAIL NAME: WHY, not run NAME: WHY) and its "
                        "summary")
    _verbosity_options(s, BUILD_QUIET + "; of the harness's lines only the FAIL lines and the summary",
                       BUILD_VERBOSE)
    _specs_option(s)
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("bench", help="time an image against the running kernel's vDSO and the syscall",
                       description="ns per call of every export and clock class through the image, the "
                                   "running kernel's vDSO (natively) and the raw syscall, with the ordered "
                                   "counter read alone as the floor, in interleaved batches pinned to one "
                                   "CPU; and each export's hot-path instruction count next to real Linux "
                                   "images of the same ABI.  A benchmark: it passes or fails nothing.")
    _arch_option(s)
    s.add_argument("--image", metavar="FILE", help="image to time (default: build one)")
    _format_option(s, "bench", text="a table")
    _verbosity_options(s, BUILD_QUIET, BUILD_VERBOSE)
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
    _arch_option(s)
    s.add_argument("--image", metavar="FILE", help="image to use (default: build one); it must pass check, and be "
                   "a `build --test-counter` image where qemu-user cannot read the counter")
    s.add_argument("--syscall-counts", metavar="FILE",
                   help="count the clock syscalls the program's processes make (a seccomp filter natively, "
                        "qemu's syscall log under qemu-user) and write them to FILE, one NAME CLOCK COUNT a line")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="under qemu-user, say on stderr where the clocks come from: the host kernel's own "
                        "timekeeping (where the target's counter is the host's TSC and the host keeps time with "
                        "it), else the discipline against the host's clocks, and why; and where a dynamically "
                        "linked program's libraries come from (QEMU_LD_PREFIX, else Debian's cross sysroot)")
    _specs_option(s)
    s.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARG...]",
                   help="the program to run and its arguments")
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


def _verbosity(args):
    """-q and -v of the commands that build: the progress lines' level (None: V= decides)."""
    if args.func in (cmd_audit, cmd_check):     # their -q and -v are the report's
        return None
    return "quiet" if getattr(args, "quiet", False) else "verbose" if getattr(args, "verbose", False) else None


def main(argv=None):
    from vdsogen.build.toolchain import reset_verbosity, set_verbosity

    args = parser().parse_args(argv)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    token = set_verbosity(_verbosity(args))
    try:
        return _dispatch(args)
    finally:
        reset_verbosity(token)
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
