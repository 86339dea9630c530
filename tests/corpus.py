"""The audit test corpus: vDSO-shaped images for every ABI in the catalogue,
and images that show each defect, built here with the installed toolchains.

Each Recipe is compiled and linked with clang-19 and lld-19 (or GNU ld where
the recipe says so) from small sources written here: one C function per
export, the trampolines as their instruction words, the Linux version note,
a linker script with one R+X PT_LOAD.  A defect recipe changes the flags,
the toolchain or the sources the way a careless build would, and names the
rules that must fire.  A missing tool fails the build: no test skips.

The `corpus` fixture builds each image once per session, on demand.
"""

import os
import shutil
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path


from vdsogen.elf.consts import EF_ARM_ABI_FLOAT_SOFT, EHDR, EI_NIDENT, EM_MIPS, SHDR
from vdsogen.elf.reader import ElfImage
from vdsogen.spec import abi as catalogue

CLANG, LLD = "clang-19", "ld.lld-19"


@dataclass(frozen=True)
class Recipe:
    name: str
    abi: str                       # catalogue ABI the image is for
    triple: str
    cflags: tuple = ()
    ldflags: tuple = ()
    linker: str = "lld"            # "lld", or a GNU ld program
    hash_style: str = "both"
    eh: bool = True                # unwind tables, .eh_frame_hdr and PT_GNU_EH_FRAME
    eh_phdr: bool = True
    load_flags: int = 5            # PF_R | PF_X
    base: int = 0                  # link address of the headers
    inline_helper: bool = False    # MIPS: no internal calls (they would need GOT entries)
    asm_entries: bool = False      # exports as assembly code labels (ppc64 ELFv1)
    notype: bool = False           # exports without .type (STT_NOTYPE, as ppc64 before ~v6.13)
    versioned: bool = True
    defs: bool = True              # -z defs
    keep_data: bool = False        # keep .data/.bss in the image instead of discarding them
    discard: tuple = (".note.gnu.property", ".comment")
    salt: bytes | None = None      # a Linux build-salt note
    extra_phdrs: tuple = ()        # more PHDRS lines (empty segments, as arm images have)
    extra_c: str = ""              # appended to the C source
    extra_s: str = ""              # appended to the assembly source
    extra_exports: tuple = ()      # more names for the version script (defined in extra_c)
    post: str | None = None        # a post-link step (POST below)
    soname: str | None = None
    linux: int = 0x061100          # LINUX_VERSION_CODE in the version note (its era)
    names: tuple | None = None     # only these of the ABI's exports (an older kernel's set)
    expect: dict = field(default_factory=dict)   # rule -> severity that must be reported
    strict: dict | None = None     # rule -> severity under --profile=strict (default: as expect)


# -- one good image per ABI (and byte order, and a GNU ld variant where there is one) --

GOOD = [
    Recipe("x86_64", "x86_64", "x86_64-linux-gnu"),
    Recipe("x86_64-gnuld", "x86_64", "x86_64-linux-gnu", linker="x86_64-linux-gnu-ld"),
    Recipe("x32", "x32", "x86_64-linux-gnux32"),
    Recipe("i386", "i386", "i386-linux-gnu", ldflags=("-e", "__kernel_vsyscall")),
    Recipe("arm64", "arm64", "aarch64-linux-gnu", cflags=("-ffixed-x18", "-mgeneral-regs-only"), eh=False),
    Recipe("arm64-gnuld", "arm64", "aarch64-linux-gnu", cflags=("-ffixed-x18", "-mgeneral-regs-only"), eh=False,
           linker="aarch64-linux-gnu-ld"),
    Recipe("arm64-be", "arm64", "aarch64_be-linux-gnu", cflags=("-ffixed-x18", "-mgeneral-regs-only"), eh=False),
    Recipe("arm", "arm", "armv7a-linux-gnueabi", cflags=("-marm", "-mfloat-abi=soft"), eh=False,
           post="arm_float_flags"),
    Recipe("arm-be", "arm", "armebv7a-linux-gnueabi", cflags=("-marm", "-mfloat-abi=soft"), eh=False,
           post="arm_float_flags"),
    # arm kernel images: PT_ARM_EXIDX (lld adds it for .ARM.exidx) and an empty PT_GNU_EH_FRAME.
    Recipe("arm-empty-eh-frame-hdr", "arm", "armv7a-linux-gnueabi", cflags=("-marm", "-mfloat-abi=soft"),
           eh=False, post="arm_float_flags", extra_phdrs=("\teh_frame_hdr PT_GNU_EH_FRAME FLAGS(4);",)),
    Recipe("arm64-compat", "arm64-compat", "armv7a-linux-gnueabi", cflags=("-mthumb", "-mfloat-abi=soft"),
           eh=False, post="arm_float_flags"),
    Recipe("mips-o32", "mips-o32", "mipsel-linux-gnu", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("mips-o32-be", "mips-o32", "mips-linux-gnu", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("mips-n32", "mips-n32", "mips64el-linux-gnuabin32", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("mips-n32-be", "mips-n32", "mips64-linux-gnuabin32", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("mips-n64", "mips-n64", "mips64el-linux-gnuabi64", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("mips-n64-be", "mips-n64", "mips64-linux-gnuabi64", hash_style="sysv", eh=False, inline_helper=True),
    Recipe("ppc32", "ppc32", "powerpc-linux-gnu", linker="powerpc64le-linux-gnu-ld"),
    Recipe("ppc64", "ppc64", "powerpc64-linux-gnu", asm_entries=True, linker="powerpc64le-linux-gnu-ld"),
    Recipe("ppc64le", "ppc64le", "powerpc64le-linux-gnu"),
    Recipe("ppc64le-gnuld", "ppc64le", "powerpc64le-linux-gnu", linker="powerpc64le-linux-gnu-ld"),
    Recipe("riscv64", "riscv64", "riscv64-linux-gnu", eh=False),
    # lld writes 4-byte .hash words on s390x; GNU ld (not installed here) writes the 8-byte
    # words real s390x images have.  The post-link step rewrites them as GNU ld would.
    Recipe("s390x", "s390x", "s390x-linux-gnu", post="s390x_hash_words"),
    Recipe("loongarch64", "loongarch64", "loongarch64-linux-gnu", cflags=("-mno-lsx",), eh=False),
    Recipe("x86_64-salt", "x86_64", "x86_64-linux-gnu", salt=b"vdsogen-corpus\0"),
]
GOOD_BY_NAME = {r.name: r for r in GOOD}


def _from(origin, name, **changes):
    return replace(GOOD_BY_NAME[origin], name=name, **changes)


FAR = {   # a direct call 1 MiB (or as far as the encoding reaches) past itself
    "x86_64": "call .+0x100000", "arm64": "bl .+0x100000", "ppc64le": "bl .+0x100000",
    "riscv64": "jal ra, .+0x80000", "s390x": "brasl %r14, .+0x100000",
    "loongarch64": ".word 0x54000004",     # bl .+0x100000: LLVM's assembler has no relocation for it
    "mips-o32": "bal .+0x10000\n\tnop", "arm64-compat": "bl .+0x100000", "arm": "bl .+0x100000",
    "i386": "call .+0x100000",
}


def _far_call(abi):
    mode = "\t.thumb\n\t.thumb_func\n" if abi == "arm64-compat" else ""
    return (f"\t.text\n\t.globl vdso_far\n\t.type vdso_far, %function\n{mode}vdso_far:\n\t{FAR[abi]}\n"
            "\t.size vdso_far, .-vdso_far\n")


DEFECTS = [
    # Build flags a vDSO must not have, and toolchain traps.
    _from("x86_64", "x86_64-stack-protector", cflags=("-fstack-protector-all",), defs=False,
          extra_c="int vdso_buf(int n);\nint vdso_buf(int n) { volatile char b[64]; b[n & 63] = 1; return b[0]; }\n",
          expect={"S005": "error", "S001": "error", "R001": "error"}),
    _from("x86_64", "x86_64-pg", cflags=("-pg",), defs=False,
          expect={"S005": "error", "S001": "error", "R001": "error"}),
    _from("x86_64", "x86_64-fentry", cflags=("-pg", "-mfentry"), defs=False,
          expect={"S005": "error", "S001": "error", "R001": "error"}),
    _from("x86_64", "x86_64-sancov", cflags=("-fsanitize-coverage=trace-pc",), defs=False,
          expect={"S005": "error", "S001": "error", "R001": "error"}),
    _from("i386", "i386-udivdi3", defs=False,
          extra_c="unsigned long long vdso_div(unsigned long long a, unsigned long long b);\n"
                  "unsigned long long vdso_div(unsigned long long a, unsigned long long b) { return a / b; }\n",
          expect={"S005": "error", "S001": "error", "R001": "error"}),
    _from("arm", "arm-unwind-tables", cflags=("-marm", "-mfloat-abi=soft", "-funwind-tables"), defs=False,
          expect={"S005": "error", "S001": "error"}),
    _from("arm64", "arm64-shadow-call-stack", cflags=("-ffixed-x18", "-fsanitize=shadow-call-stack"),
          extra_c="long vdso_twice(long a);\nlong vdso_twice(long a) "
                  "{ return vdso_helper(a, 1, 2) + vdso_helper(a, 3, 4); }\n",
          expect={"K003": "error"}),
    _from("arm", "arm-hard-float", cflags=("-marm", "-mfloat-abi=hard"), post=None, expect={"H006": "error"}),
    _from("arm", "arm-soft-float-flag", post=None, expect={"H006": "error"}),
    # Hash tables.
    _from("arm64", "arm64-gnu-hash-only", hash_style="gnu", expect={"X001": "warning", "L002": "warning"}),
    _from("x86_64", "x86_64-sysv-hash-only", hash_style="sysv", expect={"X002": "warning"}),
    _from("s390x", "s390x-lld-hash-words", post=None, expect={"X004": "error", "L001": "error"}),
    # ppc64 ELFv1 from C with lld: .opd, R_PPC64_RELATIVE, and e_flags stamped ELFv2.
    _from("ppc64", "ppc64-lld-opd", asm_entries=False, linker="lld",
          expect={"R004": "error", "R001": "error", "H007": "warning", "C002": "error"}),
    # Exports as plain labels: what ppc64 kernels before ~v6.13 ship.
    _from("ppc64le", "ppc64le-notype", notype=True, expect={"S004": "warning", "L002": "warning"}),
    # Dynamic section.
    _from("x86_64", "x86_64-runpath", ldflags=("-rpath", "/nix/store/vdsogen-corpus/lib", "--enable-new-dtags"),
          expect={"D004": "warning"}),
    _from("x86_64", "x86_64-rpath", ldflags=("-rpath", "/opt/lib", "--disable-new-dtags"),
          expect={"D003": "error"}),
    _from("x86_64", "x86_64-needed", ldflags=("--no-as-needed", "@LIBDUMMY@"), expect={"D003": "error"}),
    _from("x86_64", "x86_64-verneed", ldflags=("@LIBDUMMY@",), defs=False,
          extra_c="int dummy_call(void);\nint vdso_calls_dummy(void);\nint vdso_calls_dummy(void) "
                  "{ return dummy_call(); }\n",
          expect={"D003": "error", "S001": "error", "R001": "error"}),
    _from("x86_64", "x86_64-unversioned", versioned=False,
          expect={"V001": "error", "L001": "error", "L002": "warning"}),
    _from("x86_64", "x86_64-textrel", cflags=("-fno-pic",), ldflags=("-z", "notext"),
          extra_c="extern int vdso_counter;\nint vdso_counter = 1;\nint vdso_read(void);\n"
                  "int vdso_read(void) { return vdso_counter++; }\n", keep_data=True,
          expect={"R001": "error", "C002": "error"}),
    _from("x86_64", "x86_64-rodata-pointer",
          extra_c="int vdso_a(void);\nint vdso_a(void) { return 1; }\n"
                  "__attribute__((used, section(\".rodata\"))) int (*const vdso_table[])(void) = { vdso_a };\n",
          expect={"R001": "error"}),
    _from("x86_64", "x86_64-ifunc",
          extra_c="static int vdso_impl(void) { return 1; }\nstatic void *vdso_resolve(void) "
                  "{ return (void *)vdso_impl; }\nint vdso_ifunc(void) __attribute__((ifunc(\"vdso_resolve\")));\n"
                  "int vdso_use_ifunc(void);\nint vdso_use_ifunc(void) { return vdso_ifunc() + 1; }\n",
          expect={"S007": "error"}),
    _from("x86_64", "x86_64-bss", keep_data=True,
          extra_c="static int vdso_state[64];\nint vdso_touch(int i);\n"
                  "int vdso_touch(int i) { return vdso_state[i & 63]++; }\n",
          expect={"C002": "error", "P004": "error"}),
    # Segments and notes.
    _from("x86_64", "x86_64-writable", load_flags=7, expect={"P007": "error"}),
    _from("x86_64", "x86_64-linked-high", base=0x10000, expect={"P003": "error"}),
    _from("x86_64", "x86_64-eh-frame-no-hdr", eh_phdr=False,
          expect={"P012": "warning"}),
    # GNU ld merges the objects' .note.gnu.property into the 4-byte-aligned .note.
    _from("x86_64", "x86_64-cet-property", cflags=("-fcf-protection=full",), discard=(".comment",),
          linker="x86_64-linux-gnu-ld", ldflags=("-z", "ibt", "-z", "shstk"), expect={"N004": "error"}),
    _from("x86_64", "x86_64-bad-salt", salt=b"unterminated", expect={"N005": "warning"}),
    # Code.
    _from("x86_64", "x86_64-two-pages",
          extra_c="__attribute__((aligned(4096))) int __vdso_far_entry(void);\n"
                  "__attribute__((aligned(4096))) int __vdso_far_entry(void) { return 2; }\n",
          extra_exports=("__vdso_far_entry",), expect={"S006": "warning", "S009": "info"}),
    _from("mips-o32", "mips-o32-local-got", inline_helper=False,
          extra_c="static int vdso_table[4] = {1, 2, 3, 4};\nint vdso_pick(int i);\n"
                  "int vdso_pick(int i) { return vdso_table[i & 3]; }\n",
          expect={"R002": "error"}),
] + [
    _from(base, f"{base}-far-call", extra_s=_far_call(GOOD_BY_NAME[base].abi), expect={"K002": "error"})
    for base in ("x86_64", "i386", "arm64", "arm64-compat", "arm", "ppc64le", "riscv64", "s390x", "loongarch64",
                 "mips-o32")
]

# Quirks of real kernel images (vendor and Debian kernels from 2.6 to 7.2): what
# a libc of the image's era handles is a warning or information under the linux
# profile, today's conventions stay errors under strict.  The version note
# gives the era; `names` the exports a kernel of that era had.
OLD_X86_64 = ("__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_getcpu")
QUIRKS = [
    # Linux 7.x x86 images: an empty PT_GNU_PROPERTY (shadow-stack marking).
    _from("x86_64", "x86_64-7.2-gnu-property", linux=0x070200, extra_phdrs=("\tprop 0x6474e553 FLAGS(4);",),
          expect={"P013": "info"}, strict={"P013": "error"}),
    # Unstripped arm images define empty ARM unwind personality routines.
    _from("arm", "arm-aeabi-stubs", extra_c="".join(
        f"void __aeabi_unwind_cpp_pr{i}(void);\nvoid __aeabi_unwind_cpp_pr{i}(void) {{ }}\n" for i in range(3)),
        expect={}),
    # 2.6 and early 3.x x86_64 vDSOs were linked at 0xffffffffff700000, ppc32's at 0x100000.
    _from("x86_64", "x86_64-2.6-linked-high", base=0xffffffffff700000, linux=0x020620, names=OLD_X86_64,
          expect={"P003": "warning"}, strict={"P003": "error"}),
    _from("ppc32", "ppc32-3.4-linked-high", base=0x100000, linux=0x030400,
          names=("__kernel_clock_gettime", "__kernel_clock_getres", "__kernel_gettimeofday", "__kernel_get_tbfreq",
                 "__kernel_sigtramp32", "__kernel_sigtramp_rt32", "__kernel_time"),
          expect={"P003": "warning"}, strict={"P003": "error"}),
    # i386 before 3.15: no time functions, so only LINUX_2.5.
    _from("i386", "i386-3.10-linux-2.5-only", linux=0x030a00,
          names=("__kernel_vsyscall", "__kernel_sigreturn", "__kernel_rt_sigreturn"),
          expect={"V004": "info"}, strict={"V004": "error"}),
    # A few bytes of .data in a 2.6 image, which nothing writes once mapped.
    _from("x86_64", "x86_64-2.6-data", linux=0x020620, names=OLD_X86_64, keep_data=True,
          extra_c="static int vdso_flag = 1;\nint vdso_get_flag(void);\n"
                  "int vdso_get_flag(void) { return *(volatile int *)&vdso_flag; }\n",
          expect={"C002": "warning"}, strict={"C002": "error"}),
    # powerpc before 2016: `bcl 20,31,.+8` over an inline word (slower, never wrong).
    _from("ppc64le", "ppc64le-4.4-bcl", linux=0x040400,
          names=("__kernel_clock_gettime", "__kernel_clock_getres", "__kernel_gettimeofday", "__kernel_time",
                 "__kernel_getcpu", "__kernel_get_tbfreq", "__kernel_sigtramp_rt64"),
          extra_s="\t.text\n\t.globl vdso_old_anchor\n\t.type vdso_old_anchor, @function\nvdso_old_anchor:\n"
                  "\tbcl 20, 31, .+8\n\t.long 0\n\tmflr 3\n\tblr\n\t.size vdso_old_anchor, .-vdso_old_anchor\n",
          expect={"K001": "warning"}, strict={"K001": "error"}),
]

# Formats of past eras (tests/test_audit_eras.py): patch tables, trampolines with CFI, .data.

def _alternatives(entries):
    """.altinstructions with one entry per (original, replacement) length
    pair, in the 13-byte layout of Linux 4.1-5.12 (with the pad length
    byte); the originals and the replacements are nops."""
    out = ["\t.text", "\t.globl vdso_alt_sites", "\t.type vdso_alt_sites, %function", "vdso_alt_sites:"]
    for n, (ilen, _rlen) in enumerate(entries):
        out += [f"{700 + n}:\t.fill {ilen}, 1, 0x90", f"{800 + n}:"]
    out += ["\tret", "\t.size vdso_alt_sites, .-vdso_alt_sites", '\t.section .altinstr_replacement, "ax"']
    for n, (_ilen, rlen) in enumerate(entries):
        out += [f"{900 + n}:\t.fill {rlen}, 1, 0x90", f"{1000 + n}:"]
    out.append('\t.section .altinstructions, "a"')
    for n, (ilen, rlen) in enumerate(entries):
        out += [f"\t.long {700 + n}b - .", f"\t.long {900 + n}b - .", "\t.word 0x74",
                f"\t.byte {800 + n}b - {700 + n}b", f"\t.byte {1000 + n}b - {900 + n}b", f"\t.byte {ilen - rlen}"]
    return "\n".join(out) + "\n"


# powerpc's rt_sigreturn as QEMU writes it: no `addi r1,r1,128` before `li r0,172; sc`,
# 8 bytes, inside an FDE that marks a signal frame (augmentation "zRS").
QEMU_SIGTRAMP_RT64 = ("\t.text\n\t.balign 4\n\t.globl __kernel_sigtramp_rt64\n"
                      "\t.type __kernel_sigtramp_rt64, @function\n\t.cfi_startproc\n\t.cfi_signal_frame\n"
                      "\tnop\n__kernel_sigtramp_rt64:\n\tli 0, 172\n\tsc\n\t.cfi_endproc\n"
                      "\t.size __kernel_sigtramp_rt64, .-__kernel_sigtramp_rt64\n")
PPC64_NO_SIGTRAMP = ("__kernel_clock_gettime", "__kernel_clock_getres", "__kernel_gettimeofday", "__kernel_time",
                     "__kernel_getcpu", "__kernel_get_tbfreq", "__kernel_sync_dicache")
X86_64_5_4 = OLD_X86_64 + ("__vdso_time", "__vdso_clock_getres")
READ_ONLY_DATA = ("static int vdso_flag = 1;\nint vdso_get_flag(void);\n"
                  "int vdso_get_flag(void) { return *(volatile int *)&vdso_flag; }\n")

ERAS = [
    # Linux 4.1-5.12 x86 images: 13-byte alternatives entries with a pad length byte.
    _from("x86_64", "x86_64-5.4-alternatives", linux=0x050400, names=X86_64_5_4,
          extra_s=_alternatives([(3, 3), (5, 2), (4, 4)]), expect={}),
    # The same table in a 6.1 image: a 5.13-6.1 kernel reads 12-byte entries.
    _from("x86_64", "x86_64-6.1-padlen-alternatives", linux=0x060100, names=X86_64_5_4,
          extra_s=_alternatives([(3, 3), (5, 2), (4, 4)]), expect={"K005": "error"}),
    # QEMU's ppc64 rt_sigreturn: other bytes than Linux's, but signal-frame CFI covers them.
    _from("ppc64le", "ppc64le-sigtramp-cfi", names=PPC64_NO_SIGTRAMP, extra_s=QEMU_SIGTRAMP_RT64,
          extra_exports=("__kernel_sigtramp_rt64",), expect={"T001": "warning"}, strict={"T001": "error"}),
    # A 5.4 riscv64 vendor image: 8 bytes of .data the code only reads.
    _from("riscv64", "riscv64-5.4-read-only-data", linux=0x050400, keep_data=True,
          names=("__vdso_clock_gettime", "__vdso_clock_getres", "__vdso_gettimeofday", "__vdso_getcpu",
                 "__vdso_flush_icache", "__vdso_rt_sigreturn"),
          extra_c=READ_ONLY_DATA, expect={"C002": "warning"}, strict={"C002": "error"}),
    # The same data written by the code: the decoder resolves the store.
    _from("riscv64", "riscv64-data-store", keep_data=True,
          extra_c="static int vdso_flag = 1;\nint vdso_bump(void);\n"
                  "int vdso_bump(void) { return vdso_flag++; }\n", expect={"C002": "error"}),
]

# Quirks whose notes no ELF library walks to the end (pyelftools raises on them):
# built on demand, outside RECIPES, which the reader's oracle test walks whole.
UNPARSEABLE = [
    # Linux 7.2 riscv64 vdso-cfi: an 8-byte-aligned GNU property note (Zicfilp/Zicfiss)
    # between the 4-byte-aligned build-id and version notes; a 4-byte note walk misreads
    # the padding before it and never reaches the version note.
    _from("riscv64", "riscv64-7.2-cfi-notes", linux=0x07020d, extra_c=(
        '__asm__(".pushsection .note.cfi, \\"a\\", %note\\n"\n'
        '        "\\t.balign 8\\n\\t.long 6, 8, 0x100\\n\\t.asciz \\"Linux\\"\\n\\t.balign 4\\n\\t.asciz \\"salt-7.\\"\\n"\n'
        '        "\\t.balign 8\\n\\t.long 4, 16, 5\\n\\t.asciz \\"GNU\\"\\n\\t.long 0xc0000000, 4, 3, 0\\n"\n'
        '        "\\t.popsection");\n'),
        expect={"N003": "error", "N004": "error", "N001": "warning", "N002": "warning"},
        strict={"N003": "error", "N004": "error", "N001": "error", "N002": "error"}),
]

RECIPES = {r.name: r for r in GOOD + DEFECTS + QUIRKS + ERAS}
ALL = {**RECIPES, **{r.name: r for r in UNPARSEABLE}}


# -- sources ---------------------------------------------------------------------------

def exports(recipe):
    """(name, version) of every export: the ABI's core set, what its consumers look
    up at its node, and its trampolines."""
    a = catalogue.get(recipe.abi)
    names = set(a.core)
    for lookups in a.lookups.values():
        names.update(lk.symbol for lk in lookups if lk.version == a.lookup_version)
    tramps = {t[0] for t in a.trampolines}
    if recipe.abi == "i386":
        tramps.add("__kernel_vsyscall")
    out = []
    for n in sorted(names | tramps):
        if recipe.names is not None and n not in recipe.names:
            continue
        version = "LINUX_2.5" if recipe.abi == "i386" and n.startswith("__kernel_") else a.lookup_version
        out.append((n, version))
    return out


def version_script_names(recipe):
    a = catalogue.get(recipe.abi)
    return exports(recipe) + [(n, a.lookup_version) for n in recipe.extra_exports]


def c_source(recipe):
    a = catalogue.get(recipe.abi)
    tramps = {t[0] for t in a.trampolines} | ({"__kernel_vsyscall"} if recipe.abi == "i386" else set())
    helper = ("static inline __attribute__((always_inline))" if recipe.inline_helper
              else "static __attribute__((noinline))")
    lines = ["/* A vDSO-shaped test image for vdsogen's audit corpus. */",
             f"{helper} long vdso_helper(long a, long b, long k)",
             "{", "\treturn a * 3 + (b ^ k);", "}", ""]
    if not recipe.asm_entries:
        for i, (name, _v) in enumerate(exports(recipe)):
            if name in tramps:
                continue
            c_name = f"vdso_impl_{i}" if recipe.notype else name
            attr = '__attribute__((visibility("hidden"))) ' if recipe.notype else ""
            lines += [f"{attr}long {c_name}(long a, long b);", f"{attr}long {c_name}(long a, long b)",
                      "{", f"\treturn vdso_helper(a, b, {i + 1});", "}", ""]
    return "\n".join(lines) + recipe.extra_c


def _words(a, words):
    if a.name == "i386":
        raw = b"".join(w.to_bytes(4, "little") for w in words)
        return "\t.byte " + ", ".join(f"0x{b:02x}" for b in raw)
    if a.name == "arm64":
        return "\t.inst " + ", ".join(f"0x{w:08x}" for w in words)
    return "\t.long " + ", ".join(f"0x{w:08x}" for w in words)


RETURN = {"ppc64": "li 3, 0\n\tblr", "ppc64le": "li 3, 0\n\tblr"}


def asm_source(recipe):
    a = catalogue.get(recipe.abi)
    out = ["\t.text"]
    tramps = dict((t[0], t[2]) for t in a.trampolines)
    if recipe.abi == "i386":
        tramps["__kernel_vsyscall"] = None
    for name, _v in exports(recipe):
        if name not in tramps and not (recipe.asm_entries or recipe.notype):
            continue
        out += ["\t.balign 4", f"\t.globl {name}"]
        if not recipe.notype:
            out.append(f"\t.type {name}, %function")
        out.append(f"{name}:")
        if name == "__kernel_vsyscall":
            out.append("\t.byte 0xcd, 0x80, 0xc3")          # int $0x80; ret
        elif name in tramps:
            out.append(_words(a, tramps[name]))
        elif recipe.asm_entries:
            out.append("\t" + RETURN[recipe.abi])
        else:
            out.append(f"\tb vdso_impl_{[n for n, _ in exports(recipe)].index(name)}")
        if not recipe.notype:
            out.append(f"\t.size {name}, .-{name}")
    out += _notes(recipe)
    return "\n".join(out) + "\n" + recipe.extra_s


def _notes(recipe):
    lines = ['\t.section .note.Linux, "a", %note', "\t.balign 4", "\t.long 6, 4, 0", '\t.asciz "Linux"',
             "\t.balign 4", f"\t.long 0x{recipe.linux:06x}", "\t.balign 4"]
    if recipe.salt is not None:
        desc = ", ".join(f"0x{b:02x}" for b in recipe.salt) or "0"
        lines += [f"\t.long 6, {len(recipe.salt)}, 0x100", '\t.asciz "Linux"', "\t.balign 4",
                  f"\t.byte {desc}" if recipe.salt else "", "\t.balign 4"]
    return lines


def linker_script(recipe):
    a = catalogue.get(recipe.abi)
    mips = a.machine == EM_MIPS
    phdrs = ["\tabiflags 0x70000003;"] if mips else []
    phdrs += [f"\ttext PT_LOAD FLAGS({recipe.load_flags}) FILEHDR PHDRS;", "\tdynamic PT_DYNAMIC FLAGS(4);",
              "\tnote PT_NOTE FLAGS(4);"]
    if recipe.eh and recipe.eh_phdr:
        phdrs.append("\teh_frame_hdr PT_GNU_EH_FRAME FLAGS(4);")
    phdrs += list(recipe.extra_phdrs)
    secs = [f"\t. = 0x{recipe.base:x} + SIZEOF_HEADERS;"]
    if mips:
        secs.append("\t.MIPS.abiflags : { *(.MIPS.abiflags) } :text :abiflags")
    secs.append("\t.hash : { *(.hash) } :text")
    if recipe.post == "s390x_hash_words" or (recipe.abi == "s390x"):
        secs.append("\t.hashpad : { BYTE(0); . = ALIGN(8); . += 0x3f8; } :text")
    secs += ["\t.gnu.hash : { *(.gnu.hash) }", "\t.dynsym : { *(.dynsym) }", "\t.dynstr : { *(.dynstr) }",
             "\t.gnu.version : { *(.gnu.version) }", "\t.gnu.version_d : { *(.gnu.version_d) }",
             "\t.gnu.version_r : { *(.gnu.version_r) }",
             "\t.note : { *(.note.*) } :text :note", "\t.dynamic : { *(.dynamic) } :text :dynamic",
             "\t.rodata : { *(.rodata .rodata.*) } :text", "\t.got : { *(.got .got.* .toc) } :text"]
    if recipe.eh:
        secs += ["\t.eh_frame_hdr : { *(.eh_frame_hdr) } :text" + (" :eh_frame_hdr" if recipe.eh_phdr else ""),
                 "\t.eh_frame : { KEEP (*(.eh_frame)) } :text"]
    secs.append("\t.text : { *(.text .text.*) } :text")
    if recipe.keep_data:
        secs += ["\t.data : { *(.data .data.*) } :text", "\t.tdata : { *(.tdata .tdata.*) } :text",
                 "\t.tbss : { *(.tbss .tbss.*) } :text", "\t.bss : { *(.bss .bss.* COMMON) } :text"]
    discard = list(recipe.discard) + ([] if recipe.keep_data else [".data", ".data.*", ".bss", ".bss.*",
                                                                   ".sdata", ".sbss", "COMMON"])
    if not recipe.eh:
        discard += [".eh_frame", ".eh_frame_hdr"]
    secs.append("\t/DISCARD/ : { *(" + " ".join(discard) + ") }")
    script = "PHDRS\n{\n" + "\n".join(phdrs) + "\n}\n\nSECTIONS\n{\n" + "\n".join(secs) + "\n}\n"
    if recipe.versioned:
        nodes = {}
        for name, version in version_script_names(recipe):
            nodes.setdefault(version, []).append(name)
        body = []
        for i, (node, names) in enumerate(sorted(nodes.items(), reverse=True)):
            local = "\tlocal: *;\n" if i == 0 else ""
            body.append(f"\t{node} {{\n\tglobal:\n" + "".join(f"\t\t{n};\n" for n in names) + local + "\t};")
        script += "\nVERSION\n{\n" + "\n".join(body) + "\n}\n"
    return script


# -- post-link steps ---------------------------------------------------------------------

def arm_float_flags(path):
    """Clear EF_ARM_ABI_FLOAT_SOFT, as Linux's post-link step does for ARM vDSOs."""
    data = bytearray(path.read_bytes())
    img = ElfImage(path, bytes(data))
    flags = EHDR.unpack(data, EI_NIDENT, img.elf_class, img.endian).e_flags
    EHDR.update_into(data, EI_NIDENT, img.elf_class, img.endian, e_flags=flags & ~EF_ARM_ABI_FLOAT_SOFT)
    path.write_bytes(bytes(data))


def s390x_hash_words(path):
    """Rewrite lld's 4-byte .hash words as the 8-byte words s390x consumers read, in
    the space the linker script reserved after .hash (.hashpad)."""
    data = bytearray(path.read_bytes())
    img = ElfImage(path, bytes(data))
    sec, pad = img.section(".hash"), img.section(".hashpad")
    words = struct.unpack_from(f">{sec.size // 4}I", data, sec.offset)
    assert pad.offset == sec.offset + sec.size and pad.size >= sec.size, "no room for 8-byte words"
    struct.pack_into(f">{len(words)}Q", data, sec.offset, *words)
    # .hash: sh_size and sh_entsize; .hashpad gives up the bytes it lent.
    SHDR.update_into(data, sec.hdr_offset, 64, "big", sh_size=2 * sec.size, sh_entsize=8)
    SHDR.update_into(data, pad.hdr_offset, 64, "big", sh_addr=pad.addr + sec.size, sh_offset=pad.offset + sec.size,
                     sh_size=pad.size - sec.size)
    path.write_bytes(bytes(data))


POST = {"arm_float_flags": arm_float_flags, "s390x_hash_words": s390x_hash_words}


# -- building ---------------------------------------------------------------------------

def _require(program):
    if shutil.which(program) is None:
        raise RuntimeError(f"{program}: not found (scripts/setup.sh installs it); the corpus needs it")


def _libdummy(workdir):
    """A shared library with a versioned function, for DT_NEEDED and DT_VERNEED."""
    lib = workdir / "libdummy.so"
    if not lib.exists():
        (workdir / "dummy.c").write_text("int dummy_call(void);\nint dummy_call(void) { return 7; }\n")
        (workdir / "dummy.map").write_text("DUMMY_1 { global: dummy_call; local: *; };\n")
        _run([CLANG, "--target=x86_64-linux-gnu", "-fPIC", "-shared", "-nostdlib", f"--ld-path={LLD}",
              f"-Wl,--version-script={workdir / 'dummy.map'}", "-Wl,-soname=libdummy.so",
              str(workdir / "dummy.c"), "-o", str(lib)])
    return lib


def _run(argv):
    _require(argv[0])
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"corpus build failed: {' '.join(argv)}\n{proc.stdout}{proc.stderr}")


def build(recipe, workdir):
    """Build one recipe into workdir/NAME.so and return the path."""
    workdir = Path(workdir)
    src = workdir / recipe.name
    src.mkdir(parents=True, exist_ok=True)
    (src / "vdso.c").write_text(c_source(recipe))
    (src / "entry.S").write_text(asm_source(recipe))
    (src / "vdso.lds").write_text(linker_script(recipe))
    a = catalogue.get(recipe.abi)
    out = workdir / f"{recipe.name}.so"
    linker = LLD if recipe.linker == "lld" else f"/usr/bin/{recipe.linker}"
    _require(LLD if recipe.linker == "lld" else recipe.linker)
    unwind = ("-fasynchronous-unwind-tables",) if recipe.eh else ("-fno-asynchronous-unwind-tables",
                                                                   "-fno-unwind-tables")
    if any(f in recipe.cflags for f in ("-funwind-tables",)):
        unwind = ()
    ldflags = []
    for f in recipe.ldflags:
        ldflags.append(str(_libdummy(workdir)) if f == "@LIBDUMMY@" else f)
    argv = [CLANG, f"--target={recipe.triple}", "-O2", "-fPIC", "-ffreestanding", "-fno-builtin",
            "-fno-stack-protector", "-fno-jump-tables", "-nostdlib", "-shared", *unwind, *recipe.cflags]
    if a.machine == EM_MIPS:
        argv += ["-G0"]
    argv += [f"--ld-path={linker}", f"-Wl,-T,{src / 'vdso.lds'}", f"-Wl,--hash-style={recipe.hash_style}",
             "-Wl,--build-id=sha1", f"-Wl,-soname={recipe.soname or a.sonames[0]}", "-Wl,-z,noexecstack"]
    if recipe.defs:
        argv.append("-Wl,-z,defs")
    if recipe.eh and recipe.eh_phdr:
        argv.append("-Wl,--eh-frame-hdr")
    argv += [f"-Wl,{f}" for f in ldflags]
    sources = [src / "entry.S"]
    if not recipe.asm_entries or recipe.extra_c:
        sources.insert(0, src / "vdso.c")
    argv += [str(s) for s in sources] + ["-o", str(out)]
    _run(argv)
    if recipe.post:
        POST[recipe.post](out)
    return out


class Corpus:
    """Built images by recipe name, each built once; `many` builds in parallel."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.cache = {}
        _libdummy(self.workdir)

    def __call__(self, name):
        if name not in self.cache:
            self.cache[name] = build(ALL[name], self.workdir)
        return self.cache[name]

    def many(self, names):
        todo = [n for n in names if n not in self.cache]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for name, path in zip(todo, pool.map(lambda n: build(RECIPES[n], self.workdir), todo)):
                self.cache[name] = path
        return {n: self.cache[n] for n in names}


_SHARED = []


def shared(tmp_path_factory):
    """The session's one Corpus, whichever test module asks first.  Test modules
    wrap it in their own `corpus` fixture: corpus(name) -> path,
    corpus.many(names) -> {name: path}."""
    if not _SHARED:
        images = Corpus(tmp_path_factory.mktemp("corpus"))
        images.many(list(RECIPES))          # all at once, one build per CPU
        _SHARED.append(images)
    return _SHARED[0]
