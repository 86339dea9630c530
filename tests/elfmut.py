"""Surgical edits of good images, each breaking one property, for rule tests."""

import struct

from vdsogen.elf import DT, ElfImage


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
