"""The toolchain driver: compiles and links rendered sources into an image.

Kernel conventions: LLVM=1 (or LLVM=-19, LLVM=/path/) selects clang and lld
with the kernel's meaning; CROSS_COMPILE=prefix- without LLVM selects the
GNU cross toolchain; neither selects clang-19 with lld-19.  CC=, LD= and
OBJCOPY= name the programs themselves, as in Kbuild, which sets and exports
them (CC=$(CROSS_COMPILE)gcc unless LLVM=): inside a kernel build vdsogen
uses the kernel's compiler.  A CC whose program is named clang* is clang
(its --target= is added); any other is a GNU compiler, which links through
itself with the linker LD names (ld, ld.bfd: its own; ld.gold, ld.lld:
-fuse-ld=).  V=1 prints
every command instead of the one-line summaries.  These progress lines go
to standard error (a command's results go to standard output);
the -q of `vdsogen build`, `test` and `bench` silences them, their -v is
V=1 (set_verbosity).

Builds are reproducible: the compiler runs in the build directory, which
-ffile-prefix-map rewrites to "." in the debug information (DW_AT_comp_dir,
file and include names, for C and assembler, with clang and gcc), so the
same sources give the same bytes in any directory, and the linker's sha1
build-id, a hash of those bytes, is then content-derived too.
"""

import os
import shlex
import shutil
import subprocess
import sys
from contextvars import ContextVar, Token
from dataclasses import dataclass
from pathlib import Path

from vdsogen.errors import BuildError

DEFAULT_LLVM_SUFFIX = "-19"

COMMON_CFLAGS = (
    "-std=gnu11", "-O2", "-g", "-fPIC", "-ffreestanding", "-fno-builtin",
    "-fno-stack-protector", "-fno-jump-tables", "-fno-common",
    "-Wall", "-Wextra", "-Wmissing-prototypes", "-Werror",
)


@dataclass(frozen=True)
class Programs:
    """The programs LLVM=, CROSS_COMPILE=, CC=, LD= and OBJCOPY= select, before any target is known."""
    kind: str          # "llvm" or "gnu"
    cc: str            # a command: CC="ccache gcc" is two words
    linker: str
    objcopy: str

    def found(self):
        """Each program and where PATH has it (None when missing)."""
        return {p: shutil.which(p) for p in (_program(self.cc), self.linker, self.objcopy)}


def _program(command):
    """The program a command runs: its first word."""
    words = shlex.split(command)
    return words[0] if words else command


def select_programs(env=None, gnu_default=None):
    """`gnu_default`: the GNU triple of a target whose toolchain is GNU
    when neither LLVM=, CROSS_COMPILE= nor CC= is set (spec: toolchain.default)."""
    env = os.environ if env is None else env
    llvm = env.get("LLVM", "")
    cross = env.get("CROSS_COMPILE", "")
    cc = env.get("CC", "").strip()
    if cc:
        kind = "llvm" if os.path.basename(_program(cc)).startswith("clang") else "gnu"
    else:
        if not llvm and not cross and gnu_default:
            cross = f"{gnu_default}-"
        kind = "llvm" if llvm or not cross else "gnu"
    if kind == "llvm":
        if llvm in ("", "0"):
            prefix, suffix = "", DEFAULT_LLVM_SUFFIX
        elif llvm == "1":
            prefix, suffix = "", ""
        elif llvm.startswith("-"):
            prefix, suffix = "", llvm
        else:
            prefix, suffix = llvm if llvm.endswith("/") else llvm + "/", ""
        chosen = (f"{prefix}clang{suffix}", f"{prefix}ld.lld{suffix}", f"{prefix}llvm-objcopy{suffix}")
    else:
        chosen = (f"{cross}gcc", f"{cross}ld", f"{cross}objcopy")
    given = (cc, env.get("LD", "").strip(), env.get("OBJCOPY", "").strip())
    return Programs(kind, *(g or c for g, c in zip(given, chosen)))


def _gnu_link_flags(linker):
    """What makes a GNU compiler link with `linker` (LD=): it runs its own GNU
    ld unless -fuse-ld= names another."""
    name = os.path.basename(linker)
    for suffix, flags in (("ld", ()), ("ld.bfd", ()), ("ld.gold", ("-fuse-ld=gold",)),
                          ("ld.lld", ("-fuse-ld=lld",))):
        if name == suffix or name.endswith("-" + suffix):
            return flags
    raise BuildError(f"LD={linker}: a GNU compiler (CC=) links through itself, with ld, ld.bfd, "
                     f"ld.gold or ld.lld")


@dataclass(frozen=True)
class Tools:
    kind: str          # "llvm" or "gnu"
    cc: tuple          # compiler driver and target selection
    link: tuple        # the driver and target selection for the link
    ld: tuple          # extra driver flags that select the linker
    objcopy: str
    describe: str


def select_tools(target, env=None):
    tc = target.toolchain
    p = select_programs(env, tc.gnu_triple if tc.default == "gnu" else None)
    cc = tuple(shlex.split(p.cc))
    if p.kind == "llvm":
        if tc.clang_target is None:
            raise BuildError(f"{target.name}: LLVM has no backend for the {target.abi.name} ABI (the spec has no "
                             f"toolchain.clang_target): build it with the GNU toolchain (CROSS_COMPILE=)")
        # A target that lld cannot link (ppc64's ELFv1) links with GNU ld whatever LD= says.
        linker = p.linker if tc.clang_linker == "lld" else f"{tc.gnu_triple}-ld"
        return Tools("llvm", (*cc, f"--target={tc.clang_target}"),
                     (*cc, f"--target={tc.link_clang_target or tc.clang_target}"),
                     (f"--ld-path={linker}",), p.objcopy, f"{p.cc} + {linker}")
    return Tools("gnu", cc, (*cc, *tc.link_gnu_flags), _gnu_link_flags(p.linker), p.objcopy,
                 f"{p.cc} + {p.linker}")


# The command line's -q ("quiet": no progress lines) or -v ("verbose": every
# command, as V=1); None: V= decides.
_VERBOSITY: ContextVar[str | None] = ContextVar("verbosity", default=None)
VERBOSITIES = ("quiet", "verbose")


def set_verbosity(level: str | None) -> Token:
    """Make the Builders created from now on quiet or verbose (VERBOSITIES), or leave it to V= (None);
    returns a token for reset_verbosity."""
    if level is not None and level not in VERBOSITIES:
        raise ValueError(f"verbosity {level!r}: not one of {', '.join(VERBOSITIES)}")
    return _VERBOSITY.set(level)


def reset_verbosity(token: Token) -> None:
    _VERBOSITY.reset(token)


def make_silent(env) -> bool:
    """Run by `make -s` (or .SILENT): MAKEFLAGS' first word, its one-letter
    flags, holds an s, as kbuild tests it.  Then progress lines are not printed."""
    flags = ("-" + env.get("MAKEFLAGS", "")).split()[0]
    return "s" in flags and not flags.startswith("--")


def _require(program):
    if shutil.which(program) is None:
        raise BuildError(f"{program}: not found (run scripts/setup.sh, or set LLVM= / CROSS_COMPILE=)")


class Builder:
    def __init__(self, target, env=None, verbose=None, stream=None):
        env = os.environ if env is None else env
        self.target = target
        self.tools = select_tools(target, env)
        level = _VERBOSITY.get()
        self.quiet = level == "quiet" or (level is None and make_silent(env))
        if verbose is None:
            verbose = level == "verbose" or (level is None and env.get("V", "0") not in ("", "0"))
        self.verbose = verbose
        self.stream = stream or sys.stderr     # progress, apart from the results on standard output

    def log(self, tag, path, argv=None):
        if self.quiet:
            return
        if self.verbose and argv is not None:
            print(shlex.join(argv), file=self.stream, flush=True)
        else:
            print(f"  {tag:<7} {_short(path)}", file=self.stream, flush=True)

    def run(self, tag, path, argv, cwd=None):
        self.log(tag, path, argv)
        _require(argv[0])
        env = None
        if cwd is not None:
            # gcc takes DW_AT_comp_dir from $PWD when it names the working directory.
            env = dict(os.environ, PWD=str(cwd))
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=cwd, env=env)
        if proc.returncode != 0:
            raise BuildError(f"{tag} {_short(path)} failed ({argv[0]} exit {proc.returncode}):\n"
                             + proc.stdout.rstrip())
        if proc.stdout.strip():
            # Generated code must build without a word from the compiler.
            raise BuildError(f"{tag} {_short(path)}: unexpected toolchain output:\n" + proc.stdout.rstrip())

    def cflags(self):
        t = self.target
        unwind = (("-fasynchronous-unwind-tables",) if t.elf.eh_frame
                  else ("-fno-asynchronous-unwind-tables", "-fno-unwind-tables"))
        gnu = t.toolchain.gnu_cflags if self.tools.kind == "gnu" else ()
        return COMMON_CFLAGS + unwind + t.toolchain.cflags + gnu

    def compile(self, src, obj, workdir=None):
        """Compile src to obj; with `workdir` (the build directory, which
        holds both), reproducibly: run there, its path mapped to "."."""
        tag = "AS" if src.suffix == ".S" else "CC"
        remap = ()
        if workdir is not None:
            workdir = os.path.realpath(workdir)
            src, obj = (Path(os.path.realpath(src)), Path(os.path.realpath(obj)))
        src_arg = str(src)
        if workdir is not None:
            remap = (f"-ffile-prefix-map={workdir}=.", f"-fdebug-prefix-map={workdir}=.")
            if tag == "AS" and self.tools.kind == "llvm" and src.is_relative_to(workdir):
                # clang before 15 does not remap an assembler source's own name or its
                # compilation directory: give both relative, as the remap would write them.
                remap += ("-fdebug-compilation-dir=.",)
                src_arg = "./" + str(src.relative_to(workdir))
        argv = [*self.tools.cc, *self.cflags(), *remap, "-I", str(src.parent), "-c", src_arg, "-o", str(obj)]
        self.run(tag, obj, argv, cwd=workdir)
        fmt = self.target.toolchain.object_format
        if fmt:
            # As Linux builds the x32 vDSO: objects of the 64-bit ABI, converted.
            self.run("OBJCOPY", obj, [self.tools.objcopy, "-O", fmt, str(obj), str(obj)])

    def link(self, objs, script, out, drop=()):
        """Link; `drop` removes -Wl, options (tests build careless images with it)."""
        t = self.target
        # The symbol hash tables are the ABI's (abi.toml hash_styles), as Linux links its vDSO.
        argv = [*self.tools.link, *self.tools.ld, "-nostdlib", "-shared",
                f"-Wl,-T,{script}", f"-Wl,--hash-style={t.abi.hash_style}", "-Wl,--build-id=sha1",
                f"-Wl,-soname={t.soname}", "-Wl,-z,noexecstack", "-Wl,-z,defs",
                "-Wl,--no-undefined", f"-Wl,-z,max-page-size={t.page_size}",
                f"-Wl,-z,common-page-size={t.page_size}"]
        if t.elf.eh_frame:
            argv.append("-Wl,--eh-frame-hdr")
        argv += [f"-Wl,{f}" for f in t.toolchain.ldflags]
        argv = [a for a in argv if not any(a == f"-Wl,{d}" for d in drop)]
        argv += [str(o) for o in objs] + ["-o", str(out)]
        self.run("LD", out, argv)

    def rewrite_flags(self, path, flags):
        """Set e_flags to `flags`, as Linux's vdsomunge does on arm: the
        linker's float-ABI bit would keep one of the two float ABIs'
        processes from using the image, whose code touches no FP state."""
        self.log("FLAGS", path, ["e_flags", f"{flags:#x}", str(path)])
        elf = self.target.elf
        offset = 36 if elf.elf_class == 32 else 48    # e_flags in Elf32_Ehdr / Elf64_Ehdr
        with open(path, "r+b") as f:
            f.seek(offset)
            f.write(flags.to_bytes(4, elf.endian))

    def strip(self, dbg, out):
        # -S keeps the section headers: consumers find .dynsym and the build-id through them.
        self.run("OBJCOPY", out, [self.tools.objcopy, "-S", str(dbg), str(out)])


def _short(path):
    """Path as the kernel prints it: relative below the current directory, else absolute."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel
