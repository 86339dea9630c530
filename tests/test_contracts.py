"""Fragment contracts (arch/ARCH/contract.toml) and the catalogue of
fragment kinds (vdsogen/spec/fragments.toml): broken contracts and specs
are errors naming file and key, every fragment file is named by someone,
and the numbers of the clock modes reach the C from the contract alone."""

import re

import pytest

from conftest import ROOT
from vdsogen import paths
from vdsogen.errors import SpecError
from vdsogen.gen.render import sources
from vdsogen.spec import contract as contracts
from vdsogen.spec.model import list_targets, load_target

X86 = 'extends = "x86_64"\n'


def specs_dir(tmp_path, spec=X86, contract=None, files=()):
    """A --specs=DIR tree: DIR/v.toml (`spec`), DIR/arch/x86/contract.toml
    (`contract`, if any) and more files of DIR/arch/x86/."""
    frag = tmp_path / "arch" / "x86"
    frag.mkdir(parents=True)
    (tmp_path / "v.toml").write_text(spec)
    if contract is not None:
        (frag / "contract.toml").write_text(contract)
    for name in files:
        (frag / name).write_text("/* a fragment */\n")
    return tmp_path


def error_of(specs):
    with pytest.raises(SpecError) as e:
        load_target("v", specs=specs)
    return str(e.value)


# --- broken contracts: the contract file and key ---------------------------

@pytest.mark.parametrize("contract, key, message", [
    ('[modes.tsc]\nnumber = "1"\n', "modes.tsc.number", "expected an integer, got string"),
    ('[modes.tsc]\nnumber = 1\ncolour = "red"\n', "modes.tsc.colour", "unknown key"),
    ("[modes.kvm]\nnumber = 2\n", "modes.kvm.number", "2 is already the number of mode 'pvclock'"),
    ("[modes.kvm]\nnumber = 0x7fffffff\n", "modes.kvm.number", "out of range"),
    ("[modes.timens]\nnumber = 9\n", "modes.timens", "every architecture's"),
    ('[modes.kvm]\nnumber = 9\npages = ["pvlock"]\n', "modes.kvm.pages[0]",
     "'pvlock' is not a page role a counter reads"),
    ('[counter.rdtsc]\nmodes = ["tsc", "pvclok"]\n', "counter.rdtsc.modes[1]",
     "unknown clock mode 'pvclok' (did you mean 'pvclock'?)"),
    ('[counter.rdtsc]\nmodes = ["tsc"]\n[counter.rdtsc.params.ordered]\ntype = "string"\ndefault = 1\n',
     "counter.rdtsc.params.ordered.default", "expected a string"),
    ('[counter.rdtsc]\nmodes = ["tsc"]\n[counter.rdtsc.params.ordered]\ntype = "text"\n',
     "counter.rdtsc.params.ordered.type", "is not one of"),
    ('provides = ["lds-txt"]\n', "provides[0]", "(did you mean 'lds-text'?)"),
    ('provides = ["counter"]\n', "provides[0]", "not an optional fragment kind"),
    ('entry_registers = "5"\n', "entry_registers", "expected an integer"),
])
def test_broken_contract(tmp_path, contract, key, message):
    err = error_of(specs_dir(tmp_path, contract=contract))
    assert f"{tmp_path}/arch/x86/contract.toml: {key}: " in err, err
    assert message in err, err


def test_missing_contract(tmp_path):
    """A fragment directory of the user's own arch needs a contract."""
    spec = (ROOT / "specs" / "riscv64.toml").read_text().replace('arch = "riscv"', 'arch = "toy"')
    specs = tmp_path
    (specs / "arch" / "toy").mkdir(parents=True)
    (specs / "v.toml").write_text(spec)
    assert f"{specs}/arch/toy/contract.toml: missing" in error_of(specs)


# --- a spec against the contract: the spec file and key --------------------

@pytest.mark.parametrize("extra, key, message", [
    ('[counter]\nmodes = ["tsc", "pvlock"]\n', "counter.modes[1]",
     "unknown clock mode 'pvlock' (did you mean 'pvclock'?): the rdtsc counter serves tsc, pvclock, hvclock"),
    ("[counter]\nmodes = [1, 2]\n", "counter.modes[0]", "1 is a number: name the mode (did you mean 'tsc'?)"),
    ('[counter]\nmodes = ["tsc", "tsc"]\n', "counter.modes[1]", "listed twice"),
    ("[counter]\nmodes = []\n", "counter.modes", "at least one clock mode"),
    ('[counter]\nfragment = "rdtcs"\n', "counter.fragment",
     "no fragment arch/x86/counter-rdtcs.h.j2 (did you mean 'rdtsc'?)"),
    ('[syscall]\nfragment = "sycall"\n', "syscall.fragment",
     "no fragment arch/x86/syscall-sycall.h.j2 (did you mean 'syscall'?)"),
    ('[getcpu]\nfragment = "lsl-rdpd"\n', "getcpu.fragment", "(did you mean 'lsl-rdpid'?)"),
    ('[counter.params]\nordred = "lfence"\n', "counter.params.ordred",
     "unknown key: the rdtsc counter fragment takes no such parameter"),
    ('[counter.params]\nordered = true\n', "counter.params.ordered", "expected a string"),
    ('[counter.params]\nordered = "lfenc"\n', "counter.params.ordered",
     "must be one of 'rdtscp', 'lfence' (did you mean 'lfence'?)"),
    ('[datapage]\nlayout = "linux-6.17"\n', "counter.modes[1]",
     "clock mode pvclock reads the pvclock page: layout linux-6.17 has none"),
])
def test_spec_against_contract(tmp_path, extra, key, message):
    err = error_of(specs_dir(tmp_path, spec=X86 + extra))
    assert f"{tmp_path}/v.toml: {key}: " in err, err
    assert message in err, err


def test_counter_time_fields_checked_against_the_layout(tmp_path):
    """s390's tod counter reads tod_delta or the steering fields of the time data (its contract's time_fields)."""
    (tmp_path / "v.toml").write_text('extends = "s390x"\n[datapage]\nlayout = "linux-6.17"\n')
    err = error_of(tmp_path)
    assert f"{tmp_path}/v.toml: datapage.layout: the tod counter reads tod_steering_delta" in err, err


def test_entry_registers_checked(tmp_path):
    """s390's asm entry passes 5 arguments in registers (entry_registers): a core export needing
    more is the spec's error, not a fragment's."""
    frag = tmp_path / "arch" / "s390"
    frag.mkdir(parents=True)
    (frag / "contract.toml").write_text("entry_registers = 2\n")
    (tmp_path / "v.toml").write_text('extends = "s390x"\n')
    err = error_of(tmp_path)
    assert re.search(rf"{tmp_path}/v.toml: export\[\d+\]: \w+: the s390 entry passes 2 arguments in registers", err), err


# --- fragment files and declarations -----------------------------------------

def test_missing_declared_optional_fragment(tmp_path):
    err = error_of(specs_dir(tmp_path, contract='provides = ["lds-head"]\n'))
    assert f"{tmp_path}/arch/x86/contract.toml: provides[0]: no fragment arch/x86/lds-head.lds.j2" in err, err


def test_missing_declared_trampoline(tmp_path):
    err = error_of(specs_dir(tmp_path, contract='trampolines = ["sigreturn32"]\n'))
    assert f"{tmp_path}/arch/x86/contract.toml: trampolines[0]: no fragment arch/x86/sigreturn32.S.j2" in err, err


@pytest.mark.parametrize("name, message", [
    ("lds-haed.lds.j2", "not a fragment: no kind of vdsogen/spec/fragments.toml and no key of"),
    ("sigretrun.S.j2", "(did you mean 'sigreturn.S.j2'?)"),
    ("harness-singal.h.j2", "(did you mean 'harness-signal.h.j2'?)"),
    ("lds-head.lds.j2", "an optional lds-head fragment, not in `provides`"),
    ("counter-hpet.h.j2", "no counter entry declares it"),
])
def test_undeclared_fragment_file(tmp_path, name, message):
    err = error_of(specs_dir(tmp_path, files=[name]))
    assert err.startswith(f"{tmp_path}/arch/x86/{name}: "), err
    assert message in err, err


def test_user_tree_adds_a_counter_and_overrides_a_mode_number(tmp_path):
    """A --specs tree declares the counter it adds and may renumber a mode:
    the C sees the contract's numbers, from the model alone."""
    contract = ('[modes.pvclock]\nnumber = 7\npages = ["pvclock"]\n[counter.rdtsc2]\nmodes = ["tsc", "pvclock"]\n'
                '[counter.rdtsc2.params.ordered]\ntype = "string"\ndefault = "lfence"\n')
    specs = specs_dir(tmp_path, spec=X86 + '[counter]\nfragment = "rdtsc2"\nmodes = ["tsc", "pvclock"]\n',
                      contract=contract)
    rdtsc = (paths.ARCH / "x86" / "counter-rdtsc.h.j2").read_text()
    (specs / "arch" / "x86" / "counter-rdtsc2.h.j2").write_text(rdtsc)
    target = load_target("v", specs=specs)
    assert target.counter.modes == (1, 7)
    files = dict(sources(target))
    assert "#define VDSO_CLOCKMODE_PVCLOCK\t7\n" in files["vdso_arch.h"]
    assert "(mode) == 1 || (mode) == 7)" in files["vdso_config.h"]


# --- the contracts and the catalogue as shipped ------------------------------

def test_every_arch_contract_loads_and_every_spec_names_its_modes():
    for name in list_targets():
        target = load_target(name)
        if target.counter is None:      # no time data (sh4, parisc): no counter, no data pages, no modes
            assert target.datapage is None, name
            continue
        assert target.counter.clock_modes and all(m.name for m in target.counter.clock_modes)
    for spec in [*(ROOT / "specs").glob("*.toml"), *(ROOT / "docs").glob("*/*.toml"),
                 *(ROOT / "docs").glob("examples/*/*.toml")]:
        for line in spec.read_text().splitlines():
            assert not re.match(r"modes\s*=\s*\[\s*\d", line), f"{spec}: {line}"


def test_fragments_define_what_their_kind_promises():
    """Each fragment file's text defines the hooks or macros its kind lists."""
    for arch in sorted(p for p in paths.ARCH.iterdir() if p.is_dir()):
        c = contracts.load_contract(arch.name, [paths.ROOT])
        for kind_name, names in c.fragments.items():
            kind = contracts.kind(kind_name)
            for name in names:
                text = (arch / kind.filename(name)).read_text()
                for d in kind.defines:
                    # {name}: the name itself, or a Jinja expression that renders it
                    options = [re.escape(o).replace(r"\{name\}", rf"({re.escape(name)}|{{{{[^}}]*}}}})")
                               for o in d.split("|")]
                    assert any(re.search(rf"\b{o}", text) for o in options), \
                        f"arch/{arch.name}/{kind.filename(name)} does not define {d}"


def test_counter_fragments_read_every_declared_param():
    """A parameter a contract declares is one its fragment reads (the model
    then needs no render-time tracking of what a fragment read)."""
    for arch in sorted(p for p in paths.ARCH.iterdir() if p.is_dir()):
        for cc in contracts.load_contract(arch.name, [paths.ROOT]).counters.values():
            text = (arch / f"counter-{cc.name}.h.j2").read_text()
            for p in cc.params:
                assert re.search(rf"params(\.{p.name}\b|\[\"{p.name}\"\])", text), (arch.name, cc.name, p.name)


def test_no_fragment_validates_what_the_model_checks():
    """fail() remains only where a fragment checks its own constants (the
    frame offsets its unwind data encodes), never the spec's modes, params or layout."""
    calls = []
    for f in sorted([*paths.ARCH.glob("*/*.j2"), *paths.TEMPLATES.glob("*.j2")]):
        calls += [(f.relative_to(paths.ROOT).as_posix(), m) for m in re.findall(r"[^_]fail\(\"([\w.]+)\"", f.read_text())]
    assert sorted(calls) == [("arch/s390/sigframe-cfi.S.j2", "trampoline"),
                             ("arch/x86/sigframe32-cfi.S.j2", "trampoline")], calls


def test_no_template_includes_a_fragment_that_may_be_missing():
    for f in sorted([*paths.ARCH.glob("*/*.j2"), *paths.TEMPLATES.glob("*.j2")]):
        assert "ignore missing" not in f.read_text(), f


def test_core_clock_modes_have_one_home():
    """The modes of every architecture reach the C from vdsogen/spec/contract.py
    alone: the core's through vdso_config.h, the harness's through
    harness_target.h; no C file of the tree spells them."""
    from vdsogen.harness.driver import harness_sources
    for t in ("x86_64", "s390x"):
        target = load_target(t)
        config = dict(sources(target))["vdso_config.h"]
        header = dict(harness_sources(target))["harness_target.h"]
        for mode in contracts.CORE_MODES:
            for text, macro in ((config, mode.macro), (header, mode.macro.replace("VDSO_", ""))):
                value = re.search(rf"^#define {macro}\s+(\w+)", text, re.M).group(1)
                assert int(value, 0) == mode.number, (macro, value)
    for f in (*paths.TEMPLATES.glob("*.h"), *paths.HARNESS.glob("*.[ch]")):
        assert not re.search(r"#define\s+(VDSO_)?CLOCKMODE_(NONE|TIMENS)\b", f.read_text()), f


def test_doc_table_is_the_catalogue():
    doc = (ROOT / "docs" / "hacking.rst").read_text()
    assert contracts.fragments_table() in doc, (
        "docs/hacking.rst: the Fragments table differs from vdsogen/spec/fragments.toml; regenerate it with "
        ".venv/bin/python -c 'from vdsogen.spec.contract import fragments_table; print(fragments_table())'")
    kinds_in_doc = re.findall(r"^   \* - ([a-z-]+)$", doc, re.M)
    assert kinds_in_doc == [k.name for k in contracts.kinds()]
