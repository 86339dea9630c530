"""Where the project's data lives: specs, arch fragments, templates, harness."""

import os
from pathlib import Path

ROOT = Path(os.environ.get("VDSOGEN_ROOT", Path(__file__).resolve().parent.parent))
SPECS = ROOT / "specs"
LAYOUTS = SPECS / "layouts"
TEMPLATES = ROOT / "templates"
ARCH = ROOT / "arch"
HARNESS = ROOT / "harness"
