"""--kconfig=FILE: the values an image depends on from the kernel's .config."""

import pytest

from conftest import ROOT, vdsogen
from vdsogen.errors import SpecError
from vdsogen.spec.kconfig import load_kconfig
from vdsogen.spec.model import load_target

KERNEL_SPECS = ROOT / "docs" / "kernel"
GENERIC = "CONFIG_GENERIC_GETTIMEOFDAY=y\nCONFIG_GENERIC_VDSO_TIME_NS=y\nCONFIG_TIME_NS=y\n"


def config(tmp_path, text, name=".config"):
    path = tmp_path / name
    path.write_text("#\n# Automatically generated file; DO NOT EDIT.\n#\n" + text)
    return path


@pytest.mark.parametrize("hz, tick", [(100, 10_000_000), (250, 4_000_000), (300, 3_333_333), (1000, 1_000_000),
                                      (24, 41_666_667)])
def test_tick_from_config_hz(tmp_path, hz, tick):
    """TICK_NSEC = (NSEC_PER_SEC + HZ/2) / HZ, as include/vdso/jiffies.h rounds it."""
    target = load_target("x86_64", kconfig=config(tmp_path, f"CONFIG_HZ_{hz}=y\nCONFIG_HZ={hz}\n"))
    assert target.datapage.tick_nsec == tick


def test_spec_value_without_config(tmp_path):
    assert load_target("x86_64").datapage.tick_nsec == 4_000_000
    # A .config without CONFIG_HZ fixes nothing: the spec's value stays.
    assert load_target("x86_64", kconfig=config(tmp_path, "CONFIG_64BIT=y\n")).datapage.tick_nsec == 4_000_000


@pytest.mark.parametrize("text, size", [("CONFIG_ARM64_16K_PAGES=y\n# CONFIG_ARM64_4K_PAGES is not set\n", 16384),
                                        ("CONFIG_ARM64_64K_PAGES=y\n", 65536),
                                        ("CONFIG_PAGE_SHIFT=14\n", 16384),
                                        ("CONFIG_ARM64_4K_PAGES=y\n", 4096)])
def test_page_size_from_config(tmp_path, text, size):
    target = load_target("arm64", kconfig=config(tmp_path, text))
    assert target.datapage.page_size == size


def test_config_reaches_the_image(tmp_path):
    """CONFIG_HZ=1000 becomes the coarse clocks' resolution in the generated core config."""
    kc = config(tmp_path, GENERIC + "CONFIG_HZ=1000\n")
    proc = vdsogen("build", f"--specs={KERNEL_SPECS}", "--arch=x86_64", f"--kconfig={kc}", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "#define VDSO_LOW_RES_NSEC\t1000000\n" in (tmp_path / "o" / "src" / "vdso_config.h").read_text()


@pytest.mark.parametrize("text, key, fragment", [
    (GENERIC + "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT=y\n", "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT",
     "y, but layout linux-5.6-x86"),
    ("CONFIG_HZ=fast\n", "CONFIG_HZ", "'fast' is not an integer"),
    ("CONFIG_HZ=0\n", "CONFIG_HZ", "0 is out of range"),
    ("CONFIG_ARM64_16K_PAGES=y\nCONFIG_ARM64_64K_PAGES=y\n", "CONFIG_ARM64_64K_PAGES", "a second page size"),
])
def test_bad_or_mismatched_config_is_one_line(tmp_path, text, key, fragment):
    kc = config(tmp_path, text)
    proc = vdsogen("build", f"--specs={KERNEL_SPECS}", "--arch=x86_64", f"--kconfig={kc}", f"--out={tmp_path / 'o'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith(f"vdsogen: {kc}: {key}: ") and fragment in line, line
    assert not (tmp_path / "o").exists()


def test_layout_checked_against_config(tmp_path):
    """vdsogen's own x86_64 spec (v6.17 layout, max_cycles) against a v6.1-like .config."""
    with pytest.raises(SpecError) as e:
        load_target("x86_64", kconfig=config(tmp_path, GENERIC + "CONFIG_HZ=250\n"))
    assert e.value.key == "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT" and "has max_cycles" in e.value.message
    target = load_target("x86_64", kconfig=config(tmp_path, GENERIC + "CONFIG_GENERIC_VDSO_OVERFLOW_PROTECT=y\n"))
    assert target.datapage.layout.has_max_cycles


def test_not_a_config(tmp_path):
    with pytest.raises(SpecError, match="not a kernel .config line"):
        load_kconfig(config(tmp_path, "hello world\n"))
    with pytest.raises(SpecError, match="cannot read"):
        load_kconfig(tmp_path / "missing")
