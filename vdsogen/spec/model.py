"""Target specs (specs/T.toml) turned into validated, frozen objects.

Everything the writers and the toolchain driver need is checked here, before
anything renders: names are C identifiers, every version node is used, every
export has an implementation, every syscall an export needs has a number,
the layout fits the pages the target maps.
"""

import re
from dataclasses import dataclass, field

from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.spec.layout import load_layout, layout_path
from vdsogen.spec.toml import C_IDENT, Table, load_toml

# e_machine values of the ABIs vdsogen knows (elf.h).
MACHINES = {"EM_386": 3, "EM_MIPS": 8, "EM_PPC": 20, "EM_PPC64": 21, "EM_S390": 22,
            "EM_ARM": 40, "EM_X86_64": 62, "EM_AARCH64": 183, "EM_RISCV": 243,
            "EM_LOONGARCH": 258}

@dataclass(frozen=True)
class CoreImpl:
    """One function of the generic time core."""
    syscall: str | None    # what it falls back to
    nargs: int             # user arguments; asm entries pass the data page after them
    returns_errno: bool    # 0 or -errno (False: the result is a value, as time() gives)
    uses_data: bool        # reads the data page


CORE_IMPLS = {
    "clock_gettime": CoreImpl("clock_gettime", 2, True, True),
    "clock_getres": CoreImpl("clock_getres", 2, True, True),
    "gettimeofday": CoreImpl("gettimeofday", 2, True, True),
    "time": CoreImpl(None, 1, False, True),
    "getcpu": CoreImpl("getcpu", 3, True, False),
}

CONVENTIONS = ("negative-errno", "cr0-so")
COARSE_IN_MODE_NONE = ("page", "syscall")
ENTRY_STYLES = ("c", "asm")
SYSCALL_NR_MAX = 8191   # above every Linux ABI's table, MIPS's 4000/5000/6000 bases included
BINDINGS = ("global", "weak")
VERSION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


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
    impl: str
    version: str
    binding: str
    aliases: tuple
    arch_impl: bool        # implemented by arch/<arch>/impl-<impl>.S.j2, not the core


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
    params: dict = field(hash=False)
    modes: tuple           # clock_mode values this counter serves
    mask: bool             # apply the clock record's mask to the delta
    clamp_backwards: bool  # a counter below cycle_last counts as no time passed


@dataclass(frozen=True)
class Syscalls:
    fragment: str
    instruction: str
    convention: str
    numbers: dict = field(hash=False)


@dataclass(frozen=True)
class DataPages:
    layout: object         # vdsogen.layout.Layout
    page_size: int
    pages: int
    tick_nsec: int         # resolution of the coarse clocks (TICK_NSEC)
    coarse_in_mode_none: str   # "page" (Linux) or "syscall"


@dataclass(frozen=True)
class Toolchain:
    clang_target: str
    gnu_triple: str
    qemu: str | None       # qemu-user name, None when the host runs it natively
    cflags: tuple
    gnu_cflags: tuple      # for the GNU compiler only: options clang rejects (-ffixed-r30)
    ldflags: tuple
    harness_cflags: tuple


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    arch: str              # directory of fragments under arch/
    description: str
    elf: ElfIdentity
    soname: str
    versions: tuple        # node names, in verdef order after the base
    exports: tuple
    trampolines: tuple
    counter: Counter
    syscalls: Syscalls
    datapage: DataPages
    entry_style: str
    toolchain: Toolchain

    def fragment(self, name):
        """Template name of an arch fragment, for the Jinja2 loader."""
        return f"arch/{self.arch}/{name}"

    @property
    def core_exports(self):
        return tuple(e for e in self.exports if not e.arch_impl)

    @property
    def core_impls(self):
        return CORE_IMPLS

    @property
    def arch_exports(self):
        return tuple(e for e in self.exports if e.arch_impl)

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


def list_targets():
    return sorted(p.stem for p in paths.SPECS.glob("*.toml"))


def spec_path(name):
    return paths.SPECS / f"{name}.toml"


def load_target(name):
    path = spec_path(name)
    if not path.is_file():
        known = ", ".join(list_targets()) or "none"
        raise SpecError(path, None, f"no spec for target {name!r} (known: {known})")
    return _parse(name, path, Table(path, load_toml(path)))


def _parse(name, path, top):
    arch = top.ident("arch")
    if not (paths.ARCH / arch).is_dir():
        top.error("arch", f"no fragment directory arch/{arch}/")
    description = top.str("description", "")

    et = top.table("elf")
    elf_class = et.int("class")
    if elf_class not in (32, 64):
        et.error("class", "must be 32 or 64")
    endian = et.str("endian", choices=("little", "big"))
    machine_name = et.str("machine")
    if machine_name not in MACHINES:
        et.error("machine", f"unknown machine {machine_name!r} (known: {', '.join(MACHINES)})")
    flags = et.int("flags", 0, lo=0, hi=0xFFFFFFFF)
    soname = et.str("soname")
    if not soname or "/" in soname:
        et.error("soname", f"{soname!r} is not a soname")
    version_text = et.str("linux_version")
    parts = version_text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        et.error("linux_version", f"{version_text!r} is not MAJOR.MINOR.SUBLEVEL")
    text_fill = et.int("text_fill", None, lo=0, hi=0xFFFFFFFF)
    eh_frame = et.bool("eh_frame")
    et.done()
    elf = ElfIdentity(elf_class, endian, MACHINES[machine_name], machine_name, flags,
                      tuple(int(p) for p in parts), text_fill, eh_frame)

    versions = []
    for vt in top.tables("version"):
        vname = vt.str("name")
        if not VERSION_NAME.match(vname):
            vt.error("name", f"{vname!r} is not a version node name (letters, digits, '_' and '.')")
        if vname in versions:
            vt.error("name", f"version node {vname!r} declared twice")
        versions.append(vname)
        vt.done()
    if not versions:
        top.error("version", "at least one version node is needed")

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
    _need_fragment(st, "fragment", arch, f"syscall-{syscall_fragment}.h.j2")

    names = set()

    def claim(table, key, sym):
        if sym in names:
            table.error(key, f"symbol {sym!r} exported twice")
        names.add(sym)

    exports = []
    for xt in top.tables("export"):
        xname = xt.ident("name")
        claim(xt, "name", xname)
        impl = xt.ident("impl")
        arch_impl = impl not in CORE_IMPLS
        if arch_impl and not (paths.ARCH / arch / f"impl-{impl}.S.j2").is_file():
            xt.error("impl", f"no implementation {impl!r}: not in the core "
                             f"({', '.join(CORE_IMPLS)}) and no arch/{arch}/impl-{impl}.S.j2")
        version = xt.str("version")
        if version not in versions:
            xt.error("version", f"unknown version node {version!r}")
        binding = xt.str("binding", "global", choices=BINDINGS)
        aliases = []
        for i, alias in enumerate(xt.list("aliases", str, [], "a string")):
            if not _is_ident(alias):
                xt.error(f"aliases[{i}]", f"{alias!r} is not a C identifier")
            claim(xt, f"aliases[{i}]", alias)
            aliases.append(Alias(alias, "weak"))
        xt.done()
        syscall = None if arch_impl else CORE_IMPLS[impl].syscall
        if syscall and syscall not in numbers:
            st.error(f"numbers.{syscall}", f"missing: export {xname} falls back to it")
        exports.append(Export(xname, impl, version, binding, tuple(aliases), arch_impl))
    if not exports:
        top.error("export", "at least one export is needed")

    trampolines = []
    for tt in top.tables("trampoline", []):
        tname = tt.ident("name")
        claim(tt, "name", tname)
        version = tt.str("version")
        if version not in versions:
            tt.error("version", f"unknown version node {version!r}")
        fragment = tt.str("fragment")
        _need_fragment(tt, "fragment", arch, f"{fragment}.S.j2")
        syscall = tt.ident("syscall")
        if syscall not in numbers:
            st.error(f"numbers.{syscall}", f"missing: trampoline {tname} makes this syscall")
        lead = tt.list("lead", int, [], "an integer")
        words = tt.list("words", int, kindname="an integer")
        for key, ws in (("lead", lead), ("words", words)):
            for i, w in enumerate(ws):
                if not 0 <= w <= 0xFFFFFFFF:
                    tt.error(f"{key}[{i}]", f"{w:#x} is not a 32-bit instruction word")
        if not words:
            tt.error("words", "a trampoline needs its instruction words")
        tt.done()
        trampolines.append(Trampoline(tname, version, fragment, syscall, tuple(lead), tuple(words)))

    used = {e.version for e in exports} | {t.version for t in trampolines}
    for i, v in enumerate(versions):
        if v not in used:
            raise SpecError(path, f"version[{i}].name", f"version node {v!r} is not used by any export")

    ct = top.table("counter")
    counter_fragment = ct.str("fragment")
    _need_fragment(ct, "fragment", arch, f"counter-{counter_fragment}.h.j2")
    params = ct.table("params", None)
    param_values = {}
    if params is not None:
        for key in params.keys():
            if not _is_ident(key):
                params.error(key, f"{key!r} is not a C identifier")
            param_values[key] = params.raw(key)
        params.done()
    modes = ct.list("modes", int, kindname="an integer")
    for i, m in enumerate(modes):
        if not 1 <= m < 0x7FFFFFFF:
            ct.error(f"modes[{i}]", f"{m} is not a counter clock mode (NONE=0 and TIMENS are reserved)")
    if not modes:
        ct.error("modes", "at least one clock mode is needed")
    counter = Counter(counter_fragment, param_values, tuple(modes),
                      ct.bool("mask"), ct.bool("clamp_backwards"))
    ct.done()

    dt = top.table("datapage")
    layout_name = dt.str("layout")
    if not layout_path(layout_name).is_file():
        dt.error("layout", f"no layout {layout_name!r} in {paths.LAYOUTS}")
    layout = load_layout(layout_name)
    page_size = dt.int("page_size", lo=4096, hi=1 << 20)
    if page_size & (page_size - 1):
        dt.error("page_size", f"{page_size} is not a power of two")
    pages = dt.int("pages", lo=1, hi=64)
    if pages < layout.page_count:
        dt.error("pages", f"layout {layout_name} needs {layout.page_count} pages below the text")
    for page in layout.pages:
        if page.struct and layout.struct(page.struct).size > page_size:
            dt.error("page_size", f"struct {page.struct} does not fit in a {page_size}-byte page")
    tick_nsec = dt.int("tick_nsec", lo=1, hi=999_999_999)
    # Linux serves the coarse clocks from the page whatever the clock mode,
    # since its timekeeper keeps their bases current; a runtime whose page
    # writer stops updating in clock mode NONE wants the syscall instead.
    coarse = dt.str("coarse_in_mode_none", "page", choices=COARSE_IN_MODE_NONE)
    if coarse == "syscall" and any(e.impl == "time" for e in exports) and "clock_gettime" not in numbers:
        st.error("numbers.clock_gettime", "missing: time() asks it in clock mode NONE (coarse_in_mode_none)")
    dt.done()
    datapage = DataPages(layout, page_size, pages, tick_nsec, coarse)

    entry = top.table("entry")
    entry_style = entry.str("style", choices=ENTRY_STYLES)
    if entry_style == "asm":
        _need_fragment(entry, "style", arch, "entry.S.j2")
    entry.done()

    tc = top.table("toolchain")
    toolchain = Toolchain(
        tc.str("clang_target"), tc.str("gnu_triple"), tc.str("qemu", None),
        tuple(tc.list("cflags", str, [], "a string")),
        tuple(tc.list("gnu_cflags", str, [], "a string")),
        tuple(tc.list("ldflags", str, [], "a string")),
        tuple(tc.list("harness_cflags", str, [], "a string")))
    tc.done()
    top.done()

    return Target(name, str(path), arch, description, elf, soname, tuple(versions),
                  tuple(exports), tuple(trampolines), counter, syscalls, datapage,
                  entry_style, toolchain)


def _is_ident(s):
    return bool(C_IDENT.match(s))


def _need_fragment(table, key, arch, filename):
    if not (paths.ARCH / arch / filename).is_file():
        table.error(key, f"no fragment arch/{arch}/{filename}")
