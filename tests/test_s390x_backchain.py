"""s390x stack frames and the kernel's user stack walker (perf callchains):
the C code is built with -mbackchain, as Linux builds its vDSO, so every
frame it makes stores the caller's stack pointer at 0(%r15); the entry
frames are the 168-byte frame the walker recognises by its cleared back
chain, the caller's r14 at 160(%r15).  Audit rule K007 checks both, with
either toolchain; the image built as before (without -mbackchain) fails it
at every C frame.  tests/test_rules.py breaks the frames one way at a time.
"""

import dataclasses
import io
import re

import pytest

from elfmut import Mutant
from vdsogen.audit import rules
from vdsogen.audit.check import check_image
from vdsogen.audit.rules import code
from vdsogen.audit.run import audit_path
from vdsogen.build.image import build_target
from vdsogen.build.toolchain import Builder
from vdsogen.elf.reader import ElfImage
from vdsogen.isa import s390
from vdsogen.spec.model import load_target

TOOLCHAINS = {"clang": {}, "gnu": {"CROSS_COMPILE": "s390x-linux-gnu-"}}
ENTRIES = 5          # __kernel_gettimeofday, _clock_gettime, _clock_getres, _getcpu, _getrandom


def frames(path):
    """{address: size} of every frame allocation in the code reached from the symbols."""
    ctx = rules.Context(ElfImage(str(path)), rules.Expect())
    _regions, insns = code.reached(ctx)
    return {addr: size for addr, _insn, raw in insns if (size := s390.frame_allocation(raw))}


def k007(findings):
    return [f for f in findings if f.rule == "K007"]


def without_backchain(tmp_path, env):
    """The image as it was built before: the spec's flags less -mbackchain."""
    target = load_target("s390x")
    assert "-mbackchain" in target.toolchain.cflags
    cflags = tuple(f for f in target.toolchain.cflags if f != "-mbackchain")
    old = dataclasses.replace(target, toolchain=dataclasses.replace(target.toolchain, cflags=cflags))
    so, _dbg = build_target(old, tmp_path, builder=Builder(old, env=env, stream=io.StringIO()))
    return target, so


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_every_frame_is_chained(tc, built_with):
    target, so, dbg = built_with("s390x", TOOLCHAINS[tc])
    sizes = list(frames(so).values())
    assert sizes.count(s390.VDSO_ENTRY_FRAME) == ENTRIES, sizes
    assert len(sizes) > ENTRIES, "no C frame: nothing for the rule to see"
    assert k007(check_image(target, so)) == [] and k007(check_image(target, dbg)) == []


@pytest.mark.parametrize("tc", TOOLCHAINS)
def test_frames_without_backchain_fail(tc, tmp_path):
    """Every C frame of the image built without -mbackchain is reported, and
    nothing else: the entry frames were already the walker's."""
    target, so = without_backchain(tmp_path, TOOLCHAINS[tc])
    c_frames = {a: size for a, size in frames(so).items() if size != s390.VDSO_ENTRY_FRAME}
    found = {int(re.search(r"allocated at 0x([0-9a-f]+) ", f.message)[1], 16): f for f in k007(check_image(target, so))}
    assert c_frames and set(found) == set(c_frames)
    for addr, f in found.items():
        assert f.severity == "error", f
        assert f.message.startswith(f"{c_frames[addr]}-byte frame allocated at 0x{addr:x} without storing its back "
                                    "chain at 0(%r15)"), f


@pytest.mark.parametrize("version,judged", [((6, 6, 0), False), ((6, 7, 0), True)], ids=["6.6", "6.7"])
def test_judged_from_linux_6_7(version, judged, tmp_path):
    """The kernel walks user stacks from Linux 6.7: an image whose note names
    an older Linux is not judged (Linux 6.1's own entry frames left the
    back chain stale), and neither is one QEMU maps (qemu-user)."""
    _target, so = without_backchain(tmp_path, {})
    m = Mutant(so)
    note = m.note("Linux", 0)
    m.put("I", note.offset + 12 + (note.namesz + 3) // 4 * 4, version[0] << 16 | version[1] << 8 | version[2])
    path = m.save(tmp_path / "dated.so")
    assert bool(k007(audit_path(path).findings)) == judged
    assert k007(audit_path(path, profile="qemu-user").findings) == []
