"""The audit mutations: each rule that no corpus defect image shows, made to
fire by one edit (tests/elfmut.py) of a good corpus image.  A data module:
test_audit_rules.py runs the table, and test_rules.py counts the rules it
covers (every registered rule must fire in one test or the other)."""

import corpus as corpus_images
from vdsogen.elf.consts import DT, PF_R, PF_W, PF_X, PT_GNU_EH_FRAME, PT_GNU_STACK, PT_TLS, STB_LOCAL, elf_hash


def _eh(m):
    return m.phdr(PT_GNU_EH_FRAME)


def rela_none(m):
    # One all-zero RELA entry (the null symbol), through tags the image can spare.
    m.set_dyn("VERDEFNUM", tag=DT["RELA"], value=m.img.dyn("SYMTAB"))
    m.set_dyn("GNU_HASH", tag=DT["RELASZ"], value=24)


def _drop_bucket(m):
    nbucket = m.img.sysv_hash()[0]
    buckets = m.img.sysv_hash()[2]
    k = next(i for i, b in enumerate(buckets) if b)
    m.set_sysv_word(2 + k, 0)
    assert nbucket


def _rename_node(m):
    m.replace_bytes(b"LINUX_2.6\0", b"LINUX_2.7\0")
    m.set_verdef_hash(1, elf_hash("LINUX_2.7"))


def _long_note(m):
    note = m.note("Linux", 0)
    m.put("I", note.offset + 4, 0x1000)


def _move_section(name, delta, with_offset=False):
    def fn(m):
        sec = m.section(name)
        m.set_section(sec, addr=sec.addr + delta, offset=sec.offset + delta if with_offset else None)
    return fn


def _bti_one_entry(m):
    # One export begins with a bti c, the others with none: built for BTI, but not all through.
    m.set_word(m.word_at(m.dynsym("__kernel_clock_gettime").value), 0xD503245F)


def _break_trampoline(m):
    sym = m.dynsym("__kernel_rt_sigreturn")
    m.set_word(m.word_at(sym.value), 0xD503201F)


# rule -> (good corpus image, mutation, exactly the rules it fires (its own first))
MUTATIONS = {
    "H007": ("ppc64le", lambda m: m.set_e_flags(1), {"H007"}),
    "H008": ("x86_64", lambda m: m.set_e_entry(0x500), {"H008"}),
    "H009": ("x86_64", lambda m: m.set_osabi(3), {"H009"}),
    "H010": ("x86_64", lambda m: m.set_e_machine(2), {"H010"}),
    "P009": ("x86_64", lambda m: m.move_phdrs_to_end(), {"P009"}),
    "P010": ("x86_64", lambda m: m.set_phdr(_eh(m), offset=_eh(m).offset + 4), {"P010"}),
    "P011": ("x86_64", lambda m: m.set_phdr(_eh(m), type=PT_GNU_STACK, flags=PF_R | PF_W | PF_X), {"P011", "P012"}),
    "D005": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=0x6FFF0000), {"D005"}),
    "D006": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=DT["FLAGS_1"], value=0x8), {"D006"}),
    "D007": ("x86_64", lambda m: m.set_dyn("VERDEFNUM", tag=DT["RELA"]), {"D007"}),
    "R003": ("x86_64", rela_none, {"R003", "X002"}),
    # The emptied bucket holds no name the DT_HASH readers look up: no consumer misses one.
    "X003": ("x86_64", _drop_bucket, {"X003"}),
    "S008": ("x86_64", lambda m: m.set_sym_bind(m.dynsym("__vdso_time"), STB_LOCAL), {"S008"}),
    "V004": ("x86_64", _rename_node, {"V004"}),
    "V005": ("x86_64", lambda m: m.set_versym(m.dynsym("__vdso_time"), 1), {"V005"}),
    "N003": ("x86_64", _long_note, {"N003", "N001", "N002"}),
    "C001": ("x86_64", _move_section(".text", 0x100000), {"C001"}),
    "C003": ("x86_64", _move_section(".gnu.version", 2, with_offset=True), {"C003"}),
    "T001": ("arm64", _break_trampoline, {"T001"}),
    "L001": ("x86_64", lambda m: m.set_phdr(_eh(m), type=PT_TLS), {"L001", "P006", "P012"}),
    "L002": ("x86_64", lambda m: m.set_verdef_hash(1, 0x1234), {"L002", "V003"}),
    "N007": ("arm64", _bti_one_entry, {"N007"}),
}


def rules_tested_in_audit():
    """Rules a test of `vdsogen audit` makes fire: the mutations, and the corpus's defect and quirk images."""
    return set(MUTATIONS) | {r for recipe in corpus_images.DEFECTS + corpus_images.QUIRKS +
                            corpus_images.UNPARSEABLE for r in recipe.expect}
