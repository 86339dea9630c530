"""Surgical edits of good images, each breaking one property, for rule tests."""

import random
import struct

from vdsogen.elf.consts import (DT, DYN, EHDR, EI_NIDENT, EI_OSABI, GNU_HASH, IDENT, NHDR, PHDR, PT_DYNAMIC,
                                PT_LOAD, PT_NOTE, SHDR, SHF_ALLOC, SHF_EXECINSTR, SHT_DYNAMIC, SHT_DYNSYM,
                                SHT_GNU_HASH, SHT_GNU_VERDEF, SHT_GNU_VERSYM, SHT_HASH, SHT_NOTE, SHT_PROGBITS,
                                SHT_STRTAB, SHT_SYMTAB, STB_GLOBAL, STB_LOCAL, STT_FUNC, SYM, SYSV_HASH, VER_FLG_BASE,
                                VERDAUX, VERDEF, elf_hash, gnu_hash)
from vdsogen.elf.reader import ElfImage


class Mutant:
    def __init__(self, path):
        self.path = path
        self.data = bytearray(open(path, "rb").read())
        self.img = ElfImage(path, bytes(self.data))
        self.e = "<" if self.img.little else ">"
        self.w = "I" if self.img.elf_class == 32 else "Q"

    def put(self, fmt, offset, *values):
        """Raw words at a file offset (W: the class's word)."""
        struct.pack_into(self.e + fmt.replace("W", self.w), self.data, offset, *values)

    def set_field(self, layout, offset, **fields):
        """Rewrite fields of the structure `layout` (vdsogen.elf.consts) at a file offset."""
        layout.update_into(self.data, offset, self.img.elf_class, self.img.endian, **fields)

    def set_ehdr(self, **fields):
        self.set_field(EHDR, EI_NIDENT, **fields)

    def save(self, path):
        path.write_bytes(bytes(self.data))
        return path

    # -- headers
    def set_e_type(self, value):
        self.set_ehdr(e_type=value)

    def phdr(self, p_type):
        return next(s for s in self.img.segments if s.type == p_type)

    def set_phdr(self, seg, **fields):
        """Rewrite fields of one program header (type, flags, offset, vaddr, filesz, memsz, align);
        p_paddr follows p_vaddr."""
        vals = dict(type=seg.type, flags=seg.flags, offset=seg.offset, vaddr=seg.vaddr,
                    filesz=seg.filesz, memsz=seg.memsz, align=seg.align)
        vals.update(fields)
        self.set_field(PHDR, seg.hdr_offset, p_paddr=vals["vaddr"], **{f"p_{k}": v for k, v in vals.items()})

    # -- dynamic
    def retag(self, name, new_tag):
        for tag, _val, off in self.img.dynamic:
            if tag == DT[name]:
                self.set_field(DYN, off, d_tag=new_tag)
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
        return sec.offset + sym.index * SYM.size(self.img.elf_class)

    def set_sym_info(self, sym, type_=None, bind=None):
        t = sym.type if type_ is None else type_
        b = sym.bind if bind is None else bind
        self.set_field(SYM, self.sym_entry_offset(sym), st_info=(b << 4) | t)

    def set_sym_shndx(self, sym, shndx):
        self.set_field(SYM, self.sym_entry_offset(sym), st_shndx=shndx)

    def set_versym(self, sym, value):
        off = self.img.offset_of(self.img.dyn("VERSYM")) + 2 * sym.index
        self.put("H", off, value)

    def set_verdef_hash(self, index, value):
        self.set_field(VERDEF, self.img.verdefs()[index].offset, vd_hash=value)

    # -- notes
    def note(self, name, ntype):
        return next(n for n in self.img.notes if n.name == name and n.type == ntype)

    def set_note_type(self, note, value):
        self.set_field(NHDR, note.offset, n_type=value)

    def word_at(self, vaddr):
        return self.img.offset_of(vaddr)

    def set_word(self, offset, value):
        self.put("I", offset, value)

    # -- more headers
    def set_e_entry(self, value):
        self.set_ehdr(e_entry=value)

    def set_e_flags(self, value):
        self.set_ehdr(e_flags=value)

    def set_e_machine(self, value):
        self.set_ehdr(e_machine=value)

    def set_osabi(self, value):
        self.data[EI_OSABI] = value

    def move_phdrs_to_end(self):
        """Copy the program header table past everything else and point e_phoff at it."""
        size = self.img.e_phnum * PHDR.size(self.img.elf_class)
        start = (len(self.data) + 7) & ~7
        self.data.extend(bytes(start - len(self.data)))
        self.data.extend(self.data[self.img.e_phoff:self.img.e_phoff + size])
        self.set_ehdr(e_phoff=start)

    # -- sections
    def section(self, name):
        return self.img.section(name)

    def set_section(self, sec, addr=None, offset=None, size=None):
        fields = {"sh_addr": addr, "sh_offset": offset, "sh_size": size}
        self.set_field(SHDR, sec.hdr_offset, **{k: v for k, v in fields.items() if v is not None})

    # -- dynamic
    def set_dyn(self, name, tag=None, value=None):
        """Change the tag and/or value of the first entry with this tag."""
        for t, _val, off in self.img.dynamic:
            if t == DT[name]:
                fields = {"d_tag": tag, "d_val": value}
                self.set_field(DYN, off, **{k: v for k, v in fields.items() if v is not None})
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
        self.set_field(SYM, self.sym_entry_offset(sym), st_value=value)


# -- synthetic images: big and deep, for the worst cases ------------------------------------

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
    ehdr_end = EI_NIDENT + EHDR.size(64)
    layout, off = {}, ehdr_end + PHDR.size(64) * nph

    def put(struct_layout, offset, **fields):
        struct_layout.pack_into(data, offset, 64, "little", **fields)

    def place(name, size, align=8):
        nonlocal off
        off = (off + align - 1) & ~(align - 1)
        layout[name] = (off, size)
        off += size
    n = nsyms + 1
    verdef_size = VERDEF.size(64) + VERDAUX.size(64)       # one Verdaux per Verdef
    note_name, note_desc = b"Linux\0\0\0", 4             # the name padded to 4 bytes, LINUX_VERSION_CODE
    ndyn = 11
    place(".hash", 4 * (2 + nbucket + n))
    place(".gnu.hash", GNU_HASH.size(64) + 8 + 4 * gnu_nbuckets + 4 * nsyms)
    place(".dynsym", SYM.size(64) * n)
    place(".dynstr", len(strtab))
    place(".gnu.version", 2 * n, 2)
    place(".gnu.version_d", 2 * verdef_size)
    place(".dynamic", DYN.size(64) * ndyn)
    place(".note", NHDR.size(64) + len(note_name) + note_desc, 4)
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
    put(GNU_HASH, g_off, nbuckets=gnu_nbuckets, symoffset=1, bloom_size=1, bloom_shift=6)
    struct.pack_into(f"<Q{gnu_nbuckets}I{nsyms}I", data, g_off + GNU_HASH.size(64), (1 << 64) - 1, *gb, *gc)
    # Symbols: functions spread over the code.
    text_index = 10
    func = STB_GLOBAL << 4 | STT_FUNC
    d_off = layout[".dynsym"][0]
    for i in range(nsyms):
        value = text + 8 * (i * blocks // max(nsyms, 1))
        put(SYM, d_off + SYM.size(64) * (i + 1), st_name=s_names[i], st_info=func, st_shndx=text_index,
            st_value=value, st_size=8)
    data[layout[".dynstr"][0]:layout[".dynstr"][0] + len(strtab)] = strtab
    struct.pack_into(f"<{n}H", data, layout[".gnu.version"][0], 0, *[2] * nsyms)
    v_off = layout[".gnu.version_d"][0]
    for i, (flags, name, s_name) in enumerate(((VER_FLG_BASE, soname, s_soname), (0, version, s_version))):
        put(VERDEF, v_off + i * verdef_size, vd_version=1, vd_flags=flags, vd_ndx=i + 1, vd_cnt=1,
            vd_hash=elf_hash(name), vd_aux=VERDEF.size(64), vd_next=verdef_size if i == 0 else 0)
        put(VERDAUX, v_off + i * verdef_size + VERDEF.size(64), vda_name=s_name)
    dyn = [("SONAME", s_soname), ("HASH", h_off), ("GNU_HASH", g_off), ("STRTAB", layout[".dynstr"][0]),
           ("SYMTAB", d_off), ("STRSZ", len(strtab)), ("SYMENT", SYM.size(64)), ("VERSYM", layout[".gnu.version"][0]),
           ("VERDEF", v_off), ("VERDEFNUM", 2), ("NULL", 0)]
    assert len(dyn) == ndyn
    for i, (tag, val) in enumerate(dyn):
        put(DYN, layout[".dynamic"][0] + DYN.size(64) * i, d_tag=DT[tag], d_val=val)
    note = layout[".note"][0]
    put(NHDR, note, n_namesz=len(b"Linux\0"), n_descsz=note_desc, n_type=0)
    data[note + NHDR.size(64):note + NHDR.size(64) + len(note_name)] = note_name
    struct.pack_into("<I", data, note + NHDR.size(64) + len(note_name), 0x060B00)
    data[text:text + 8 * blocks] = _code(abi, graph, blocks, seed, text)

    # Not loaded: .symtab, .strtab, .shstrtab, the section headers.
    sections = [("", 0, 0, 0, 0, 0, 0, 0, 0)]          # name, type, flags, offset, size, link, info, align, entsize
    for name, sh_type, flags, link, info, entsize in (
            (".hash", SHT_HASH, SHF_ALLOC, 3, 0, 4), (".gnu.hash", SHT_GNU_HASH, SHF_ALLOC, 3, 0, 0),
            (".dynsym", SHT_DYNSYM, SHF_ALLOC, 4, 1, SYM.size(64)), (".dynstr", SHT_STRTAB, SHF_ALLOC, 0, 0, 0),
            (".gnu.version", SHT_GNU_VERSYM, SHF_ALLOC, 3, 0, 2),
            (".gnu.version_d", SHT_GNU_VERDEF, SHF_ALLOC, 4, 2, 0),
            (".dynamic", SHT_DYNAMIC, SHF_ALLOC, 4, 0, DYN.size(64)), (".note", SHT_NOTE, SHF_ALLOC, 0, 0, 0)):
        o, size = layout[name]
        sections.append((name, sh_type, flags, o, size, link, info, 8, entsize))
    sections.append((".note.pad", SHT_PROGBITS, 0, 0, 0, 0, 0, 1, 0))        # keeps .text at index 10
    sections.append((".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text, 8 * blocks, 0, 0, 16, 0))
    for i in range(exec_sections):
        start = text + 8 * rng.randrange(blocks)
        size = 8 * rng.randrange(1, blocks + 1)
        sections.append((f".text.x{i}", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, start, size, 0, 0, 8, 0))
    for i in range(extra_sections):
        sections.append((f".extra{i}", SHT_PROGBITS, 0, 0, 0, 0, 0, 1, 0))
    tail = bytearray()
    if symtab:
        sym_str = bytearray(b"\0")
        entries = [SYM.pack(64, "little")]
        for i in range(blocks):
            entries.append(SYM.pack(64, "little", st_name=len(sym_str), st_info=STB_LOCAL << 4 | STT_FUNC,
                                    st_shndx=text_index, st_value=text + 8 * i, st_size=8))
            sym_str.extend(f"b{i}".encode() + b"\0")
        base = load_end + len(tail)
        tail.extend(b"".join(entries))
        strtab_index = len(sections) + 1
        sections.append((".symtab", SHT_SYMTAB, 0, base, SYM.size(64) * len(entries), strtab_index, 1, 8,
                         SYM.size(64)))
        sections.append((".strtab", SHT_STRTAB, 0, load_end + len(tail), len(sym_str), 0, 0, 1, 0))
        tail.extend(sym_str)
    shstr = bytearray(b"\0")
    name_offsets = []
    for sec in sections:
        name_offsets.append(len(shstr) if sec[0] else 0)
        if sec[0]:
            shstr.extend(sec[0].encode() + b"\0")
    sections.append((".shstrtab", SHT_STRTAB, 0, load_end + len(tail), len(shstr) + 10, 0, 0, 1, 0))
    name_offsets.append(len(shstr))
    shstr.extend(b".shstrtab\0")
    tail.extend(shstr)
    while (load_end + len(tail)) % 8:
        tail.append(0)
    shoff = load_end + len(tail)
    for (name, sh_type, flags, o, size, link, info, align, entsize), name_off in zip(sections, name_offsets):
        tail.extend(SHDR.pack(64, "little", sh_name=name_off, sh_type=sh_type, sh_flags=flags,
                              sh_addr=o if flags & SHF_ALLOC else 0, sh_offset=o, sh_size=size, sh_link=link,
                              sh_info=info, sh_addralign=align, sh_entsize=entsize))
    data.extend(tail)

    put(IDENT, 0, ei_mag=b"\x7fELF", ei_class=2, ei_data=1, ei_version=1)
    put(EHDR, EI_NIDENT, e_type=3, e_machine=a.machine, e_version=1, e_phoff=ehdr_end, e_shoff=shoff,
        e_flags=SYNTH_ABIS[abi], e_ehsize=ehdr_end, e_phentsize=PHDR.size(64), e_phnum=nph,
        e_shentsize=SHDR.size(64), e_shnum=len(sections), e_shstrndx=len(sections) - 1)
    for i, (ptype, flags, o, size) in enumerate(((PT_LOAD, 5, 0, load_end), (PT_DYNAMIC, 4) + layout[".dynamic"],
                                                  (PT_NOTE, 4) + layout[".note"])):
        put(PHDR, ehdr_end + PHDR.size(64) * i, p_type=ptype, p_flags=flags, p_offset=o, p_vaddr=o, p_paddr=o,
            p_filesz=size, p_memsz=size, p_align=4096 if ptype == PT_LOAD else 8)
    strsz = layout[".dynamic"][0] + DYN.size(64) * [t for t, _v in dyn].index("STRSZ")
    fields = {"nbucket": (SYSV_HASH[4], h_off, "nbucket"), "nchain": (SYSV_HASH[4], h_off, "nchain"),
              "gnu_nbuckets": (GNU_HASH, g_off, "nbuckets"), "gnu_symoffset": (GNU_HASH, g_off, "symoffset"),
              "gnu_bloom_size": (GNU_HASH, g_off, "bloom_size"), "e_shnum": (EHDR, EI_NIDENT, "e_shnum"),
              "e_phnum": (EHDR, EI_NIDENT, "e_phnum"), "strsz": (DYN, strsz, "d_val")}
    for field, value in claims:
        struct_layout, o, name = fields[field]
        mask = (1 << 8 * struct_layout.field_size(name, 64)) - 1
        struct_layout.update_into(data, o, 64, "little", **{name: value & mask})
    return bytes(data)
