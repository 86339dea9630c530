"""Audit rule K009: the seqcount's loads are ordered on the ISAs that may
reorder them.  qemu-user on x86 never reorders the guest's loads, so no
harness run shows a missing barrier: the rule reads the code.  Here each
weakly ordered ISA's image is built without its read barrier (the body of
vdso_rmb() in arch/ARCH/barrier.h.j2 made a compiler barrier), or without
one of the two orderings of a read, and the rule must fire; the barriers
Linux emits must be recognised, and what only looks like one must not."""

import pytest

from conftest import build_broken
from vdsogen.audit.check import check_image
from vdsogen.audit.rules.code import seqcount_pairs, time_exports
from vdsogen.elf.reader import ElfImage
from vdsogen.gen.render import sources
from vdsogen.isa import for_machine, registry
from vdsogen.spec.model import load_target

# One target of each weakly ordered ISA, and ppc32 (sync, not lwsync).
WEAK = ("arm64", "arm", "ppc64le", "ppc32", "riscv64", "mips-n64", "loongarch64")
COMPILER_BARRIER = '\t__asm__ __volatile__("" : : : "memory");'


def rmb_emptied(target):
    """The edit of vdso_arch.h that makes vdso_rmb() a compiler barrier only."""
    text = dict(sources(target))["vdso_arch.h"]
    start = text.index("vdso_rmb(void)\n{\n") + len("vdso_rmb(void)\n{\n")
    body = text[start:text.index("\n}\n", start)]
    return {"vdso_arch.h": [(f"vdso_rmb(void)\n{{\n{body}\n}}\n", f"vdso_rmb(void)\n{{\n{COMPILER_BARRIER}\n}}\n")]}


def k009(target, so):
    """The error rules check finds, and K009's messages."""
    findings = check_image(target, so)
    return ({f.rule for f in findings if f.severity == "error"},
            [f.message for f in findings if f.rule == "K009"])


@pytest.mark.parametrize("name", WEAK)
def test_the_rule_reads_the_seqcount(built, name):
    """Each time export's reads are found, ordered both ways: the rule is not clean by default."""
    _target, so, _dbg = built(name)
    img = ElfImage(str(so))
    exports = time_exports(img)
    assert exports
    for entry, export in exports.items():
        pairs = seqcount_pairs(img, entry, {})
        assert pairs is not None and pairs.clean(), export


@pytest.mark.parametrize("name", ["mips-n64", "arm64"])
def test_a_test_build_passes(name, tmp_path):
    """A test build's injected counter is a seqcount read of its own, nested in the
    time data's (templates/counter-injected.h.j2): each is ordered, and neither's loads
    pair with the other's across their re-reads."""
    target = load_target(name).test_build()
    so = build_broken(target, tmp_path / "image", {})
    rules, messages = k009(target, so)
    assert not messages and not rules, messages


@pytest.mark.parametrize("name", WEAK)
def test_an_image_without_read_barriers_fails(built, name, tmp_path):
    target, _so, _dbg = built(name)
    so = build_broken(target, tmp_path / "image", rmb_emptied(target))
    rules, messages = k009(target, so)
    assert rules == {"K009"}, messages
    assert all("no seqcount read of the function orders its loads" in m for m in messages), messages


# One of the two orderings of every read left out (templates/vdso_core.h): after
# the sequence's first load (the hot paths and the cold path's vdso_read_begin),
# or before its re-read (vdso_read_stable, vdso_read_retry).
FIRST = {"vdso_core.h": [("\tseq = READ_ONCE(vc->seq);\n\tvdso_rmb();\n", "\tseq = READ_ONCE(vc->seq);\n"),
                         ("\t}\n\tvdso_rmb();\n\treturn VDSO_OK;\n", "\t}\n\treturn VDSO_OK;\n")]}
LAST = {"vdso_core.h": [("\tvdso_rmb();\n\treturn READ_ONCE(vc->seq) == (seq & ~1U);",
                         "\treturn READ_ONCE(vc->seq) == (seq & ~1U);"),
                        ("\tvdso_rmb();\n\treturn READ_ONCE(vc->seq) != seq;", "\treturn READ_ONCE(vc->seq) != seq;")]}


@pytest.mark.parametrize("name", ["arm64", "riscv64"])
@pytest.mark.parametrize("half", ["first", "last"])
def test_an_image_missing_one_ordering_fails(built, name, half, tmp_path):
    target, _so, _dbg = built(name)
    so = build_broken(target, tmp_path / "image", FIRST if half == "first" else LAST)
    rules, messages = k009(target, so)
    assert rules == {"K009"}, messages
    said = "is not ordered after the sequence load" if half == "first" else "is not ordered after the data load"
    assert any(said in m for m in messages), messages


def isa(name):
    return next(i for i in registry().values() if i.name == name)


def words(*values, order="little"):
    return [v.to_bytes(4, order) for v in values]


# Per ISA: (mode, what orders loads, what does not); Linux's smp_rmb() first.
BARRIERS = {
    "arm64": (None, words(0xD50339BF, 0xD5033BBF, 0xD5033FBF, 0xD5033D9F),     # dmb ishld, ish, sy; dsb ld
              words(0xD5033ABF, 0xD5033EBF, 0xD5033FDF, 0xD503201F)),          # dmb ishst, st; isb; nop
    "arm": ("arm", words(0xF57FF05B, 0xF57FF059, 0xF57FF04F, 0xEE070FBA),      # dmb ish, ishld; dsb sy; cp15 dmb
            words(0xF57FF05A, 0xF57FF06F, 0xE320F000)),                        # dmb ishst; isb; nop
    "powerpc": (None, words(0x7C2004AC, 0x7C0004AC, order="big"),               # lwsync; sync
                words(0x4C00012C, 0x7C0006AC, 0x60000000, order="big")),        # isync; eieio; nop
    "riscv": (None, words(0x0220000F, 0x0330000F, 0x8330000F),                  # fence r,r; rw,rw; fence.tso
              words(0x0110000F, 0x0120000F, 0x0210000F, 0x0000100F)),           # fence w,w; w,r; r,w; fence.i
    "mips": (None, words(0x0000000F, 0x000004CF, 0x0000044F, order="big"),      # sync, sync 0x13 (rmb), 0x11
             words(0x0000010F, 0x0000048F, order="big")),                       # sync 0x04 (wmb), 0x12 (release)
    "loongarch": (None, words(0x38720015, 0x38720000, 0x38720014),              # dbar 0x15, 0, 0x14
                  words(0x3872001A, 0x38720700, 0x38728000)),                   # dbar 0x1a (stores), 0x700; ibar
}


@pytest.mark.parametrize("name", sorted(BARRIERS))
def test_what_orders_loads(name):
    mode, orders, others = BARRIERS[name]
    arch = isa(name)
    order = "big" if name in ("powerpc", "mips") else "little"
    assert arch.read_barrier is not None
    for raw in orders:
        assert arch.read_barrier(raw, mode, order), raw.hex()
    for raw in others:
        assert not arch.read_barrier(raw, mode, order), raw.hex()


def test_thumb_barriers():
    arm = isa("arm")
    dmb_ish, dmb_ishld, dmb_ishst = (bytes.fromhex(h) for h in ("bff35b8f", "bff3598f", "bff35a8f"))
    assert arm.read_barrier(dmb_ish, "thumb", "little") and arm.read_barrier(dmb_ishld, "thumb", "little")
    assert not arm.read_barrier(dmb_ishst, "thumb", "little")


def test_arm64_load_acquire_orders_what_follows():
    arm64 = isa("arm64")
    for word in (0x88DFFC62, 0xB8BFC062):                                  # ldar w2, [x3]; ldapr w2, [x3]
        raw = word.to_bytes(4, "little")
        assert arm64.acquire_load(raw, None, "little") and arm64.load_address(raw, None, "little") == (3, 0, 2)
    assert not arm64.acquire_load((0xB9400062).to_bytes(4, "little"), None, "little")   # ldr w2, [x3]


def test_one_address_in_two_encodings():
    """A load and its re-read may be encoded differently (a 16-bit and a 32-bit
    Thumb ldr, c.lw and lw): they read one address."""
    arm, riscv = isa("arm"), isa("riscv")
    assert arm.load_address(bytes.fromhex("1368"), "thumb", "little")[:2] == (2, 0)          # ldr r3, [r2, #0]
    assert arm.load_address(bytes.fromhex("d2f800a0"), "thumb", "little")[:2] == (2, 0)      # ldr.w sl, [r2]
    assert riscv.load_address((0x0006A703).to_bytes(4, "little"), None, "little")[:2] == (13, 0)   # lw a4, 0(a3)
    assert riscv.load_address((0x4298).to_bytes(2, "little"), None, "little")[:2] == (13, 0)       # c.lw a4, 0(a3)


# The ISAs K009 does not judge: x86 and s390 (and SPARC V9, which Linux runs in TSO) do not
# reorder loads with loads; Linux's PA-RISC vDSO reads no data page and its SH vDSO has no time
# data (vdsogen/isa/parisc.py, sh.py): nothing to judge.
NOT_JUDGED = ("x86", "s390", "sparc", "parisc", "sh")


def test_strongly_ordered_isas_are_not_judged():
    for e_machine, arch in registry().items():
        weak = arch.name not in NOT_JUDGED
        assert (arch.read_barrier is not None) == weak, arch.name
        assert (arch.load_address is not None) == weak, arch.name
    assert for_machine(62).read_barrier is None           # EM_X86_64
