"""Symbol rules: what the vDSO exports, and that nothing is left undefined."""

from vdsogen.elf.consts import (EM_ARM, SHN_ABS, STB_GLOBAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE, STT_OBJECT,
                                STT_TLS)
from vdsogen.elf.reader import ElfImage
from vdsogen.elf.records import Symbol
from vdsogen.audit.era import show
from vdsogen.audit.rules import Context, Findings, rule

BINDINGS = {STB_GLOBAL: "global", STB_WEAK: "weak"}


def exported(img: ElfImage) -> list[Symbol]:
    """Defined GLOBAL/WEAK .dynsym symbols, less GNU ld's version-node markers."""
    nodes = {v.name for v in img.verdefs() or ()} if img.dynamic is not None else set()
    out = []
    for sym in img.dynsym[1:]:
        if not sym.defined or sym.bind not in BINDINGS:
            continue
        # GNU ld adds one ABS OBJECT symbol of value 0 per version node.
        if sym.shndx == SHN_ABS and sym.type == STT_OBJECT and sym.value == 0 and sym.name in nodes:
            continue
        out.append(sym)
    return out


@rule("S001", "error", "no undefined symbols: nothing resolves references at run time",
      """An undefined symbol in .dynsym or .symtab (other than entry 0) is a
      reference nobody will resolve: typically a libgcc helper, a stack
      protector or a profiling hook.""")
def no_undefined(ctx: Context) -> Findings:
    img = ctx.image
    for sym in img.dynsym[1:] + img.symtab[1:]:
        if not sym.defined:
            yield f"{sym.table}[{sym.index}]", f"undefined symbol {sym.name!r}"


@rule("S002", "error", "the exports must be exactly the target's set", needs=("exports",))
def export_set(ctx: Context) -> Findings:
    have = {s.name for s in exported(ctx.image)}
    want = set(ctx.expect.exports)
    for name in sorted(want - have):
        yield ".dynsym", f"missing export {name!r}"
    for name in sorted(have - want):
        yield ".dynsym", f"unexpected export {name!r}"


@rule("S003", "error", "each export must be a function (FUNC, or NOTYPE code) with the binding the target gives it",
      needs=("exports",))
def export_kind(ctx: Context) -> Findings:
    for sym in exported(ctx.image):
        want = ctx.expect.exports.get(sym.name)
        if want is None:
            continue
        _version, binding = want
        if sym.type not in (STT_FUNC, STT_NOTYPE):
            yield f".dynsym[{sym.index}]", f"{sym.name} has symbol type {sym.type}, expected STT_FUNC"
        if BINDINGS[sym.bind] != binding:
            yield f".dynsym[{sym.index}]", f"{sym.name} is {BINDINGS[sym.bind]}, expected {binding}"


@rule("S004", "warning", "exports should be STT_FUNC: FUNC-only readers (kernel selftest parser, crabc) skip NOTYPE",
      """A reader that accepts only STT_FUNC does not find an STT_NOTYPE entry
      point (ppc64 kernels before ~v6.13 export plain labels).  Signal
      trampolines are left out: unwinders find them by their bytes, not by
      a lookup, and arm64's __kernel_rt_sigreturn is NOTYPE by design.""")
def export_notype(ctx: Context) -> Findings:
    tramps = {t[0] for t in ctx.expect.trampolines or ()}
    for sym in exported(ctx.image):
        if sym.type == STT_NOTYPE and sym.name not in tramps:
            yield f".dynsym[{sym.index}]", f"{sym.name} is STT_NOTYPE"


# Names that show the image was built with a flag a vDSO must not have, or
# calls a helper nothing provides (a vDSO is linked against nothing).
BANNED_EXACT = {
    "__stack_chk_fail": "stack protector", "__stack_chk_guard": "stack protector",
    "__stack_chk_fail_local": "stack protector",
    "mcount": "profiling (-pg)", "_mcount": "profiling (-pg)", "__mcount": "profiling (-pg)",
    "__fentry__": "ftrace (-mfentry)", "__cyg_profile_func_enter": "-finstrument-functions",
    "__cyg_profile_func_exit": "-finstrument-functions",
    "__x86_return_thunk": "return thunks", "__sanitizer_cov_trace_pc": "coverage",
    "__udivdi3": "libgcc helper", "__umoddi3": "libgcc helper", "__divdi3": "libgcc helper",
    "__moddi3": "libgcc helper", "__udivmoddi4": "libgcc helper", "__lshrdi3": "libgcc helper",
    "__ashldi3": "libgcc helper", "__ashrdi3": "libgcc helper", "__muldi3": "libgcc helper",
    "__divti3": "libgcc helper", "__udivti3": "libgcc helper", "__umodti3": "libgcc helper",
    "__modti3": "libgcc helper", "__clzdi2": "libgcc helper", "__ctzdi2": "libgcc helper",
    "__popcountdi2": "libgcc helper",
}
BANNED_PREFIX = {
    "__asan_": "sanitizer", "__ubsan_handle_": "sanitizer", "__tsan_": "sanitizer", "__msan_": "sanitizer",
    "__hwasan_": "sanitizer", "__kasan_": "sanitizer", "__kcsan_": "sanitizer", "__sanitizer_cov_": "coverage",
    "__gcov_": "coverage", "__llvm_gcov": "coverage", "__llvm_profile_": "coverage",
    "__x86_indirect_thunk_": "retpolines", "__x86_indirect_call_thunk_": "retpolines",
    "__aeabi_": "libgcc helper (ARM EABI)", "__cfi_": "CFI",
}
UNDEFINED_ONLY = {"memcpy", "memset", "memmove", "memcmp"}
# ARM unwind tables reference these personality routines; Linux's arm and
# arm64-compat vDSOs define them as empty functions so the link resolves
# without libgcc, and unstripped images show them in .symtab.
ARM_PERSONALITY_STUBS = {"__aeabi_unwind_cpp_pr0", "__aeabi_unwind_cpp_pr1", "__aeabi_unwind_cpp_pr2"}


def banned(name: str) -> str | None:
    if name in BANNED_EXACT:
        return BANNED_EXACT[name]
    for prefix, what in BANNED_PREFIX.items():
        if name.startswith(prefix):
            return what
    return None


@rule("S005", "error", "no stack-protector, instrumentation or libgcc helper symbols in any symbol table",
      """Such a symbol shows a build flag a vDSO must not have (-fstack-protector,
      -pg, -mfentry, sanitizers, coverage, retpoline thunks, CFI) or a call to
      a helper nothing provides (64-bit division on 32-bit targets,
      __aeabi_unwind_cpp_pr0 from ARM unwind tables, memcpy/memset).  lld-16
      and -19 leave some of them undefined without failing the link.
      Defined __aeabi_unwind_cpp_pr0..2 in an ARM image are Linux's own empty
      stubs (arm and arm64-compat vDSOs define them so that the unwind
      tables link without libgcc): nothing calls them, no finding.""")
def banned_symbols(ctx: Context) -> Findings:
    img = ctx.image
    for sym in img.dynsym[1:] + img.symtab[1:]:
        if sym.defined and sym.name in ARM_PERSONALITY_STUBS and img.e_machine == EM_ARM:
            continue
        what = banned(sym.name)
        if what is None and sym.name in UNDEFINED_ONLY and not sym.defined:
            what = "libc helper"
        if what:
            state = "undefined" if not sym.defined else "defined"
            yield f"{sym.table}[{sym.index}]", f"{sym.name} ({what}, {state})"


@rule("S006", "warning", "all exported entry points should lie in one page: the Go runtime's profiler assumes so",
      """The Go runtime's inVDSOPage treats only the page around the first
      symbol it resolved as vDSO code when a profiling signal arrives; a PC
      in an entry point on another page is then taken for Go code and the
      traceback goes wrong.""", needs=("page_size",))
def entries_in_one_page(ctx: Context) -> Findings:
    page = ctx.expect.page_size
    funcs = [s for s in exported(ctx.image) if s.type in (STT_FUNC, STT_NOTYPE)]
    pages: dict[int, list[str]] = {}
    for s in funcs:
        pages.setdefault((s.value & ~1) // page, []).append(s.name)
    if len(pages) > 1:
        main = max(pages, key=lambda p: len(pages[p]))
        others = sorted(n for p, names in pages.items() if p != main for n in names)
        shown = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        yield ".dynsym", (f"entry points spread over {len(pages)} {page}-byte pages: {shown} outside page {main}, "
                          f"which holds the other {len(pages[main])}")


@rule("S007", "error", "no STT_TLS or STT_GNU_IFUNC symbols: no loader runs for the vDSO",
      """TLS symbols need a TLS block and IFUNC symbols need a resolver call,
      both set up by a dynamic loader; nothing does that for a vDSO.""")
def no_tls_ifunc(ctx: Context) -> Findings:
    for sym in ctx.image.dynsym[1:] + ctx.image.symtab[1:]:
        if sym.type in (STT_TLS, STT_GNU_IFUNC):
            kind = "STT_TLS" if sym.type == STT_TLS else "STT_GNU_IFUNC"
            yield f"{sym.table}[{sym.index}]", f"{sym.name} is {kind}"


@rule("S008", "warning", "the image should export every entry point all kernels of its ABI export",
      """glibc, musl and Go fall back to a syscall for an entry point they do
      not find; one every kernel of the ABI has (clock_gettime and
      gettimeofday nearly everywhere) missing means a slower image, or a
      stripped or mis-versioned one.  Only the entry points the image's
      era had count: the catalogue dates each (`exports`: i386's time
      functions came in 3.15).""", needs=("abi_info",))
def core_exports(ctx: Context) -> Findings:
    have = {s.name for s in exported(ctx.image)}
    for name in ctx.expect.abi_info.core_for(ctx.era):
        if name not in have:
            yield ".dynsym", f"no {name}"


@rule("S009", "info", "exports the ABI catalogue does not know, or knows only from a later Linux",
      """The catalogue (vdsogen/spec/abi.toml) lists every entry point Linux
      exports for each ABI up to 7.2, with the version that added it.  An
      export it does not list is news (a newer kernel, a vendor addition)
      that no consumer looks up yet; one dated after the image's version
      note is a backport.  Neither harms a consumer.""", needs=("abi_info",))
def unknown_exports(ctx: Context) -> Findings:
    info = ctx.expect.abi_info
    if not info.exports:
        return
    for sym in exported(ctx.image):
        if sym.type not in (STT_FUNC, STT_NOTYPE):
            continue
        e = info.export(sym.name)
        if e is None:
            yield f".dynsym[{sym.index}]", f"{sym.name}: not an export the catalogue knows for {info.name}"
        elif ctx.era is not None and ctx.era < e.since:
            yield f".dynsym[{sym.index}]", (f"{sym.name}: Linux {show(e.since)} added it, the image's note says "
                                            f"{show(ctx.era)}")
