"""s390x in clock mode NONE (issue 19, point 1): the checks that see a
counter read before the mode test reach s390x too.

  - The test build (its TOD read swapped for the injected counter) runs in
    the harness, so its mode_none.trap checks run there
    (tests/test_mode_first.py): the harness reads the TOD clock itself, not
    through the image's counter fragment, which a test build does not have.
    The TOD correction's check has nothing to check there and says so.
  - Audit rule K008 reads s390 code: vdsogen/isa/s390.py's data_load knows
    which instructions read memory off the stack, checked here against the
    assembler's encodings; K008 finds the old core's counter read with
    either toolchain (tests/test_mode_first.py: the default one).
"""

import io
import subprocess

import pytest

from conftest import build_broken, expected_checks, run_broken
from vdsogen.audit.check import check_image
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness
from vdsogen.isa import s390
from vdsogen.spec.model import load_target

CLANG = "clang-19"

# Instructions that read the data page, as the clock functions may: based or
# indexed on any register but %r15, or relative long (`data` below).
LOADS = """
    l %r1,16(%r4); ly %r1,-8(%r4); lg %r1,8(%r4); lg %r0,48(%r13,%r4); lgf %r1,8(%r4); llgf %r14,40(%r4)
    lh %r1,2(%r4); lhy %r1,2(%r4); lgh %r1,2(%r4); llh %r1,2(%r4); llgh %r1,2(%r4)
    lb %r1,0(%r4); lgb %r1,0(%r4); llc %r1,0(%r4); llgc %r1,0(%r4); ic %r1,0(%r4); icy %r1,0(%r4)
    icm %r1,15,0(%r4); icmy %r1,15,0(%r4); icmh %r1,15,0(%r4)
    lt %r4,4(%r1); ltg %r4,8(%r1); ltgf %r4,8(%r1); llgt %r1,0(%r4); lrv %r1,0(%r4); lrvh %r1,0(%r4); lrvg %r1,0(%r4)
    lm %r2,%r3,0(%r4); lmy %r2,%r3,0(%r4); lmg %r2,%r3,0(%r4); lpq %r2,0(%r4)
    loc %r1,0(%r4),8; locg %r1,8(%r4),8
    lrl %r1,data; lgrl %r1,data; lgfrl %r1,data; llgfrl %r1,data; lhrl %r1,data; lghrl %r1,data
    llhrl %r1,data; llghrl %r1,data
    c %r8,0(%r1); cy %r8,0(%r1); cg %r1,8(%r4); cgf %r1,8(%r4); cl %r1,0(%r4); cly %r1,0(%r4)
    clg %r1,0(%r4); clgf %r1,0(%r4); ch %r1,0(%r4); chy %r1,0(%r4); cgh %r1,0(%r4)
    chsi 20(%r4),1; cghsi 0(%r4),0; chhsi 0(%r4),0; clfhsi 0(%r4),1; clghsi 0(%r4),1; clhhsi 0(%r4),1
    tm 0(%r4),1; tmy 0(%r4),1; cli 0(%r4),1; cliy 0(%r4),1
    crl %r1,data; cgrl %r1,data; cgfrl %r1,data; chrl %r1,data; cghrl %r1,data
    clrl %r1,data; clgrl %r1,data; clgfrl %r1,data; clhrl %r1,data; clghrl %r1,data
    a %r1,0(%r4); ay %r1,0(%r4); ag %r14,56(%r13,%r4); agf %r1,0(%r4); ah %r1,0(%r4); ahy %r1,0(%r4)
    s %r1,0(%r4); sy %r1,0(%r4); sg %r5,24(%r4); sgf %r1,0(%r4); sh %r1,0(%r4); shy %r1,0(%r4)
    al %r1,0(%r4); aly %r1,0(%r4); alg %r1,0(%r4); algf %r1,0(%r4); alc %r1,0(%r4); alcg %r1,0(%r4)
    sl %r1,0(%r4); sly %r1,0(%r4); slg %r1,0(%r4); slgf %r1,0(%r4); slb %r1,0(%r4); slbg %r1,0(%r4)
    n %r5,16(%r4); ny %r5,16(%r4); ng %r5,16(%r4); o %r1,0(%r4); oy %r1,0(%r4); og %r1,0(%r4)
    x %r1,0(%r4); xy %r1,0(%r4); xg %r1,0(%r4)
    m %r2,0(%r4); mfy %r2,0(%r4); ms %r1,0(%r4); msy %r1,0(%r4); msg %r1,0(%r4); msgf %r1,0(%r4)
    mh %r1,0(%r4); mhy %r1,0(%r4); ml %r2,0(%r4); mlg %r2,0(%r4)
    d %r2,0(%r4); dl %r2,0(%r4); dlg %r2,0(%r4); dsg %r2,0(%r4); dsgf %r2,0(%r4)
    mvc 0(16,%r3),48(%r4); mvc 160(8,%r15),0(%r4); clc 0(8,%r4),0(%r15); nc 0(8,%r15),0(%r4)
    oc 0(8,%r4),0(%r5); xc 0(8,%r4),0(%r4)
"""

# What reads no data: the stack (based or indexed on %r15), stores, address
# arithmetic, registers and immediates, the counter read itself.
NOT_LOADS = """
    lg %r5,161(%r15); l %r1,96(%r15); ly %r1,-8(%r15); ltg %r1,0(%r15); lg %r1,0(%r15,%r4); c %r1,0(%r15)
    lmg %r6,%r15,224(%r15); lm %r6,%r15,24(%r15); chsi 0(%r15),0; tm 7(%r15),1; icm %r1,3,0(%r15)
    locg %r1,8(%r15),8; xc 0(8,%r15),0(%r15); mvc 0(8,%r4),160(%r15)
    st %r1,0(%r4); sty %r1,0(%r4); stg %r1,0(%r4); sth %r1,0(%r4); stc %r1,0(%r4); stcy %r1,0(%r4)
    stm %r6,%r7,0(%r4); stmg %r6,%r15,48(%r15); strl %r1,data; stgrl %r1,data
    mvghi 0(%r4),0; mvhi 0(%r4),0; mvhhi 0(%r4),0; mvi 0(%r4),1
    la %r1,8(%r4); lay %r15,-176(%r15); larl %r1,data; lgr %r1,%r2; lr %r1,%r2; lghi %r1,260; lhi %r0,2179
    lgfi %r2,999999999; iilf %r13,2147483647; llgfr %r1,%r0; ltgr %r1,%r1; tmll %r4,1
    cr %r13,%r0; cgr %r1,%r2; chi %r1,1; cghi %r1,1; cfi %r0,2147483647; clgfi %r1,999999999
    agr %r5,%r13; sgr %r4,%r7; msgr %r14,%r5; ahi %r5,1; aghi %r15,-168; nill %r1,65534
    srlg %r0,%r0,15; sllg %r6,%r5,4; lcgr %r13,%r0; locgrlh %r14,%r5
    stcke 160(%r15); stck 0(%r4); stckf 0(%r4); svc 0; br %r14; nopr %r7
"""


def assembled(tmp_path, lines):
    """[(source line, raw bytes)] of each instruction, as clang assembles them
    for z196 (the spec's -march), split by the decoder's lengths."""
    insns = [i.strip() for line in lines.strip().splitlines() for i in line.split(";")]
    src = tmp_path / "insns.s"
    src.write_text("\t.text\n" + "".join(f"\t{i}\n" for i in insns) + "\t.balign 8\ndata:\t.quad 0\n")
    obj = tmp_path / "insns.o"
    subprocess.run([CLANG, "--target=s390x-linux-gnu", "-march=z196", "-c", str(src), "-o", str(obj)], check=True)
    text = tmp_path / "insns.bin"
    subprocess.run(["llvm-objcopy-19", "-O", "binary", "--only-section=.text", str(obj), str(text)], check=True)
    code, out, i = text.read_bytes(), [], 0
    for insn in insns:
        decoded = s390.s390_insn(code, i, i)
        assert decoded is not None, insn
        out.append((insn, code[i:i + decoded.length]))
        i += decoded.length
    return out


@pytest.mark.parametrize("lines,reads", [(LOADS, True), (NOT_LOADS, False)], ids=["loads", "not-loads"])
def test_data_load_against_the_assembler(lines, reads, tmp_path):
    wrong = [f"{insn} ({raw.hex()})" for insn, raw in assembled(tmp_path, lines)
             if s390.data_load(raw, None, "big", False) != reads]
    assert wrong == []


def old_core():
    """tests/test_mode_first.py's edit: the counter read first, the mode tested after it."""
    mode_first = ("\tif (unlikely(!vdso_cycles_mode(vc->clock_mode)))\n\t\treturn VDSO_COLD;\n"
                  "\tif (unlikely(!vdso_hot_delta(vc, &delta)))\n\t\treturn VDSO_COLD;\n")
    counter_first = ("\tbool ok = vdso_hot_delta(vc, &delta);\n\n"
                     "\tif (unlikely(!vdso_cycles_mode(vc->clock_mode) || !ok))\n\t\treturn VDSO_COLD;\n")
    return {"vdso_core.h": [(mode_first, counter_first)]}


def built_gnu(target, outdir, edits):
    """The image built by the GNU cross toolchain from the rendered sources with `edits`."""
    return build_broken(target, outdir, edits, env={"CROSS_COMPILE": "s390x-linux-gnu-"})


def k008(target, image):
    return [f for f in check_image(target, image) if f.rule == "K008"]


def test_k008_on_the_gnu_build(tmp_path):
    """gcc's image tests the mode first; built from the old core, its
    clock_gettime and gettimeofday read the TOD clock after the sequence
    load with no branch between (the time-namespace test is a load on
    condition, no branch), and K008 finds it, an error in check."""
    target = load_target("s390x")
    assert k008(target, built_gnu(target, tmp_path / "good", {})) == []
    found = k008(target, built_gnu(target, tmp_path / "old", old_core()))
    assert {f.message.partition(":")[0] for f in found} == {"__kernel_clock_gettime", "__kernel_gettimeofday"}
    assert all(f.severity == "error" for f in found), found


def test_test_build_runs_every_check_but_the_tod_correction(tmp_path):
    """The test build's harness compiles and passes every check of the real
    build's but the TOD correction's (tod_delta), which it names as not checked."""
    real = load_target("s390x")
    test = real.test_build()
    image = build_broken(test, tmp_path / "image", {})
    harness = build_harness(test, tmp_path / "h", Builder(test, stream=io.StringIO()))
    status, outcome, out = run_broken(test, harness, image)
    assert status == 0 and outcome.failed == {}, out
    assert set(expected_checks(real)) - set(outcome.passed) == {"tod_steering"}, out
    assert "# tod_steering: a test build's counter is injected, without the TOD correction: not checked" in out
