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

from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.spec import abi as catalogue
from vdsogen.spec import contract as contracts
from vdsogen.spec import functions
from vdsogen.spec.layout import load_layout, layout_path
from vdsogen.spec.kconfig import load_kconfig
from vdsogen.elf.consts import MACHINE_NAMES
from vdsogen.spec.toml import C_IDENT, Table, load_toml

CONVENTIONS = ("negative-errno", "cr0-so")
COARSE_IN_MODE_NONE = ("page", "syscall")
ENTRY_STYLES = ("c", "asm")
TOOLCHAIN_KINDS = ("llvm", "gnu")
LINKERS = ("lld", "gnu")
SYSCALL_NR_MAX = 8191   # above every Linux ABI's table, MIPS's 4000/5000/6000 bases included
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

    @property
    def linux_version_code(self):
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
    def impl(self):
        return self.function.name

    @property
    def arch_impl(self):
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


@dataclass(frozen=True)
class Counter:
    fragment: str
    params: dict = field(hash=False)   # [counter.params], checked against the contract, defaults filled in
    modes: tuple           # clock_mode values this counter serves, in the spec's order
    mask: bool             # apply the clock record's mask to the delta
    clamp_backwards: bool  # a counter below cycle_last counts as no time passed
    words: tuple = ()      # the read's 32-bit instruction words, in code order, that `check` finds
    # the fragment's entry in arch/<arch>/contract.toml (contracts.CounterContract)
    contract: object = field(default=None, hash=False, compare=False)

    @property
    def clock_modes(self):
        """The modes served (contracts.ClockMode: name, number, pages), in the spec's order."""
        return tuple(self.contract.mode_of(n) for n in self.modes)

    @property
    def arch_modes(self):
        """Every mode the counter fragment can serve, as its contract lists them."""
        return self.contract.modes

    def serves(self, name):
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
    layout: object         # vdsogen.spec.layout.Layout
    page_size: int
    pages: int
    tick_nsec: int         # resolution of the coarse clocks (TICK_NSEC)
    coarse_in_mode_none: str   # "page" (Linux) or "syscall"


@dataclass(frozen=True)
class Toolchain:
    clang_target: str
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

    @property
    def program_cc(self):
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
    # arch/<arch>/harness-check-NAME.c.j2 (s390: the TOD steering)
    checks: tuple = ()


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
    counter: Counter
    syscalls: Syscalls
    datapage: DataPages
    entry_style: str
    getcpu: str | None     # arch fragment getcpu-NAME.h.j2 answering in user space, or None: the syscall
    toolchain: Toolchain
    harness: Harness
    spec_files: tuple = ()  # the spec, then the specs it extends, nearest first
    test_counter: bool = False  # a test build: the counter read is injected (test_build())
    contract: object = field(default=None, hash=False, compare=False)  # arch/<arch>/contract.toml, merged

    @property
    def description(self):
        return self.abi.description

    def test_build(self):
        """The test build of this target: the same image but for its counter
        read, which loads a 64-bit value the harness controls from a page
        below the data pages; the image carries a note that marks it."""
        return replace(self, test_counter=True)

    def fragment(self, name):
        """Template name of an arch fragment, for the Jinja2 loader."""
        return f"arch/{self.arch}/{name}"

    def provides(self, kind):
        """The arch has optional fragment `kind` (its contract's `provides`)."""
        return self.contract.has(kind)

    @property
    def core_exports(self):
        return tuple(e for e in self.exports if not e.arch_impl)

    @property
    def arch_exports(self):
        return tuple(e for e in self.exports if e.arch_impl)

    @property
    def functions(self):
        """The functions the exports implement, once each, in export order."""
        return _functions_of(self.exports)

    @property
    def core_functions(self):
        """The functions the generic C core implements for this target."""
        return _functions_of(self.core_exports)

    @property
    def arch_functions(self):
        """The functions arch fragments implement (impl-NAME.S.j2) for this target."""
        return _functions_of(self.arch_exports)

    def implemented_by(self, name):
        """Where function `name` is implemented for this target: "core", "arch", or None (no export)."""
        return next((e.where for e in self.exports if e.impl == name), None)

    @property
    def getcpu_in_user_space(self):
        """getcpu answers without the syscall: a C hook or an arch entry."""
        return bool(self.getcpu) or self.implemented_by("getcpu") == "arch"

    def symbols(self):
        """Every exported (name, version, binding): entries, aliases, trampolines."""
        out = []
        for e in self.exports:
            out.append((e.name, e.version, e.binding))
            out.extend((a.name, e.version, a.binding) for a in e.aliases)
        out.extend((t.name, t.version, "global") for t in self.trampolines)
        return out

    def exports_by_version(self):
        return {v: [n for n, ver, _ in self.symbols() if ver == v] for v in self.versions}

    def syscall(self, name):
        return self.syscalls.numbers[name]


class SpecTree:
    """Where specs, layouts and arch fragments are looked up: first a
    directory of the user's (`--specs=DIR`, as a maintainer keeps them in a
    kernel tree: DIR/T.toml, DIR/layouts/NAME.toml, DIR/arch/ARCH/*.j2),
    then vdsogen's own.  Each fragment is taken from the first directory
    that has it, so DIR/arch/ARCH/ need only hold what differs."""

    def __init__(self, extra=None):
        self.extra = Path(extra).resolve() if extra else None
        if self.extra and not self.extra.is_dir():
            raise SpecError(extra, None, "--specs: not a directory")
        self.roots = tuple(r for r in (self.extra, paths.ROOT) if r is not None)

    @property
    def spec_dir(self):
        return self.extra or paths.SPECS

    @property
    def layout_dirs(self):
        return tuple(d for d in ((self.extra / "layouts") if self.extra else None, paths.LAYOUTS) if d)

    def has_fragment(self, arch, filename=""):
        return any((r / "arch" / arch / filename).exists() for r in self.roots)


def list_targets(specs=None):
    return sorted(p.stem for p in SpecTree(specs).spec_dir.glob("*.toml"))


def spec_path(name, specs=None):
    return SpecTree(specs).spec_dir / f"{name}.toml"


def load_target(name, specs=None, kconfig=None):
    """Target `name` from specs/ (or from the directory `specs`).

    With `kconfig` (a kernel .config), the values the image depends on
    (tick, page size) come from the kernel's configuration rather than from
    the spec, and the layout is checked against it (vdsogen/spec/kconfig.py)."""
    path = spec_path(name, specs)
    if not path.is_file():
        known = ", ".join(list_targets(specs)) or "none"
        raise SpecError(path, None, f"no spec for target {name!r} (known: {known})")
    kc = load_kconfig(kconfig) if kconfig is not None else None
    data, files = _load_spec(path)
    target = _parse(name, path, Table(path, data), SpecTree(specs), kc)
    return replace(target, spec_files=tuple(str(f) for f in files))


def _load_spec(path, _chain=()):
    """The spec at `path` with the specs it extends merged in: (table, files).

    A spec may start from another (`extends = "NAME"`: NAME.toml in its own
    directory, else in vdsogen's specs/) and override keys: tables merge key
    by key, at any depth; any other value, arrays included, replaces the
    base's."""
    data = load_toml(path)
    if "extends" not in data:
        return data, (path,)
    base = data.pop("extends")
    if not isinstance(base, str) or not _is_ident(base.replace("-", "_")):
        raise SpecError(path, "extends", f"expected the name of a spec, got {base!r}")
    chain = _chain + (path.resolve(),)
    candidates = [path.parent / f"{base}.toml", paths.SPECS / f"{base}.toml"]
    base_path = next((c for c in candidates if c.is_file()), None)
    if base_path is None:
        raise SpecError(path, "extends", f"no spec {base!r} in {path.parent} or {paths.SPECS}")
    if base_path.resolve() in chain:
        names = " -> ".join(p.stem for p in (*chain, base_path))
        raise SpecError(path, "extends", f"circular extends: {names}")
    base_data, files = _load_spec(base_path, chain)
    return _merge(base_data, data), (path, *files)


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
    et.done()
    machine_name = MACHINE_NAMES.get(abi.machine, f"EM_{abi.machine}")
    return ElfIdentity(abi.elf_class, endian, abi.machine, machine_name, flags,
                       tuple(int(p) for p in parts), text_fill, eh_frame, rewrite_flags), soname


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


def _parse(name, path, top, tree, kc=None):
    abi_name = top.str("abi")
    abi = catalogue.get(abi_name)
    if abi is None:
        top.error("abi", f"unknown ABI {abi_name!r} (known: {', '.join(catalogue.names())})")
    arch = top.ident("arch")
    if not tree.has_fragment(arch):
        top.error("arch", f"no fragment directory arch/{arch}/")
    contract = contracts.load_contract(arch, tree.roots)

    def need_fragment(table, key, filename):
        if not tree.has_fragment(arch, filename):
            table.error(key, f"no fragment arch/{arch}/{filename}{contract.suggest(filename)}")

    elf, soname = _identity(top, abi)

    st = top.table("syscall")
    convention = st.str("convention", choices=CONVENTIONS)
    syscall_fragment = st.str("fragment")
    instruction = st.str("instruction")
    nt = st.table("numbers")
    numbers = {}
    for key in nt.keys():
        if not _is_ident(key):
            nt.error(key, f"{key!r} is not a C identifier")
        numbers[key] = nt.int(key, lo=0, hi=SYSCALL_NR_MAX)
    nt.done()
    st.done()
    syscalls = Syscalls(syscall_fragment, instruction, convention, numbers)
    need_fragment(st, "fragment", f"syscall-{syscall_fragment}.h.j2")

    names = set()

    def claim(table, key, sym):
        if sym in names:
            table.error(key, f"symbol {sym!r} exported twice")
        names.add(sym)

    def version_of(table):
        version = table.str("version", abi.lookup_version)
        if version not in abi.versions:
            table.error("version", f"unknown version node {version!r} (the {abi.name} ABI has "
                                   f"{', '.join(abi.versions)})")
        return version

    exports = []
    for xt in top.tables("export"):
        xname = xt.ident("name")
        claim(xt, "name", xname)
        impl = xt.ident("impl")
        function = functions.get(impl)
        if function is None:
            xt.error("impl", f"no implementation {impl!r}: vdsogen/spec/functions.toml declares "
                             f"{', '.join(functions.catalogue())}")
        where = xt.str("where", function.where, choices=functions.WHERE)
        if where == "core" and function.where == "arch":
            xt.error("where", f"{impl} has no implementation in the core (functions.toml: where = \"arch\")")
        if where == "arch":
            need_fragment(xt, "where" if function.where == "core" else "impl", f"impl-{impl}.S.j2")
        version = version_of(xt)
        binding = xt.str("binding", "global", choices=BINDINGS)
        aliases = []
        for i, alias in enumerate(xt.list("aliases", str, [], "a string")):
            if not _is_ident(alias):
                xt.error(f"aliases[{i}]", f"{alias!r} is not a C identifier")
            claim(xt, f"aliases[{i}]", alias)
            aliases.append(Alias(alias, "weak"))
        xt.done()
        if function.syscall and function.syscall not in numbers:
            st.error(f"numbers.{function.syscall}", f"missing: export {xname} falls back to it")
        exports.append(Export(xname, function, version, binding, tuple(aliases), where))
    if not exports:
        top.error("export", "at least one export is needed")

    known = {t.name: t for t in abi.trampolines}
    trampolines = []
    for tt in top.tables("trampoline", []):
        tname = tt.ident("name")
        if tname not in known:
            tt.error("name", f"the {abi.name} ABI has no trampoline {tname!r} "
                             f"(known: {', '.join(known) or 'none'})")
        claim(tt, "name", tname)
        version = version_of(tt)
        fragment = tt.str("fragment")
        need_fragment(tt, "fragment", f"{fragment}.S.j2")
        syscall = tt.ident("syscall")
        if syscall not in numbers:
            st.error(f"numbers.{syscall}", f"missing: trampoline {tname} makes this syscall")
        tt.done()
        trampolines.append(Trampoline(tname, version, fragment, syscall, known[tname].lead,
                                      known[tname].words))

    # The ABI's version nodes, in its order, that some symbol uses.
    used = {e.version for e in exports} | {t.version for t in trampolines}
    versions = tuple(v for v in abi.versions if v in used)

    # The counter's modes (by name) and parameters, as its contract declares them.
    ct = top.table("counter")
    counter_fragment = ct.str("fragment")
    need_fragment(ct, "fragment", f"counter-{counter_fragment}.h.j2")
    counter_contract = contracts.counter_contract(contract, ct, counter_fragment)
    param_values = contracts.counter_params(counter_contract, ct)
    modes = contracts.counter_modes(counter_contract, ct)
    words = ct.list("words", int, [], "an integer")
    for i, w in enumerate(words):
        if not 0 <= w <= 0xFFFFFFFF:
            ct.error(f"words[{i}]", f"{w:#x} is not a 32-bit instruction word")
    counter = Counter(counter_fragment, param_values, modes,
                      ct.bool("mask"), ct.bool("clamp_backwards"), tuple(words), counter_contract)
    ct.done()

    dt = top.table("datapage")
    layout_name = dt.str("layout")
    if not layout_path(layout_name, tree.layout_dirs).is_file():
        dt.error("layout", f"no layout {layout_name!r} in {', '.join(map(str, tree.layout_dirs))}")
    layout = load_layout(layout_name, tree.layout_dirs)
    fixed = kc.datapage() if kc is not None else {}
    if kc is not None:
        kc.check_layout(layout, f"{path}: datapage.layout")
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
    if coarse == "syscall" and any(e.impl == "time" for e in exports) and "clock_gettime" not in numbers:
        st.error("numbers.clock_gettime", "missing: time() asks it in clock mode NONE (coarse_in_mode_none)")
    dt.done()
    datapage = DataPages(layout, page_size, pages, tick_nsec, coarse)
    contracts.check_layout(counter_contract, modes, layout, ct, dt)

    # getcpu answers in user space where an arch fragment knows how (x86:
    # RDPID or the per-CPU segment limit), with the syscall as fallback.
    gt = top.table("getcpu", None)
    getcpu = None
    if gt is not None:
        getcpu = gt.str("fragment")
        need_fragment(gt, "fragment", f"getcpu-{getcpu}.h.j2")
        if not any(e.impl == "getcpu" and not e.arch_impl for e in exports):
            gt.error("fragment", "no export implements getcpu in the core (an arch entry has its own)")
        gt.done()

    entry = top.table("entry")
    entry_style = entry.str("style", choices=ENTRY_STYLES)
    if entry_style == "asm":
        need_fragment(entry, "style", "entry.S.j2")
        contracts.check_entry(contract, top, exports)
    entry.done()

    tc = top.table("toolchain")
    toolchain = Toolchain(
        tc.str("clang_target"), tc.str("gnu_triple", None), tc.str("qemu", None),
        tuple(tc.list("cflags", str, [], "a string")),
        tuple(tc.list("gnu_cflags", str, [], "a string")),
        tuple(tc.list("ldflags", str, [], "a string")),
        tuple(tc.list("harness_cflags", str, [], "a string")),
        tc.str("object_format", None), tc.str("link_clang_target", None),
        tuple(tc.list("link_gnu_flags", str, [], "a string")),
        tc.str("default", "llvm", choices=TOOLCHAIN_KINDS), tc.str("clang_linker", "lld", choices=LINKERS),
        tc.str("program_triple", None))
    tc.done()
    if toolchain.gnu_triple is None and "gnu" in (toolchain.default, toolchain.clang_linker):
        tc.error("gnu_triple", "missing: the GNU toolchain is chosen (default or clang_linker)")

    ht = top.table("harness", None)
    harness = Harness(False)
    if ht is not None:
        checks = tuple(ht.list("checks", str, [], "a string"))
        for i, check in enumerate(checks):
            if not _is_ident(check):
                ht.error(f"checks[{i}]", f"{check!r} is not a C identifier")
            if check in {e.impl for e in exports} or checks.index(check) != i:
                ht.error(f"checks[{i}]", f"{check!r} is checked already")
            need_fragment(ht, f"checks[{i}]", f"harness-check-{check}.c.j2")
        harness = Harness(ht.bool("trap_syscalls", False), ht.str("libc", "system", choices=HARNESS_LIBCS),
                          ht.bool("injected_counter", False), ht.str("clang_target", None), checks)
        if harness.clang_target and harness.libc != "freestanding":
            ht.error("clang_target", "only a freestanding harness (libc = \"freestanding\") is built "
                                     "by clang")
        if harness.trap_syscalls:
            need_fragment(ht, "trap_syscalls", "harness-trap.h.j2")
        if harness.injected_counter and not counter.words:
            ct.error("words", "missing: with [harness] injected_counter, `check` verifies the real counter read "
                              "by its instruction words")
        ht.done()
    if harness.libc == "system" and toolchain.gnu_triple is None:
        tc.error("gnu_triple", "missing: the harness is built by <gnu_triple>-gcc against its libc "
                               "(else [harness] libc = \"freestanding\")")
    top.done()

    return Target(name, str(path), abi, arch, tuple(str(r) for r in tree.roots), elf, soname, versions,
                  tuple(exports), tuple(trampolines), counter, syscalls, datapage,
                  entry_style, getcpu, toolchain, harness, contract=contract)


def _is_ident(s):
    return bool(C_IDENT.match(s))
