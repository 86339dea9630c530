"""Layouts of each Linux version, as `vdsogen test --image` plays them on a
real image: the page size the image's code reads its data pages at, the
layout each version of each ABI picks, and the fields of the older layouts
(offsets written out from Linux's headers of 6.1, 6.12 and 7.2).  No
download: the images are vdsogen's own, built here with the spec changed
where a test needs another page size or version note.
"""

import io
from dataclasses import replace

import pytest

from conftest import ROOT, build_broken
from vdsogen.errors import VdsogenError
from vdsogen.build.toolchain import Builder
from vdsogen.harness import driver, layouts
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target


def variant(tmp_path, base, **keys):
    """vdsogen's spec `base` with [datapage] (or [elf]) keys replaced, in a --specs=DIR of its own."""
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    text = (ROOT / "specs" / f"{base}.toml").read_text()
    for key, value in keys.items():
        lines = [line for line in text.splitlines() if line.split("=")[0].strip() == key]
        assert len(lines) == 1, key
        text = text.replace(lines[0], f"{key} = {value}")
    name = f"{base}-variant"
    (specs / f"{name}.toml").write_text(text)
    return load_target(name, specs)


# -- the page size -------------------------------------------------------------------------------

@pytest.mark.parametrize("base, size", [("ppc64le", 65536), ("ppc64le", 4096), ("x86_64", 4096),
                                        ("riscv64", 16384), ("loongarch64", 16384)])
def test_the_page_size_is_the_one_the_code_reads_at(base, size, tmp_path):
    """Debian's ppc64el kernels had 64 KiB pages in 6.1 and 4 KiB ones in 7.2:
    one spec's page size cannot be every image's."""
    target = variant(tmp_path, base, page_size=size)
    image = build_broken(target, tmp_path / "out", {})
    assert layouts.page_size_of(image, target.datapage.layout, target) == size
    # The spec played on it says another size: the image's wins, and the run says so.
    other = replace(target, datapage=replace(target.datapage, page_size=65536 if size != 65536 else 4096))
    choice = layouts.choose(other, image)
    assert choice.target.datapage.page_size == size and choice.sized
    assert choice.line.endswith(f"data pages of {size} bytes, as the image's code reads them")
    # The spec's own size: nothing to say.
    same = layouts.choose(target, image)
    assert same.target.datapage.page_size == size and not same.sized


def test_an_isa_whose_reads_are_not_decoded_keeps_the_spec_size(tmp_path):
    target = load_target("s390x")
    image = build_broken(target, tmp_path / "out", {})
    assert layouts.page_size_of(image, target.datapage.layout, target) is None
    assert layouts.choose(target, image).target.datapage.page_size == target.datapage.page_size


# -- the layouts' fields, as Linux's headers have them ------------------------------------------
#
# Offsets worked out by hand from each version's headers (Debian's 6.1, 6.12
# and 7.2 sources): arch/powerpc/include/asm/vdso_datapage.h (the old
# systemcfg header at 0x00-0x7f, then the syscall maps, then the records),
# arch/s390/include/asm/vdso/data.h and time_data.h, arch/riscv's
# arch_data.h and hwprobe.h, arch/loongarch/include/asm/vdso/vdso.h.

# layout: {member path of the named struct: offset}, the pages by role (index), and facts.
LINUX = {
    "linux-5.11-powerpc64": dict(struct="vdso_arch_data", offsets={
        "tb_ticks_per_sec": 0x38, "dcache_block_size": 0x70, "icache_log_block_size": 0x7c,
        "syscall_map": 0x80, "compat_syscall_map": 0xbc, "data[0]": 0xf8, "data[1]": 0xf8 + 240,
        "data[0].hrtimer_res": 0xf8 + 232}, pages={"time": 0, "arch": 0, "timens": 1}, bits=451),
    "linux-5.11-powerpc32": dict(struct="vdso_arch_data", offsets={
        "tb_ticks_per_sec": 0, "syscall_map": 8, "data[0]": 72, "data[1]": 72 + 240},
        pages={"time": 0, "arch": 0, "timens": 1}, bits=451),
    "linux-6.12-powerpc64": dict(struct="vdso_arch_data", offsets={
        "tb_ticks_per_sec": 0x38, "syscall_map": 0x80, "compat_syscall_map": 0xbc},
        pages={"arch": 0, "rng": 0, "time": 1, "timens": 2}, bits=463),
    "linux-6.12-powerpc32": dict(struct="vdso_arch_data", offsets={"syscall_map": 8},
                                 pages={"arch": 0, "rng": 0, "time": 1, "timens": 2}, bits=463),
    "linux-6.15-powerpc64": dict(struct="vdso_time_data", offsets={"clock_data[1]": 224, "hrtimer_res": 456},
                                 pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}, bits=468),
    "linux-7.2-powerpc64": dict(struct="vdso_arch_data", offsets={"syscall_map": 24, "compat_syscall_map": 84},
                                pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}, bits=472),
    "linux-7.2-powerpc32": dict(struct="vdso_arch_data", offsets={"syscall_map": 8},
                                pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}, bits=472),
    "linux-5.6-s390": dict(struct="vdso_vvar_page", offsets={
        "vdso_data[0].arch_data.tod_steering_delta": 240, "vdso_data[0].arch_data.tod_steering_end": 248,
        "vdso_data[1]": 256, "vdso_data[0].hrtimer_res": 232}, pages={"time": 0, "rng": 0, "timens": 1}),
    "linux-6.15-s390": dict(struct="vdso_time_data", offsets={
        "tod_steering_delta": 0, "tod_steering_end": 8, "clock_data[0]": 16, "clock_data[1]": 240,
        "hrtimer_res": 472}, pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}),
    "linux-6.17-s390": dict(struct="vdso_time_data", offsets={
        "tod_delta": 0, "clock_data[0]": 8, "clock_data[1]": 232, "aux_clock_data[0]": 456,
        "hrtimer_res": 8 + 10 * 224 + 8}, pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}),
    "linux-7.2-riscv": dict(struct="vdso_arch_data", offsets={
        "all_cpu_hwprobe_values[16]": 128, "homogeneous_cpus": 136, "ready": 137},
        pages={"time": 0, "timens": 1, "rng": 2, "arch": 3}),
    "linux-5.19-loongarch": dict(struct="vdso_arch_data", offsets={"pdata[1].node": 64},
                                 pages={"time": 0, "timens": 1, "arch": 2}),
    "linux-6.12-loongarch": dict(struct="vdso_arch_data", offsets={"pdata[255].node": 255 * 64},
                                 pages={"time": 0, "timens": 1, "arch": 2, "rng": 3}),
    "linux-6.15-x86": dict(struct="vdso_time_data", offsets={"clock_data[1]": 232, "hrtimer_res": 472},
                           pages={"time": 0, "timens": 1, "rng": 2, "arch": 3, "pvclock": 4, "hvclock": 5}),
    "linux-5.6-arm": dict(struct="vdso_vvar_page", offsets={"vdso_data[1]": 240}, pages={"time": 0}),
    "linux-5.6-mips-gic": dict(struct="vdso_vvar_page", offsets={"vdso_data[1]": 240}, pages={"gic": 0, "time": 1}),
}


@pytest.mark.parametrize("name", sorted(LINUX))
def test_offsets_are_linux(name):
    want = LINUX[name]
    layout = load_layout(name)
    for path, offset in want["offsets"].items():
        assert layout.field_offset(want["struct"], path) == offset, path
    assert {p.role: p.index for p in layout.pages} == want["pages"]
    assert layout.page_count == len(set(want["pages"].values()))
    if "bits" in want:
        assert layout.struct("vdso_arch_data").field("syscall_map").bits == want["bits"]


def test_the_aux_clocks_come_with_6_17():
    assert load_layout("linux-6.17-s390").aux_clocks == 8
    for name in ("linux-6.15-x86", "linux-6.15-s390", "linux-6.15-powerpc64", "linux-6.15-loongarch",
                 "linux-5.6-s390", "linux-6.12-powerpc64"):
        assert load_layout(name).aux_clocks == 0, name


def test_s390s_tod_correction_by_version():
    """Before v6.15 in each clock record, then heading the time data; from v6.17 only the boot TOD."""
    old, mid, new = load_layout("linux-5.6-s390"), load_layout("linux-6.15-s390"), load_layout("linux-6.17-s390")
    assert old.time_field("tod_steering_end") == "vdso_data[0].arch_data.tod_steering_end"
    assert mid.time_field("tod_steering_end") == "tod_steering_end"
    assert new.time_field("tod_steering_end") is None and new.time_field("tod_delta") == "tod_delta"
    assert old.time_field("tod_delta") is None


def test_a_page_playing_two_roles(tmp_path):
    layout = load_layout("linux-5.11-powerpc64")
    assert layout.page("arch").index == layout.page("time").index == 0
    assert layout.page("arch").symbol == layout.page("time").symbol == "_vdso_datapage"
    d = tmp_path / "layouts"
    d.mkdir()
    base = (ROOT / "specs" / "layouts" / "linux-5.11-powerpc64.toml").read_text()
    (d / "bad.toml").write_text(base.replace('same_as = "time"', 'same_as = "timens"'))
    with pytest.raises(VdsogenError, match=r"bad.toml: page\[1\].same_as: no earlier page plays 'timens'"):
        load_layout("bad", [d, ROOT / "specs" / "layouts"])
    (d / "bad2.toml").write_text(base.replace('same_as = "time"', 'same_as = "time"\nsymbol = "other"'))
    with pytest.raises(VdsogenError, match=r"bad2.toml: page\[1\].symbol: the time page's symbol is '_vdso_datapage'"):
        load_layout("bad2", [d, ROOT / "specs" / "layouts"])


# -- the layout each version picks ---------------------------------------------------------------

# (target, Linux version) -> the layout its image plays: 6.1, 6.12 and 7.2 of every ABI, and the
# versions between where a layout changes.
PICKS = [
    ("x86_64", (6, 1), "linux-5.6-x86"), ("x86_64", (6, 12), "linux-6.12-x86"),
    ("x86_64", (6, 15), "linux-6.15-x86"), ("x86_64", (6, 16), "linux-6.15-x86"), ("x86_64", (7, 2), "linux-6.17-x86"),
    ("i386", (6, 1), "linux-5.6-x86"), ("x32", (6, 16), "linux-6.15-x86"),
    ("arm64", (6, 1), "linux-5.6"), ("arm64", (6, 12), "linux-5.6"), ("arm64", (7, 2), "linux-6.17"),
    ("arm", (6, 1), "linux-5.6-arm"), ("arm", (6, 12), "linux-5.6-arm"), ("arm", (7, 2), "linux-6.17"),
    ("ppc64le", (6, 1), "linux-5.11-powerpc64"), ("ppc64le", (6, 12), "linux-6.12-powerpc64"),
    ("ppc64le", (6, 15), "linux-6.15-powerpc64"), ("ppc64le", (6, 17), "linux-6.17-powerpc64"),
    ("ppc64le", (7, 2), "linux-7.2-powerpc64"), ("ppc64", (6, 1), "linux-5.11-powerpc64"),
    ("ppc32", (6, 1), "linux-5.11-powerpc32"), ("ppc32", (6, 12), "linux-6.12-powerpc32"),
    ("ppc32", (7, 2), "linux-7.2-powerpc32"),
    ("s390x", (6, 1), "linux-5.6-s390"), ("s390x", (6, 12), "linux-5.6-s390"), ("s390x", (6, 16), "linux-6.15-s390"),
    ("s390x", (6, 17), "linux-6.17-s390"), ("s390x", (7, 2), "linux-6.17-s390"),
    ("riscv64", (6, 17), "linux-6.17-riscv"), ("riscv64", (7, 2), "linux-7.2-riscv"),
    ("loongarch64", (6, 1), "linux-5.19-loongarch"), ("loongarch64", (6, 12), "linux-6.12-loongarch"),
    ("loongarch64", (6, 15), "linux-6.15-loongarch"), ("loongarch64", (7, 2), "linux-6.17-loongarch"),
]


@pytest.mark.parametrize("target, version, layout", PICKS)
def test_each_version_picks_its_layout(target, version, layout):
    fits = [lay.name for lay in layouts.for_abi(load_target(target)) if lay.covers(version)]
    assert fits in ([layout], sorted({layout, load_target(target).datapage.layout.name})), fits


# -- vdsogen's images on each layout, and the harness playing each version -----------------------

def run(target, image=None, layout=None, tmp_path=None):
    out = io.StringIO()
    status, outcome = run_tests_full(target, image, workdir=tmp_path / "work", stream=out, layout=layout,
                                     builder=Builder(target, stream=out))
    return status, outcome, out.getvalue()


@pytest.mark.parametrize("name, layout", [
    ("ppc64le", "linux-5.11-powerpc64"), ("ppc64le", "linux-6.12-powerpc64"), ("ppc32", "linux-5.11-powerpc32"),
    ("s390x", "linux-5.6-s390"), ("s390x", "linux-6.15-s390"), ("riscv64", "linux-7.2-riscv"),
    ("x86_64", "linux-6.15-x86"), ("loongarch64", "linux-6.12-loongarch"),
])
def test_vdsogens_image_passes_on_each_layout_it_offers(name, layout, tmp_path):
    """Built for the layout (`vdsogen test --layout`), every check passes, the arch's own among them."""
    status, outcome, text = run(load_target(name), layout=layout, tmp_path=tmp_path)
    assert status == 0, text
    assert f"# layout: {layout} (Linux " in text
    arch = {"ppc64le": "get_tbfreq", "ppc32": "get_syscall_map", "s390x": "tod_steering",
            "riscv64": "riscv_hwprobe", "x86_64": "timens.MONOTONIC", "loongarch64": "getcpu"}[name]
    assert arch in outcome.passed, text


def test_the_harness_plays_s390s_tod_delta(tmp_path, monkeypatch):
    """From v6.17 the counter is the TOD clock less tod_delta, which heads the time data where
    v6.15's steering pair did: an image built for the steering pages (vdsogen's s390x image
    while its spec had them for v6.17) reads every clock record 8 bytes off on a v6.17 kernel's
    (a word of cycle_last as its seq, so it spins) and fails.  The watchdog is cut to 5 s: the
    spin is the expected failure, not one to wait 30 s for."""
    monkeypatch.setenv("VDSOGEN_HARNESS_WATCHDOG", "5")
    steering = layouts.with_layout(load_target("s390x"), load_layout("linux-6.15-s390"))
    old = build_broken(steering, tmp_path / "old", {})
    status, outcome, text = run(load_target("s390x"), old, "linux-6.17-s390", tmp_path / "o")
    assert status == 1, text
    assert "no answer within 5 s" in outcome.failed.get("clock_gettime.REALTIME", ""), text
    assert "# layout: linux-6.17-s390 (Linux 6.17+), as --layout says" in text, text


def as_a_kernels(src, dst):
    """A copy of vdsogen's image without its data-pages note: a kernel's image to the driver."""
    data = src.read_bytes()
    assert data.count(b"vdsogen\0") >= 1
    dst.write_bytes(data.replace(b"vdsogen\0", b"Xdsogen\0"))
    return dst


@pytest.mark.parametrize("name, check, mode_none", [
    ("arm64", "clock_mode.3", "syscall"),       # Linux's arm64 vDSO reads cntvct in any mode but NONE
    ("ppc64le", "clock_mode.2", "counter"),     # powerpc's reads the timebase in every mode, NONE too
])
def test_a_kernels_image_is_held_to_what_its_kernel_does(name, check, mode_none, tmp_path):
    """vdsogen's images go to the syscall in a mode they do not serve, and in mode NONE; Linux's of
    these ABIs read their counter.  The same image passes as vdsogen's and fails where the harness
    holds it to Linux's vDSO: the checks are as exact either way, only the reference differs."""
    target = load_target(name)
    own = build_broken(target, tmp_path / "own", {})
    status, outcome, text = run(target, own, tmp_path=tmp_path / "a")
    assert status == 0 and f"{check}.syscall" in outcome.passed, text
    kernels = as_a_kernels(own, tmp_path / "kernel.so")
    status, outcome, text = run(target, kernels, tmp_path=tmp_path / "b")
    assert f"{check}.counter" in outcome.failed, text
    assert ("mode_none.REALTIME" in outcome.failed) == (mode_none == "counter"), text


def test_every_abi_says_what_its_linux_vdso_does():
    from vdsogen.spec import abi

    for name in abi.names():
        assert set(driver.linux_behaviour(name).values()) <= set(driver.LINUX_READS), name


# -- the harness following each version's images -------------------------------------------------

def noted(src, dst, version):
    """A copy of image src whose Linux version note says `version` (major, minor, sublevel)."""
    from vdsogen.elf.consts import NT_LINUX_VERSION
    from vdsogen.elf.reader import ElfImage

    img = ElfImage(str(src))
    note = next(n for n in img.notes if n.name == "Linux" and n.type == NT_LINUX_VERSION)
    data = bytearray(src.read_bytes())
    at = data.index(bytes(note.desc), note.offset)
    code = (version[0] << 16) | (version[1] << 8) | version[2]
    data[at:at + 4] = code.to_bytes(4, "little" if img.little else "big")
    dst.write_bytes(bytes(data))
    return dst


def test_the_version_note_sets_the_era_the_harness_renders(tmp_path):
    """6.1's x86 .altinstructions entries are 12 bytes (14 from 6.2), and its i386 image has no
    __vdso_getcpu (6.2): the harness plays the image's version, not the spec's."""
    from vdsogen.harness.driver import harness_sources

    target = load_target("i386")
    own = build_broken(target, tmp_path / "own", {})
    old = layouts.of_image(target, noted(own, tmp_path / "old.so", (6, 1, 176)))
    assert old.target.elf.linux_version == (6, 1, 176)
    assert "__vdso_getcpu" not in [e.name for e in old.target.exports]
    assert "#define H_ALT_ENTRY_SIZE\t12" in dict(harness_sources(old.target))["harness_target.h"]
    new = layouts.of_image(target, noted(own, tmp_path / "new.so", (7, 2, 13)))
    assert "__vdso_getcpu" in [e.name for e in new.target.exports]
    assert "#define H_ALT_ENTRY_SIZE\t14" in dict(harness_sources(new.target))["harness_target.h"]


# i386's signal trampolines as Linux writes them: no CFI rule for esp (unwinders take the CFA
# for it), and, from v7.2, a ud2 after rt_sigreturn's int $0x80 where a nop was (unwinders
# compare the 7 bytes before it: the ABI catalogue's match).
LINUX_I386 = {
    "sigreturn.S": [(".cfi_escape 0x10, 4, 2, 0x74, 0x20", ""), (".cfi_escape 0x10, 4, 2, 0x74, 0x1c", "")],
    "rt_sigreturn.S": [("/* a kernel label (docs/kernel.rst) */\n\tnop", "/* a kernel label */\n\tud2")],
}


def test_i386_trampolines_as_linux_writes_them(tmp_path):
    target = load_target("i386")
    image = build_broken(target, tmp_path / "linux", LINUX_I386)
    status, outcome, text = run(target, image, tmp_path=tmp_path)
    for check in ("trampoline.__kernel_rt_sigreturn", "unwind.__kernel_sigreturn", "sigreturn.__kernel_sigreturn",
                  "unwind.__kernel_rt_sigreturn"):
        assert check in outcome.passed, text


def test_a_trampolines_compared_bytes_still_count(tmp_path):
    """The 7 bytes unwinders compare: another syscall number there fails."""
    target = load_target("i386")
    image = build_broken(target, tmp_path / "bad", {"rt_sigreturn.S": [("$173, %eax", "$172, %eax")]})
    status, outcome, text = run(target, image, tmp_path=tmp_path)
    assert "trampoline.__kernel_rt_sigreturn" in outcome.failed, text


def test_an_arm64_image_not_built_for_bti_is_called_unguarded(tmp_path):
    """Debian's arm64 kernels do not build their vDSO for BTI and map it unguarded: no landing pad
    is needed, but every export must still return when called through a pointer."""
    base = load_target("arm64")
    flags = [f for f in base.toolchain.cflags if not f.startswith("-mbranch-protection")]
    target = variant(tmp_path, "arm64", cflags=str(flags).replace("'", '"'))
    image = as_a_kernels(build_broken(target, tmp_path / "nobti", {}), tmp_path / "kernel.so")
    status, outcome, text = run(base, image, tmp_path=tmp_path)
    assert "bti" in outcome.passed, text        # (vdsogen's unserved mode is no arm64 kernel's: not asked here)
    assert "the image is not built for BTI, and its kernel maps it unguarded" in text
