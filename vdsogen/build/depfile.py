"""Incremental builds: what an image is made from, and --depfile.

A build records in DIR/.vdsogen-state.json what its outputs were made
from: the request (target, --specs, --kconfig, --emit, LLVM=,
CROSS_COMPILE=, CC=, LD=, OBJCOPY=), the programs it ran (where PATH found them, their size and
mtime), a hash of every input file (the spec, its layout and every layout
it extends, the ABI and function catalogues, the templates, the arch
fragment directories, the .config, vdsogen's own modules), a hash of the
listing of every directory a lookup went through (a file added there may
shadow another), and a hash of each output.  The next build of the same
request checks all of this before loading a spec: when nothing differs and
every output is still what the build wrote, it writes nothing at all and
mtimes stay, so nothing that depends on the outputs is rebuilt; unless an
input is newer than the outputs (touched, its bytes the same), when the
outputs get the time of now, as make expects of a rule it ran.

The inputs are a slight over-approximation: every template and arch
fragment of the target's directories counts, except the harness's own
(harness*), which never reach an image.

--depfile=FILE writes the same inputs, and the programs, as a make rule
whose targets are the outputs (paths as the command line named them), with
an empty rule per input so that a deleted input does not stop make.  It
names only what exists: a missing prerequisite is out of date for make
forever, so `make` after `make` would run vdsogen again and `make -q` fail.
"""

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from vdsogen import __version__, paths
from vdsogen.build.toolchain import select_programs
from vdsogen.fsutil import write_atomic

STATE = ".vdsogen-state.json"
STATE_VERSION = 1
IMAGES = ("vdso.so.dbg", "vdso.so")
TOOLCHAIN_VARIABLES = ("LLVM", "CROSS_COMPILE", "CC", "LD", "OBJCOPY")    # toolchain.select_programs
_PACKAGE = Path(__file__).resolve().parent.parent


def _digest(path):
    """Hash of a file's bytes, or of a directory's sorted listing; None if missing."""
    try:
        if os.path.isdir(path):
            data = "\0".join(sorted(os.listdir(path))).encode()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Request:
    """What the command line asks of one target: everything but the input files."""
    target: str
    specs: str | None
    kconfig: str | None
    emit: tuple
    emit_name: str
    env: dict = field(hash=False)
    test_counter: bool = False   # the test build (Target.test_build)

    def outputs(self):
        from vdsogen.build.emit import output_names
        return IMAGES + output_names(self.emit)

    def programs(self):
        return select_programs(self.env).found()

    def key(self):
        programs = {}
        for name, where in self.programs().items():
            try:
                st = os.stat(where) if where else None
            except OSError:
                st = None
            programs[name] = [where, st.st_size, st.st_mtime_ns] if st else None
        return {
            "state": STATE_VERSION, "vdsogen": __version__, "target": self.target,
            "specs": _absolute(self.specs), "kconfig": _absolute(self.kconfig),
            "emit": sorted(self.emit), "emit_name": self.emit_name,
            **{v: self.env.get(v, "") for v in TOOLCHAIN_VARIABLES},
            "programs": programs,
            **({"test_counter": True} if self.test_counter else {}),
        }


def _absolute(path):
    return os.path.abspath(path) if path is not None else None


def inputs(target, request):
    """(files, directories) an image of `target` depends on."""
    from vdsogen.spec import abi, contract, functions
    from vdsogen.spec.layout import layout_path
    from vdsogen.spec.model import SpecTree
    from vdsogen.spec.toml import load_toml

    tree = SpecTree(request.specs)
    files = [Path(f) for f in target.spec_files or (target.path,)]   # the spec and those it extends
    layout = Path(target.datapage.layout.path) if target.datapage else None    # None: no time data
    while layout is not None:
        files.append(layout)
        parent = load_toml(layout).get("extends")
        if not isinstance(parent, str):
            break
        layout = layout_path(parent, tree.layout_dirs)
    files += [abi.CATALOGUE, functions.CATALOGUE, contract.CATALOGUE]
    dirs = [tree.spec_dir, *tree.layout_dirs, paths.TEMPLATES]
    files += _listing(paths.TEMPLATES)
    for root in target.fragment_roots:
        frag = Path(root) / "arch" / target.arch
        if frag.is_dir():
            dirs.append(frag)
            files += _listing(frag)
    if request.kconfig is not None:
        files.append(Path(request.kconfig))
    files += sorted(p for p in _PACKAGE.rglob("*.py") if "harness" not in p.relative_to(_PACKAGE).parts)
    return (list(dict.fromkeys(os.path.abspath(f) for f in files)),
            list(dict.fromkeys(os.path.abspath(d) for d in dirs)))


def _listing(directory):
    return sorted(p for p in Path(directory).iterdir() if p.is_file() and not p.name.startswith("harness"))


def state_path(outdir):
    return Path(outdir) / STATE


def forget(outdir):
    """Drop the record before a build: an interrupted build is never up to date."""
    try:
        os.unlink(state_path(outdir))
    except FileNotFoundError:
        pass


def record(outdir, request, target):
    """After a successful build: what its outputs were made from."""
    files, dirs = inputs(target, request)
    state = {
        "key": request.key(),
        "inputs": {f: _digest(f) for f in files},
        "dirs": {d: _digest(d) for d in dirs},
        "outputs": {name: _digest(Path(outdir) / name) for name in request.outputs()},
    }
    write_atomic(state_path(outdir), (json.dumps(state, indent=1, sort_keys=True) + "\n").encode())
    return state


def current(outdir, request):
    """The recorded state when the outputs in outdir are up to date for
    `request`, else None."""
    try:
        with open(state_path(outdir), "rb") as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("key") != request.key():
        return None
    outputs = state.get("outputs")
    if not isinstance(outputs, dict) or sorted(outputs) != sorted(request.outputs()):
        return None
    if any(d is None or _digest(Path(outdir) / n) != d for n, d in outputs.items()):
        return None
    for group in ("inputs", "dirs"):
        if not isinstance(state.get(group), dict):
            return None
        # None: a directory a lookup went through did not exist, and still must not.
        if any(_digest(path) != digest for path, digest in state[group].items()):
            return None
    return state


def _escape(path):
    return str(path).replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def render_depfile(targets, deps):
    """A make rule: every output depends on every input; an empty rule per input."""
    lines = [" ".join(_escape(t) for t in targets) + ": \\"]
    lines += [f" {_escape(d)} \\" for d in deps[:-1]] + [f" {_escape(d)}" for d in deps[-1:]]
    lines += [""] + [f"{_escape(d)}:" for d in deps]
    return "\n".join(lines) + "\n"


def prerequisites(state, request):
    """What the depfile names for one target: its inputs, the directories its
    lookups went through and its programs.  Only what exists: make remakes a
    target whose prerequisite is missing, every time.  A directory a lookup
    went through that did not exist (--specs=DIR without layouts/) is seen by
    the listing of its parent."""
    deps = sorted(p for group in ("inputs", "dirs") for p, digest in state[group].items() if digest)
    return deps + [p for p in request.programs().values() if p]


def settle(outdir, state, request):
    """Outputs up to date by their inputs' bytes but older than one of them
    (an input touched or rewritten unchanged, a file made and removed in a
    directory a lookup went through) get the time of now.  make goes by
    mtimes: else `make` would run vdsogen on every call, and `make -q` say
    out of date, while vdsogen writes nothing."""
    newest = 0
    for p in prerequisites(state, request):
        try:
            newest = max(newest, os.stat(p).st_mtime_ns)
        except OSError:
            pass
    outputs = [Path(outdir) / n for n in request.outputs()]
    try:
        if min(o.stat().st_mtime_ns for o in outputs) < newest:
            for o in outputs:
                os.utime(o)
    except OSError:
        pass    # a build racing this one replaced them: they are new


def write_depfile(path, targets, states, requests):
    """Write FILE for the built targets, only when its text changes."""
    deps = []
    for state, request in zip(states, requests):
        deps += prerequisites(state, request)
    text = render_depfile(targets, list(dict.fromkeys(deps))).encode()
    try:
        with open(path, "rb") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    write_atomic(path, text)
