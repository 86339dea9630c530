"""Every ABI has a data-page layout for every Linux version from its first
with vDSO data to 7.2, wherever that version's layout was established, and
the versions left uncovered are refused (`vdsogen test --image` asks for
--layout) for a reason written down here, never played on a layout that may
be wrong.  A layout added for one of them moves it from UNCOVERED to the
covered; a span that stretches over one fails here.

riscv's hwprobe answers are counted per version (RISCV_HWPROBE_MAX_KEY + 1):
each count is checked against the harness on vdsogen's riscv64 image built
for the layout, and an image that answers one key more than its kernel's
page holds fails it.  powerpc's pages of v6.13-v6.14 (the arch page without
v6.12's systemcfg header, before v6.15's generic data store) are checked the
same way: Linux's offsets, vdsogen's images built for them passing, and an
image built for v6.12's failing on them.  No download: the images are
vdsogen's own.
"""

import io

import pytest

from conftest import build_broken
from test_layouts_versions import noted
from vdsogen.build.toolchain import Builder
from vdsogen.harness import layouts
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.layout import load_layout
from vdsogen.spec.model import load_target

VERSIONS = [(6, minor) for minor in range(1, 20)] + [(7, 0), (7, 1), (7, 2)]

# A target of each ABI with data pages (its spec's layout wins a tie, as for its own images).
TARGETS = ["arm", "arm64", "arm64-compat", "i386", "x86_64", "x32", "loongarch64", "mips-o32", "mips-n32",
           "mips-n64", "ppc32", "ppc64", "ppc64le", "riscv32", "riscv64", "s390x", "sparc64", "sparc32-compat"]


def _span(first, last, why):
    return {v: why for v in VERSIONS if first <= v <= last}


SPARC_OWN = _span((6, 1), (7, 0), "sparc's own vvar page before the generic vDSO, not laid out")
# Versions no layout covers, and why; every other version of VERSIONS must be covered.
UNCOVERED = {
    # Before v7.1 sparc had a vDSO of its own, not the generic library's pages.
    "sparc64": SPARC_OWN, "sparc32-compat": SPARC_OWN,
}

def fits(name, version):
    target = load_target(name)
    return target, [lay.name for lay in layouts.for_abi(target) if lay.covers(version)]


@pytest.mark.parametrize("name", TARGETS)
def test_every_established_version_has_its_layout(name):
    """One layout per version (or the spec's own among several: it plays vdsogen's images)."""
    missing, ambiguous = [], []
    for version in VERSIONS:
        if version in UNCOVERED.get(name, {}):
            continue
        target, names = fits(name, version)
        if not names:
            missing.append("%d.%d" % version)
        elif len(names) > 1 and target.datapage.layout.name not in names:
            ambiguous.append(("%d.%d" % version, names))
    assert not missing and not ambiguous, (missing, ambiguous)


@pytest.mark.parametrize("name, version", [(n, v) for n, vs in sorted(UNCOVERED.items()) for v in vs])
def test_an_unestablished_version_is_refused(name, version):
    assert fits(name, version)[1] == [], UNCOVERED[name][version]



@pytest.mark.parametrize("name", TARGETS)
def test_the_spec_plays_its_versions_layout(name):
    """vdsogen's image reads the pages a kernel of its note's version maps: the spec's layout is
    one that version's images play, never one kept for the spec alone."""
    target = load_target(name)
    version = tuple(target.elf.linux_version[:2])
    assert target.datapage.layout.name in fits(name, version)[1], version


# -- powerpc's syscall maps: NR_syscalls per version ------------------------------------------------
#
# 463-466 (setxattrat, getxattrat, listxattrat, removexattrat) came with v6.13, none with v6.14,
# 467 open_tree_attr with v6.15; 470 listns came with v6.19 (the namespace pull for v6.19-rc1), 471
# rseq_slice_yield with v7.0 (v7.2's tables end there, NR_syscalls 472).

@pytest.mark.parametrize("abi, version, bits", [
    ("ppc64le", (6, 12), 463), ("ppc64le", (6, 13), 467), ("ppc64le", (6, 14), 467), ("ppc64le", (6, 15), 468),
    ("ppc64", (6, 13), 467), ("ppc32", (6, 12), 463), ("ppc32", (6, 13), 467), ("ppc32", (6, 14), 467),
    ("ppc32", (6, 15), 468),
    ("ppc64le", (6, 18), 470), ("ppc64le", (6, 19), 471), ("ppc64le", (7, 0), 472), ("ppc64le", (7, 1), 472),
    ("ppc64le", (7, 2), 472), ("ppc32", (6, 19), 471), ("ppc32", (7, 1), 472), ("ppc64", (6, 19), 471),
])
def test_powerpcs_syscall_map_bits(abi, version, bits):
    _, names = fits(abi, version)
    assert len(names) == 1, names
    assert load_layout(names[0]).struct("vdso_arch_data").field("syscall_map").bits == bits


# -- powerpc's pages of v6.13 and v6.14 --------------------------------------------------------------
#
# Linux's offsets, worked out by hand from the tip timers/vdso pull for v6.13-rc1 ("powerpc: Split
# systemcfg data out of vdso data page" takes the systemcfg header out of powerpc64's struct
# vdso_arch_data, the rest as v6.12) and from the pre-image of v6.15's "powerpc/vdso: Switch to
# generic storage implementation" (the same struct, vvar_fault's three pages).

# layout: {vdso_arch_data member: offset}, generation's offset in the first page
PPC_MID = {
    "linux-6.13-powerpc64": ({"tb_ticks_per_sec": 0, "dcache_block_size": 8, "icache_log_block_size": 20,
                              "syscall_map": 24, "compat_syscall_map": 84}, 0x90),
    "linux-6.13-powerpc32": ({"tb_ticks_per_sec": 0, "syscall_map": 8}, 0x48),
}


@pytest.mark.parametrize("name", sorted(PPC_MID))
def test_powerpcs_mid_pages_are_linuxs(name):
    offsets, generation = PPC_MID[name]
    layout = load_layout(name)
    for path, offset in offsets.items():
        assert layout.field_offset("vdso_arch_data", path) == offset, path
    assert {p.role: p.index for p in layout.pages} == {"arch": 0, "rng": 0, "time": 1, "timens": 2}
    assert layout.page("arch").symbol == "_vdso_datapage" and layout.page_count == 3
    assert layout.field_offset(layout.page("rng").struct, "generation") == generation


@pytest.mark.parametrize("name, layout", [
    ("ppc64le", "linux-6.13-powerpc64"), ("ppc64", "linux-6.13-powerpc64"), ("ppc32", "linux-6.13-powerpc32"),
])
def test_vdsogens_powerpc_images_pass_on_the_mid_layouts(name, layout, tmp_path):
    status, outcome, text = run(load_target(name), layout, tmp_path)
    assert status == 0, text
    assert f"# layout: {layout} (Linux 6.13-6.14)" in text, text
    assert {"get_tbfreq", "get_syscall_map", "getrandom.fallback"} <= set(outcome.passed), text


@pytest.mark.parametrize("name, version", [("ppc64le", (6, 13, 7)), ("ppc32", (6, 14, 11))])
def test_a_mid_kernels_image_plays_its_layout(name, version, tmp_path):
    """`vdsogen test --image` on an image whose version note says 6.13 or 6.14 picks the layout (it
    was refused, no layout covering it) and the image built for it passes."""
    layout = {"ppc64le": "linux-6.13-powerpc64", "ppc32": "linux-6.13-powerpc32"}[name]
    built = build_broken(layouts.with_layout(load_target(name), load_layout(layout)), tmp_path / "img", {})
    image = noted(built, tmp_path / "noted.so", version)
    status, outcome, text = run(load_target(name), None, tmp_path / "r", image)
    assert status == 0, text
    assert f"# layout: {layout} (Linux 6.13-6.14), the image's version note says Linux %d.%d.%d" % version in text


@pytest.mark.parametrize("name, neighbour, layout, checks", [
    # v6.12's arch page still had the systemcfg header: an image for it reads the timebase rate
    # 0x38 in, where v6.13's page holds syscall-map words, hands out the map at 0x80, inside
    # v6.13's compat map, and looks for getrandom's state at +0xf8, past the page's data.
    ("ppc64le", "linux-6.12-powerpc64", "linux-6.13-powerpc64", {"get_tbfreq", "get_syscall_map",
                                                                 "getrandom.fallback"}),
    # ppc32's page is v6.12's but for NR_syscalls, which __kernel_get_syscall_map reports.
    ("ppc32", "linux-6.12-powerpc32", "linux-6.13-powerpc32", {"get_syscall_map"}),
])
def test_an_image_for_the_neighbouring_layout_fails(name, neighbour, layout, checks, tmp_path):
    target = layouts.with_layout(load_target(name), load_layout(neighbour))
    image = build_broken(target, tmp_path / "img", {})
    status, outcome, text = run(load_target(name), layout, tmp_path / "r", image)
    assert status == 1 and checks <= set(outcome.failed), text


# -- riscv's hwprobe answers: RISCV_HWPROBE_MAX_KEY + 1 per version --------------------------------

# version -> the keys the arch data holds, and whether it has the ready byte
KEYS = {
    (6, 4): (6, False), (6, 5): (6, False), (6, 6): (6, False), (6, 7): (7, False), (6, 8): (7, False),
    (6, 9): (7, False), (6, 10): (7, False), (6, 11): (10, False), (6, 12): (10, False), (6, 13): (11, False), (6, 14): (12, False), (6, 15): (13, False),
    (6, 16): (14, False), (6, 17): (14, True), (6, 18): (15, True), (6, 19): (16, True),
    (7, 0): (17, True), (7, 1): (17, True), (7, 2): (17, True),
}


@pytest.mark.parametrize("abi", ["riscv64", "riscv32"])
@pytest.mark.parametrize("version", sorted(KEYS))
def test_riscvs_hwprobe_key_count(abi, version):
    _, names = fits(abi, version)
    assert len(names) == 1, names
    layout = load_layout(names[0])
    arch = layout.struct(layout.page("arch").struct)
    keys, ready = KEYS[version]
    assert arch.field("all_cpu_hwprobe_values").count == keys
    assert arch.field("homogeneous_cpus").offset == 8 * keys
    assert (arch.field("ready") is not None) == ready


def run(target, layout, tmp_path, image=None):
    out = io.StringIO()
    status, outcome = run_tests_full(target, image, workdir=tmp_path / "work", stream=out, layout=layout,
                                     builder=Builder(target, stream=out))
    return status, outcome, out.getvalue()


# Layouts added with these spans.  vdsogen's riscv64 image passes on every riscv layout
# (test_riscv_layouts.py, by its FACTS); riscv32's, which reads the same arch data, on these and
# on linux-7.2-riscv, which rv32 kernels of v7.0+ read too.
NEW_RISCV = ["linux-6.4-riscv", "linux-6.7-riscv", "linux-6.8-riscv", "linux-6.13-riscv", "linux-6.19-riscv"]


@pytest.mark.parametrize("layout", NEW_RISCV + ["linux-7.2-riscv"])
def test_vdsogens_riscv32_image_passes_on_the_new_layouts(layout, tmp_path):
    status, outcome, text = run(load_target("riscv32"), layout, tmp_path)
    assert status == 0, text
    assert f"# layout: {layout} (Linux " in text and "riscv_hwprobe" in outcome.passed, text


@pytest.mark.parametrize("layout", NEW_RISCV)
def test_an_image_answering_one_key_more_fails(layout, tmp_path):
    """Built for the layout but answering key N (its page holds 0..N-1) from the page: it reads
    homogeneous_cpus and what follows as a value, and the harness's hwprobe check fails."""
    keys = load_layout(layout)
    keys = keys.struct(keys.page("arch").struct).field("all_cpu_hwprobe_values").count
    target = layouts.with_layout(load_target("riscv64"), load_layout(layout))
    old = f"1:\tli\tt3, {keys - 1}\t"
    bad = build_broken(target, tmp_path / "bad", {"impl-riscv_hwprobe.S": [(old, f"1:\tli\tt3, {keys}\t")]})
    status, outcome, text = run(target, layout, tmp_path / "b", bad)
    assert status == 1 and "riscv_hwprobe" in outcome.failed, text
