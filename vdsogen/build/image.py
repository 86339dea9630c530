"""Build images: render, compile, link, strip, validate, emit, then publish.

Nothing is published unless everything succeeded: the image is linked to a
temporary name, validated, and only then are vdso.so, vdso.so.dbg and the
embedding outputs put in place; a failed build leaves none of them behind
(as make's .DELETE_ON_ERROR would).  Builds into one directory take turns
(fsutil.locked_dir), so one never reads or removes another's files while
that other is still at work, and their temporaries have names of their own.
An output whose bytes did not change is not rewritten, so its mtime stays,
and `build_images` (the `vdsogen build` command) skips a target whose
inputs did not change at all (vdsogen/build/depfile.py); outputs older
than an input then get the time of now (depfile.settle), as make expects.
"""

import os
from pathlib import Path

from vdsogen.build import depfile
from vdsogen.build.emit import DEFAULT_NAME, check_kinds, output_names
from vdsogen.build.toolchain import Builder
from vdsogen.errors import BuildError
from vdsogen.fsutil import locked_dir, remove_quietly, sweep_temps, temp_name, write_atomic


def build_target(target, outdir, builder=None, validate=None, files=None, emit=(), emit_name=DEFAULT_NAME,
                 lock=True):
    """Build `target` into outdir; returns (vdso.so, vdso.so.dbg).

    `files` are the rendered sources (rendered here when None: a template
    error then stops the build before anything is written).
    `validate(target, so, dbg)` returns a list of error strings; any error
    fails the build.  `emit` names embedding outputs (vdsogen/build/emit.py)
    written beside the image.  With `lock` (the default) the build holds
    outdir's lock; a caller that holds it already passes lock=False.
    """
    from vdsogen.gen.render import sources

    outdir = Path(outdir)
    builder = builder or Builder(target)
    check_kinds(emit, emit_name)
    files = sources(target) if files is None else files
    try:
        if not lock:
            return _build(target, outdir, builder, validate, files, emit, emit_name)
        with locked_dir(outdir):
            return _build(target, outdir, builder, validate, files, emit, emit_name)
    except OSError as e:
        raise BuildError(f"{e.filename or outdir}: {e.strerror}") from None


def _write_if_changed(path, data, mode=0o644):
    """Write atomically, and not at all when the file already holds `data`."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    write_atomic(path, data, mode)
    return True


def _build(target, outdir, builder, validate, files, emit, emit_name):
    outdir.mkdir(parents=True, exist_ok=True)
    final_so, final_dbg = outdir / "vdso.so", outdir / "vdso.so.dbg"
    products = [final_dbg, final_so, *(outdir / n for n in output_names(emit))]

    srcdir, objdir = outdir / "src", outdir / "obj"
    builder.log("GEN", srcdir)
    srcdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files:
        _write_if_changed(srcdir / name, text.encode())
        paths.append(srcdir / name)
    objdir.mkdir(parents=True, exist_ok=True)

    sweep_temps(outdir)     # what a build killed mid-way left
    tmp_dbg, tmp_so = Path(temp_name(final_dbg)), Path(temp_name(final_so))
    try:
        objs = []
        for src in paths:
            if src.suffix in (".c", ".S"):
                obj = objdir / (src.stem + ".o")
                builder.compile(src, obj, workdir=outdir)
                objs.append(obj)
        builder.link(objs, srcdir / "vdso.lds", tmp_dbg)
        if target.elf.rewrite_flags:
            builder.rewrite_flags(tmp_dbg, target.elf.flags)
        builder.strip(tmp_dbg, tmp_so)
        if validate is not None:
            builder.log("CHECK", final_so)
            errors = validate(target, tmp_so, tmp_dbg)
            if errors:
                raise BuildError(f"{final_so}: the image fails validation:\n" +
                                 "\n".join(f"  {e}" for e in errors))
        out = [(final_dbg, tmp_dbg.read_bytes(), tmp_dbg.stat().st_mode & 0o777),
               (final_so, tmp_so.read_bytes(), tmp_so.stat().st_mode & 0o777)]
        if emit:
            from vdsogen.build.emit import read_embedding, render

            emb = read_embedding(target, tmp_so, tmp_dbg, emit_name)
            for name, data in render(target, emb, emit):
                builder.log("GEN", outdir / name)
                out.append((outdir / name, data, 0o644))
        for path, data, mode in out:
            _write_if_changed(path, data, mode)
    except BaseException:
        for path in products:
            remove_quietly(path)
        raise
    finally:
        remove_quietly(tmp_dbg)
        remove_quietly(tmp_so)
    return final_so, final_dbg


def build_images(names, out, specs=None, emit=(), emit_name=DEFAULT_NAME, kconfig=None, depfile_path=None,
                 env=None, validate=None, test_counter=False, report=None):
    """`vdsogen build`: each target into `out` (into out/T with several).

    Targets whose outputs are up to date are not touched; the others are
    all loaded and rendered before anything is written.  With
    `depfile_path`, writes the make rule of every output's inputs.  With
    `test_counter`, the test builds (Target.test_build: an injected counter).
    `report`, a list, gets one dict per target: its directory, its outputs
    and whether they were built or were up to date (`vdsogen build --format=json`).
    """
    env = dict(os.environ if env is None else env)
    check_kinds(emit, emit_name)
    outdirs = {n: (Path(out) / n if len(names) > 1 else Path(out)) for n in names}
    requests = {n: depfile.Request(n, specs, kconfig, tuple(emit), emit_name, env, test_counter) for n in names}
    states = {n: depfile.current(outdirs[n], requests[n]) for n in names}
    todo = [n for n in names if states[n] is None]
    for n in names:
        if states[n] is not None:
            depfile.settle(outdirs[n], states[n], requests[n])
    built = set()
    if todo:
        from vdsogen.gen.render import sources
        from vdsogen.spec.model import load_target

        targets = [load_target(n, specs, kconfig) for n in todo]
        if test_counter:
            targets = [t.test_build() for t in targets]
        rendered = [(t, sources(t)) for t in targets]
        for t, files in rendered:
            outdir = outdirs[t.name]
            with locked_dir(outdir):
                # Another build may have made these very outputs while this one waited.
                states[t.name] = depfile.current(outdir, requests[t.name])
                if states[t.name] is not None:
                    continue
                depfile.forget(outdir)
                build_target(t, outdir, builder=Builder(t, env), validate=validate, files=files,
                             emit=emit, emit_name=emit_name, lock=False)
                built.add(t.name)
                states[t.name] = depfile.record(outdir, requests[t.name], t)
                depfile.settle(outdir, states[t.name], requests[t.name])
    if depfile_path is not None:
        shown = [os.path.normpath(os.path.join(out, n) if len(names) > 1 else out) for n in names]
        targets = [os.path.join(d, o) for d, n in zip(shown, names) for o in requests[n].outputs()]
        depfile.write_depfile(depfile_path, targets, [states[n] for n in names], [requests[n] for n in names])
    if report is not None:
        report += [{"target": n, "dir": str(outdirs[n]), "status": "built" if n in built else "up to date",
                    "outputs": [str(outdirs[n] / o) for o in requests[n].outputs()]} for n in names]
    return 0
