"""Target specs (specs/T.toml) turned into validated, frozen objects.

Everything the writers and the toolchain driver need is checked here, before
anything renders: names are C identifiers, every export has an
implementation, every syscall an export needs has a number, the layout fits
the pages the target maps.  A spec names its ABI; the ELF identity, soname,
version nodes and trampoline words come from the ABI catalogue
(vdsogen/spec/abi.toml) that `check` and `audit` use too, and every export's
signature from the function declarations (vdsogen/spec/functions.toml).
"""

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.spec import abi as catalogue
from vdsogen.spec import contract as contracts
from vdsogen.spec import functions
from vdsogen.spec.layout import Layout, load_layout, layout_path
from vdsogen.spec.kconfig import load_kconfig
from vdsogen.elf.consts import EM_AARCH64, MACHINE_NAMES
from vdsogen.spec.toml import C_IDENT, Problems, Table, did_you_mean, load_toml

COARSE_IN_MODE_NONE = ("page", "syscall")
ENTRY_STYLES = ("c", "asm")
TOOLCHAIN_KINDS = ("llvm", "gnu")
LINKERS = ("lld", "gnu")
BINDINGS = ("global", "weak")
HARNESS_LIBCS = ("system", "freestanding")


@dataclass(frozen=True)
class ElfIdentity:
    elf_class: int        # 32 or 64
    endian: str           # "little" or "big"
    machine: int
    machine_name: str
    flags: int
    linux_version: tuple  # (major, minor, sublevel)
    text_fill: int | None
    eh_frame: bool
    # e_flags are set to `flags` after the link, whatever the linker wrote
    # (arm: Linux's vdsomunge clears the float-ABI bits)
    rewrite_flags: bool = False
    # a PT_GNU_STACK header (RW: the stack is not executable), as Linux 7.2's x86 images have
    gnu_stack: bool = False

    @property
    def linux_version_code(self) -> int:
        major, minor, sub = self.linux_version
        return (major << 16) | (minor << 8) | min(sub, 255)


@dataclass(frozen=True)
class Alias:
    name: str
    binding: str


@dataclass(frozen=True)
class Export:
    name: str
    function: functions.Function
    version: str
    binding: str
    aliases: tuple
    # "core" or "arch": the function's own place (functions.toml), or "arch"
    # where the spec moves a core function into an arch fragment (powerpc's
    # getcpu, a few instructions of asm around one register read)
    where: str

    @property
    def impl(self) -> str:
        return self.function.name

    @property
    def arch_impl(self) -> bool:
        """Implemented by arch/<arch>/impl-<impl>.S.j2, not by the core."""
        return self.where == "arch"


def _functions_of(exports):
    """The functions `exports` implement, once each, in export order."""
    return tuple({e.function.name: e.function for e in exports}.values())


@dataclass(frozen=True)
class Trampoline:
    name: str
    version: str
    fragment: str
    syscall: str
    lead: tuple            # instruction words right before the symbol
    words: tuple           # instruction words at the symbol: what unwinders match
    label: str = ""        # the kernel's name for its offset (abi.toml kernel_label), a local symbol
    label_at: str = ""     # where the fragment defines it (abi.LABEL_PLACES), "" without a label


@dataclass(frozen=True)
class Counter:
    fragment: str
    params: dict = field(hash=False)   # [counter.params], checked against the contract, defaults filled in
    modes: tuple           # clock_mode values this counter serves, in the spec's order
    mask: bool             # apply the clock record's mask to the delta
    clamp_backwards: bool  # a counter below cycle_last counts as no time passed
    words: tuple = ()      # the read's 32-bit instruction words, in code order, that `check` finds
    # the fragment's entry in arch/<arch>/contract.toml (contracts.CounterContract)
    contract: Any = field(default=None, hash=False, compare=False)

    @property
    def clock_modes(self) -> tuple:
        """The modes served (contracts.ClockMode: name, number, pages), in the spec's order."""
        return tuple(self.contract.mode_of(n) for n in self.modes)

    @property
    def arch_modes(self) -> tuple:
        """Every mode the counter fragment can serve, as its contract lists them."""
        return self.contract.modes

    def serves(self, name: str) -> bool:
        """The spec serves clock mode `name` (a name of the arch's contract)."""
        return any(m.name == name for m in self.clock_modes)


@dataclass(frozen=True)
class Syscalls:
    fragment: str
    instruction: str
    convention: str
    numbers: dict = field(hash=False)


@dataclass(frozen=True)
class DataPages:
    layout: Layout
    page_size: int
    pages: int
    tick_nsec: int         # resolution of the coarse clocks (TICK_NSEC)
    coarse_in_mode_none: str   # "page" (Linux) or "syscall"

    @property
    def note(self) -> str:
        """What the image's data-pages note says (templates/note.S.j2): the
        layout's name and digest, the page size and count, the tick (the
        coarse clocks' resolution, which clock_getres answers)."""
        return f"{self.layout.name} {self.layout.digest()} {self.page_size}x{self.pages} tick {self.tick_nsec}"


@dataclass(frozen=True)
class Toolchain:
    clang_target: str | None   # None: no LLVM backend (SuperH), the GNU toolchain only
    gnu_triple: str | None  # None: Debian has no GNU cross toolchain for the ABI (LoongArch)
    qemu: str | None       # qemu-user name, None when the host runs it natively
    cflags: tuple
    gnu_cflags: tuple      # for the GNU compiler only: options clang rejects (-ffixed-r30)
    ldflags: tuple
    harness_cflags: tuple
    # Linux builds some images from objects of another ABI, converted (x32:
    # the x86-64 objects as elf32-x86-64): the format to convert every
    # object to before linking, and how the link selects the target ABI.
    object_format: str | None
    link_clang_target: str | None
    link_gnu_flags: tuple
    # The toolchain when neither LLVM= nor CROSS_COMPILE= chooses one: "llvm"
    # (clang-19 + lld-19) or "gnu" (<gnu_triple>-gcc; powerpc, where only gcc
    # can keep r30 free), and the linker clang uses: "lld", or "gnu"
    # (<gnu_triple>-ld) where lld links the ABI wrongly (ppc64 ELFv1).
    default: str = "llvm"
    clang_linker: str = "lld"
    # The GNU triple of the ABI's programs where it is not gnu_triple (x32:
    # its vDSO is built from x86-64 objects, its programs by the x32
    # compiler): what `vdsogen run` builds its probe with.
    program_triple: str | None = None
    # The CPU qemu-user emulates (its -cpu), where the harness needs a
    # feature qemu's default might lack (arm64: "max", for BTI).
    qemu_cpu: str | None = None

    @property
    def program_cc(self) -> str | None:
        """The GNU compiler of the ABI's programs, or None (no GNU toolchain)."""
        triple = self.program_triple or self.gnu_triple
        return f"{triple}-gcc" if triple else None


@dataclass(frozen=True)
class Harness:
    trap_syscalls: bool    # answer the image's syscalls from a SIGSYS handler (arch/<arch>/harness-trap.h.j2)
    # "system": the target's GNU cross gcc and libc; "freestanding": clang and
    # harness/freestanding/ (its own start-up, syscalls and libc subset), for
    # ABIs without a Debian libc
    libc: str = "system"
    # the harness runs a test build whose counter read loads a value it
    # controls (templates/counter-injected.h.j2): where qemu-user cannot
    # read the real counter
    injected_counter: bool = False
    clang_target: str | None = None   # freestanding: the harness's own --target (default the vDSO's)
    # checks of the arch's own beyond those of its functions, each
    # arch/<arch>/harness-check-NAME.c.j2 (s390: the TOD correction)
    checks: tuple = ()
    # map the text with PROT_BTI, as an arm64 kernel built with BTI maps its
    # vDSO (guarded pages: an indirect branch must land on a `bti`)
    bti: bool = False
    # no qemu-user runs the ABI (s390's 31-bit compat): the harness runs only
    # on a booted kernel (scripts/kernel-harness.sh NAME), and `vdsogen test`
    # builds it and reports it not run
    booted: bool = False


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    abi: catalogue.Abi
    arch: str              # directory of fragments under arch/
    fragment_roots: tuple  # trees searched for arch/<arch>/ fragments, in order
    elf: ElfIdentity
    soname: str
    versions: tuple        # node names, in verdef order after the base
    exports: tuple
    trampolines: tuple
    # None, both, for a target without time data: no export reads the data
    # pages (SuperH's vDSO: a syscall entry and the signal trampolines)
    counter: Counter | None
    syscalls: Syscalls
    datapage: DataPages | None
    entry_style: str
    getcpu: str | None     # arch fragment getcpu-NAME.h.j2 answering in user space, or None: the syscall
    toolchain: Toolchain
    harness: Harness
    spec_files: tuple = ()  # the spec, then the specs it extends, nearest first
    test_counter: bool = False  # a test build: the counter read is injected (test_build())
    contract: Any = field(default=None, hash=False, compare=False)  # arch/<arch>/contract.toml, merged
    labels: tuple = ()      # [emit] labels: (kernel name, symbol of vdso.so.dbg), beside the trampolines'

    @property
    def description(self) -> str:
        return self.abi.description

    @property
    def page_size(self) -> int:
        """The page size the image is linked for: its data pages', or the ABI's without them."""
        return self.datapage.page_size if self.datapage else self.abi.page_size

    def test_build(self) -> "Target":
        """The test build of this target: the same image but for its counter
        read, which loads a 64-bit value the harness controls from a page
        below the data pages; the image carries a note that marks it."""
        return replace(self, test_counter=True)

    def fragment(self, name: str) -> str:
        """Template name of an arch fragment, for the Jinja2 loader."""
        return f"arch/{self.arch}/{name}"

    def provides(self, kind: str) -> bool:
        """The arch has optional fragment `kind` (its contract's `provides`)."""
        return self.contract.has(kind)

    @property
    def core_exports(self) -> tuple:
        return tuple(e for e in self.exports if not e.arch_impl)

    @property
    def arch_exports(self) -> tuple:
        return tuple(e for e in self.exports if e.arch_impl)

    @property
    def functions(self) -> tuple:
        """The functions the exports implement, once each, in export order."""
        return _functions_of(self.exports)

    @property
    def core_functions(self) -> tuple:
        """The functions the generic C core implements for this target."""
        return _functions_of(self.core_exports)

    @property
    def arch_functions(self) -> tuple:
        """The functions arch fragments implement (impl-NAME.S.j2) for this target."""
        return _functions_of(self.arch_exports)

    def implemented_by(self, name: str) -> str | None:
        """Where function `name` is implemented for this target: "core", "arch", or None (no export)."""
        return next((e.where for e in self.exports if e.impl == name), None)

    @property
    def getcpu_in_user_space(self) -> bool:
        """getcpu answers without the syscall: a C hook or an arch entry."""
        return bool(self.getcpu) or self.implemented_by("getcpu") == "arch"

    def symbols(self) -> list[tuple[str, str, str]]:
        """Every exported (name, version, binding): entries, aliases, trampolines."""
        out = []
        for e in self.exports:
            out.append((e.name, e.version, e.binding))
            out.extend((a.name, e.version, a.binding) for a in e.aliases)
        out.extend((t.name, t.version, "global") for t in self.trampolines)
        return out

    def exports_by_version(self) -> dict[str, list[str]]:
        return {v: [n for n, ver, _ in self.symbols() if ver == v] for v in self.versions}

    def syscall(self, name: str) -> int:
        return self.syscalls.numbers[name]


class SpecTree:
    """Where specs, layouts and arch fragments are looked up: first a
    directory of the user's (`--specs=DIR`, as a maintainer keeps them in a
    kernel tree: DIR/T.toml, DIR/layouts/NAME.toml, DIR/arch/ARCH/*.j2),
    then vdsogen's own.  Each fragment is taken from the first directory
    that has it, so DIR/arch/ARCH/ need only hold what differs."""

    def __init__(self, extra: str | Path | None = None):
        self.extra = Path(extra).resolve() if extra else None
        if self.extra and not self.extra.is_dir():
            raise SpecError(extra, None, "--specs: not a directory")
        self.roots = tuple(r for r in (self.extra, paths.ROOT) if r is not None)

    @property
    def spec_dir(self) -> Path:
        return self.extra or paths.SPECS

    @property
    def layout_dirs(self) -> tuple:
        return tuple(d for d in ((self.extra / "layouts") if self.extra else None, paths.LAYOUTS) if d)

    def has_fragment(self, arch: str, filename: str = "") -> bool:
        return any((r / "arch" / arch / filename).exists() for r in self.roots)


def list_targets(specs: str | Path | None = None) -> list[str]:
    return sorted(p.stem for p in SpecTree(specs).spec_dir.glob("*.toml"))


def spec_path(name: str, specs: str | Path | None = None) -> Path:
    return SpecTree(specs).spec_dir / f"{name}.toml"


def load_target(name: str, specs: str | Path | None = None, kconfig: str | Path | None = None) -> "Target":
    """Target `name` from specs/ (or from the directory `specs`).

    With `kconfig` (a kernel .config), the values the image depends on
    (tick, page size) come from the kernel's configuration rather than from
    the spec, and the layout is checked against it (vdsogen/spec/kconfig.py).
    Every error of the spec is reported at once (SpecErrors when several)."""
    path = spec_path(name, specs)
    if not path.is_file():
        known = ", ".join(list_targets(specs)) or "none"
        raise SpecError(path, None, f"no spec for target {name!r} (known: {known})")
    kc = load_kconfig(kconfig) if kconfig is not None else None
    data, files = _load_spec(path)
    target = _parse(name, path, data, SpecTree(specs), kc)
    return replace(target, spec_files=tuple(str(f) for f in files))


def _load_spec(path, _chain=()):
    """The spec at `path` with the specs it extends merged in: (table, files).

    A spec may start from another (`extends = "NAME"`: NAME.toml in its own
    directory, else in vdsogen's specs/; a spec that extends its own name
    extends vdsogen's) and override keys: tables merge key by key, at any
    depth; any other value, arrays included, replaces the base's.  `unset`
    lists dotted keys of the base ("harness", "toolchain.program_triple")
    to drop before the merge."""
    data = load_toml(path)
    if "extends" not in data:
        if "unset" in data:
            raise SpecError(path, "unset", "only a spec that extends another can unset its keys")
        return data, (path,)
    base = data.pop("extends")
    unset = data.pop("unset", [])
    if not isinstance(base, str) or not _is_ident(base.replace("-", "_")):
        raise SpecError(path, "extends", f"expected the name of a spec, got {base!r}")
    if not isinstance(unset, list) or not all(isinstance(k, str) for k in unset):
        raise SpecError(path, "unset", "expected an array of dotted keys")
    chain = _chain + (path.resolve(),)
    candidates = [c for c in (path.parent / f"{base}.toml", paths.SPECS / f"{base}.toml")
                  if c.is_file() and c.resolve() != path.resolve()]
    if not candidates:
        if base == path.stem:
            raise SpecError(path, "extends", f"no spec {base!r} in {paths.SPECS} (a spec that extends its "
                                             "own name extends vdsogen's)")
        raise SpecError(path, "extends", f"no spec {base!r} in {path.parent} or {paths.SPECS}"
                                         f"{did_you_mean(base, set(_spec_names(path.parent)) - {path.stem})}")
    base_path = candidates[0]
    if base_path.resolve() in chain:
        names = " -> ".join(p.stem for p in (*chain, base_path))
        raise SpecError(path, "extends", f"circular extends: {names}")
    base_data, files = _load_spec(base_path, chain)
    for i, dotted in enumerate(unset):
        _unset(base_data, dotted, path, f"unset[{i}]")
    return _merge(base_data, data), (path, *files)


def _spec_names(directory):
    return [p.stem for d in (directory, paths.SPECS) for p in d.glob("*.toml")]


def _unset(data, dotted, path, key):
    """Drop `dotted` ("a.b.c") from the merged base `data`, in place."""
    *parents, last = dotted.split(".")
    table = data
    for part in parents:
        table = table.get(part)
        if not isinstance(table, dict):
            raise SpecError(path, key, f"the base has no table {part!r} to unset {dotted!r} from")
    if last not in table:
        raise SpecError(path, key, f"the base has no key {dotted!r}{did_you_mean(last, table)}")
    del table[last]


def _merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = _merge(out[key], value)
        out[key] = value
    return out


def _identity(top, abi):
    """The ELF identity: class and machine from the ABI; the byte order and
    soname where the ABI allows several; e_flags within its constraints."""
    et = top.table("elf")
    endian = et.str("endian", abi.endians[0], choices=abi.endians)
    soname = et.str("soname", abi.sonames[0], choices=abi.sonames)
    flags = et.int("flags", 0, lo=0, hi=0xFFFFFFFF)
    for rule in abi.flags:
        if not rule.ok(flags):
            et.error("flags", f"0x{flags:x} breaks the {abi.name} ABI's constraint: {rule.what}")
    version_text = et.str("linux_version")
    parts = version_text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        et.error("linux_version", f"{version_text!r} is not MAJOR.MINOR.SUBLEVEL")
    text_fill = et.int("text_fill", None, lo=0, hi=0xFFFFFFFF)
    eh_frame = et.bool("eh_frame")
    rewrite_flags = et.bool("rewrite_flags", False)
    gnu_stack = et.bool("gnu_stack", False)
    et.done()
    machine_name = MACHINE_NAMES.get(abi.machine, f"EM_{abi.machine}")
    return ElfIdentity(abi.elf_class, endian, abi.machine, machine_name, flags,
                       tuple(int(p) for p in parts), text_fill, eh_frame, rewrite_flags, gnu_stack), soname


NAME_PREFIXES = ("__vdso_", "__kernel_")


def name_means(name: str) -> str | None:
    """The function of functions.toml an export's name stands for, as every
    Linux ABI and every consumer reads it: the name without __vdso_ or
    __kernel_, when that is such a function (clock_gettime64,
    get_syscall_map); None for a name that says nothing vdsogen knows."""
    for prefix in NAME_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return name if functions.get(name) is not None else None


def _from_kconfig(table, key, fixed, **bounds):
    """[datapage] `key` from the kernel's configuration when it fixes one
    (the spec's value, if any, is still checked), else from the spec."""
    if key not in fixed:
        return table.int(key, **bounds)
    table.int(key, None, **bounds)
    value, why = fixed[key]
    lo, hi = bounds.get("lo"), bounds.get("hi")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        table.error(key, f"{value} (from {why}) is out of range [{lo}, {hi}]")
    return value


def _abi_fact(table, key, where):
    """A key specs no longer hold, as it is an ABI fact: an error that says where it lives."""
    if table.has(key):
        table.error(key, f"an ABI fact: vdsogen/spec/abi.toml holds it ({where})")


class _Parser:
    """One spec turned into a Target.  Each part of the spec is parsed in a
    section of its own, so that one load reports every error it has."""

    abi: catalogue.Abi
    abi_syscalls: catalogue.Syscalls
    arch: str
    contract: contracts.Contract

    def __init__(self, name, path, data, tree, kc):
        self.name, self.path, self.tree, self.kc = name, path, tree, kc
        self.problems = Problems()
        self.top = Table(path, data, problems=self.problems)
        self.names = set()

    def need_fragment(self, table, key, filename):
        if not self.tree.has_fragment(self.arch, filename):
            table.error(key, f"no fragment arch/{self.arch}/{filename}{self.contract.suggest(filename)}")

    def claim(self, table, key, sym):
        if sym in self.names:
            table.error(key, f"symbol {sym!r} exported twice")
        self.names.add(sym)

    def version_of(self, table):
        abi = self.abi
        version = table.str("version", abi.lookup_version)
        if version not in abi.versions:
            table.error("version", f"unknown version node {version!r} (the {abi.name} ABI has "
                                   f"{', '.join(abi.versions)})")
        return version

    def parse(self):
        top, p = self.top, self.problems
        with p.section():
            abi_name = top.str("abi")
            abi = catalogue.get(abi_name)
            if abi is None:
                top.error("abi", f"unknown ABI {abi_name!r} (known: {', '.join(catalogue.names())})"
                                 f"{did_you_mean(abi_name, catalogue.names())}")
            if abi.syscalls is None:
                top.error("abi", f"vdsogen/spec/abi.toml has no [{abi_name}.syscalls]: vdsogen cannot build "
                                 f"a vDSO of the {abi_name} ABI yet")
            self.abi, self.abi_syscalls = abi, abi.syscalls
        with p.section():
            self.arch = top.ident("arch")
            if not self.tree.has_fragment(self.arch):
                known = [d.name for r in self.tree.roots if (r / "arch").is_dir() for d in (r / "arch").iterdir()]
                top.error("arch", f"no fragment directory arch/{self.arch}/{did_you_mean(self.arch, known)}")
            self.contract = contracts.load_contract(self.arch, self.tree.roots)
        # Everything below depends on the ABI and the fragment directory.
        p.check()

        self.elf = self.soname = self.counter = self.datapage = None
        self.entry_style = self.getcpu = self.toolchain = None
        self.exports: list[Export] = []
        self.trampolines: list[Trampoline] = []
        self.exports_failed = False
        self.harness = Harness(False)
        with p.section():
            self.elf, self.soname = _identity(top, self.abi)
        fragment = None
        with p.section():
            fragment = self._syscall_fragment()
        self._exports()
        self._trampolines()
        if not self._timeless():
            with p.section():
                self.counter = self._counter()
            with p.section():
                self.datapage = self._datapage()
        if self.counter is not None and self.datapage is not None:
            with p.section():
                contracts.check_layout(self.counter.contract, self.counter.modes, self.datapage.layout,
                                       top.table("counter"), top.table("datapage"))
        if self.datapage is not None:
            with p.section():
                self._export_pages(self.datapage.layout)
        with p.section():
            self.getcpu = self._getcpu()
        with p.section():
            self.entry_style = self._entry()
        with p.section():
            self.toolchain = self._toolchain()
        with p.section():
            self.harness = self._harness()
        labels: tuple = ()
        with p.section():
            labels = self._labels()
        with p.section():
            top.done()
        p.check()
        self.syscalls = self._syscalls(fragment)

        # The ABI's version nodes, in its order, that some symbol uses.
        used = {e.version for e in self.exports} | {t.version for t in self.trampolines}
        versions = tuple(v for v in self.abi.versions if v in used)
        return Target(self.name, str(self.path), self.abi, self.arch, tuple(str(r) for r in self.tree.roots),
                      self.elf, self.soname, versions, tuple(self.exports), tuple(self.trampolines),
                      self.counter, self.syscalls, self.datapage, self.entry_style, self.getcpu,
                      self.toolchain, self.harness, contract=self.contract, labels=labels)

    def _export_pages(self, layout):
        """Each data page a core export reads is in the layout, with a struct."""
        for i, e in enumerate(self.exports):
            f = e.function
            if e.arch_impl or not f.uses_data or f.page == "time":
                continue
            page = layout.page(f.page)
            if page is None or page.struct is None or page.symbol is None:
                self.top.error(f"export[{i}]", f"{e.name} reads the {f.page} page, and layout {layout.name} "
                                               f"({layout.path}) has no {f.page} page with a struct and a symbol")

    def _syscall_fragment(self):
        """[syscall]: the fragment that makes a syscall; the instruction, the
        result convention and the numbers are the ABI's (abi.toml)."""
        st = self.top.table("syscall")
        for key in ("numbers", "instruction", "convention"):
            _abi_fact(st, key, f"[{self.abi.name}.syscalls]")
        fragment = st.str("fragment")
        self.need_fragment(st, "fragment", f"syscall-{fragment}.h.j2")
        st.done()
        return fragment

    def _syscalls(self, fragment):
        """The ABI's way of making a syscall, with the numbers of those this
        image makes: its exports' fallbacks and its trampolines' syscalls
        (and clock_gettime, which time() asks in clock mode NONE when the
        coarse clocks are the syscall's there)."""
        abi = self.abi_syscalls
        made = {e.function.syscall for e in self.exports} | {t.syscall for t in self.trampolines}
        if self.datapage is not None and self.datapage.coarse_in_mode_none == "syscall":
            made.add("clock_gettime")
        numbers = {name: nr for name, nr in abi.numbers.items() if name in made}
        return Syscalls(fragment, abi.instruction, abi.convention, numbers)

    def _unnumbered(self):
        return f"the ABI catalogue has no number for it (vdsogen/spec/abi.toml [{self.abi.name}.syscalls.numbers])"

    def _exports(self):
        numbers = self.abi_syscalls.numbers
        tables = []
        errors = len(self.problems.errors)
        with self.problems.section():
            tables = self.top.tables("export", []) if self.top.has("trampoline") else self.top.tables("export")
            # s390's 31-bit compat vDSO (Linux 5.11 to 6.12) has only its trampolines
            if not tables and not self.top.has("trampoline"):
                self.top.error("export", "at least one export (or [[trampoline]]) is needed")
        for xt in tables:
            with self.problems.section():
                xname = xt.ident("name")
                self.claim(xt, "name", xname)
                impl = xt.ident("impl")
                function = functions.get(impl)
                if function is None:
                    xt.error("impl", f"no implementation {impl!r}: vdsogen/spec/functions.toml declares "
                                     f"{', '.join(functions.catalogue())}"
                                     f"{did_you_mean(impl, functions.catalogue())}")
                where = xt.str("where", function.where, choices=functions.WHERE)
                if where == "core" and function.where == "arch":
                    xt.error("where", f"{impl} has no implementation in the core (functions.toml: where = \"arch\")")
                if where == "arch":
                    self.need_fragment(xt, "where" if function.where == "core" else "impl", f"impl-{impl}.S.j2")
                version = self.version_of(xt)
                binding = xt.str("binding", "global", choices=BINDINGS)
                aliases = []
                for i, alias in enumerate(xt.list("aliases", str, [], "a string")):
                    if not _is_ident(alias):
                        xt.error(f"aliases[{i}]", f"{alias!r} is not a C identifier")
                    self.claim(xt, f"aliases[{i}]", alias)
                    aliases.append(Alias(alias, "weak"))
                xt.done()
                for key, name in [("name", xname), *((f"aliases[{i}]", a.name) for i, a in enumerate(aliases))]:
                    means = name_means(name)
                    if means is not None and means != impl:
                        xt.error(key, f"{name} is {means} to every caller, and this export is built from {impl}: "
                                      f"the harness would test it as {impl}, a real program call it as {means}")
                if where == "core":
                    for k in function.arch_fragments:
                        if not self.contract.has(k):
                            xt.error("impl", f"the core's {impl} calls the arch's {k} fragment "
                                             f"({contracts.kind(k).file}), and arch/{self.arch}/contract.toml "
                                             f"does not provide it")
                if function.syscall and function.syscall not in numbers:
                    xt.error("impl", f"{impl} falls back to syscall {function.syscall}, and "
                                     f"{self._unnumbered()}")
                self.exports.append(Export(xname, function, version, binding, tuple(aliases), where))
        # What depends on the set of exports is not judged on part of it.
        self.exports_failed = len(self.problems.errors) > errors

    def _trampolines(self):
        known = {t.name: t for t in self.abi.trampolines}
        tables: list[Table] = []
        with self.problems.section():
            tables = self.top.tables("trampoline", [])
        for tt in tables:
            with self.problems.section():
                tname = tt.ident("name")
                if tname not in known:
                    tt.error("name", f"the {self.abi.name} ABI has no trampoline {tname!r} "
                                     f"(known: {', '.join(known) or 'none'}){did_you_mean(tname, known)}")
                self.claim(tt, "name", tname)
                version = self.version_of(tt)
                fragment = tt.str("fragment")
                self.need_fragment(tt, "fragment", f"{fragment}.S.j2")
                _abi_fact(tt, "syscall", f"[{self.abi.name}] trampolines")
                tt.done()
                t = known[tname]
                if t.syscall not in self.abi_syscalls.numbers:
                    tt.error("name", f"{tname} makes syscall {t.syscall}, and {self._unnumbered()}")
                self.trampolines.append(Trampoline(tname, version, fragment, t.syscall, t.lead, t.words,
                                                   t.kernel_label, t.label_at))

    def _labels(self):
        """[emit] labels: kernel name = symbol, the offsets a kernel links to
        beyond the exports and the ABI's trampoline labels (--emit writes
        them; the symbol is looked up in vdso.so.dbg then)."""
        et = self.top.table("emit", None)
        if et is None:
            return ()
        lt = et.table("labels", {})
        abi_labels = {t.label: t.name for t in self.trampolines if t.label}
        abi_labels.update((k.name, k.within) for k in self.abi.kernel_labels)
        out = []
        for name in lt.keys():
            symbol = lt.ident(name)
            if not _is_ident(name):
                lt.error(name, f"{name!r} is not a C identifier")
            if name in self.names:
                lt.error(name, f"{name!r} is an exported symbol: vdso-offsets.h has its offset already")
            if name in abi_labels:
                lt.error(name, f"{name!r} is the ABI's kernel label in {abi_labels[name]} already "
                               f"(vdsogen/spec/abi.toml [{self.abi.name}])")
            out.append((name, symbol))
        lt.done()
        et.done()
        return tuple(out)

    def _timeless(self) -> bool:
        """A target without time data: the spec has neither [counter] nor
        [datapage], and no export reads the data pages (every export an arch
        entry that asks no data, or a core function the spec moves into an
        arch fragment, which is what the fragment makes it: parisc's time
        functions are plain syscalls; one that reached for data pages would
        not link).  Its image maps no data pages and reads no counter; the
        tables are required otherwise, each "missing" on its own."""
        top = self.top
        if top.has("counter") or top.has("datapage") or self.exports_failed:
            return False
        return all(e.arch_impl and (not e.function.uses_data or e.function.where == "core") for e in self.exports)

    def _counter(self):
        """[counter]: the fragment, its modes (by name) and parameters, as its contract declares them."""
        ct = self.top.table("counter")
        counter_fragment = ct.str("fragment")
        self.need_fragment(ct, "fragment", f"counter-{counter_fragment}.h.j2")
        counter_contract = contracts.counter_contract(self.contract, ct, counter_fragment)
        param_values = contracts.counter_params(counter_contract, ct, self.abi.elf_class)
        modes = contracts.counter_modes(counter_contract, ct)
        words = ct.list("words", int, [], "an integer")
        for i, w in enumerate(words):
            if not 0 <= w <= 0xFFFFFFFF:
                ct.error(f"words[{i}]", f"{w:#x} is not a 32-bit instruction word")
        counter = Counter(counter_fragment, param_values, modes,
                          ct.bool("mask"), ct.bool("clamp_backwards"), tuple(words), counter_contract)
        ct.done()
        return counter

    def _datapage(self):
        dt, tree, kc = self.top.table("datapage"), self.tree, self.kc
        layout_name = dt.str("layout")
        if not layout_path(layout_name, tree.layout_dirs).is_file():
            known = [p.stem for d in tree.layout_dirs for p in d.glob("*.toml")]
            dt.error("layout", f"no layout {layout_name!r} in {', '.join(map(str, tree.layout_dirs))}"
                               f"{did_you_mean(layout_name, known)}")
        layout = load_layout(layout_name, tree.layout_dirs)
        fixed = kc.datapage() if kc is not None else {}
        if kc is not None:
            kc.check_layout(layout, f"{self.path}: datapage.layout")
        page_size = _from_kconfig(dt, "page_size", fixed, lo=4096, hi=1 << 20)
        if page_size & (page_size - 1):
            dt.error("page_size", f"{page_size} is not a power of two")
        pages = dt.int("pages", lo=1, hi=64)
        if pages < layout.page_count:
            dt.error("pages", f"layout {layout_name} needs {layout.page_count} pages below the text")
        for page in layout.pages:
            if page.struct and layout.struct(page.struct).size > page_size:
                dt.error("page_size", f"struct {page.struct} does not fit in a {page_size}-byte page")
        tick_nsec = _from_kconfig(dt, "tick_nsec", fixed, lo=1, hi=999_999_999)
        # Linux serves the coarse clocks from the page whatever the clock mode,
        # since its timekeeper keeps their bases current; a runtime whose page
        # writer stops updating in clock mode NONE wants the syscall instead.
        coarse = dt.str("coarse_in_mode_none", "page", choices=COARSE_IN_MODE_NONE)
        if (coarse == "syscall" and any(e.impl == "time" for e in self.exports)
                and "clock_gettime" not in self.abi_syscalls.numbers):
            dt.error("coarse_in_mode_none", f"time() asks clock_gettime in clock mode NONE, and "
                                            f"{self._unnumbered()}")
        dt.done()
        return DataPages(layout, page_size, pages, tick_nsec, coarse)

    def _getcpu(self):
        # getcpu answers in user space where an arch fragment knows how (x86:
        # RDPID or the per-CPU segment limit), with the syscall as fallback.
        gt = self.top.table("getcpu", None)
        if gt is None:
            return None
        getcpu = gt.str("fragment")
        self.need_fragment(gt, "fragment", f"getcpu-{getcpu}.h.j2")
        if not self.exports_failed and not any(e.impl == "getcpu" and not e.arch_impl for e in self.exports):
            gt.error("fragment", "no export implements getcpu in the core (an arch entry has its own)")
        gt.done()
        return getcpu

    def _entry(self):
        entry = self.top.table("entry")
        entry_style = entry.str("style", choices=ENTRY_STYLES)
        if entry_style == "asm":
            self.need_fragment(entry, "style", "entry.S.j2")
            if not self.exports_failed:
                contracts.check_entry(self.contract, self.top, self.exports)
        entry.done()
        return entry_style

    def _toolchain(self):
        tc = self.top.table("toolchain")
        toolchain = Toolchain(
            tc.str("clang_target", None), tc.str("gnu_triple", None), tc.str("qemu", None),
            tuple(tc.list("cflags", str, [], "a string")),
            tuple(tc.list("gnu_cflags", str, [], "a string")),
            tuple(tc.list("ldflags", str, [], "a string")),
            tuple(tc.list("harness_cflags", str, [], "a string")),
            tc.str("object_format", None), tc.str("link_clang_target", None),
            tuple(tc.list("link_gnu_flags", str, [], "a string")),
            tc.str("default", "llvm", choices=TOOLCHAIN_KINDS), tc.str("clang_linker", "lld", choices=LINKERS),
            tc.str("program_triple", None), tc.str("qemu_cpu", None))
        tc.done()
        if toolchain.qemu_cpu and not toolchain.qemu:
            tc.error("qemu_cpu", "only with qemu: the harness runs natively")
        if toolchain.clang_target is None and (toolchain.default != "gnu" or toolchain.gnu_triple is None):
            tc.error("clang_target", "missing: only a target with default = \"gnu\" and a gnu_triple goes without "
                                     "(an ABI LLVM has no backend for)")
        if toolchain.gnu_triple is None and "gnu" in (toolchain.default, toolchain.clang_linker):
            tc.error("gnu_triple", "missing: the GNU toolchain is chosen (default or clang_linker)")
        self.tc = tc
        return toolchain

    def _harness(self):
        ht = self.top.table("harness", None)
        harness = Harness(False)
        if ht is not None:
            checks = tuple(ht.list("checks", str, [], "a string"))
            for i, check in enumerate(checks):
                if not _is_ident(check):
                    ht.error(f"checks[{i}]", f"{check!r} is not a C identifier")
                if check in {e.impl for e in self.exports} or checks.index(check) != i:
                    ht.error(f"checks[{i}]", f"{check!r} is checked already")
                self.need_fragment(ht, f"checks[{i}]", f"harness-check-{check}.c.j2")
            harness = Harness(ht.bool("trap_syscalls", False), ht.str("libc", "system", choices=HARNESS_LIBCS),
                              ht.bool("injected_counter", False), ht.str("clang_target", None), checks,
                              ht.bool("bti", False), ht.bool("booted", False))
            if harness.booted and self.toolchain is not None and self.toolchain.qemu:
                ht.error("booted", "a harness qemu-user runs ([toolchain] qemu) is not booted-only")
            if harness.bti and self.abi.machine != EM_AARCH64:
                ht.error("bti", "PROT_BTI (guarded pages) is arm64's: this ABI's code cannot be mapped with it")
            if harness.clang_target and harness.libc != "freestanding":
                ht.error("clang_target", "only a freestanding harness (libc = \"freestanding\") is built "
                                         "by clang")
            if harness.trap_syscalls:
                self.need_fragment(ht, "trap_syscalls", "harness-trap.h.j2")
            if harness.injected_counter and self.counter is not None and not self.counter.words:
                self.top.table("counter").error(
                    "words", "missing: with [harness] injected_counter, `check` verifies the real counter read "
                             "by its instruction words")
            ht.done()
        if harness.libc == "system" and self.toolchain is not None and self.toolchain.gnu_triple is None:
            self.tc.error("gnu_triple", "missing: the harness is built by <gnu_triple>-gcc against its libc "
                                        "(else [harness] libc = \"freestanding\")")
        return harness


def _parse(name, path, data, tree, kc=None):
    return _Parser(name, path, data, tree, kc).parse()


def _is_ident(s):
    return bool(C_IDENT.match(s))
