"""Build images from edited sources, to show defects the generator never makes."""

import io

from vdsogen.gen.render import sources
from vdsogen.build.toolchain import Builder


def build_variant(target, workdir, edit=None, extra=(), ldflags_drop=()):
    """Render `target`, let edit(name, text) change any source, add `extra`
    [(name, text)], build, and return the stripped image's path."""
    src = workdir / "src"
    obj = workdir / "obj"
    src.mkdir(parents=True)
    obj.mkdir()
    files = []
    for name, text in list(sources(target)) + list(extra):
        if edit is not None:
            text = edit(name, text)
        (src / name).write_text(text)
        files.append(src / name)
    b = Builder(target, stream=io.StringIO())
    objs = []
    for f in files:
        if f.suffix in (".c", ".S"):
            o = obj / (f.stem + ".o")
            b.compile(f, o)
            objs.append(o)
    dbg, so = workdir / "vdso.so.dbg", workdir / "vdso.so"
    b.link(objs, src / "vdso.lds", dbg, drop=ldflags_drop)
    b.strip(dbg, so)
    return so
