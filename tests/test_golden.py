"""Golden files of every rendered source, so a generator change is reviewed
as a diff; each file is stored once.  The plain-C files of templates/ that
every build copies as they are (the core) are their own golden copy.
After an intended change: VDSOGEN_UPDATE_GOLDEN=1 sh scripts/test.sh tests/test_golden.py"""

import os

import pytest

from conftest import ROOT, TARGETS
from vdsogen import paths
from vdsogen.gen.render import STATIC, sources
from vdsogen.spec.model import load_target

GOLDEN = ROOT / "tests" / "golden"


@pytest.mark.parametrize("name", TARGETS)
def test_rendered_sources_match_golden(name):
    target = load_target(name)
    rendered = dict(sources(target))
    core = STATIC if target.datapage else ()       # a target without time data has no C core
    for fname in (*core, *(f.header for f in target.core_functions if f.header)):
        assert rendered.pop(fname) == (paths.TEMPLATES / fname).read_text(), f"{fname} is not copied verbatim"
    gdir = GOLDEN / name
    if os.environ.get("VDSOGEN_UPDATE_GOLDEN") == "1":
        gdir.mkdir(parents=True, exist_ok=True)
        for old in gdir.iterdir():
            old.unlink()
        for fname, text in rendered.items():
            (gdir / fname).write_text(text)
    expected = {p.name: p.read_text() for p in gdir.iterdir()}
    assert sorted(rendered) == sorted(expected), "set of generated files changed"
    for fname, text in rendered.items():
        assert text == expected[fname], f"{name}/{fname} differs from tests/golden (regenerate if intended)"
