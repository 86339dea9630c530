"""Kernel labels: --emit's offsets of the places a kernel links to by names
of its own, which are not exported.  Linux's powerpc kernel enters the
64-bit signal trampoline at the bctrl before __kernel_sigtramp_rt64
(VDSO_sigtramp_rt64), its 32-bit ones at __kernel_sigtramp32 and
__kernel_sigtramp_rt32 (VDSO_sigtramp32, VDSO_sigtramp_rt32); arm64's
kernel returns to VDSO_sigtramp, __kernel_rt_sigreturn; vdso2c reads i386's
landing pads right after the int $0x80 of the sigreturn trampolines and
of __kernel_vsyscall.

The emitted offsets are read back from vdso-offsets.h and the image's
words at them compared with the instructions Linux's kernels expect there,
spelt out here rather than taken from the ABI catalogue the build uses.
"""

import dataclasses
import struct

import pytest

from conftest import edit, vdsogen
from vdsogen.build.emit import read_embedding, render
from vdsogen.errors import BuildError, SpecError
from vdsogen.spec import abi
from vdsogen.spec.model import load_target

# target -> {kernel label: (its words, in code order; the export it is part of, and how far before it)}
LINUX = {
    "ppc64le": {"sigtramp_rt64": ([0x4e800421, 0x38210080, 0x380000ac, 0x44000002],   # bctrl; addi; li r0,172; sc
                                  "__kernel_sigtramp_rt64", 4)},
    "ppc32": {"sigtramp32": ([0x38000077, 0x44000002], "__kernel_sigtramp32", 0),     # li r0,119; sc
              "sigtramp_rt32": ([0x380000ac, 0x44000002], "__kernel_sigtramp_rt32", 0)},  # li r0,172; sc
    "arm64": {"sigtramp": ([0xd2801168, 0xd4000001], "__kernel_rt_sigreturn", 0)},   # mov x8,#139; svc #0
}
# i386's landing pads are where an int $0x80 (cd 80) returns: the nop (90)
# after the trampolines', the popl %ebp (5d) after __kernel_vsyscall's.
I386 = {"vdso32_sigreturn_landing_pad": ("__kernel_sigreturn", 0x90),
        "vdso32_rt_sigreturn_landing_pad": ("__kernel_rt_sigreturn", 0x90),
        "int80_landing_pad": ("__kernel_vsyscall", 0x5d)}


def emitted_defines(target, so, dbg, tmp_path):
    """#define NAME VALUE of the vdso-offsets.h --emit writes for the image, as integers."""
    files = dict(render(target, read_embedding(target, so, dbg), ("c", "lds-offsets")))
    out = {}
    for line in files["vdso-offsets.h"].decode().splitlines():
        parts = line.split()
        if line.startswith("#define ") and len(parts) >= 3 and parts[1].startswith("vdso_offset_"):
            out[parts[1][len("vdso_offset_"):]] = int(parts[2].strip("()"), 0)
    lds = {line.split(" = ")[0][len("vdso_offset_"):]: int(line.split(" = ")[1].rstrip(";"), 0)
           for line in files["vdso-offsets.lds"].decode().splitlines() if line.startswith("vdso_offset_")}
    assert lds == out
    return out


def image_bytes(so, offset, count):
    """`count` bytes of the image at `offset` from its start as mapped, through
    the program headers (pyelftools, not vdsogen's reader)."""
    from elftools.elf.elffile import ELFFile
    with open(so, "rb") as f:
        elf = ELFFile(f)
        loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        base = min(s["p_vaddr"] for s in loads)
        seg = next(s for s in loads if s["p_vaddr"] <= base + offset < s["p_vaddr"] + s["p_filesz"])
        f.seek(seg["p_offset"] + base + offset - seg["p_vaddr"])
        return f.read(count), elf.little_endian


def words_at(so, offset, n):
    data, little = image_bytes(so, offset, 4 * n)
    return list(struct.unpack(("<" if little else ">") + "I" * n, data))


@pytest.mark.parametrize("name", sorted(LINUX))
def test_kernel_labels_point_where_linux_kernels_enter(built, tmp_path, name):
    target, so, dbg = built(name)
    d = emitted_defines(target, so, dbg, tmp_path)
    for label, (words, export, before) in LINUX[name].items():
        assert label in d, f"vdso-offsets.h has no vdso_offset_{label}"
        assert words_at(so, d[label], len(words)) == words, label
        assert d[label] == d[export] - before, label


def test_i386_landing_pads_follow_the_int80(built, tmp_path):
    target, so, dbg = built("i386")
    d = emitted_defines(target, so, dbg, tmp_path)
    for label, (export, after) in I386.items():
        data, _ = image_bytes(so, d[label] - 2, 3)
        assert data == bytes([0xcd, 0x80, after]), (label, data.hex())
        assert d[export] < d[label] <= d[export] + 8


@pytest.mark.parametrize("name", ["s390x", "loongarch64"])
def test_every_catalogued_label_is_where_the_catalogue_puts_it(built, tmp_path, name):
    """The other targets with kernel labels: each at its trampoline's words."""
    target, so, dbg = built(name)
    d = emitted_defines(target, so, dbg, tmp_path)
    labelled = [t for t in target.abi.trampolines if t.kernel_label]
    assert labelled
    for t in labelled:
        assert t.label_at == "symbol" and d[t.kernel_label] == d[t.name]
        data, _ = image_bytes(so, d[t.kernel_label], t.match or 4 * len(t.words))
        assert data == b"".join(w.to_bytes(4, "big" if target.elf.endian == "big" else "little")
                                for w in t.words)[:len(data)], t.name


# --- a spec's own labels ----------------------------------------------------------

def spec_with(tmp_path, labels):
    """A spec that is vdsogen's ppc64le with these [emit] labels lines."""
    (tmp_path / "ppc64le.toml").write_text('extends = "ppc64le"\n[emit.labels]\n' + labels)
    return tmp_path / "ppc64le.toml"


def test_a_spec_adds_labels_under_the_kernels_names(built, tmp_path):
    """A kernel before Linux's bctrl entered at __kernel_sigtramp_rt64 itself,
    as vdso64_rt_sigtramp; any symbol of vdso.so.dbg can be named."""
    _t, so, dbg = built("ppc64le")
    spec_with(tmp_path, 'vdso64_rt_sigtramp = "__kernel_sigtramp_rt64"\nstart = "__kernel_start_sigtramp_rt64"\n')
    target = load_target("ppc64le", specs=tmp_path)
    d = emitted_defines(target, so, dbg, tmp_path)
    assert d["vdso64_rt_sigtramp"] == d["__kernel_sigtramp_rt64"]
    assert d["start"] == d["sigtramp_rt64"] == d["__kernel_sigtramp_rt64"] - 4
    header = dict(render(target, read_embedding(target, so, dbg), ("c",)))["vdso-offsets.h"].decode()
    assert "\tunsigned long sym_vdso64_rt_sigtramp;\n" in header


@pytest.mark.parametrize("lines, key, message", [
    ('"2bad" = "__kernel_sigtramp_rt64"\n', "emit.labels.2bad", "'2bad' is not a C identifier"),
    ("x = 3\n", "emit.labels.x", "expected a string, got integer"),
    ('x = "not a symbol"\n', "emit.labels.x", "'not a symbol' is not a C identifier"),
    ('__kernel_sigtramp_rt64 = "__kernel_time"\n', "emit.labels.__kernel_sigtramp_rt64",
     "'__kernel_sigtramp_rt64' is an exported symbol: vdso-offsets.h has its offset already"),
    ('sigtramp_rt64 = "__kernel_time"\n', "emit.labels.sigtramp_rt64",
     "'sigtramp_rt64' is the ABI's kernel label in __kernel_sigtramp_rt64 already (vdsogen/spec/abi.toml "
     "[ppc64le])"),
])
def test_a_bad_label_names_file_and_key(tmp_path, lines, key, message):
    path = spec_with(tmp_path, lines)
    with pytest.raises(SpecError) as e:
        load_target("ppc64le", specs=tmp_path)
    assert (e.value.path, e.value.key, e.value.message) == (str(path), key, message)


def test_an_unknown_emit_key_names_file_and_key(tmp_path):
    (tmp_path / "ppc64le.toml").write_text('extends = "ppc64le"\n[emit]\nlables = {}\n')
    with pytest.raises(SpecError) as e:
        load_target("ppc64le", specs=tmp_path)
    assert (e.value.key, e.value.message) == ("emit.lables", "unknown key (did you mean 'labels'?)")


def test_a_label_of_no_symbol_is_one_line_naming_file_and_key(tmp_path):
    path = spec_with(tmp_path, 'vdso64_rt_sigtramp = "__kernel_sigtramp_rt46"\n')
    proc = vdsogen("build", "-q", "--arch=ppc64le", f"--specs={tmp_path}", f"--out={tmp_path / 'out'}", "--emit=c")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"vdsogen: {path}: emit.labels.vdso64_rt_sigtramp: no symbol "
                                   "'__kernel_sigtramp_rt46' in vdso.so.dbg (did you mean '__kernel_sigtramp_rt64'?)")


# --- the catalogue's labels and the fragments -------------------------------------

@pytest.mark.parametrize("change, message", [
    ({"label_at": "lead"}, r"arch/arm64/sigreturn\.S\.j2: sigtramp is at 0x[0-9a-f]+, but vdsogen/spec/abi\.toml "
                           r"puts the kernel label of __kernel_rt_sigreturn at 0x[0-9a-f]+ \(label_at = 'lead'\)"),
    ({"label": "sigtramp2"}, r"arch/arm64/sigreturn\.S\.j2: defines no local symbol 'sigtramp2', the kernel label "
                             r"of __kernel_rt_sigreturn \(vdsogen/spec/abi\.toml \[arm64\] trampolines\)"),
])
def test_a_catalogue_and_fragment_that_disagree_fail_the_emit(built, change, message):
    """The catalogue and the fragment must agree on the label and its place."""
    target, so, dbg = built("arm64")
    moved = dataclasses.replace(target, trampolines=tuple(dataclasses.replace(t, **change)
                                                          for t in target.trampolines))
    with pytest.raises(BuildError, match=message):
        read_embedding(moved, so, dbg)


@pytest.mark.parametrize("old, new, key, message", [
    ('lead = [0xd503201f], kernel_label = "sigtramp" }', 'lead = [0xd503201f], kernel_label = "sig tramp" }',
     "arm64.trampolines[0].kernel_label", "'sig tramp' is not a C identifier"),
    ('kernel_label = "sigtramp" }', 'kernel_label = "sigtramp", label_at = "before" }',
     "arm64.trampolines[0].label_at", "'before' is not one of lead, return, symbol"),
    ('lead = [0xd503201f], kernel_label = "sigtramp" }', 'label_at = "lead" }',
     "arm64.trampolines[0].label_at", "without a kernel_label"),
    ('kernel_label = "sigreturn" }', 'kernel_label = "sigreturn", label_at = "lead" }',
     "s390x.trampolines[1].label_at", "\"lead\", and the trampoline has no `lead` words"),
    ('within = "__kernel_vsyscall" }', 'within = "__kernel_vsyscall()" }',
     "i386.kernel_labels[0].within", "'__kernel_vsyscall()' is not a C identifier"),
])
def test_a_bad_catalogue_label_names_file_and_key(catalogue_copy, old, new, key, message):
    edit(catalogue_copy, old, new)
    with pytest.raises(SpecError) as e:
        abi.catalogue()
    assert (e.value.path, e.value.key, e.value.message) == (str(catalogue_copy), key, message)
