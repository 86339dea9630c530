"""Surgical edits of good images, each breaking one property, for rule tests."""

import random
import struct

from vdsogen.elf.reader import DT, ElfImage


class Mutant:
    def __init__(self, path):
        self.path = path
        self.data = bytearray(open(path, "rb").read())
        self.img = ElfImage(path, bytes(self.data))
        self.e = "<" if self.img.little else ">"
        self.w = "I" if self.img.elf_class == 32 else "Q"

    def put(self, fmt, offset, *values):
        struct.pack_into(self.e + fmt.replace("W", self.w), self.data, offset, *values)

    def save(self, path):
        path.write_bytes(bytes(self.data))
        return path

    # -- headers
    def set_e_type(self, value):
        self.put("H", 16, value)

    def phdr(self, p_type):
        return next(s for s in self.img.segments if s.type == p_type)

    def set_phdr(self, seg, **fields):
        """Rewrite fields of one program header (type, flags, offset, vaddr, filesz, memsz)."""
        vals = dict(type=seg.type, flags=seg.flags, offset=seg.offset, vaddr=seg.vaddr,
                    filesz=seg.filesz, memsz=seg.memsz, align=seg.align)
        vals.update(fields)
        if self.img.elf_class == 64:
            self.put("IIQQQQQQ", seg.hdr_offset, vals["type"], vals["flags"], vals["offset"], vals["vaddr"],
                     vals["vaddr"], vals["filesz"], vals["memsz"], vals["align"])
        else:
            self.put("IIIIIIII", seg.hdr_offset, vals["type"], vals["offset"], vals["vaddr"], vals["vaddr"],
                     vals["filesz"], vals["memsz"], vals["flags"], vals["align"])

    # -- dynamic
    def retag(self, name, new_tag):
        for tag, _val, off in self.img.dynamic:
            if tag == DT[name]:
                self.put("W", off, new_tag)
                return
        raise KeyError(name)

    def replace_bytes(self, old, new, start=0):
        assert len(old) == len(new)
        i = self.data.index(old, start)
        self.data[i:i + len(old)] = new
        return i

    def dynstr_offset(self, text):
        strtab = self.img.offset_of(self.img.dyn("STRTAB"))
        return self.data.index(text.encode() + b"\0", strtab)

    # -- symbols
    def dynsym(self, name):
        return next(s for s in self.img.dynsym if s.name == name)

    def sym_entry_offset(self, sym):
        table = ".dynsym" if sym.table == ".dynsym" else ".symtab"
        sec = self.img.section(table)
        return sec.offset + sym.index * (16 if self.img.elf_class == 32 else 24)

    def set_sym_info(self, sym, type_=None, bind=None):
        off = self.sym_entry_offset(sym) + (12 if self.img.elf_class == 32 else 4)
        t = sym.type if type_ is None else type_
        b = sym.bind if bind is None else bind
        self.data[off] = (b << 4) | t

    def set_sym_shndx(self, sym, shndx):
        off = self.sym_entry_offset(sym) + (14 if self.img.elf_class == 32 else 6)
        self.put("H", off, shndx)

    def set_versym(self, sym, value):
        off = self.img.offset_of(self.img.dyn("VERSYM")) + 2 * sym.index
        self.put("H", off, value)

    def set_verdef_hash(self, index, value):
        v = self.img.verdefs()[index]
        self.put("I", v.offset + 8, value)

    # -- notes
    def note(self, name, ntype):
        return next(n for n in self.img.notes if n.name == name and n.type == ntype)

    def set_note_type(self, note, value):
        self.put("I", note.offset + 8, value)

    def word_at(self, vaddr):
        return self.img.offset_of(vaddr)

    def set_word(self, offset, value):
        self.put("I", offset, value)

    # -- more headers
    def set_e_entry(self, value):
        self.put("W", 0x18, value)

    def set_e_flags(self, value):
        self.put("I", 0x24 if self.img.elf_class == 32 else 0x30, value)

    def set_e_machine(self, value):
        self.put("H", 0x12, value)

    def set_osabi(self, value):
        self.data[7] = value

    def move_phdrs_to_end(self):
        """Copy the program header table past everything else and point e_phoff at it."""
        size = self.img.e_phnum * (32 if self.img.elf_class == 32 else 56)
        start = (len(self.data) + 7) & ~7
        self.data.extend(bytes(start - len(self.data)))
        self.data.extend(self.data[self.img.e_phoff:self.img.e_phoff + size])
        self.put("W", 0x1C if self.img.elf_class == 32 else 0x20, start)

    # -- sections
    def section(self, name):
        return self.img.section(name)

    def set_section(self, sec, addr=None, offset=None, size=None):
        w = 4 if self.img.elf_class == 32 else 8
        base = sec.hdr_offset + 8 + w          # sh_addr follows sh_name, sh_type, sh_flags
        if addr is not None:
            self.put("W", base, addr)
        if offset is not None:
            self.put("W", base + w, offset)
        if size is not None:
            self.put("W", base + 2 * w, size)

    # -- dynamic
    def set_dyn(self, name, tag=None, value=None):
        """Change the tag and/or value of the first entry with this tag."""
        for t, val, off in self.img.dynamic:
            if t == DT[name]:
                if tag is not None:
                    self.put("W", off, tag)
                if value is not None:
                    self.put("W", off + (4 if self.img.elf_class == 32 else 8), value)
                return off
        raise KeyError(name)

    # -- hash tables
    def sysv_hash_offset(self):
        return self.img.offset_of(self.img.dyn("HASH"))

    def set_sysv_word(self, index, value):
        """Word `index` of DT_HASH (0 nbucket, 1 nchain, then buckets, then chains)."""
        word = self.img.hash_word
        self.put("I" if word == 4 else "Q", self.sysv_hash_offset() + index * word, value)

    # -- symbols
    def set_sym_bind(self, sym, bind):
        self.set_sym_info(sym, bind=bind)

    def set_sym_value(self, sym, value):
        off = self.sym_entry_offset(sym) + (4 if self.img.elf_class == 32 else 8)
        self.put("W", off, value)


# -- synthetic images: big and deep, for the worst cases ------------------------------------

SHF_ALLOC, SHF_EXECINSTR = 2, 4
# Little-endian ELF64 ABIs a synthetic image can be, with an e_flags value the catalogue accepts.
SYNTH_ABIS = {"x86_64": 0, "arm64": 0, "ppc64le": 2, "riscv64": 5, "loongarch64": 0x43}
NOP = {"ppc64le": 0x60000000, "riscv64": 0x00000013, "loongarch64": 0x03400000}


def _x86_block(kind, here, target):
    if kind == "cjump":
        return b"\x0f\x84" + struct.pack("<i", target - here - 6) + b"\x90\x90"
    if kind in ("jump", "call"):
        return (b"\xe9" if kind == "jump" else b"\xe8") + struct.pack("<i", target - here - 5) + b"\x90" * 3
    if kind == "ret":
        return b"\xc3" + b"\x90" * 7
    return b"\x90" * 8


def _arm64_block(kind, here, target):
    off = (target - here) >> 2
    nop = 0xD503201F
    first = {"cjump": 0x54000000 | ((off & 0x7FFFF) << 5), "jump": 0x14000000 | (off & 0x3FFFFFF),
             "call": 0x94000000 | (off & 0x3FFFFFF), "ret": 0xD65F03C0}.get(kind, nop)
    return struct.pack("<II", first, nop)


def _code(abi, graph, blocks, seed, base):
    """`blocks` 8-byte blocks of code at `base` whose branches form `graph`:
    straight (no branch), chain (each block branches two blocks on), calls
    (each calls the next), or random (any kind, any target)."""
    if abi not in ("x86_64", "arm64"):
        return struct.pack(f"<{2 * blocks}I", *[NOP[abi]] * (2 * blocks))
    rng = random.Random(seed)
    enc = _x86_block if abi == "x86_64" else _arm64_block
    out = []
    for i in range(blocks):
        here = base + 8 * i
        if i == blocks - 1:
            kind, to = "ret", i
        elif graph == "chain":
            kind, to = "cjump", min(i + 2, blocks - 1)
        elif graph == "calls":
            kind, to = "call", i + 1
        elif graph == "random":
            kind, to = rng.choice(("cjump", "jump", "call", "nop", "ret")), rng.randrange(blocks)
        else:
            kind, to = "nop", i
        out.append(enc(kind, here, base + 8 * to))
    return b"".join(out)


def synthesize(abi="x86_64", nsyms=8, nbucket=None, gnu_nbuckets=None, name_len=0, blocks=64, graph="straight",
               seed=0, exec_sections=0, extra_sections=0, symtab=False, claims=(), core_last=False):
    """A little-endian ELF64 vDSO of a catalogue ABI, written from scratch: nsyms
    exported functions (the ABI's core entry points first, or last with
    core_last, and f1, f2, ..., padded to name_len), valid DT_HASH and DT_GNU_HASH tables with the
    given bucket counts (1 makes one long chain), versions, a Linux note and
    `blocks` blocks of code in a branch graph (see _code).

    exec_sections adds executable sections over random parts of .text,
    extra_sections plain ones; symtab adds a .symtab with a function symbol
    per block.  claims are (field, value) pairs written over the finished
    image: nbucket, nchain, gnu_nbuckets, gnu_symoffset, gnu_bloom_size,
    e_shnum, e_phnum, strsz."""
    from vdsogen.spec import abi as catalogue
    from vdsogen.elf.reader import elf_hash, gnu_hash

    a = catalogue.get(abi)
    rng = random.Random(seed)
    core = list(dict.fromkeys(list(a.core) + [lk.symbol for lks in a.lookups.values() for lk in lks]))
    names = (core + [f"f{i}".ljust(name_len, "_") for i in range(1, nsyms + 1)])[:nsyms]
    if core_last:
        names = names[len(core):] + names[:len(core)]
    nbucket = nbucket or max(1, nsyms // 2)
    gnu_nbuckets = gnu_nbuckets or max(1, nsyms // 4)
    names.sort(key=lambda n: gnu_hash(n) % gnu_nbuckets)        # DT_GNU_HASH needs them grouped by bucket
    soname, version = a.sonames[0], a.lookup_version

    strtab = bytearray(b"\0")

    def string(text):
        off = len(strtab)
        strtab.extend(text.encode() + b"\0")
        return off
    s_soname, s_version = string(soname), string(version)
    s_names = [string(n) for n in names]
    nph = 3
    layout, off = {}, 64 + 56 * nph

    def place(name, size, align=8):
        nonlocal off
        off = (off + align - 1) & ~(align - 1)
        layout[name] = (off, size)
        off += size
    n = nsyms + 1
    place(".hash", 4 * (2 + nbucket + n))
    place(".gnu.hash", 16 + 8 + 4 * gnu_nbuckets + 4 * nsyms)
    place(".dynsym", 24 * n)
    place(".dynstr", len(strtab))
    place(".gnu.version", 2 * n, 2)
    place(".gnu.version_d", 56)
    place(".dynamic", 16 * 11)
    place(".note", 24, 4)
    place(".text", 8 * blocks, 16)
    load_end = off
    text = layout[".text"][0]
    data = bytearray(load_end)

    # DT_HASH: the usual head-insertion chains.
    h_off = layout[".hash"][0]
    buckets, chains = [0] * nbucket, [0] * n
    for i, name in enumerate(names, 1):
        b = elf_hash(name) % nbucket
        chains[i], buckets[b] = buckets[b], i
    struct.pack_into(f"<{2 + nbucket + n}I", data, h_off, nbucket, n, *buckets, *chains)
    # DT_GNU_HASH: symoffset 1, one all-ones bloom word.
    g_off = layout[".gnu.hash"][0]
    hashes = [gnu_hash(name) for name in names]
    gb, gc = [0] * gnu_nbuckets, []
    for i, h in enumerate(hashes):
        b = h % gnu_nbuckets
        if not gb[b]:
            gb[b] = i + 1
        last = i + 1 == nsyms or hashes[i + 1] % gnu_nbuckets != b
        gc.append((h & ~1) | last)
    struct.pack_into(f"<IIIIQ{gnu_nbuckets}I{nsyms}I", data, g_off, gnu_nbuckets, 1, 1, 6,
                     (1 << 64) - 1, *gb, *gc)
    # Symbols: functions spread over the code.
    text_index = 10
    d_off = layout[".dynsym"][0]
    for i in range(nsyms):
        value = text + 8 * (i * blocks // max(nsyms, 1))
        struct.pack_into("<IBBHQQ", data, d_off + 24 * (i + 1), s_names[i], 0x12, 0, text_index, value, 8)
    data[layout[".dynstr"][0]:layout[".dynstr"][0] + len(strtab)] = strtab
    struct.pack_into(f"<{n}H", data, layout[".gnu.version"][0], 0, *[2] * nsyms)
    v_off = layout[".gnu.version_d"][0]
    struct.pack_into("<HHHHIIIII", data, v_off, 1, 1, 1, 1, elf_hash(soname), 20, 28, s_soname, 0)
    struct.pack_into("<HHHHIIIII", data, v_off + 28, 1, 0, 2, 1, elf_hash(version), 20, 0, s_version, 0)
    dyn = [(14, s_soname), (4, h_off), (0x6FFFFEF5, g_off), (5, layout[".dynstr"][0]), (6, d_off),
           (10, len(strtab)), (11, 24), (0x6FFFFFF0, layout[".gnu.version"][0]), (0x6FFFFFFC, v_off),
           (0x6FFFFFFD, 2), (0, 0)]
    for i, (tag, val) in enumerate(dyn):
        struct.pack_into("<QQ", data, layout[".dynamic"][0] + 16 * i, tag, val)
    struct.pack_into("<III6sxxI", data, layout[".note"][0], 6, 4, 0, b"Linux", 0x060B00)
    data[text:text + 8 * blocks] = _code(abi, graph, blocks, seed, text)

    # Not loaded: .symtab, .strtab, .shstrtab, the section headers.
    sections = [("", 0, 0, 0, 0, 0, 0, 0, 0)]          # name, type, flags, offset, size, link, info, align, entsize
    for name, sh_type, flags, link, info, entsize in (
            (".hash", 5, SHF_ALLOC, 3, 0, 4), (".gnu.hash", 0x6FFFFFF6, SHF_ALLOC, 3, 0, 0),
            (".dynsym", 11, SHF_ALLOC, 4, 1, 24), (".dynstr", 3, SHF_ALLOC, 0, 0, 0),
            (".gnu.version", 0x6FFFFFFF, SHF_ALLOC, 3, 0, 2), (".gnu.version_d", 0x6FFFFFFD, SHF_ALLOC, 4, 2, 0),
            (".dynamic", 6, SHF_ALLOC, 4, 0, 16), (".note", 7, SHF_ALLOC, 0, 0, 0)):
        o, size = layout[name]
        sections.append((name, sh_type, flags, o, size, link, info, 8, entsize))
    sections.append((".note.pad", 1, 0, 0, 0, 0, 0, 1, 0))        # keeps .text at index 10
    sections.append((".text", 1, SHF_ALLOC | SHF_EXECINSTR, text, 8 * blocks, 0, 0, 16, 0))
    for i in range(exec_sections):
        start = text + 8 * rng.randrange(blocks)
        size = 8 * rng.randrange(1, blocks + 1)
        sections.append((f".text.x{i}", 1, SHF_ALLOC | SHF_EXECINSTR, start, size, 0, 0, 8, 0))
    for i in range(extra_sections):
        sections.append((f".extra{i}", 1, 0, 0, 0, 0, 0, 1, 0))
    tail = bytearray()
    if symtab:
        sym_str = bytearray(b"\0")
        entries = [bytes(24)]
        for i in range(blocks):
            entries.append(struct.pack("<IBBHQQ", len(sym_str), 0x02, 0, text_index, text + 8 * i, 8))
            sym_str.extend(f"b{i}".encode() + b"\0")
        base = load_end + len(tail)
        tail.extend(b"".join(entries))
        strtab_index = len(sections) + 1
        sections.append((".symtab", 2, 0, base, 24 * len(entries), strtab_index, 1, 8, 24))
        sections.append((".strtab", 3, 0, load_end + len(tail), len(sym_str), 0, 0, 1, 0))
        tail.extend(sym_str)
    shstr = bytearray(b"\0")
    name_offsets = []
    for sec in sections:
        name_offsets.append(len(shstr) if sec[0] else 0)
        if sec[0]:
            shstr.extend(sec[0].encode() + b"\0")
    sections.append((".shstrtab", 3, 0, load_end + len(tail), len(shstr) + 10, 0, 0, 1, 0))
    name_offsets.append(len(shstr))
    shstr.extend(b".shstrtab\0")
    tail.extend(shstr)
    while (load_end + len(tail)) % 8:
        tail.append(0)
    shoff = load_end + len(tail)
    for (name, sh_type, flags, o, size, link, info, align, entsize), name_off in zip(sections, name_offsets):
        addr = o if flags & SHF_ALLOC else 0
        tail.extend(struct.pack("<IIQQQQIIQQ", name_off, sh_type, flags, addr, o, size, link, info, align, entsize))
    data.extend(tail)

    struct.pack_into("<4sBBBB8xHHIQQQIHHHHHH", data, 0, b"\x7fELF", 2, 1, 1, 0, 3, a.machine, 1, 0, 64, shoff,
                     SYNTH_ABIS[abi], 64, 56, nph, 64, len(sections), len(sections) - 1)
    for i, (ptype, flags, o, size) in enumerate(((1, 5, 0, load_end), (2, 4) + layout[".dynamic"],
                                                  (4, 4) + layout[".note"])):
        struct.pack_into("<IIQQQQQQ", data, 64 + 56 * i, ptype, flags, o, o, o, size, size,
                         4096 if ptype == 1 else 8)
    fields = {"nbucket": (h_off, "<I"), "nchain": (h_off + 4, "<I"), "gnu_nbuckets": (g_off, "<I"),
              "gnu_symoffset": (g_off + 4, "<I"), "gnu_bloom_size": (g_off + 8, "<I"), "e_shnum": (0x3C, "<H"),
              "e_phnum": (0x38, "<H"), "strsz": (layout[".dynamic"][0] + 5 * 16 + 8, "<Q")}
    for field, value in claims:
        o, fmt = fields[field]
        struct.pack_into(fmt, data, o, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
    return bytes(data)
