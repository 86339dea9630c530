"""Where vdsogen's data lives: specs, layouts, arch fragments, templates, harness sources.

In a source tree they are the top-level directories beside the package; an
installed wheel carries the same directories as package data under
vdsogen/_data/ (pyproject.toml maps them there).  VDSOGEN_ROOT points at
another tree of the same shape (the tests use it for broken copies).
"""

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _root():
    if os.environ.get("VDSOGEN_ROOT"):
        return Path(os.environ["VDSOGEN_ROOT"])
    if (_PACKAGE / "_data").is_dir():
        return _PACKAGE / "_data"
    return _PACKAGE.parent


ROOT = _root()
SPECS = ROOT / "specs"
LAYOUTS = SPECS / "layouts"
TEMPLATES = ROOT / "templates"
ARCH = ROOT / "arch"
HARNESS = ROOT / "harness"
