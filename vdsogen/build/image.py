"""Build one target: render, compile, link, strip, validate, then publish.

Nothing is published unless everything succeeded: the image is linked to a
temporary name and renamed into place only after validation, and stale
images from an earlier build are removed first.
"""

from pathlib import Path

from vdsogen.errors import BuildError
from vdsogen.fsutil import remove_quietly, write_atomic
from vdsogen.gen.render import sources
from vdsogen.build.toolchain import Builder


def build_target(target, outdir, builder=None, validate=None, files=None):
    """Build `target` into outdir; returns (vdso.so, vdso.so.dbg).

    `files` are the rendered sources (rendered here when None: a template
    error then stops the build before anything is written).
    `validate(target, so, dbg)` returns a list of error strings; any error
    fails the build.
    """
    outdir = Path(outdir)
    builder = builder or Builder(target)
    files = sources(target) if files is None else files
    try:
        return _build(target, outdir, builder, validate, files)
    except OSError as e:
        raise BuildError(f"{e.filename or outdir}: {e.strerror}") from None


def _build(target, outdir, builder, validate, files):
    outdir.mkdir(parents=True, exist_ok=True)
    final_so, final_dbg = outdir / "vdso.so", outdir / "vdso.so.dbg"
    remove_quietly(final_so)
    remove_quietly(final_dbg)

    srcdir, objdir = outdir / "src", outdir / "obj"
    builder.log("GEN", srcdir)
    srcdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files:
        write_atomic(srcdir / name, text.encode())
        paths.append(srcdir / name)
    objdir.mkdir(parents=True, exist_ok=True)
    objs = []
    for src in paths:
        if src.suffix in (".c", ".S"):
            obj = objdir / (src.stem + ".o")
            builder.compile(src, obj)
            objs.append(obj)
    script = srcdir / "vdso.lds"

    tmp_dbg, tmp_so = outdir / ".vdso.so.dbg.tmp", outdir / ".vdso.so.tmp"
    try:
        builder.link(objs, script, tmp_dbg)
        builder.strip(tmp_dbg, tmp_so)
        if validate is not None:
            builder.log("CHECK", final_so)
            errors = validate(target, tmp_so, tmp_dbg)
            if errors:
                raise BuildError(f"{final_so}: the image fails validation:\n" +
                                 "\n".join(f"  {e}" for e in errors))
        tmp_dbg.replace(final_dbg)
        tmp_so.replace(final_so)
    finally:
        remove_quietly(tmp_dbg)
        remove_quietly(tmp_so)
    return final_so, final_dbg
