"""`vdsogen bench`: its plumbing and its output format.

A benchmark is never a test: nothing here asserts a timing or a ratio.  The
tests check that the harness's lines are read and summarised as documented,
that the table and the JSON document carry every export, way and ratio,
that hot paths are counted (in the image, the kernel's vDSO and reference
images) by one rule, and that the command runs natively and under qemu.
"""

import json
import os
import shutil
import subprocess
import sys

from types import SimpleNamespace

import pytest

from conftest import CLOCK_TARGETS, ROOT
from vdsogen.bench import hotpath, results
from vdsogen.errors import VdsogenError
from vdsogen.bench.hotpath import COUNTER, CRETURN, OTHER, RETURN, SYSCALL
from vdsogen.bench.run import find_references, hot_paths, linux_label
from vdsogen.elf.consts import EM_ARM, EM_LOONGARCH, EM_MIPS, EM_RISCV, EM_S390, PF_X
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import list_targets, load_target

HARNESS_OUTPUT = """\
# vdsogen harness for x86_64 (specs/x86_64.toml): benchmark
bench.cpu 1
ok map
ok symbol.__vdso_clock_gettime
bench.data live
bench.agree clock_gettime:MONOTONIC ok
bench.agree clock_gettime:REALTIME off: the image says 5 ns, the kernel 1 and 2 ns
bench.note something worth telling
bench.live /tmp/x/live-vdso.so 8192 bytes
bench clock_gettime:MONOTONIC image 20.0 21.0 19.0 20.5
bench clock_gettime:MONOTONIC live 22.0 22.0 21.0 22.0
bench clock_gettime:MONOTONIC syscall 240.0 250.0 245.0 246.0
bench clock_gettime:MONOTONIC image.caller 20.0 20.0 20.0 20.0
bench clock_gettime:MONOTONIC live.caller 25.0 25.0 20.0 25.0
bench clock_gettime:MONOTONIC_COARSE image 2.7 2.7 2.7 2.7
bench clock_gettime:MONOTONIC_COARSE live 3.0 3.0 3.0 3.0
bench time image 2.2 2.2 2.2 2.2
bench call:empty counter 2.2 2.2 2.2 2.4
bench counter:lfence;rdtsc counter 18.4 18.4 18.5 18.4
bench counter:rdtscp counter 18.1 18.1 18.1 18.2
bench broken line
4 passed, 0 failed
"""


def test_parse_reads_every_line_kind():
    run = results.parse(HARNESS_OUTPUT)
    assert run.cpu == 1 and run.data == "live" and run.live_dump == "/tmp/x/live-vdso.so"
    assert run.agree == {"clock_gettime:MONOTONIC": "ok",
                         "clock_gettime:REALTIME": "off: the image says 5 ns, the kernel 1 and 2 ns"}
    assert run.notes == ["something worth telling"]
    assert [ln.name for ln in run.calls] == ["clock_gettime:MONOTONIC", "clock_gettime:MONOTONIC_COARSE", "time"]
    assert [ln.label for ln in run.floors] == ["empty call", "lfence; rdtsc", "rdtscp"]
    assert run.counter_floor.name == "counter:lfence;rdtsc"
    mono = run.line("clock_gettime:MONOTONIC")
    assert mono.label == "clock_gettime(MONOTONIC)" and mono.reads_counter
    assert not run.line("clock_gettime:MONOTONIC_COARSE").reads_counter
    assert sorted(mono.samples) == ["image", "image.caller", "live", "live.caller", "syscall"]
    assert mono.samples["image"] == [20.0, 21.0, 19.0, 20.5]


def test_spread_and_paired_ratios():
    s = results.Spread.of([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s.median, s.q1, s.q3, s.low, s.high, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert results.Spread.of([7.0]).median == 7.0
    mono = results.parse(HARNESS_OUTPUT).line("clock_gettime:MONOTONIC")
    # Per round: 20/22, 21/22, 19/21, 20.5/22, paired as they ran.
    r = mono.ratio("image", "live")
    assert r.n == 4 and r.low == pytest.approx(19 / 21) and r.high == pytest.approx(21 / 22)
    assert mono.ratio("image", "counter") is None
    # The caller method's ways pair the same way, apart from the batch method's.
    assert mono.ratio("image.caller", "live.caller").median == pytest.approx(0.8)


def test_table_has_every_column_and_ratio():
    run = results.parse(HARNESS_OUTPUT)
    hot = results.HotPaths(columns=[("generated", "/x/vdso.so"), ("Linux 6.1.176", "/y/ref.so")],
                           rows=[("clock_gettime (counter clock)", {"generated": 38, "Linux 6.1.176": 57}),
                                 ("time", {"generated": 6, "Linux 6.1.176": None})])
    text = results.table(["HEADER"], run, hot)
    lines = text.splitlines()
    assert lines[0] == "HEADER"
    head = next(ln for ln in lines if ln.startswith("call "))
    for col in ("generated", "live kernel", "syscall", "gen/live", "caller gen/live", "gen/floor"):
        assert col in head, head
    mono = next(ln for ln in lines if ln.startswith("clock_gettime(MONOTONIC) "))
    assert "20.25 [" in mono and "22.00 [" in mono and "0.800 [" in mono
    # gen/floor only where the answer comes from the counter.
    coarse = next(ln for ln in lines if ln.startswith("clock_gettime(MONOTONIC_COARSE)"))
    assert coarse.count("[") == 3
    assert any(ln.strip().startswith("lfence; rdtsc") for ln in lines)
    assert "warning: the image and the kernel disagree on clock_gettime:REALTIME" in text
    assert "note: something worth telling" in text
    hot_lines = text.split("hot path, instructions")[1].splitlines()
    assert next(ln for ln in hot_lines if ln.startswith("clock_gettime (counter clock)")).split()[-2:] == ["38", "57"]
    assert next(ln for ln in hot_lines if ln.startswith("time ")).split()[-2:] == ["6", "-"]
    assert "Linux 6.1.176: /y/ref.so" in text


def test_json_document():
    run = results.parse(HARNESS_OUTPUT)
    doc = results.document({"target": "x86_64"}, run, results.HotPaths(columns=[("generated", "/x")],
                                                                        rows=[("time", {"generated": 6})]))
    json.dumps(doc)
    assert doc["target"] == "x86_64" and doc["cpu"] == 1 and doc["data"] == "live"
    assert doc["floor"] == "counter:lfence;rdtsc"
    mono = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC")
    assert set(mono["ways"]) == {"image", "live", "syscall", "image.caller", "live.caller"}
    assert mono["caller_image_over_live"]["median"] == pytest.approx(0.8)
    assert mono["ways"]["image"]["samples"] == [20.0, 21.0, 19.0, 20.5]
    assert set(mono["ways"]["image"]) == {"median", "q1", "q3", "min", "max", "n", "samples"}
    assert "image_over_live" in mono and "image_over_floor" in mono and mono["agree"] == "ok"
    coarse = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC_COARSE")
    assert "image_over_floor" not in coarse
    assert doc["hot_path"]["rows"] == [{"call": "time", "counts": {"generated": 6}}]


# --- hot paths ------------------------------------------------------------------------

def _counter_is_an_instruction(target):
    """Whether hotpath can see the target's counter read: all but a counter
    that is a plain load (MIPS's GIC page, clock mode 2, alone)."""
    return not (target.counter.fragment == "r4k" and 1 not in target.counter.modes)


def _arch_may_inline_cold(target):
    """Whether the arch's fragments can define __vdso_cold as inline (MIPS, and
    powerpc's ELFv1): the cold paths, the retry loop with them, are in the entry."""
    return any("define __vdso_cold" in f.read_text() for f in (ROOT / "arch" / target.arch).glob("*.j2"))


HOT_PATH_TARGETS = [n for n in CLOCK_TARGETS if _counter_is_an_instruction(load_target(n))]


def test_every_target_gets_hot_paths():
    assert HOT_PATH_TARGETS == list(CLOCK_TARGETS)      # no spec reads the GIC counter today
    assert {"riscv32", "riscv32-compat"} <= set(list_targets()) - set(CLOCK_TARGETS)     # Linux's rv32 reads none
    assert {"arm", "mips-o32", "riscv64", "s390x", "loongarch64"} <= set(HOT_PATH_TARGETS)


@pytest.mark.parametrize("name", HOT_PATH_TARGETS)
def test_hot_paths_of_a_built_image(name, built):
    target, so, dbg = built(name)
    img = ElfImage(so)
    cold = hotpath.cold_ranges(ElfImage(dbg))
    assert cold or _arch_may_inline_cold(target), "the unstripped image names its cold functions"
    assert hotpath.cold_ranges(img) == [], "the stripped one has no symbol table"
    entry = next(e.name for e in target.exports if e.function.name == "clock_gettime")
    counter = hotpath.export_hot_path(img, entry, 1, cold)
    coarse = hotpath.export_hot_path(img, entry, 0, cold)
    assert counter and coarse and coarse < counter
    # The counter is read exactly once on a path that returns without a syscall; never twice
    # but round a loop: the seqcount's where the retry is inline (no cold functions), or the
    # read's own where it takes two halves (32-bit powerpc's mftbu, mftb, mftbu).
    twice = hotpath.export_hot_path(img, entry, 2, cold)
    loops = not cold or (target.counter.fragment == "timebase" and target.elf.elf_class == 32)
    if loops:
        assert twice is None or twice > counter
    else:
        assert twice is None
    assert hotpath.export_hot_path(img, "__no_such_function", 1) is None


# --- the classifiers, on hand-assembled words -------------------------------------------

def _image(machine, endian="little", code=b"", base=0x1000):
    """Just what hotpath reads of an image: its machine, code endianness and one executable load."""
    return SimpleNamespace(e_machine=machine, code_endian=endian, data=bytes(code),
                           loads=[SimpleNamespace(vaddr=base, offset=0, filesz=len(code), flags=PF_X)])


def _words(words, order="little", size=4):
    return b"".join(w.to_bytes(size, order) for w in words)


def test_arm_classifier():
    classify = hotpath.classifier(_image(EM_ARM))
    a32 = {
        0xEC532F1E: COUNTER,    # mrrc p15, 1, r2, r3, c14 (CNTVCT)
        0xEC510F0E: COUNTER,    # mrrc p15, 0, r0, r1, c14 (CNTPCT)
        0x0C510F1E: COUNTER,    # mrrceq: conditional, still a read
        0xEC510F2E: OTHER,      # mrrc p15, 2, ...: no counter
        0xEC510F1D: OTHER,      # c13
        0xEC510E1E: OTHER,      # p14
        0xFC510F1E: OTHER,      # mrrc2
        0xEF000000: SYSCALL,    # svc #0
        0x0F000000: SYSCALL,    # svceq
        0xE12FFF1E: RETURN,     # bx lr
        0x012FFF1E: CRETURN,    # bxeq lr
        0xE12FFF1C: OTHER,      # bx ip
        0xE12FFF3E: OTHER,      # blx lr
        0xE8BD8FF0: RETURN,     # pop {r4-r11, pc}
        0xE8BD80B0: RETURN,     # pop {r4, r5, r7, pc}
        0x18BD8010: CRETURN,    # popne {r4, pc}
        0xE8BD4010: OTHER,      # pop {r4, lr}
        0xE89D8010: OTHER,      # ldm sp, {r4, pc}: no writeback
        0xE1A0F00E: RETURN,     # mov pc, lr
        0xE1A0F00C: OTHER,      # mov pc, ip
        0xE49DF004: RETURN,     # ldr pc, [sp], #4 (pop {pc})
        0xE49D0004: OTHER,      # ldr r0, [sp], #4
        0xE1A00000: OTHER,      # nop
    }
    for word, kind in a32.items():
        assert classify(word.to_bytes(4, "little"), "arm") == kind, hex(word)
        assert classify(word.to_bytes(4, "little")) == kind, hex(word)       # A32 unless told Thumb
    thumb = {
        (0xEC53, 0x2F1E): COUNTER,   # mrrc p15, 1, r2, r3, c14
        (0xEC51, 0x0F0E): COUNTER,   # mrrc p15, 0, r0, r1, c14
        (0xEC53, 0x2F2E): OTHER,     # opc1 2
        (0xEC53, 0x2E1E): OTHER,     # p14
        (0xFC53, 0x2F1E): OTHER,     # mrrc2
        (0xDF00,): SYSCALL,          # svc #0
        (0xDE00,): OTHER,            # udf #0
        (0xD000,): OTHER,            # beq
        (0x4770,): RETURN,           # bx lr
        (0x4760,): OTHER,            # bx ip
        (0x47F0,): OTHER,            # blx lr
        (0x46F7,): RETURN,           # mov pc, lr
        (0x46F6,): OTHER,            # mov r6, lr
        (0xBDF0,): RETURN,           # pop {r4-r7, pc}
        (0xBCF0,): OTHER,            # pop {r4-r7}
        (0xE8BD, 0x81F0): RETURN,    # pop.w {r4-r8, pc}
        (0xE8BD, 0x41F0): OTHER,     # pop.w {r4-r8, lr}
        (0xF85D, 0xFB04): RETURN,    # ldr.w pc, [sp], #4
        (0xF85D, 0x0B04): OTHER,     # ldr.w r0, [sp], #4
    }
    for halves, kind in thumb.items():
        for order in ("little", "big"):
            cl = hotpath.classifier(_image(EM_ARM, order))
            assert cl(_words(halves, order, 2), "thumb") == kind, (halves, order)


def test_mips_classifier():
    for order in ("little", "big"):
        classify = hotpath.classifier(_image(EM_MIPS, order))
        for word, kind in {
            0x7C02103B: COUNTER,    # rdhwr $2, $2 (Count)
            0x7C03103B: COUNTER,    # rdhwr $3, $2
            0x7C02183B: OTHER,      # rdhwr $2, $3 (CCRes)
            0x7C02003B: OTHER,      # rdhwr $2, $0 (CPUNum)
            0x7C02103A: OTHER,      # not rdhwr
            0x0000000C: SYSCALL,    # syscall
            0x0001000C: SYSCALL,    # syscall 0x40
            0x0000000D: OTHER,      # break
            0x03E00008: RETURN,     # jr $ra
            0x03E00408: RETURN,     # jr.hb $ra
            0x03E00009: RETURN,     # jalr $zero, $ra
            0x0320F809: OTHER,      # jalr $t9: a call
            0x03E0F809: OTHER,      # jalr $ra, $ra
            0x03200008: OTHER,      # jr $t9: a tail call
            0x8FBF0000: OTHER,      # lw $ra, 0($sp)
        }.items():
            assert classify(word.to_bytes(4, order)) == kind, (hex(word), order)


def test_riscv_classifier():
    classify = hotpath.classifier(_image(EM_RISCV))
    for word, kind in {
        0xC01027F3: COUNTER,    # rdtime a5 (csrrs a5, time, x0)
        0xC0103573: COUNTER,    # csrrc a0, time, x0: reads too
        0xC0106573: COUNTER,    # csrrsi a0, time, 0
        0xC8102573: COUNTER,    # rdtimeh a0
        0xC0002573: OTHER,      # rdcycle a0
        0xC0202573: OTHER,      # rdinstret a0
        0xC015A573: OTHER,      # csrrs a0, time, a1: would write (illegal), no plain read
        0xC0101573: OTHER,      # csrrw a0, time, x0
        0x00000073: SYSCALL,    # ecall
        0x00100073: OTHER,      # ebreak
        0x00008067: RETURN,     # ret
        0x00028067: RETURN,     # jr t0 (the alternate link register)
        0x000080E7: OTHER,      # jalr ra, 0(ra): a call
        0x00050067: OTHER,      # jr a0
        0x00408067: OTHER,      # jalr x0, 4(ra)
    }.items():
        assert classify(word.to_bytes(4, "little")) == kind, hex(word)
    for half, kind in {0x8082: RETURN, 0x8282: RETURN, 0x9082: OTHER, 0x8502: OTHER, 0x0001: OTHER}.items():
        assert classify(half.to_bytes(2, "little")) == kind, hex(half)       # c.jr ra, c.jr t0; c.jalr ra, c.jr a0


def test_s390_classifier():
    classify = hotpath.classifier(_image(EM_S390, "big"))
    for raw, kind in {
        "b278f0a0": COUNTER,        # stcke 160(%r15)
        "b205f0a0": COUNTER,        # stck 160(%r15)
        "b27cf0a0": COUNTER,        # stckf 160(%r15)
        "b279f0a0": OTHER,          # sacf
        "b204f0a0": OTHER,          # sck: sets the clock
        "0a00": SYSCALL,            # svc 0
        "0aad": SYSCALL,            # svc 173
        "07fe": RETURN,             # br %r14
        "078e": CRETURN,            # ber %r14
        "070e": OTHER,              # bcr 0,%r14: a no-op
        "07f1": OTHER,              # br %r1
        "07fd": OTHER,              # br %r13
        "0de1": OTHER,              # basr %r14,%r1
        "47f0e000": RETURN,         # b 0(%r14)
        "47f0e004": OTHER,          # b 4(%r14)
    }.items():
        assert classify(bytes.fromhex(raw)) == kind, raw


def test_loongarch_classifier():
    classify = hotpath.classifier(_image(EM_LOONGARCH))
    for word, kind in {
        0x0000680C: COUNTER,    # rdtime.d $t0, $zero
        0x000068C4: COUNTER,    # rdtime.d $a0, $a2
        0x0000600C: COUNTER,    # rdtimel.w $t0, $zero
        0x0000640C: COUNTER,    # rdtimeh.w $t0, $zero
        0x000068C0: OTHER,      # rdtime.d $zero, $a2: the counter ID only (getcpu)
        0x00006C0C: OTHER,      # cpucfg $t0, $zero
        0x00005C0C: OTHER,      # below rdtimel.w
        0x002B0000: SYSCALL,    # syscall 0
        0x002B0005: SYSCALL,    # syscall 5
        0x002A0000: OTHER,      # break 0
        0x4C000020: RETURN,     # jirl $zero, $ra, 0 (ret)
        0x4C000021: OTHER,      # jirl $ra, $ra, 0: a call
        0x4C000180: OTHER,      # jirl $zero, $t0, 0: a tail call
        0x4C000420: OTHER,      # jirl $zero, $ra, 4
    }.items():
        assert classify(word.to_bytes(4, "little")) == kind, hex(word)


# --- the walk: delay slots and instruction sets -------------------------------------------

MIPS_NOP, MIPS_RDHWR, MIPS_JR_RA, MIPS_ADDU = 0x00000000, 0x7C02103B, 0x03E00008, 0x00421021


@pytest.mark.parametrize("order", ["big", "little"])
def test_mips_delay_slots(order):
    code = [
        0x04110002,             # 1000: bal 100c: over a data word that 100c loads, a way to read the PC
        MIPS_NOP,               # 1004:   (delay slot)
        0xFFFFFFFF,             # 1008: .word: never decoded
        0x8FE60000,             # 100c: lw $a2, 0($ra)
        0x10800004,             # 1010: beqz $a0, 1024
        MIPS_RDHWR,             # 1014:   (delay slot: runs on both ways)
        MIPS_ADDU,              # 1018
        MIPS_JR_RA,             # 101c: jr $ra
        MIPS_NOP,               # 1020:   (delay slot)
        MIPS_JR_RA,             # 1024: jr $ra
        MIPS_ADDU,              # 1028:   (delay slot)
        0x0000000D,             # 102c: break: the flow must not fall through the return's slot
    ]
    img = _image(EM_MIPS, order, _words(code, order))
    # bal, nop, lw, beqz, rdhwr, jr, addu: each delay slot counted once, and jr $ra plus its slot ends the path.
    assert hotpath.hot_path(img, 0x1000, 1) == 7
    assert hotpath.hot_path(img, 0x1000, 1, avoid=[(0x1024, 0x102C)]) == 8    # not taken: addu, jr, nop
    assert hotpath.hot_path(img, 0x1000, 0) is None                           # the slot reads the counter
    # A branch-likely runs its slot only when taken: not taken, the counter is never read.
    likely = list(code)
    likely[4] = 0x50800004      # beqzl $a0, 1024
    img = _image(EM_MIPS, order, _words(likely, order))
    assert hotpath.hot_path(img, 0x1000, 0) == 7                              # bal, nop, lw, beqzl, addu, jr, nop
    assert hotpath.hot_path(img, 0x1000, 1) == 7                              # taken: ... beqzl, rdhwr, jr, addu
    # A call (jal) returns after its delay slot, and the callee's return slot runs too: a callee
    # just past the return address is still called when it does not load from $ra.
    call = [
        0x0C000404,             # 1000: jal 1010
        MIPS_ADDU,              # 1004:   (delay slot)
        MIPS_JR_RA,             # 1008: jr $ra (back to the caller's caller)
        MIPS_NOP,               # 100c:   (delay slot)
        MIPS_RDHWR,             # 1010: the callee
        MIPS_JR_RA,             # 1014: jr $ra
        MIPS_ADDU,              # 1018:   (delay slot)
    ]
    img = _image(EM_MIPS, order, _words(call, order))
    assert hotpath.hot_path(img, 0x1000, 1) == 7
    assert hotpath.hot_path(img, 0x1000, 0) is None


def test_arm_interworking():
    t = lambda *h: _words(h, "little", 2)                         # noqa: E731
    a = lambda *w: _words(w, "little", 4)                         # noqa: E731
    code = (a(0xFA000001,                                         # 1000: blx 100c (to Thumb)
              0xE12FFF1E,                                         # 1004: bx lr (A32, after the return)
              0xE7F000F0)                                         # 1008: udf
            + t(0xEC53, 0x2F1E,                                   # 100c: mrrc p15, 1, r2, r3, c14
                0x4770,                                           # 1010: bx lr
                0xBF08, 0x4608,                                   # 1012: it eq; moveq r0, r1
                0x4770))                                          # 1016: bx lr
    img = _image(EM_ARM, "little", code)
    assert hotpath.hot_path(img, 0x1000, 1) == 4                  # blx, mrrc, bx lr; bx lr in A32
    assert hotpath.hot_path(img, 0x1000, 0) is None
    assert hotpath.hot_path(img, 0x100D, 1) == 2                  # an odd entry is Thumb
    assert hotpath.hot_path(img, 0x100C, 1) is None               # read as A32 the words are no counter read
    # The instructions of an IT block count whether their condition holds or not.
    assert hotpath.hot_path(img, 0x1013, 0) == 3


def test_hot_path_table_rows_follow_the_exports(built):
    target, so, _ = built("x86_64")
    hot = hot_paths(target, str(so))
    assert hot.columns == [("generated", str(so))]
    calls = [call for call, _ in hot.rows]
    assert calls == ["clock_gettime (counter clock)", "clock_gettime (coarse clock)", "gettimeofday", "time",
                     "clock_getres", "getcpu", "getrandom"]
    assert all(isinstance(c["generated"], int) for _, c in hot.rows)


def test_references_by_abi_once_each(built, tmp_path):
    """Images of the target's ABI only, each once however its copies differ outside the code."""
    _, so_x86, _ = built("x86_64")
    _, so_arm, _ = built("arm64")
    shutil.copy(so_x86, tmp_path / "a.so")
    (tmp_path / "sub").mkdir()
    data = bytearray(so_x86.read_bytes())
    shstr = data.rfind(b".text")
    data[shstr:shstr + 5] = b".TEXT"
    (tmp_path / "sub" / "b.so").write_bytes(bytes(data))
    shutil.copy(so_arm, tmp_path / "c.so")
    (tmp_path / "junk.so").write_bytes(b"not an ELF file")
    found = find_references(load_target("x86_64"), dirs=[tmp_path])
    assert [os.path.basename(p) for p, _ in found] == ["a.so"]
    assert [os.path.basename(p) for p, _ in find_references(load_target("arm64"), dirs=[tmp_path])] == ["c.so"]
    assert find_references(load_target("x86_64"), dirs=[tmp_path / "missing"]) == []
    assert find_references(load_target("arm64"), files=[str(tmp_path / "c.so")])[0][0].endswith("c.so")
    with pytest.raises(VdsogenError, match="a vDSO of the arm64 ABI, not of x86_64"):
        find_references(load_target("x86_64"), files=[str(tmp_path / "c.so")])


def test_linux_label(built):
    _, so, _ = built("x86_64")
    # vdsogen's images carry the Linux version note of their spec.
    assert linux_label(ElfImage(so), "fallback").startswith("Linux 7.2.0")


# --- the command ---------------------------------------------------------------------

def bench(*args, env=None):
    full = dict(os.environ, VDSOGEN_BENCH_REFERENCES="", **(env or {}))
    return subprocess.run([sys.executable, "-m", "vdsogen", "bench", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=600)


def test_bench_native_json(built, tmp_path):
    target, so, _ = built("x86_64")
    proc = bench("--arch=x86_64", f"--image={so}", "--format=json", "--rounds=2", "--batch-us=20",
                 f"--reference={so}")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["target"] == "x86_64" and doc["native"] and doc["rounds"] == 2 and doc["image"] == str(so)
    # The stripped image has no .comment; the vdso.so.dbg beside it names the compiler.
    assert "clang version 19" in doc["toolchain"], doc["toolchain"]
    names = {d["line"] for d in doc["lines"]}
    for f in ("clock_gettime:MONOTONIC", "clock_gettime:REALTIME_COARSE", "clock_gettime:PROCESS_CPUTIME_ID",
              "gettimeofday", "time", "clock_getres:MONOTONIC", "getcpu", "call:empty", "counter:lfence;rdtsc",
              "counter:rdtscp"):
        assert f in names, f
    mono = next(d for d in doc["lines"] if d["line"] == "clock_gettime:MONOTONIC")
    assert {"image", "syscall"} <= set(mono["ways"]) and all(d["n"] == 2 for d in mono["ways"].values())
    # This kernel has a vDSO: both methods time the image against it.
    for d in doc["lines"]:
        if "live" in d["ways"]:
            assert {"image.caller", "live.caller"} <= set(d["ways"]) and "caller_image_over_live" in d, d["line"]
    assert "caller_image_over_live" in mono
    assert [c["label"] for c in doc["hot_path"]["columns"]][0] == "generated"
    assert any(c["path"] == str(so) for c in doc["hot_path"]["columns"][1:])


def test_bench_text_under_qemu():
    proc = bench("--arch=arm64", "--rounds=2", "--batch-us=20")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "under qemu-user" in out and "live kernel" not in out.split("hot path")[0]
    assert "clock_gettime(MONOTONIC)" in out and "isb; mrs cntvct el0" in out
    assert "hot path, instructions" in out and "no real Linux image of the arm64 ABI" in out


def test_bench_of_a_given_image_under_qemu(built):
    """The image given is the one timed and counted: no note of a test build."""
    _, so, _ = built("arm64")
    proc = bench("--arch=arm64", f"--image={so}", "--rounds=2", "--batch-us=20")
    assert proc.returncode == 0, proc.stderr
    assert str(so) in proc.stdout and "test build" not in proc.stdout, proc.stdout


def test_bench_times_the_test_build_where_qemu_cannot_read_the_counter():
    """arm's real build dies of SIGILL at its mrrc under qemu: the test build is timed instead."""
    proc = bench("--arch=arm", "--rounds=1", "--batch-us=20")
    assert proc.returncode == 0, proc.stderr
    assert "clock_gettime(MONOTONIC)" in proc.stdout
    assert "timed: the test build" in proc.stdout and "counted: the real build" in proc.stdout


def test_bench_refuses_a_reference_of_another_abi(built):
    _, arm64, _ = built("arm64")
    proc = bench("--arch=x86_64", "--rounds=2", "--batch-us=20", f"--reference={arm64}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{arm64}: a vDSO of the arm64 ABI, not of x86_64" in proc.stderr, proc.stderr


def test_bench_rejects_bad_arguments(tmp_path):
    assert bench("--arch=x86_64", "--rounds=0").returncode == 2
    proc = bench("--arch=x86_64", f"--image={tmp_path / 'none.so'}")
    assert proc.returncode != 0 and "no such image" in proc.stderr


def test_harness_bench_usage(built, tmp_path):
    """The harness's own options: a bad one is a usage error, not a crash."""
    from vdsogen.harness.driver import build_harness
    from vdsogen.build.toolchain import Builder
    import io

    target, so, _ = built("x86_64")
    exe = build_harness(target, tmp_path, Builder(target, stream=io.StringIO()))
    proc = subprocess.run([str(exe), "--bench", "--bogus", str(so)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = subprocess.run([str(exe), "--bench", "--rounds", "1", "--batch-us", "10", str(so)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "bench.data synthetic" in proc.stdout, proc.stdout
