import io
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from vdsogen.build.image import build_target  # noqa: E402
from vdsogen.audit.check import build_validator  # noqa: E402
from vdsogen.spec.model import load_target  # noqa: E402
from vdsogen.build.toolchain import Builder  # noqa: E402

# Every spec under specs/ is a target the suite builds, checks and runs.
TARGETS = tuple(sorted(p.stem for p in (ROOT / "specs").glob("*.toml")))


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """built(name) -> (target, vdso.so, vdso.so.dbg), each target built once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            target = load_target(name)
            out = tmp_path_factory.mktemp(f"img-{name}")
            so, dbg = build_target(target, out, builder=Builder(target, stream=io.StringIO()),
                                   validate=build_validator)
            cache[name] = (target, so, dbg)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def built_with(tmp_path_factory):
    """built_with(name, env) -> (target, vdso.so, vdso.so.dbg), built with the
    toolchain the environment selects (CROSS_COMPILE=, LLVM=), once per session."""
    cache = {}

    def get(name, env):
        key = (name, tuple(sorted(env.items())))
        if key not in cache:
            target = load_target(name)
            out = tmp_path_factory.mktemp(f"img-{name}")
            so, dbg = build_target(target, out, builder=Builder(target, env=env, stream=io.StringIO()),
                                   validate=build_validator)
            cache[key] = (target, so, dbg)
        return cache[key]

    return get


def elf(path):
    """pyelftools' view of an image: the reference reader the tests check vdsogen's against."""
    from elftools.elf.elffile import ELFFile
    return ELFFile(open(path, "rb"))


def breg(expr, reg):
    """Offset and the rest of a DWARF expression that starts DW_OP_breg<reg> (a SLEB128 offset)."""
    assert expr[0] == 0x70 + reg, expr
    value = shift = 0
    for i, byte in enumerate(expr[1:], 1):
        value |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            if byte & 0x40:
                value -= 1 << shift
            return value, list(expr[i + 1:])
    raise ValueError("unterminated SLEB128")


def dynsym(path):
    return {s.name: s for s in elf(path).get_section_by_name(".dynsym").iter_symbols()}


@pytest.fixture
def project_copy(tmp_path):
    """A private copy of specs/, arch/ and templates/ to break, used through VDSOGEN_ROOT."""
    root = tmp_path / "root"
    for d in ("specs", "arch", "templates", "harness"):
        if (ROOT / d).exists():
            shutil.copytree(ROOT / d, root / d)
    return root
