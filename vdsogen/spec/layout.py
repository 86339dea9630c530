"""Data-page layouts: the structures the kernel's timekeeper writes, as data.

A layout file (specs/layouts/NAME.toml) declares structs (fields, types,
order), the pages below the vDSO text and what each holds, and how the time
core reaches the data it needs.  Offsets are computed here with C's natural
alignment; the generated header re-checks each one with _Static_assert.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from vdsogen import paths
from vdsogen.spec.toml import C_IDENT, Table, did_you_mean, load_toml

# vdso-offsets.h (templates/emit-vdso-offsets.h.j2) defines vdso_page_ROLE for
# every data page: no struct may take such a name.
EMITTED_PREFIX = "vdso_page_"


SCALARS = {
    "u8": (1, "uint8_t"), "u16": (2, "uint16_t"), "u32": (4, "uint32_t"), "u64": (8, "uint64_t"),
    "s8": (1, "int8_t"), "s16": (2, "int16_t"), "s32": (4, "int32_t"), "s64": (8, "int64_t"),
}

# Roles a page may play, in Linux's generic data store vocabulary.
PAGE_ROLES = ("time", "timens", "rng", "arch", "pvclock", "hvclock", "gic", "reserved")

# What the generic time core needs of one clock record, with the scalar type
# each field must have.  `basetime` is an array of a {sec, nsec} struct.
CLOCK_FIELDS = {"seq": "u32", "clock_mode": "s32", "cycle_last": "u64",
                "mask": "u64", "mult": "u32", "shift": "u32"}
CLOCK_OPTIONAL = {"max_cycles": "u64"}
TIME_DATA_ACCESS = {"tz_minuteswest": "s32", "tz_dsttime": "s32", "hrtimer_res": "u32"}
# Optional: the auxiliary clocks' records (CLOCK_AUX + i, v6.17+), an array of the clock struct.
AUX_CLOCKS = "aux_clocks"
# Optional: the struct holding the arch's own time data (Linux's arch_data: s390's TOD
# correction), a member of the time struct; unsaid, its fields are the time struct's own.
ARCH_TIME = "arch_time"
MIN_BASES = 12  # CLOCK_TAI + 1
# Optional ([behaviour]): what the layout's kernels do where no page says it, each with the values
# it may take, the first when neither the layout nor its base says (vdsogen's own behaviour).
BEHAVIOURS = {
    # riscv_hwprobe's flag RISCV_HWPROBE_WHICH_CPUS: "vdso", answered from the arch page as
    # Linux's riscv_vdso_get_cpus does (v6.8+), or "refused", the vDSO passing any flag to the
    # syscall, which refuses every one (-EINVAL) before v6.8.
    "hwprobe_which_cpus": ("vdso", "refused"),
}


@dataclass(frozen=True)
class Field:
    name: str
    type: str          # a scalar name or a struct name
    count: int         # 0 for a plain member, else array length
    offset: int
    size: int          # whole member, all elements
    ctype: str         # C spelling of the element type
    # A bitmap (an array of unsigned scalars): how many of its bits the kernel
    # defines (powerpc's syscall_map: NR_syscalls), by default all; else 0.
    bits: int = 0

    @property
    def is_array(self) -> bool:
        return self.count > 0


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple
    size: int
    align: int
    min_align: int     # the layout's own alignment demand (cache line, say)
    comment: str

    def field(self, name: str) -> "Field | None":
        for f in self.fields:
            if f.name == name:
                return f
        return None


@dataclass(frozen=True)
class Page:
    index: int
    role: str
    struct: str | None
    symbol: str | None
    # Where its struct starts in the page, for a role an earlier page plays as well
    # (`same_as`) at a member of that page's struct (`at`): riscv's hwprobe data at +240
    # of v6.12's first clock record.  0 for every page of its own.
    offset: int = 0


@dataclass(frozen=True)
class Layout:
    name: str
    path: str
    description: str
    structs: tuple           # in declaration order, dependencies first
    pages: tuple
    time_struct: str         # struct on the time page
    clock_struct: str        # element type of the clocks array
    clocks_member: str       # member of time_struct holding [hres/coarse, raw]
    access: dict             # datum -> C member path from time_struct
    linux: tuple = ()        # the Linux versions it describes: ((major, minor),) from, or (from, to)
    abis: tuple = ()         # the ABIs whose vDSO reads it at those versions
    behaviours: tuple = ()   # ((name, value), ...) of BEHAVIOURS, as the layout or its base says them

    def behaviour(self, name: str) -> str:
        """What its kernels do as BEHAVIOURS[name] says: the layout's value, else the default."""
        return dict(self.behaviours).get(name, BEHAVIOURS[name][0])

    def covers(self, version: "Sequence[int]") -> bool:
        """The layout describes Linux `version` (major, minor, ...), by its `linux` range."""
        v = tuple(version[:2])
        return bool(self.linux) and self.linux[0] <= v and (len(self.linux) == 1 or v <= self.linux[1])

    @property
    def versions(self) -> str:
        """Its `linux` range as text: "6.17+", "6.13-6.14", or "" when it gives none."""
        shown = ["%d.%d" % v for v in self.linux]
        return "" if not shown else shown[0] + "+" if len(shown) == 1 else "-".join(shown)

    def struct(self, name: str) -> "Struct":
        for s in self.structs:
            if s.name == name:
                return s
        raise KeyError(name)

    def page(self, role: str) -> "Page | None":
        for p in self.pages:
            if p.role == role:
                return p
        return None

    @property
    def page_count(self) -> int:
        """Pages below the text (a page playing two roles counts once)."""
        return len({p.index for p in self.pages})

    @property
    def has_max_cycles(self) -> bool:
        return self.struct(self.clock_struct).field("max_cycles") is not None

    @property
    def aux_clocks(self) -> int:
        """How many auxiliary clocks (CLOCK_AUX + i) have a record: 0 before v6.17."""
        if AUX_CLOCKS not in self.access:
            return 0
        path = self.access[AUX_CLOCKS]
        f = self.struct(self.time_struct).field(path)
        assert f is not None, f"{self.name}: no member {path}"
        return f.count

    def time_field(self, name: str) -> "str | None":
        """The member path, from the time struct, of the arch's time-data field
        `name` (s390's tod_steering_end: "vdso_data[0].arch_data.tod_steering_end"
        before v6.15), in the struct [access] arch_time names; None if it has none."""
        prefix = self.access.get(ARCH_TIME)
        struct = self.struct(self.time_struct)
        if prefix:
            for part in prefix.split("."):
                f = struct.field(part.partition("[")[0])
                assert f is not None, f"{self.name}: no member {prefix}"
                struct = self.struct(f.type)
        if struct.field(name) is None:
            return None
        return f"{prefix}.{name}" if prefix else name

    @property
    def has_timens(self) -> bool:
        return self.page("timens") is not None

    def shape(self) -> list[str]:
        """What code and harness take from the layout, one line per fact:
        every struct's size and members (type, count, offset, a bitmap's bits), every page
        (index, role, struct, symbol), every access path.  Comments and
        the description are not part of it; a behaviour said (BEHAVIOURS) is."""
        out = []
        for st in self.structs:
            out.append(f"struct {st.name} size {st.size} align {st.align}")
            out += [f"struct {st.name} member {f.name} {f.type}[{f.count}] at {f.offset}" +
                    (f" bits {f.bits}" if f.bits else "") for f in st.fields]
        out += [f"page {p.index} {p.role} {p.struct} {p.symbol}" + (f" at {p.offset}" if p.offset else "")
                for p in self.pages]
        out += [f"access {k} {v}" for k, v in sorted(self.access.items())]
        out += [f"behaviour {k} {v}" for k, v in self.behaviours]
        return out

    def digest(self) -> str:
        """16 hex digits of a SHA-256 over shape(): equal for layouts that
        lay out the same data, whatever their file says besides."""
        return hashlib.sha256("\n".join(self.shape()).encode()).hexdigest()[:16]

    def field_offset(self, struct_name: str, path: str) -> int:
        """Byte offset of a dotted member path such as 'clock_data[1].basetime[4].sec'."""
        offset = 0
        struct = self.struct(struct_name)
        for part in path.split("."):
            name, _, index = part.partition("[")
            f = struct.field(name)
            assert f is not None, f"{struct_name}: no member {path}"
            offset += f.offset
            if index:
                offset += int(index.rstrip("]")) * (f.size // f.count)
            if f.type in SCALARS:
                continue
            struct = self.struct(f.type)
        return offset


def layout_path(name: str, search: "Sequence[str | Path] | None" = None) -> Path:
    """The first NAME.toml in the search directories (default: vdsogen's own layouts)."""
    dirs = [Path(d) for d in search or (paths.LAYOUTS,)]
    for d in dirs:
        if (d / f"{name}.toml").is_file():
            return d / f"{name}.toml"
    return dirs[-1] / f"{name}.toml"


def load_layout(name: str, search: "Sequence[str | Path] | None" = None, _chain: tuple = ()) -> "Layout":
    """Layout NAME from the search directories; `extends` looks in the same ones."""
    search = tuple(search or (paths.LAYOUTS,))
    path = layout_path(name, search)
    if name in _chain:
        Table(path, {}).error("extends", f"circular extends through {' -> '.join(_chain + (name,))}")
    top = Table(path, load_toml(path))
    description = top.str("description", "")
    # Neither is inherited: a layout that extends another describes other versions.
    linux = _linux_range(top)
    abis = _abis(top)
    base = None
    if top.has("extends"):
        parent = top.str("extends")
        if not layout_path(parent, search).is_file():
            top.error("extends", f"no layout named {parent!r} in {', '.join(map(str, search))}")
        base = load_layout(parent, search, _chain + (name,))

    raw_structs = {}
    order = []
    if base is not None:
        # Rebuild the parent's structs so that overriding one (a clock
        # record with max_cycles, say) moves every struct that embeds it.
        anchor = Table(base.path, {}, "struct")
        for s in base.structs:
            raw_structs[s.name] = (s.name, [(f.name, f.type, f.count, f.bits or None, anchor) for f in s.fields],
                                   s.min_align, s.comment, anchor, True)
            order.append(s.name)
    for t in top.tables("struct", []):
        sname = t.ident("name")
        if sname in SCALARS:
            t.error("name", f"{sname!r} is a scalar type name")
        if sname.startswith(EMITTED_PREFIX):
            t.error("name", f"{sname!r}: a name of the form {EMITTED_PREFIX}ROLE is vdso-offsets.h's macro for a "
                            f"data page's offset (--emit): a C file that includes both would break")
        fields = []
        for ft in t.tables("fields"):
            fields.append((ft.ident("name"), ft.str("type"), ft.int("count", 0, lo=0, hi=4096),
                           ft.int("bits", None, lo=1, hi=1 << 20), ft))
            ft.done()
        if not fields:
            t.error("fields", "a struct needs at least one field")
        align = t.int("align", 0, lo=0, hi=4096)
        if align & (align - 1):
            t.error("align", f"{align} is not a power of two")
        spec = (sname, fields, align, t.str("comment", ""), t, False)
        t.done()
        if sname in raw_structs and not raw_structs[sname][5]:
            t.error("name", f"struct {sname!r} declared twice")
        raw_structs[sname] = spec
        if sname not in order:
            order.append(sname)

    structs: dict = {}

    def build(sname):
        sname, fields, align_min, comment, t, _inherited = raw_structs[sname]
        offset, align, out, seen = 0, max(align_min, 1), [], set()
        for i, (fname, ftype, count, bits, ft) in enumerate(fields):
            if fname in seen:
                ft.error("name", f"field {fname!r} declared twice in struct {sname}")
            seen.add(fname)
            if ftype in SCALARS:
                esize, ctype = SCALARS[ftype]
                ealign = esize
            elif ftype in structs:
                sub = structs[ftype]
                esize, ealign, ctype = sub.size, sub.align, f"struct {ftype}"
            else:
                ft.error("type", f"unknown type {ftype!r} (a scalar or a struct declared earlier)")
            offset = -(-offset // ealign) * ealign
            size = esize * max(count, 1)
            out.append(Field(fname, ftype, count, offset, size, ctype, _bitmap_bits(fname, ftype, count, bits, ft)))
            offset += size
            align = max(align, ealign)
        size = -(-offset // align) * align
        return Struct(sname, tuple(out), size, align, align_min, comment)

    for sname in order:
        structs[sname] = build(sname)

    if top.has("page") or base is None:
        page_list: list = []
        index = 0
        for pt in top.tables("page"):
            role = pt.str("role", choices=PAGE_ROLES)
            struct = pt.str("struct", None)
            if struct is not None and struct not in structs:
                pt.error("struct", f"unknown struct {struct!r}")
            symbol = pt.ident("symbol", None)
            # A role an earlier page plays as well (powerpc's arch data shares the time page before v6.15;
            # getrandom's state sits inside the time or arch page before v6.15), its struct at the start
            # of that page or, with `at`, at a member of that page's struct.
            same_as = pt.str("same_as", None, choices=PAGE_ROLES)
            at = pt.str("at", None)
            pt.done()
            if role != "reserved" and any(p.role == role for p in page_list):
                pt.error("role", f"role {role!r} given to two pages")
            if same_as is None:
                if at is not None:
                    pt.error("at", "only a role that shares an earlier page (same_as) sits at a member of it")
                page_list.append(Page(index, role, struct, symbol))
                index += 1
                continue
            host = next((p for p in page_list if p.role == same_as), None)
            if host is None:
                pt.error("same_as", f"no earlier page plays {same_as!r}")
            # The page seen as another struct (the rng state at its offset) takes a name of its own, as
            # C cannot declare one object as two types; seen as the same struct, it has one name.
            if symbol is not None and symbol != host.symbol and (struct is None or struct == host.struct):
                pt.error("symbol", f"the {same_as} page's symbol is {host.symbol!r}: a page has one")
            offset = 0
            if at is not None:
                offset, struct = _member_at(pt, structs, host, struct, at)
            page_list.append(Page(host.index, role, struct or host.struct, symbol or host.symbol, offset))
        pages = tuple(page_list)
    else:
        pages = base.pages

    time_page = next((p for p in pages if p.role == "time"), None)
    if time_page is None or time_page.struct is None or time_page.symbol is None:
        top.error("page", "a layout needs a 'time' page with a struct and a symbol")

    if top.has("access") or base is None:
        at = top.table("access")
        access = {"clocks": at.str("clocks")}
        for datum in TIME_DATA_ACCESS:
            access[datum] = at.str(datum)
        for optional in (AUX_CLOCKS, ARCH_TIME):
            if at.has(optional):
                access[optional] = at.str(optional)
        at.done()
    else:
        access = dict(base.access)
        # A time struct redefined without the inherited aux records: a layout without aux clocks.
        if AUX_CLOCKS in access and structs[time_page.struct].field(access[AUX_CLOCKS].split("[")[0]) is None:
            del access[AUX_CLOCKS]
    behaviours = dict(base.behaviours if base is not None else ())
    if top.has("behaviour"):
        bt = top.table("behaviour")
        for key, values in BEHAVIOURS.items():
            value = bt.str(key, None, choices=values)
            if value is not None:
                behaviours[key] = value
        bt.done()
    top.done()

    layout = _check_access(path, name, description, tuple(structs.values()), pages, time_page, access)
    return replace(layout, linux=linux, abis=abis, behaviours=tuple(sorted(behaviours.items())))


def _member_at(pt: Table, structs: dict, host: Page, struct: str | None, at: str) -> tuple[int, str]:
    """The offset in the host page of member path `at` of its struct, and the member's
    struct, which must be the page's `struct` where it names one: ("vdso_data[0].arch_data"
    of v6.12's riscv time page: 240, "arch_vdso_data")."""
    if host.struct is None:
        pt.error("at", f"the {host.role} page has no struct to hold {at!r}")
    offset, st, ftype = 0, structs[host.struct], host.struct
    for part in at.split("."):
        name, _, index = part.partition("[")
        if st is None:
            pt.error("at", f"{at!r}: a {ftype} has no members")
        f = st.field(name)
        if f is None:
            pt.error("at", f"{at!r}: struct {st.name} has no member {name!r}")
        offset += f.offset
        if index:
            i = index.rstrip("]")
            if not f.is_array or not i.isdigit() or int(i) >= f.count:
                pt.error("at", f"{at!r}: bad index in {part!r}")
            offset += int(i) * (f.size // f.count)
        elif f.is_array:
            pt.error("at", f"{at!r}: {name} is an array: say which element")
        st, ftype = structs.get(f.type), f.type
    if st is None or (struct is not None and ftype != struct):
        pt.error("at", f"{at!r} is a {ftype}, not the page's struct {struct or '(none given)'}")
    return offset, ftype


def _linux_range(top):
    """`linux = ["6.13", "6.14"]` (first and last version) or `["6.17"]` (and later): ((6, 13), (6, 14))."""
    texts = top.list("linux", str, [], "a version")
    if len(texts) > 2:
        top.error("linux", f"{len(texts)} versions: give the first, and the last unless it is open")
    out = []
    for i, text in enumerate(texts):
        parts = text.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            top.error(f"linux[{i}]", f"{text!r} is not a MAJOR.MINOR version")
        out.append((int(parts[0]), int(parts[1])))
    if len(out) == 2 and out[1] < out[0]:
        top.error("linux", f"{texts[1]} is before {texts[0]}")
    return tuple(out)


def _abis(top):
    from vdsogen.spec import abi

    names = top.list("abis", str, [], "an ABI name")
    for i, name in enumerate(names):
        if abi.get(name) is None:
            top.error(f"abis[{i}]", f"{name!r} is no ABI of vdsogen/spec/abi.toml{did_you_mean(name, abi.names())}")
    return tuple(names)


def _bitmap_bits(name: str, ftype: str, count: int, bits: int | None, ft: Table) -> int:
    """The bits a bitmap field defines: `bits` where the layout gives it (the
    array then has just the elements they need, as Linux sizes such maps),
    else all of them; 0 for a field that is no bitmap."""
    if not count or ftype not in SCALARS or not ftype.startswith("u"):
        if bits is not None:
            ft.error("bits", f"{name} is not an array of unsigned scalars, so no bitmap")
        return 0
    per = 8 * SCALARS[ftype][0]
    if bits is None:
        return count * per
    need = -(-bits // per)
    if bits > count * per:
        ft.error("bits", f"{bits} bits do not fit in {name}'s {count} {ftype} ({count * per} bits): "
                         f"they need {need}")
    if need < count:
        ft.error("bits", f"{bits} bits need {need} {ftype}, and {name} has {count}: Linux sizes "
                         f"the map to its bits, so the fields after it would move")
    return bits


def _check_access(path, name, description, structs, pages, time_page, access):
    bynames = {s.name: s for s in structs}
    time_struct = bynames[time_page.struct]
    err = Table(path, {}, "access").error

    def resolve(datum, member_path):
        struct, f = time_struct, None
        for part in member_path.split("."):
            fname, _, index = part.partition("[")
            if struct is None or not C_IDENT.match(fname):
                err(datum, f"{member_path!r} is not a member path of struct {time_struct.name}")
            f = struct.field(fname)
            if f is None:
                err(datum, f"struct {struct.name} has no member {fname!r}")
            if index:
                if not f.is_array or not index.rstrip("]").isdigit() or int(index.rstrip("]")) >= f.count:
                    err(datum, f"bad index in {member_path!r}")
            struct = bynames.get(f.type)
        return f

    clocks = resolve("clocks", access["clocks"])
    if not clocks.is_array or clocks.count < 2 or clocks.type in SCALARS:
        err("clocks", "must name an array of at least 2 clock structs ([0] hres/coarse, [1] raw)")
    clock = bynames[clocks.type]
    for fname, ftype in {**CLOCK_FIELDS, **CLOCK_OPTIONAL}.items():
        f = clock.field(fname)
        if f is None and fname in CLOCK_OPTIONAL:
            continue
        if f is None or f.type != ftype or f.is_array:
            err("clocks", f"clock struct {clock.name} needs member {fname} of type {ftype}")
    bt = clock.field("basetime")
    ts = bynames.get(bt.type) if bt else None
    if bt is None or ts is None or bt.count < MIN_BASES or [(f.name, f.type) for f in ts.fields] != [("sec", "u64"), ("nsec", "u64")]:
        err("clocks", f"clock struct {clock.name} needs basetime[{MIN_BASES}] of a {{sec: u64, nsec: u64}} struct")
    for datum, ftype in TIME_DATA_ACCESS.items():
        f = resolve(datum, access[datum])
        if f.type != ftype or f.is_array:
            err(datum, f"{access[datum]!r} must be a {ftype}")
    if ARCH_TIME in access:
        arch = resolve(ARCH_TIME, access[ARCH_TIME])
        if arch.type in SCALARS or (arch.is_array and "[" not in access[ARCH_TIME].rsplit(".", 1)[-1]):
            err(ARCH_TIME, f"{access[ARCH_TIME]!r} must name one struct")
    if AUX_CLOCKS in access:
        aux = resolve(AUX_CLOCKS, access[AUX_CLOCKS])
        if not aux.is_array or aux.type != clock.name:
            err(AUX_CLOCKS, f"{access[AUX_CLOCKS]!r} must be an array of struct {clock.name}")
    return Layout(name, str(path), description, structs, pages, time_struct.name, clock.name,
                  access["clocks"], access)
