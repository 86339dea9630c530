"""vdsogen's command line."""

import argparse
import os
import sys
from pathlib import Path

from vdsogen import __version__
from vdsogen.errors import VdsogenError
from vdsogen.spec.model import list_targets, load_target


def _targets(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no target given")
    return names


def cmd_list(args):
    for name in list_targets(args.specs):
        t = load_target(name, args.specs)
        print(f"{name:<10} {t.soname:<18} {', '.join(t.versions):<14} {t.description}")
    return 0


def cmd_build(args):
    from vdsogen.build.image import build_target
    from vdsogen.audit.check import build_validator
    from vdsogen.gen.render import sources

    # Every spec is loaded and rendered before anything is written.
    targets = [load_target(n, args.specs) for n in args.arch]
    rendered = [(t, sources(t)) for t in targets]
    out = Path(args.out)
    for t, files in rendered:
        outdir = out / t.name if len(targets) > 1 else out
        build_target(t, outdir, validate=build_validator, files=files)
    return 0


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
        return 0
    print(f"{'ID':<5} {'linux':<8} {'qemu-user':<9} {'strict':<7} reason")
    for r in rules.all_rules():
        sev = [r.severity[p] for p in rules.PROFILES]
        mark = "" if r.in_audit else " [check only]"
        print(f"{r.id:<5} {sev[0]:<8} {sev[1]:<9} {sev[2]:<7} {r.reason}{mark}")
    return 0


def cmd_test(args):
    from vdsogen.harness.driver import run_tests

    return run_tests(load_target(args.arch, args.specs), args.image, workdir=args.workdir, bench=args.bench)


def _profiles():
    from vdsogen.audit.rules import PROFILE_HELP
    return PROFILE_HELP


def _abi_names():
    from vdsogen.spec import abi
    try:
        return abi.names()
    except VdsogenError:
        return []


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
    s.add_argument("--arch", choices=_abi_names(), metavar="ABI",
                   help="the image's ABI, instead of detecting it: " + ", ".join(_abi_names()))
    s.add_argument("--profile", choices=_profiles(), default="linux",
                   help="what counts as an error: " + "; ".join(f"{k}: {v}" for k, v in _profiles().items()))
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.add_argument("-v", "--verbose", action="store_true", help="list every consumer lookup")
    s.set_defaults(func=cmd_audit)

    s = sub.add_parser("rules", help="list the validator rules, or explain one")
    s.add_argument("id", nargs="?", metavar="ID")
    s.set_defaults(func=cmd_rules)

    s = sub.add_parser("test", help="run an image in the harness")
    s.add_argument("--arch", required=True, metavar="T")
    s.add_argument("--image", metavar="FILE", help="image to test (default: build one)")
    s.add_argument("--workdir", metavar="DIR", help="where to build (default: a temporary directory)")
    s.add_argument("--bench", action="store_true",
                   help="time clock_gettime through the image and through the syscall instead of checking")
    _specs_option(s)
    s.set_defaults(func=cmd_test)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.func(args)
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
