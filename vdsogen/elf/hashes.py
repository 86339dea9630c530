"""ElfImage, part 3 (see reader.py): the hash tables, DT_HASH and
DT_GNU_HASH, read once, each chain walked once, and lookups through them."""

import struct
from typing import Any, Sequence

from vdsogen.elf.bounds import MAX_ENTRIES, MAX_SYMBOLS, Unreadable
from vdsogen.elf.consts import GNU_HASH, SHT_HASH, SYSV_HASH, elf_hash, gnu_hash
from vdsogen.elf.headers import Headers
from vdsogen.elf.records import Symbol
from vdsogen.isa import for_machine

SysvHash = tuple[int, int, tuple[int, ...], tuple[int, ...]]      # nbucket, nchain, buckets, chains


class Hashes(Headers):
    """A part of ElfImage (reader.py): it reads self.data within self.budget."""

    # -- hash tables -------------------------------------------------------

    def elf_hash(self, name: str | bytes) -> int:
        """elf_hash(name), charged by its length: a name can be 4 KiB long."""
        self.charge(len(name) >> 5)
        return elf_hash(name)

    def gnu_hash(self, name: str | bytes) -> int:
        self.charge(len(name) >> 5)
        return gnu_hash(name)

    @property
    def hash_word(self) -> int:
        """.hash word size consumers use, the ISA's: 8 on s390x (64-bit s390), 4 everywhere else."""
        isa = for_machine(self.e_machine)
        return 4 if isa is None else isa.hash_word(self.elf_class)

    def sysv_hash(self, word: int | None = None) -> SysvHash | None:
        """(nbucket, nchain, buckets, chains) of DT_HASH, or None."""
        if self.dyn("HASH") is None:
            return None
        size = word or self.hash_word
        return self._cached(("sysv", size), lambda: self._read_sysv_hash(size))

    def _sysv_table(self, word: int | None) -> SysvHash:
        """sysv_hash(word), where the caller knows there is a DT_HASH."""
        table = self.sysv_hash(word)
        if table is None:
            raise Unreadable("no DT_HASH")
        return table

    def _read_sysv_hash(self, word: int) -> SysvHash:
        w = "I" if word == 4 else "Q"
        off = self.at_tag("HASH", 2 * word)
        nbucket, nchain = self.read(SYSV_HASH[word], off)
        if nbucket > MAX_ENTRIES or nchain > MAX_ENTRIES:
            raise Unreadable(f"DT_HASH claims {nbucket} buckets and {nchain} chains", off)
        self.at_tag("HASH", (2 + nbucket + nchain) * word)
        self.charge((nbucket + nchain) // 16)        # one C-speed read of the words
        words = struct.unpack_from(f"{self._e}{nbucket + nchain}{w}", self.data, off + 2 * word)
        return nbucket, nchain, words[:nbucket], words[nbucket:]

    def sysv_hash_word_in_file(self) -> int | None:
        """The .hash word size the file was written with (4 or 8), or None.

        The section's sh_entsize says it when there is one; otherwise the
        layout that gives a plausible header wins."""
        if self.dyn("HASH") is None:
            return None
        for sec in self.sections_of_type(SHT_HASH):
            if sec.entsize in (4, 8):
                return sec.entsize
        plausible = []
        for word in (4, 8):
            try:
                nbucket, nchain, _b, _c = self._sysv_table(word)
            except Unreadable:
                continue
            if nbucket and (not self.dynsym or nchain == len(self.dynsym)):
                plausible.append(word)
        if len(plausible) == 1:
            return plausible[0]
        return self.hash_word

    def _sysv_index(self, word: int) -> tuple[list[tuple[int, str]], dict[str, int], bool]:
        """Walk every DT_HASH chain once, against .dynsym: (problems, found,
        merged).  found maps each name to the index a lookup of it returns
        when no chains merge; a loop makes the image unusable."""
        nbucket, nchain, buckets, chains = self._sysv_table(word)
        names = [s.name for s in self.dynsym]
        problems: list[tuple[int, str]] = []
        seen: set[int] = set()
        found: dict[str, int] = {}
        merged = False
        self.charge(nbucket // 16)                  # an empty bucket costs little
        for b, idx in enumerate(buckets):
            walk = set()
            while idx:
                self.charge()
                if idx >= nchain:
                    problems.append((b, f"the chain of bucket {b} reaches index {idx}, past nchain {nchain}"))
                    break
                if idx in walk:
                    raise Unreadable(f"DT_HASH: the chain of bucket {b} loops at index {idx}", self.at_tag("HASH"))
                if idx in seen:
                    problems.append((b, f"the chain of bucket {b} joins another chain at index {idx}"))
                    merged = True
                    break
                walk.add(idx)
                seen.add(idx)
                if idx < len(names) and names[idx] not in found and self.elf_hash(names[idx]) % nbucket == b:
                    found[names[idx]] = idx
                idx = chains[idx]
        return problems, found, merged

    def sysv_chain_problems(self, word: int | None = None) -> list[tuple[int, str]]:
        """Walk every DT_HASH chain once: a loop makes the image unusable
        (Unreadable); an index past nchain or chains that merge are returned
        as (bucket, message)."""
        if self.sysv_hash(word) is None:
            return []
        size = word or self.hash_word
        return list(self._cached(("sysv-index", size), lambda: self._sysv_index(size))[0])

    def sysv_lookup(self, name: str, symbols: Sequence[Symbol], word: int | None = None) -> int | None:
        table = self.sysv_hash(word)
        if table is None:
            return None
        nbucket, nchain, buckets, chains = table
        if nbucket == 0:
            return None
        size = word or self.hash_word
        if symbols is self.dynsym:
            _problems, found, merged = self._cached(("sysv-index", size), lambda: self._sysv_index(size))
            if not merged:
                return found.get(name)
        idx = buckets[self.elf_hash(name) % nbucket]
        for _ in range(nchain + 1):           # a chain can visit each entry once
            self.charge()
            if idx == 0 or idx >= nchain:
                return None
            if idx < len(symbols) and symbols[idx].name == name:
                return idx
            idx = chains[idx]
        raise Unreadable(f"DT_HASH chain for {name!r} loops")

    def gnu_hash_table(self) -> dict[str, Any] | None:
        if self.dyn("GNU_HASH") is None:
            return None
        return self._cached("gnu", self._read_gnu_hash)

    def _read_gnu_hash(self) -> dict[str, Any]:
        header = GNU_HASH.size(self.elf_class)
        off = self.at_tag("GNU_HASH", header)
        nbuckets, symoffset, bloom_size, bloom_shift = self.read(GNU_HASH, off)
        if nbuckets > MAX_ENTRIES or bloom_size > MAX_ENTRIES or symoffset > MAX_SYMBOLS:
            raise Unreadable(f"DT_GNU_HASH claims {nbuckets} buckets, {bloom_size} bloom words, "
                             f"symoffset {symoffset}", off)
        bloom_off = off + header
        buckets_off = bloom_off + bloom_size * self.wsize
        self.at_tag("GNU_HASH", header + bloom_size * self.wsize + 4 * nbuckets)
        self.charge((nbuckets + bloom_size) // 16)
        bloom = struct.unpack_from(f"{self._e}{bloom_size}{self.word}", self.data, bloom_off)
        buckets = struct.unpack_from(f"{self._e}{nbuckets}I", self.data, buckets_off)
        return {"nbuckets": nbuckets, "symoffset": symoffset, "bloom_shift": bloom_shift,
                "bloom_size": bloom_size, "bloom": bloom, "buckets": buckets, "offset": off,
                "chain_off": buckets_off + 4 * nbuckets}

    def _gnu_chain(self, start: int) -> tuple[dict[str, int], Unreadable | str | None]:
        """Walk the DT_GNU_HASH chain from index `start` once, against .dynsym:
        {name: first index whose chain hash and name match}, and what ended
        the walk if not its end marker (an Unreadable, or "never ends")."""
        t = self.gnu_hash_table()
        found: dict[str, int] = {}
        if t is None:
            return found, None
        idx = start
        try:
            for _ in range(MAX_SYMBOLS + 1):
                self.charge()
                ch = self.u32(t["chain_off"] + 4 * (idx - t["symoffset"]))
                if idx < len(self.dynsym):
                    name = self.dynsym[idx].name
                    if name not in found and (ch | 1) == (self._gnu_hash_of(idx) | 1):
                        found[name] = idx
                if ch & 1:
                    return found, None
                idx += 1
            return found, "never ends"
        except Unreadable as err:
            return found, err

    def _gnu_hash_of(self, index: int) -> int:
        hashes = self._cache.setdefault("gnu-hashes", {})
        if index not in hashes:
            hashes[index] = self.gnu_hash(self.dynsym[index].name)
        return hashes[index]

    def gnu_lookup(self, name: str, symbols: Sequence[Symbol]) -> int | None:
        t = self.gnu_hash_table()
        if t is None or t["nbuckets"] == 0:
            return None
        h = self.gnu_hash(name)
        bits = self.wsize * 8
        if t["bloom"]:
            word = t["bloom"][(h // bits) % len(t["bloom"])]
            mask = (1 << (h % bits)) | (1 << ((h >> t["bloom_shift"]) % bits))
            if word & mask != mask:
                return None
        idx = t["buckets"][h % t["nbuckets"]]
        if idx == 0:
            return None
        if idx < t["symoffset"]:
            raise Unreadable(f"DT_GNU_HASH bucket points below symoffset for {name!r}", t["offset"])
        if symbols is self.dynsym:
            chains = self._cache.setdefault("gnu-chains", {})
            if idx not in chains:
                chains[idx] = self._gnu_chain(idx)
            found, err = chains[idx]
            if name in found:
                return found[name]
            if err == "never ends":
                raise Unreadable(f"DT_GNU_HASH chain for {name!r} never ends", t["offset"])
            if err is not None:
                raise Unreadable(str(err), err.offset)
            return None
        for _ in range(MAX_SYMBOLS + 1):
            self.charge()
            ch = self.u32(t["chain_off"] + 4 * (idx - t["symoffset"]))
            if (ch | 1) == (h | 1) and idx < len(symbols) and symbols[idx].name == name:
                return idx
            if ch & 1:
                return None
            idx += 1
        raise Unreadable(f"DT_GNU_HASH chain for {name!r} never ends", t["offset"])
