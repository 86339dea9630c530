"""Hash table rules: consumers find every symbol through DT_HASH or DT_GNU_HASH."""

from vdsogen.elf.consts import EM_MIPS, SHN_UNDEF, STB_LOCAL
from vdsogen.audit.rules import Context, Findings, rule


@rule("X001", "warning", "DT_HASH should be present: musl and other DT_HASH-only readers need it",
      """musl (no GNU hash support), CRIU and rustix before 2025, and the
      kernel selftest parser before it learned GNU hash all find symbols only
      through DT_HASH.  arm64 kernels v6.11+ dropped it and broke them, so an
      audit warns; vdsogen's own images must have it (an error in check).""",
      check="error")
def has_hash(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is not None and img.dyn("HASH") is None:
        yield "dynamic", "no DT_HASH"


@rule("X002", "warning", "DT_GNU_HASH should be present where the ABI has it (the catalogue's hash_styles)",
      """glibc and the Go runtime prefer DT_GNU_HASH; kernels link with
      --hash-style=both except where the ABI catalogue
      (vdsogen/spec/abi.toml) says otherwise: its `hash_styles` lists the
      tables an ABI's vDSO carries, and the rule asks for DT_GNU_HASH where
      that has "gnu" (MIPS has "sysv" only: lld rejects .gnu.hash there).
      An image of no catalogue ABI is asked for it unless it is MIPS.""", check="error")
def has_gnu_hash(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is not None and _wants_gnu_hash(ctx) and img.dyn("GNU_HASH") is None:
        yield "dynamic", "no DT_GNU_HASH"


def _wants_gnu_hash(ctx):
    """The image's ABI links with DT_GNU_HASH (the catalogue's hash_styles)."""
    abi = ctx.expect.abi_info
    if abi is not None:
        return "gnu" in abi.hash_styles
    return ctx.image.e_machine != EM_MIPS


def _lookup_targets(img):
    """Defined, non-local .dynsym entries whose names occur once."""
    names: dict[str, int] = {}
    for s in img.dynsym[1:]:
        names[s.name] = names.get(s.name, 0) + 1
    return [s for s in img.dynsym[1:] if s.shndx != SHN_UNDEF and s.bind != STB_LOCAL and names[s.name] == 1]


@rule("X003", "error", "DT_HASH and DT_GNU_HASH must each resolve every exported name to its own symbol",
      """Consumers use either table, and a symbol one table cannot reach is
      missing for its readers only.  DT_HASH's nchain must equal the number
      of .dynsym entries (musl scans that many); in DT_GNU_HASH the bloom
      filter must pass every name and symoffset must not exceed the symbol
      count.  s390x's 8-byte .hash words are read as such.""")
def hash_tables_agree(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None or not img.dynsym:
        return
    targets = _lookup_targets(img)
    if img.dyn("HASH") is not None and img.sysv_hash_word_in_file() == img.hash_word:
        nbucket, nchain, _b, _c = img.sysv_hash()
        where = f"DT_HASH @0x{img.offset_of(img.dyn('HASH')):x}"
        if img.dynsym_from_sections and nchain != len(img.dynsym):
            yield where, f"nchain {nchain}, but .dynsym has {len(img.dynsym)} entries"
        for _bucket, message in img.sysv_chain_problems():
            yield where, message
        if nbucket == 0:
            yield where, "0 buckets: every lookup divides by zero"
        else:
            for s in targets:
                if s.index < nchain and img.sysv_lookup(s.name, img.dynsym) != s.index:
                    yield where, f"does not find {s.name} (.dynsym[{s.index}])"
    t = img.gnu_hash_table()
    if t is not None:
        where = f"DT_GNU_HASH @0x{t['offset']:x}"
        if t["symoffset"] > len(img.dynsym):
            yield where, f"symoffset {t['symoffset']} is past the {len(img.dynsym)} symbols"
        elif t["nbuckets"] == 0:
            yield where, "0 buckets: every lookup divides by zero"
        else:
            if t["bloom_size"] & (t["bloom_size"] - 1) or not t["bloom_size"]:
                yield where, f"{t['bloom_size']} bloom words: glibc needs a power of two"
            for s in targets:
                if s.index >= t["symoffset"] and img.gnu_lookup(s.name, img.dynsym) != s.index:
                    yield where, f"does not find {s.name} (.dynsym[{s.index}])"


@rule("X004", "error", ".hash words must be 8 bytes on s390x and 4 bytes everywhere else",
      """s390x consumers read 64-bit DT_HASH words (GNU ld writes them so, and
      real s390x images have them); lld-19 writes 4-byte words on s390x, which
      those consumers misread from the first word on.  Elsewhere the words
      are 4 bytes.""")
def hash_word_size(ctx: Context) -> Findings:
    img = ctx.image
    if img.dynamic is None:
        return
    found = img.sysv_hash_word_in_file()
    if found is not None and found != img.hash_word:
        yield f"DT_HASH @0x{img.offset_of(img.dyn('HASH')):x}", (
            f"{found}-byte .hash words, but {img.machine_name} ELF{img.elf_class} consumers read "
            f"{img.hash_word}-byte words")
