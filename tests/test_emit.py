"""Embedding outputs (--emit=c, incbin, lds-offsets): what a kernel links in.

The offsets are checked against pyelftools reading the same image (an
independent reader), and the outputs are compiled, assembled and linked
with gcc and clang into programs that compare what they see with the file.
`vdsogen build --emit` itself (files in --out, atomic, only when changed)
is tested in test_build_incremental.py and test_kconfig.py.
"""

import os
import shutil
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from conftest import vdsogen
from vdsogen.build.emit import read_embedding, render

ALL = ("c", "incbin", "lds-offsets")


@pytest.fixture(scope="module")
def emitted(built, tmp_path_factory):
    """emitted(name) -> (target, dir): the session's image of `name` with every
    embedding output written beside a copy of it, as --emit writes them."""
    cache = {}

    def get(name):
        if name not in cache:
            target, so, dbg = built(name)
            out = tmp_path_factory.mktemp(f"emit-{name}")
            shutil.copy(so, out / "vdso.so")
            for fname, data in render(target, read_embedding(target, so, dbg), ALL):
                (out / fname).write_bytes(data)
            cache[name] = (target, out)
        return cache[name]

    return get


def defines(header):
    """#define NAME VALUE lines of vdso-offsets.h, as integers."""
    out = {}
    for line in header.read_text().splitlines():
        if line.startswith("#define ") and len(line.split()) >= 3:
            name, value = line.split()[1:3]
            try:
                out[name] = int(value.strip("()"), 0)
            except ValueError:
                pass
    return out


def oracle_symbols(so):
    with open(so, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        return {s.name: s["st_value"] for s in dynsym.iter_symbols()
                if s.name and s["st_shndx"] not in ("SHN_UNDEF", "SHN_ABS")}, elf.header["e_entry"]


@pytest.mark.parametrize("name", ["x86_64", "i386", "arm64", "ppc64le", "x32"])
def test_offsets_agree_with_an_independent_reader(emitted, name):
    target, out = emitted(name)
    d = defines(out / "vdso-offsets.h")
    symbols, entry = oracle_symbols(out / "vdso.so")
    # kernel labels: tests/test_emit_labels.py
    labels = {t.label for t in target.trampolines} | {k.name for k in target.abi.kernel_labels}
    assert {k[len("vdso_offset_"):]: v for k, v in d.items()
            if k.startswith("vdso_offset_") and k[len("vdso_offset_"):] not in labels} == symbols
    for t in target.trampolines:
        assert d[f"vdso_offset_{t.name}"] == symbols[t.name]
    dp = target.datapage
    size = os.path.getsize(out / "vdso.so")
    assert d["vdso_file_size"] == size
    assert d["vdso_image_size"] % dp.page_size == 0 and 0 <= d["vdso_image_size"] - size < dp.page_size
    assert d["vdso_data_offset"] == -dp.pages * dp.page_size and d["vdso_data_size"] == dp.pages * dp.page_size
    for page in dp.layout.pages:
        assert d[f"vdso_page_{page.role}"] == -(dp.pages - page.index) * dp.page_size
    assert d.get("vdso_entry") == (entry or None)
    lds = {line.split(" = ")[0]: int(line.split(" = ")[1].rstrip(";"), 0)
           for line in (out / "vdso-offsets.lds").read_text().splitlines() if " = " in line}
    assert lds == {k: v for k, v in d.items() if k.startswith("vdso_") and k != "vdso_page_size"}


CHECK_C = r"""
#include <stdio.h>
#include <string.h>
#include "vdso-offsets.h"

int main(int argc, char **argv)
{
	static unsigned char file[1 << 20];
	FILE *f = fopen(argv[1], "rb");
	size_t n = fread(file, 1, sizeof(file), f);
	unsigned long i;

	(void)argc;
	if (n != vdso_file_size || memcmp(file, vdso_start, n))
		return 1;
	for (i = n; i < vdso_image_size; i++)
		if (vdso_start[i])
			return 2;
	if ((unsigned long)vdso_start % vdso_page_size)
		return 3;
#ifdef CHECK_STRUCT
	if (vdso_symbols.image != vdso_start || vdso_symbols.image_size != vdso_image_size ||
	    vdso_symbols.data_offset != vdso_data_offset ||
	    vdso_symbols.sym___vdso_clock_gettime != vdso_offset___vdso_clock_gettime)
		return 4;
#endif
	printf("%lx\n", (unsigned long)vdso_offset___vdso_clock_gettime);
	return 0;
}
"""


@pytest.mark.parametrize("cc", ["gcc", "clang-19"])
@pytest.mark.parametrize("kind", ["c", "incbin"])
def test_embedded_image_is_the_file(emitted, tmp_path, cc, kind):
    """The array (C) or the .incbin between page-aligned labels holds vdso.so, padded with zeros."""
    _, out = emitted("x86_64")
    main = tmp_path / "main.c"
    main.write_text(CHECK_C)
    source = out / ("vdso-image.c" if kind == "c" else "vdso-wrap.S")
    exe = tmp_path / "check"
    flags = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wmissing-prototypes"]
    if kind == "c":
        flags.append("-DCHECK_STRUCT")
    # .incbin finds vdso.so through the include path, from any working directory.
    proc = subprocess.run([cc, *flags, "-I", str(out), str(main), str(source), "-o", str(exe)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    run = subprocess.run([str(exe), str(out / "vdso.so")], capture_output=True, text=True)
    assert run.returncode == 0, run.returncode
    assert int(run.stdout, 16) == defines(out / "vdso-offsets.h")["vdso_offset___vdso_clock_gettime"]


def test_linker_script_offsets_link(emitted, tmp_path):
    _, out = emitted("x86_64")
    main = tmp_path / "main.c"
    main.write_text('#include <stdio.h>\nextern const char vdso_offset___vdso_time[], vdso_data_offset[];\n'
                    'int main(void) { printf("%lx %ld\\n", (unsigned long)vdso_offset___vdso_time, '
                    '(long)vdso_data_offset); return 0; }\n')
    exe = tmp_path / "lds"
    proc = subprocess.run(["gcc", "-static", "-no-pie", str(main), str(out / "vdso-offsets.lds"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    value, data = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    d = defines(out / "vdso-offsets.h")
    assert int(value, 16) == d["vdso_offset___vdso_time"] and int(data) == d["vdso_data_offset"]


def test_emit_name_prefixes_every_identifier(tmp_path):
    proc = vdsogen("build", "--arch=arm64", f"--out={tmp_path}", "--emit=c,lds-offsets", "--emit-name=vdso32")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "vdso-offsets.h").read_text()
    assert "#define vdso32_offset___kernel_rt_sigreturn\t" in header
    assert "extern unsigned char vdso32_start[];" in header and "struct vdso32_symbols {" in header
    assert "vdso_offset" not in header.replace("vdso32_offset", "")
    assert "vdso32_data_offset = -0x4000;" in (tmp_path / "vdso-offsets.lds").read_text()


@pytest.mark.parametrize("args, message", [
    (["--emit=elf"], "--emit: unknown output 'elf' (known: c, incbin, lds-offsets)"),
    (["--emit=c", "--emit-name=2vdso"], "--emit-name: '2vdso' is not a C identifier"),
])
def test_bad_emit_options_are_one_line(tmp_path, args, message):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path / 'out'}", *args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"vdsogen: {message}"
    assert not (tmp_path / "out").exists()
