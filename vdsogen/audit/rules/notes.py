"""Note rules: the notes are walked through PT_NOTE with 4-byte alignment."""

from collections.abc import Iterable

from vdsogen.elf.consts import (EM_AARCH64, NT_GNU_BUILD_ID, NT_GNU_PROPERTY_TYPE_0, NT_LINUX_BUILD_SALT,
                                NT_LINUX_VERSION, PT_GNU_PROPERTY, PT_NOTE, STT_FUNC)
from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.audit.rules import Context, Findings, rule
from vdsogen.audit.rules.symbols import exported


@rule("N001", "warning", "a Linux version note (\"Linux\", type 0, 4-byte LINUX_VERSION_CODE) should be present",
      """Linux emits it in every vDSO; older glibc read the kernel version
      from it.  vdsogen's own images must carry it (an error in check).""",
      check="error")
def linux_note(ctx: Context) -> Findings:
    img = ctx.image
    if not any(n.name == "Linux" and n.type == NT_LINUX_VERSION and len(n.desc) == 4 for n in img.notes):
        stranded = [o for o, name, t, _d in (img.scan_notes() if img.note_problems else ())
                    if name == "Linux" and t == NT_LINUX_VERSION]
        yield "PT_NOTE", ("no Linux version note" + (f" that the note walk reaches (one lies at 0x{stranded[0]:x}, "
                                                      "past where N003's walk stops)" if stranded else ""))


@rule("N002", "warning", "a GNU build-id note should be present: debuggers fetch the unstripped image by it",
      """gdb and debuginfod find the unstripped .so.dbg of the vDSO mapped in a
      process through its build-id; kernels link with --build-id=sha1.
      vdsogen's own images must carry it (an error in check).""", check="error")
def build_id(ctx: Context) -> Findings:
    if not any(n.name == "GNU" and n.type == NT_GNU_BUILD_ID and n.desc for n in ctx.image.notes):
        yield "PT_NOTE", "no GNU build-id note"


@rule("N003", "error", "every note in PT_NOTE must parse with 4-byte alignment",
      """vDSO notes are 4-byte aligned, and consumers (glibc reading the Linux
      version note, debuggers reading the build-id) walk PT_NOTE with that
      alignment: a note whose sizes run past its segment, a misaligned
      segment or stray bytes stop the walk.  The message names the note,
      why it does not parse, and whether the walk has met the Linux version
      note by then.""",
      relief="""A warning when the walk reads the Linux version note before the
      note that stops it: a libc's walk still finds the kernel version, and
      only what follows (a build-id, a property note) is lost to readers
      such as readelf.""")
def notes_well_formed(ctx: Context) -> Findings:
    img = ctx.image
    version = next((n for n in img.notes if n.name == "Linux" and n.type == NT_LINUX_VERSION and len(n.desc) == 4),
                   None)
    scanned = img.scan_notes() if img.note_problems else []
    for offset, message in img.note_problems:
        why = _mixed_alignment(img, offset, scanned)
        if version is not None and version.offset < offset:
            yield f"PT_NOTE @0x{offset:x}", (f"{message}{why}; the walk stops there, after the Linux version note "
                                             f"(at 0x{version.offset:x}): a libc's note walk still finds it"), "warning"
            continue
        stranded = [o for o, name, t, _d in scanned if name == "Linux" and t == NT_LINUX_VERSION and o > offset]
        where = (f"the Linux version note at 0x{stranded[0]:x}" if stranded else "a Linux version note (PT_NOTE "
                 "holds none)")
        yield f"PT_NOTE @0x{offset:x}", f"{message}{why}; the walk stops there: a libc's note walk never reaches {where}"


def _mixed_alignment(img, offset, scanned):
    """Why a 4-byte walk goes wrong in a PT_NOTE laid out for 8-byte notes,
    and what readelf (which walks by p_align) makes of it."""
    props = [o for o, name, t, _d in scanned if name == "GNU" and t == NT_GNU_PROPERTY_TYPE_0]
    seg = next((s for s in img.segments_of_type(PT_NOTE) if s.offset <= offset < s.offset + s.filesz), None)
    if not props or seg is None:
        return ""
    why = (f" (PT_NOTE holds an 8-byte-aligned GNU property note at 0x{props[0]:x}: the linker padded the "
           "notes before it to 8 bytes, and a walk with the vDSO's 4-byte alignment reads the padding as a note "
           "header")
    if seg.align >= 8:
        read, stop = img.walk_aligned(seg, seg.align)
        names = ", ".join(f"{name or '-'} type {t:#x}" for _o, name, t in read)
        why += (f"; readelf walks with p_align {seg.align} and reads {names or 'nothing'}" +
                (f", then stops at 0x{stop:x}: the 4-byte-aligned notes after the property note do not fit an "
                 f"{seg.align}-byte walk" if stop is not None else ""))
    return why + ")"


def _property_sections(img):
    return [s for s in img.sections if s.name == ".note.gnu.property" and s.size]


@rule("N004", "error", "no .note.gnu.property (8-byte aligned) inside PT_NOTE",
      """The GNU property note is 8-byte aligned on 64-bit targets; inside a
      PT_NOTE walked with 4-byte alignment it shifts every note after it.
      arm64 and x86 discard it from their vDSOs (fixed in 2021, after
      note parsing broke).  Information under qemu-user: QEMU's loader
      reads the property note of its own aarch64 vDSO to map it with BTI
      guarded pages, and there the note parses.""", qemu_user="info")
def no_gnu_property(ctx: Context) -> Findings:
    img = ctx.image
    notes = img.segments_of_type(PT_NOTE)
    for n in img.notes:
        if n.name == "GNU" and n.type == NT_GNU_PROPERTY_TYPE_0:
            yield f"PT_NOTE @0x{n.offset:x}", "GNU property note (NT_GNU_PROPERTY_TYPE_0)"
            return
    if img.note_problems:
        for off, name, ntype, _d in img.scan_notes():
            if name == "GNU" and ntype == NT_GNU_PROPERTY_TYPE_0:
                yield f"PT_NOTE @0x{off:x}", ("GNU property note (NT_GNU_PROPERTY_TYPE_0), 8-byte aligned, "
                                              "which the 4-byte note walk does not reach")
                return
    for sec in _property_sections(img):
        if any(seg.offset <= sec.offset < seg.offset + seg.filesz for seg in notes):
            yield f".note.gnu.property @0x{sec.offset:x}", ".note.gnu.property lies inside PT_NOTE"


@rule("N005", "warning", "notes owned by \"Linux\" should be the version note (type 0) or the build salt (type 0x100)",
      """The kernel emits a 4-byte LINUX_VERSION_CODE (type 0) and, where the
      distribution sets one, a NUL-terminated build-salt string (type 0x100,
      possibly empty; readelf calls it "OPEN", elflint "unknown").  Other
      Linux-owned types, or those two malformed, are not what any reader
      expects.""")
def linux_notes_known(ctx: Context) -> Findings:
    for n in ctx.image.notes:
        if n.name != "Linux":
            continue
        where = f"PT_NOTE @0x{n.offset:x}"
        if n.type == NT_LINUX_VERSION:
            if len(n.desc) != 4:
                yield where, f"Linux version note with {len(n.desc)} bytes of description, expected 4"
        elif n.type == NT_LINUX_BUILD_SALT:
            if n.desc and n.desc[-1:] != b"\0":
                yield where, "Linux build-salt note is not a NUL-terminated string"
        else:
            yield where, f"Linux note of unknown type 0x{n.type:x}"


# The note a vdsogen test build carries (templates/note.S.j2): what was injected.
TEST_BUILD_NOTE = ("vdsogen", 1)


def test_build(img: ElfImage) -> str | None:
    """What a vdsogen test build says was injected ("injected counter"), or None."""
    for n in img.notes:
        if (n.name, n.type) == TEST_BUILD_NOTE:
            return bytes(n.desc).rstrip(b"\0").decode("ascii", "replace")
    return None


LAYOUT_NOTE = ("vdsogen", 2)


@rule("N008", "error",
      "a vdsogen image must name the data pages it was built for, and they must be its spec's (check only)",
      """Every image vdsogen builds carries a note ("vdsogen", type 2): the
      layout's name, a digest of what the code reads from it (every struct
      member's offset, the pages, the access paths; Layout.digest), the page
      size and count, the tick (the coarse clocks' resolution).  `check`
      holds the image to its spec: an image built for other pages reads the
      wrong fields of the right kernel.  A layout
      that takes the name of one of vdsogen's own (Linux's, as vdsogen ships
      them) must also lay out the same data: two fields swapped in a copy
      would build an image that passes its own harness, which plays the
      kernel by the same mistaken layout, and is wrong on every real
      kernel.""", needs=("layout_note",))
def layout_note(ctx: Context) -> Findings:
    said = [bytes(n.desc).rstrip(b"\0").decode("ascii", "replace") for n in ctx.image.notes
            if (n.name, n.type) == LAYOUT_NOTE]
    want = ctx.expect.layout_note
    if not said:
        yield "PT_NOTE", f"no data-pages note (\"vdsogen\", type 2); the spec's pages are {want!r}"
    elif said != [want]:
        yield "PT_NOTE", f"built for the data pages {' and '.join(repr(x) for x in said)}; the spec's are {want!r}"
    if ctx.expect.layout_not_own:
        yield "PT_NOTE", ctx.expect.layout_not_own


@rule("N006", "info", "a vdsogen test build: part of its code is replaced for the test harness",
      """`vdsogen build --test-counter` (and `vdsogen test`, for a spec with
      [harness] injected_counter) builds an image whose counter read loads a
      value the harness controls, where qemu-user cannot run the real read.
      Such an image says so in a note ("vdsogen", type 1, naming what was
      injected); it keeps time only inside the harness and is never to be
      shipped.  The real build's read is checked by its words (T002).""")
def test_build_note(ctx: Context) -> Findings:
    what = test_build(ctx.image)
    if what is not None:
        yield "PT_NOTE", f"test build: {what}"


# arm64's landing pads for a call through a pointer (blr): bti c and bti jc
# (HINT #34, #38), and paciasp/pacibsp, which gcc puts first instead of a
# bti c when it signs the return address.
BTI_PADS = frozenset({0xD503245F, 0xD50324DF})
PAC_PADS = frozenset({0xD503233F, 0xD503237F})
GNU_PROPERTY_AARCH64_FEATURE_1_AND, GNU_PROPERTY_AARCH64_FEATURE_1_BTI = 0xC0000000, 1
BTI_SINCE = "5.8"      # the first Linux that maps its vDSO with guarded pages (CONFIG_ARM64_BTI_KERNEL)


def aarch64_features(img: ElfImage) -> int:
    """The GNU_PROPERTY_AARCH64_FEATURE_1_AND bits of the image's GNU property
    notes, in PT_NOTE or a PT_GNU_PROPERTY of its own (0 without one)."""
    descs = [bytes(n.desc) for n in img.notes if n.name == "GNU" and n.type == NT_GNU_PROPERTY_TYPE_0]
    descs += [bytes(d) for _o, name, t, d in (img.scan_notes() if img.note_problems else ())
              if name == "GNU" and t == NT_GNU_PROPERTY_TYPE_0]
    for seg in img.segments_of_type(PT_GNU_PROPERTY):
        raw = bytes(img.data[seg.offset:seg.offset + seg.filesz])
        word = [int.from_bytes(raw[i:i + 4], img.endian) for i in range(0, min(len(raw), 12), 4)]
        if len(raw) >= 16 and raw[12:16] == b"GNU\0" and word[2] == NT_GNU_PROPERTY_TYPE_0:
            descs.append(raw[16:16 + word[1]])
    pad = 8 if img.elf_class == 64 else 4
    bits = 0
    for desc in descs:
        at = 0
        while at + 8 <= len(desc):
            kind, size = int.from_bytes(desc[at:at + 4], img.endian), int.from_bytes(desc[at + 4:at + 8], img.endian)
            if kind == GNU_PROPERTY_AARCH64_FEATURE_1_AND and size >= 4:
                bits |= int.from_bytes(desc[at + 8:at + 12], img.endian)
            at += 8 + (size + pad - 1) // pad * pad
    return bits


def bti_entries(img: ElfImage, trampolines: Iterable[str] = ()) -> list:
    """(symbol, first instruction word) of each exported function but the trampolines."""
    skip = set(trampolines)
    entries = []
    for sym in exported(img):
        if sym.type == STT_FUNC and sym.name not in skip:
            try:
                word = int.from_bytes(img.bytes_at(sym.value, 4), img.code_endian)
            except Unreadable:
                continue     # S-rules report an export outside the image
            entries.append((sym, word))
    return entries


def built_for_bti(img: ElfImage) -> bool:
    """The image is built for BTI: its property note says so, or an export
    begins with a bti (Linux's images from kernels without BTI have neither)."""
    return bool(aarch64_features(img) & GNU_PROPERTY_AARCH64_FEATURE_1_BTI
                or any(word in BTI_PADS for _sym, word in bti_entries(img)))


@rule("N007", "error", "arm64: an image built for BTI must begin every exported function with a landing pad",
      """A kernel built with BTI (CONFIG_ARM64_BTI_KERNEL, Linux 5.8 on) maps
      its vDSO with guarded pages (PROT_BTI), and a call through a pointer
      (blr, as every libc makes) must land on a `bti c`, `bti jc` or
      `paciasp`/`pacibsp`, or the task dies of SIGILL.  An image is built
      for BTI when its GNU property note says so (QEMU's own vDSO) or when
      some of its exports begin with a `bti`: then every exported function
      must (signal trampolines excepted: the kernel returns to them, and
      unwinders match their bytes, T001).  Linux's images built without BTI,
      as Debian's are, are mapped unguarded by their own kernel and begin
      with no `bti`; vdsogen builds every arm64 image for BTI, which works
      under either kernel, so in check an image of Linux 5.8 on without the
      pads is an error too.""", needs=("trampolines",))
def bti_landing_pads(ctx: Context) -> Findings:
    img = ctx.image
    if img.e_machine != EM_AARCH64 or ctx.before(BTI_SINCE):
        return
    entries = bti_entries(img, (t[0] for t in ctx.expect.trampolines))
    padded = [sym.name for sym, word in entries if word in BTI_PADS]
    if aarch64_features(img) & GNU_PROPERTY_AARCH64_FEATURE_1_BTI:
        why = "its GNU property note sets GNU_PROPERTY_AARCH64_FEATURE_1_BTI"
    elif padded:
        why = f"{', '.join(padded)} begin{'s' if len(padded) == 1 else ''} with a bti"
    elif ctx.expect.generated:
        why = "vdsogen builds its arm64 images for BTI (-mbranch-protection=bti)"
    else:
        return
    for sym, word in entries:
        if word not in BTI_PADS and word not in PAC_PADS:
            yield f"{sym.name} @0x{sym.value:x}", (f"begins with {word:08x}, no BTI landing pad, though {why}: "
                                                    "called through a pointer from guarded pages, it raises SIGILL")
