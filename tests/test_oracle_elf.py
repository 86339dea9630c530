"""The ELF reader against an independent one: pyelftools.

vdsogen's reader (vdsogen/elf/) is written by hand for hostile input.  Here
every image of the audit corpus (tests/corpus.py: the good images of every
ABI and the defect images) and vdsogen's own images (.so and .so.dbg) are
read by both, and both views are put in the same plain form: headers,
segments, sections, the dynamic symbols (from .dynsym and as a loader
reaches them through DT_SYMTAB), .symtab, each dynamic symbol's version
(versym index, hidden bit, verdef name), the version definitions, the
dynamic tags and DT_SONAME, the hash tables and a lookup of every exported
name through them, and the notes.  Every aspect must agree.

Where pyelftools 0.29 is known wrong, the comparison is narrowed at that
spot and says why (see elftools_view):
  * it reads .hash in 4-byte words on every machine, s390x's 8-byte table
    included: its hash table, its lookups through it and, without
    DT_GNU_HASH, its count of the loader's symbols are wrong there;
  * it has no name for EM_LOONGARCH: numbers are compared, not names.
An image or a part of one that the reader refuses as unusable is not
compared; which parts are refused is itself checked (REFUSED).
"""

import dataclasses
import io
from pathlib import Path

import pytest
from elftools.elf import enums as E
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerSymSection
from elftools.elf.hash import ELFHashSection, GNUHashSection
from elftools.elf.notes import iter_notes
from elftools.elf.sections import SymbolTableSection

from conftest import IMAGES, image_path
from vdsogen.elf.consts import (DT, PT_DYNAMIC, PT_NOTE, SHN_UNDEF, SHT_DYNSYM, SHT_GNU_HASH, SHT_HASH,
                                SHT_SYMTAB, VERSYM_HIDDEN, VERSYM_INDEX)
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import ImageError

# (image, aspect) the reader refuses, and why: these are the defects the image shows.
REFUSED = {
    # lld's 4-byte .hash words on s390x, read in the 8-byte words s390x consumers use: nbucket
    # and nchain run together into one absurd count (X004 reports it).
    ("corpus:s390x-lld-hash-words", "loader_dynsym"),
}

# pyelftools gives names for the numbers it knows: name -> number, over every table it may use.
_NAMES = {}
for _table in (E.ENUM_E_TYPE, E.ENUM_E_MACHINE, E.ENUM_P_TYPE_BASE, E.ENUM_P_TYPE_ARM, E.ENUM_P_TYPE_AARCH64,
               E.ENUM_P_TYPE_MIPS, E.ENUM_SH_TYPE_BASE, E.ENUM_SH_TYPE_AMD64, E.ENUM_SH_TYPE_ARM,
               E.ENUM_SH_TYPE_MIPS, E.ENUM_ST_INFO_BIND, E.ENUM_ST_INFO_TYPE, E.ENUM_ST_VISIBILITY,
               E.ENUM_ST_SHNDX, E.ENUM_D_TAG, E.ENUM_VERSYM, E.ENUM_NOTE_N_TYPE):
    for _name, _value in _table.items():
        if isinstance(_value, int):
            assert _NAMES.setdefault(_name, _value) == _value, _name


def num(value):
    """A pyelftools field as a number: it gives names for the values it knows
    (EM_LOONGARCH, which 0.29 does not know, stays a number)."""
    return value if isinstance(value, int) else _NAMES[value]


# -- the two views ------------------------------------------------------------------------

def _symbol(name, value, size, type_, bind, visibility, shndx):
    return (name, value, size, type_, bind, visibility, shndx)


def _hash_lookups(names, find):
    """{name: (name, value) of what a lookup of name finds, or None}."""
    return {n: find(n) for n in names}


def reader_view(img):
    """What vdsogen's reader says, aspect by aspect; an aspect it refuses is an Unreadable."""
    view = {
        "header": (img.elf_class, img.endian, img.e_type, img.e_machine, img.e_flags, img.e_entry, img.e_phoff,
                   img.e_shoff, img.e_phnum, img.e_shnum, img.e_shstrndx),
        "segments": [(s.type, s.flags, s.offset, s.vaddr, s.filesz, s.memsz, s.align) for s in img.segments],
        "sections": [(s.name, s.type, s.flags, s.addr, s.offset, s.size, s.link, s.info, s.entsize)
                     for s in img.sections],
    }
    for table in ("dynsym", "symtab"):
        view[table] = [_symbol(s.name, s.value, s.size, s.type, s.bind, s.visibility, s.shndx)
                       for s in getattr(img, table)]

    def aspect(name, compute):
        try:
            view[name] = compute()
        except Unreadable as err:
            view[name] = err

    aspect("loader_dynsym", lambda: [_symbol(s.name, s.value, s.size, s.type, s.bind, s.visibility, s.shndx)
                                     for s in img.loader_dynsym()])
    view["dynamic"] = [(tag, val) for tag, val, _off in img.dynamic or ()][:-1]    # without DT_NULL
    aspect("soname", lambda: img.dynstr(img.dyn("SONAME")) if img.dyn("SONAME") is not None else None)

    def verdefs():
        return [(v.index, v.flags, v.hash, v.count, v.name) for v in img.verdefs() or ()]
    aspect("verdefs", verdefs)

    def versions():
        names = {v.index & VERSYM_INDEX: v.name for v in img.verdefs() or ()}
        versym = img.versym(len(img.dynsym)) or ()
        return [(s.name, v & VERSYM_INDEX, bool(v & VERSYM_HIDDEN), names.get(v & VERSYM_INDEX))
                for s, v in zip(img.dynsym, versym)]
    aspect("versions", versions)

    word = img.sysv_hash_word_in_file()
    aspect("sysv_hash", lambda: _sysv_tuple(img.sysv_hash(word)))

    def gnu():
        t = img.gnu_hash_table()
        return t and (t["nbuckets"], t["symoffset"], t["bloom_size"], t["bloom_shift"], list(t["bloom"]),
                      list(t["buckets"]))
    aspect("gnu_hash", gnu)
    exported = [s.name for s in img.dynsym[1:] if s.shndx != SHN_UNDEF]

    def found(index):
        return None if index is None else (img.dynsym[index].name, img.dynsym[index].value)
    aspect("sysv_lookups", lambda: None if img.dyn("HASH") is None else _hash_lookups(
        exported, lambda n: found(img.sysv_lookup(n, img.dynsym, word))))
    aspect("gnu_lookups", lambda: None if img.dyn("GNU_HASH") is None else _hash_lookups(
        exported, lambda n: found(img.gnu_lookup(n, img.dynsym))))
    view["notes"] = [(n.name, n.type, bytes(n.desc)) for n in img.notes]
    return view


def _sysv_tuple(table):
    return table and (table[0], table[1], list(table[2]), list(table[3]))


def _elftools_symbol(sym):
    e = sym.entry
    return _symbol(sym.name, e.st_value, e.st_size, num(e.st_info.type), num(e.st_info.bind),
                   num(e.st_other.visibility) & 3, num(e.st_shndx))


def elftools_view(path, img):
    """What pyelftools says, in the same form.  `img` (the reader's) only
    tells which hash word size the file uses where pyelftools cannot know it."""
    elf = ELFFile(io.BytesIO(Path(path).read_bytes()))
    h = elf.header
    view = {
        "header": (elf.elfclass, "little" if elf.little_endian else "big", num(h.e_type), num(h.e_machine),
                   h.e_flags, h.e_entry, h.e_phoff, h.e_shoff, h.e_phnum, h.e_shnum, h.e_shstrndx),
        "segments": [(num(s["p_type"]), s["p_flags"], s["p_offset"], s["p_vaddr"], s["p_filesz"], s["p_memsz"],
                      s["p_align"]) for s in elf.iter_segments()],
        "sections": [(s.name, num(s["sh_type"]), s["sh_flags"], s["sh_addr"], s["sh_offset"], s["sh_size"],
                      s["sh_link"], s["sh_info"], s["sh_entsize"]) for s in elf.iter_sections()],
    }
    by_type = {}
    for sec in elf.iter_sections():
        by_type.setdefault(num(sec["sh_type"]), sec)
    for table, sh_type in (("dynsym", SHT_DYNSYM), ("symtab", SHT_SYMTAB)):
        sec = by_type.get(sh_type)
        view[table] = [_elftools_symbol(s) for s in sec.iter_symbols()] if isinstance(sec, SymbolTableSection) else []
    dynseg = next((s for s in elf.iter_segments() if num(s["p_type"]) == PT_DYNAMIC), None)
    sysv, gnu = by_type.get(SHT_HASH), by_type.get(SHT_GNU_HASH)
    words = None
    if isinstance(sysv, ELFHashSection) and img.sysv_hash_word_in_file() == 8:
        # pyelftools reads .hash in 4-byte words on every machine (its Elf_Hash is made of
        # Elf_word): s390x's 8-byte table comes out as nbucket 0.  Its bytes, as pyelftools
        # gives them, are read here in 8-byte words instead.
        raw = sysv.data()
        words = [int.from_bytes(raw[i:i + 8], "little" if elf.little_endian else "big")
                 for i in range(0, len(raw) - 7, 8)]
    if dynseg is None:
        loader = []
    elif words and dynseg.get_table_offset("DT_GNU_HASH")[1] is None:
        # DynamicSegment counts the symbols from DT_GNU_HASH, else from its 4-byte DT_HASH.
        loader = [dynseg.get_symbol(i) for i in range(words[1])]
    else:
        loader = list(dynseg.iter_symbols())
    view["loader_dynsym"] = [_elftools_symbol(s) for s in loader]
    if img.dynsym_from_sections is False:
        view["dynsym"] = view["loader_dynsym"]      # no section headers: the reader's .dynsym is the loader's
    tags = [(num(t.entry.d_tag), t.entry.d_val) for t in dynseg.iter_tags()] if dynseg else []
    view["dynamic"] = tags[:-1] if tags and tags[-1][0] == DT["NULL"] else tags
    soname = [t.soname for t in dynseg.iter_tags("DT_SONAME")] if dynseg else []
    view["soname"] = soname[0] if soname else None

    verdef = next((s for s in elf.iter_sections() if isinstance(s, GNUVerDefSection)), None)
    view["verdefs"] = []
    names = {}
    for vd, aux in verdef.iter_versions() if verdef else ():
        vd_names = [a.name for a in aux]
        view["verdefs"].append((vd["vd_ndx"], vd["vd_flags"], vd["vd_hash"], vd["vd_cnt"], vd_names[0]))
        names[vd["vd_ndx"] & VERSYM_INDEX] = vd_names[0]
    versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
    view["versions"] = []
    for s in versym.iter_symbols() if versym else ():
        ndx = num(s.entry["ndx"])
        view["versions"].append((s.name, ndx & VERSYM_INDEX, bool(ndx & VERSYM_HIDDEN), names.get(ndx & VERSYM_INDEX)))

    exported = [s[0] for s in view["dynsym"][1:] if s[6] != SHN_UNDEF]
    if not isinstance(sysv, ELFHashSection):
        view["sysv_hash"] = view["sysv_lookups"] = None if sysv is None else False
    elif words:
        # The 8-byte table, and each name looked up in it as ELFHashTable.get_symbol does.
        nbucket, nchain = words[:2]
        view["sysv_hash"] = (nbucket, nchain, words[2:2 + nbucket], words[2 + nbucket:2 + nbucket + nchain])
        symbols = view["dynsym"]

        def lookup(name):
            idx = words[2 + sysv.elf_hash(name) % nbucket]
            while idx:
                if symbols[idx][0] == name:
                    return symbols[idx][0], symbols[idx][1]
                idx = words[2 + nbucket + idx]
            return None
        view["sysv_lookups"] = _hash_lookups(exported, lookup)
    else:
        p = sysv.params
        view["sysv_hash"] = (p["nbuckets"], p["nchains"], list(p["buckets"]), list(p["chains"]))
        view["sysv_lookups"] = _hash_lookups(exported, lambda n: _found(sysv.get_symbol(n)))
    if isinstance(gnu, GNUHashSection):
        p = gnu.params
        view["gnu_hash"] = (p["nbuckets"], p["symoffset"], p["bloom_size"], p["bloom_shift"], list(p["bloom"]),
                            list(p["buckets"]))
        view["gnu_lookups"] = _hash_lookups(exported, lambda n: _found(gnu.get_symbol(n)))
    else:
        view["gnu_hash"] = view["gnu_lookups"] = None if gnu is None else False

    view["notes"] = []
    for seg in elf.iter_segments():
        if num(seg["p_type"]) == PT_NOTE:
            view["notes"] += [(n["n_name"], num(n["n_type"]), n["n_descdata"])
                              for n in iter_notes(elf, seg["p_offset"], seg["p_filesz"])]
    return view


def _found(sym):
    return None if sym is None else (sym.name, sym.entry.st_value)


# -- the comparison ---------------------------------------------------------------------

def compare(spec, ours, theirs):
    """[(aspect, what is wrong)] where the two views of image `spec` disagree.
    An aspect the reader refuses (an Unreadable) is not compared, but it
    must be one REFUSED names, and the other way round."""
    out = []
    for aspect, value in ours.items():
        if isinstance(value, Unreadable) != ((spec, aspect) in REFUSED):
            out.append((aspect, f"{aspect}: the reader refuses it: {value}" if isinstance(value, Unreadable) else
                        f"{aspect}: REFUSED says the reader refuses it, but it reads it"))
        elif not isinstance(value, Unreadable) and value != theirs[aspect]:
            out.append((aspect, _diff(aspect, value, theirs[aspect])))
    return out


def _diff(aspect, ours, theirs):
    if isinstance(ours, list) and isinstance(theirs, list):
        rows = [f"  [{i}] reader {a!r}\n       pyelftools {b!r}"
                for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
        if len(ours) != len(theirs):
            rows.append(f"  reader has {len(ours)} entries, pyelftools {len(theirs)}")
        return f"{aspect}:\n" + "\n".join(rows[:8])
    if isinstance(ours, dict) and isinstance(theirs, dict):
        rows = [f"  {k}: reader {ours.get(k)!r}, pyelftools {theirs.get(k)!r}"
                for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)]
        return f"{aspect}:\n" + "\n".join(rows[:8])
    return f"{aspect}: reader {ours!r}, pyelftools {theirs!r}"


def views(path):
    img = ElfImage(path)
    theirs = elftools_view(path, img)
    return img, reader_view(img), theirs


@pytest.mark.parametrize("spec", IMAGES)
def test_reader_agrees_with_pyelftools(spec, corpus, built):
    path = image_path(spec, corpus, built)
    try:
        img, ours, theirs = views(path)
    except ImageError as err:
        assert (spec, "image") in REFUSED, f"the reader refuses {spec}: {err}"
        return
    problems = compare(spec, ours, theirs)
    assert not problems, f"{spec}: the reader and pyelftools disagree on\n" + "\n".join(p[1] for p in problems)


def test_every_aspect_is_compared_somewhere(corpus):
    """No aspect may be empty on every image (a comparison of [] with [] proves nothing)."""
    seen = set()
    for name in ("x86_64", "s390x", "mips-n64-be", "arm64-compat"):
        _img, ours, _theirs = views(corpus(name))
        seen |= {aspect for aspect, value in ours.items() if value and not isinstance(value, Unreadable)}
    assert seen >= {"header", "segments", "sections", "dynsym", "loader_dynsym", "dynamic", "soname", "verdefs",
                    "versions", "sysv_hash", "gnu_hash", "sysv_lookups", "gnu_lookups", "notes"}, seen


# -- the comparison can fail ---------------------------------------------------------------

def _symbol_value(img):
    img.dynsym[-1] = dataclasses.replace(img.dynsym[-1], value=img.dynsym[-1].value + 4)


def _hidden_bit(img):
    versym = img.versym(len(img.dynsym))
    img._cache[("versym", len(img.dynsym))] = (True, [v ^ VERSYM_HIDDEN for v in versym])


def _note_desc(img):
    img.notes[0] = dataclasses.replace(img.notes[0], desc=bytes(img.notes[0].desc)[:-1])


def _soname(img):
    img._dyn_first[DT["SONAME"]] = (img.dyn("SONAME") + 1, img.dyn_offset("SONAME"))


def _verdef_hash(img):
    verdefs = img.verdefs()
    img._cache["verdefs"] = (True, verdefs[:-1] + [dataclasses.replace(verdefs[-1], hash=verdefs[-1].hash ^ 1)])


PLANTED = {"dynsym": _symbol_value, "versions": _hidden_bit, "notes": _note_desc, "soname": _soname,
           "verdefs": _verdef_hash}


@pytest.mark.parametrize("aspect", sorted(PLANTED))
def test_a_wrong_reader_is_caught(aspect, corpus):
    """A reader that gets one thing wrong (planted after it read the image)
    disagrees with pyelftools on that aspect (and on what follows from it:
    a wrong symbol value is also what the hash lookups find)."""
    img, ours, theirs = views(corpus("x86_64"))
    assert compare("corpus:x86_64", ours, theirs) == []
    PLANTED[aspect](img)
    assert aspect in [p[0] for p in compare("corpus:x86_64", reader_view(img), theirs)]


@pytest.mark.parametrize("change", [-1, 1])
def test_wrong_symbol_count_is_caught(change, corpus, monkeypatch):
    """The loader's view counts the symbols from the hash tables: one too few
    is a different list; one too many reads past .dynsym, where the reader
    gives up (Unreadable), which is not a refusal REFUSED expects."""
    real = ElfImage.loader_symbol_count
    monkeypatch.setattr(ElfImage, "loader_symbol_count", lambda self: real(self) + change)
    _img, ours, theirs = views(corpus("x86_64"))
    assert [p[0] for p in compare("corpus:x86_64", ours, theirs)] == ["loader_dynsym"]
