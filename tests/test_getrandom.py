"""getrandom: every target that exports it passes the harness's getrandom
checks (harness/checks-getrandom.c: the query, output and state to the
byte against a reference ChaCha20, rekeying, the fallbacks, a racing
writer of the generation, fork, two states), and each way of getting it
wrong fails the check that names it; a spec that asks for getrandom where
the arch or the layout cannot give it is refused, naming file and key."""

import re

import pytest

from conftest import TARGETS, build_broken, harness_target, run_broken, vdsogen
from vdsogen.isa import arm64, loongarch, powerpc, riscv, s390, x86
from vdsogen.spec.model import load_target

GETRANDOM_TARGETS = [t for t in TARGETS if "getrandom" in {e.impl for e in load_target(t).exports}]
CHECKS = [f"getrandom.{c}" for c in ("query", "map", "keystream", "lengths", "rekey", "fallback", "race", "fork",
                                     "states")]


@pytest.mark.parametrize("name", GETRANDOM_TARGETS)
def test_every_getrandom_check_passes(name, good_runs):
    status, outcome, output, _ = good_runs(name)
    for check in CHECKS:
        assert check in outcome.passed, f"{check}:\n{output}"


def test_the_linux_abis_export_it_as_linux_does():
    """The names and version nodes of Linux 7.2's images (Debian's; x86_64 also the weak alias)."""
    want = {"x86_64": ("__vdso_getrandom", "LINUX_2.6", ["getrandom"]),
            "arm64": ("__kernel_getrandom", "LINUX_2.6.39", []),
            "ppc32": ("__kernel_getrandom", "LINUX_2.6.15", []),
            "ppc64": ("__kernel_getrandom", "LINUX_2.6.15", []),
            "ppc64le": ("__kernel_getrandom", "LINUX_2.6.15", []),
            "s390x": ("__kernel_getrandom", "LINUX_2.6.29", []),
            "riscv64": ("__vdso_getrandom", "LINUX_4.15", []),
            "loongarch64": ("__vdso_getrandom", "LINUX_5.10", [])}
    assert sorted(GETRANDOM_TARGETS) == sorted(want)
    for name, (export, version, aliases) in want.items():
        e = next(e for e in load_target(name).exports if e.impl == "getrandom")
        assert (e.name, e.version, [a.name for a in e.aliases]) == (export, version, aliases)
        assert all(a.binding == "weak" for a in e.aliases)


# (target, what is broken) -> (edits of the rendered sources, {check: words of its FAIL line}[, the other
# getrandom checks it may fail too]); no other getrandom check fails.
BREAKAGES = {
    ("x86_64", "rounds"): (  # 18 rounds of ChaCha instead of 20
        {"chacha20.S": [("movl\t$10, %eax", "movl\t$9, %eax")]},
        {"getrandom.keystream": "RFC 8439", "getrandom.lengths": "ChaCha20 of the state's key",
         "getrandom.fallback": "ChaCha20 of the state's key"}),
    ("x86_64", "no-wipe"): (  # the batch handed out but left in the state
        {"vdso_getrandom.h": [("\t\t__builtin_memset(src, 0, sizeof(w));\n", ""), ("*src++ = 0;", "src++;")]},
        {"getrandom.lengths": "used bytes must be zero", "getrandom.fallback": "used bytes must be zero"}),
    ("x86_64", "key-kept"): (  # the refill makes the batch only: the key that made the output stays
        {"vdso_getrandom.h": [("__arch_chacha20_blocks_nostack(st->batch_key, st->key, counter,\n"
                               "\t\t\t\t\t       sizeof(st->batch_key) / VDSO_CHACHA_BLOCK);",
                               "{ uint32_t k[8]; __builtin_memcpy(k, st->key, 32); "
                               "__arch_chacha20_blocks_nostack(st->batch_key, st->key, counter, 2); "
                               "__builtin_memcpy(st->key, k, 32); }")]},
        {"getrandom.lengths": "old key is still there", "getrandom.fallback": "old key is still there"},
        {"getrandom.race"}),
    ("x86_64", "no-rekey"): (  # the generation never compared: a new state keeps its zero key
        {"vdso_getrandom.h": [("unlikely(st->generation != gen)", "unlikely(st->generation != gen && 0)")]},
        {"getrandom.rekey": "a new state"}, {"getrandom.race", "getrandom.fork", "getrandom.states"}),
    ("x86_64", "any-flags"): (  # flags it does not know answered in user space
        {"vdso_getrandom.h": [("flags & ~(VDSO_GRND_NONBLOCK | VDSO_GRND_RANDOM | VDSO_GRND_INSECURE)", "0")]},
        {"getrandom.fallback": "an unknown flag"}),
    ("x86_64", "unready"): (  # bytes from a generator the kernel has not seeded yet
        {"vdso_getrandom.h": [(" || !READ_ONCE(rng->is_ready)", "")]},
        {"getrandom.fallback": "not ready"}),
    ("x86_64", "reentered"): (  # a state in use (a signal handler's caller) used again
        {"vdso_getrandom.h": [("if (unlikely(READ_ONCE(st->in_use)))\n\t\tgoto syscall;\n", "")]},
        {"getrandom.fallback": "a state in use"}),
    ("x86_64", "straddle"): (  # a state across two pages accepted
        {"vdso_getrandom.h": [("return -VDSO_EFAULT;", "goto syscall;")]},
        {"getrandom.fallback": "-EFAULT"}),
    ("x86_64", "private"): (  # states mapped MAP_PRIVATE: a fork copies the key and the batch
        {"vdso_getrandom.h": [("VDSO_MAP_DROPPABLE | VDSO_MAP_ANONYMOUS;", "0x02 | VDSO_MAP_ANONYMOUS;")]},
        {"getrandom.query": "MAP_DROPPABLE", "getrandom.fork": "the parent's bytes"}),
}


@pytest.mark.parametrize("name,case", sorted(BREAKAGES), ids=[f"{n}-{c}" for n, c in sorted(BREAKAGES)])
def test_a_broken_getrandom_fails_its_check(name, case, harnesses, tmp_path):
    edits, fails, *also = BREAKAGES[name, case]
    target = harness_target(name)
    image = build_broken(target, tmp_path / "image", edits)
    status, outcome, output = run_broken(target, harnesses(name), image)
    assert status == 1, output
    for check, words in fails.items():
        assert check in outcome.failed and words in outcome.failed[check], f"{check} did not fail:\n{output}"
    others = {c for c in outcome.failed if c.startswith("getrandom.")} - set(fails)
    assert others <= (also[0] if also else set()), output


def spec_dir(tmp_path, text):
    d = tmp_path / "specs"
    d.mkdir()
    (d / "t.toml").write_text(text)
    return d


def test_an_arch_without_chacha_cannot_export_it(tmp_path):
    d = spec_dir(tmp_path, 'extends = "arm"\n\n[[export]]\nname = "__vdso_getrandom"\nimpl = "getrandom"\n')
    proc = vdsogen("build", f"--specs={d}", "--arch=t", f"--out={tmp_path / 'out'}")
    assert proc.returncode == 2
    assert re.search(r"t\.toml: export\[0\]\.impl: the core's getrandom calls the arch's chacha fragment "
                     r"\(chacha20\.S\.j2\), and arch/arm/contract\.toml does not provide it", proc.stderr), proc.stderr


def test_a_layout_without_the_rng_page_cannot_serve_it(tmp_path):
    d = spec_dir(tmp_path, 'extends = "x86_64"\n\n[datapage]\nlayout = "linux-5.6-x86"\npages = 4\n'
                           'tick_nsec = 4000000\n')
    proc = vdsogen("build", f"--specs={d}", "--arch=t", f"--out={tmp_path / 'out'}")
    assert proc.returncode == 2
    assert re.search(r"t\.toml: export\[\d\]: __vdso_getrandom reads the rng page, and layout linux-5\.6-x86 "
                     r"\(.*linux-5\.6-x86\.toml\) has no rng page", proc.stderr), proc.stderr


# (ISA module, instruction bytes as the image holds them, what stack_store says: None for no stack
# store, else the mask of the general registers stored), from Linux's and vdsogen's images.
STACK_STORES = [
    (x86, "53", 0),                                   # push %rbx
    (x86, "f30f7f0c24", 0),                           # movdqu %xmm1,(%rsp)
    (x86, "f3440f7f07", None),                        # movdqu %xmm8,(%rdi)
    (x86, "c5fa7f4424f0", 0),                         # vmovdqu %xmm0,-0x10(%rsp)
    (x86, "e800000000", 0),                           # call: the return address
    (arm64, "fd7bbfa9", 1 << 29 | 1 << 30),           # stp x29, x30, [sp, #-16]!
    (arm64, "0020004c", None),                        # st1 {v0.16b-v3.16b}, [x0]
    (arm64, "e00f803d", 0),                           # str q0, [sp, #48]
    (powerpc, "28ffa1f8", 1 << 5),                    # std r5,-216(r1) (ppc64le)
    (powerpc, "04000392", None),                      # stw r16,4(r3)
    (riscv, "22e0", 1 << 8),                          # c.sdsp s0,0(sp)
    (riscv, "2334a100", 1 << 10),                     # sd a0,8(sp)
    (riscv, "2320b500", None),                        # sw a1,0(a0)
    (loongarch, "7700c029", 1 << 23),                 # st.d $s0,$sp,0
    (s390, "eb6ff0300024", 0),                        # stmg %r6,%r15,48(%r15)
    (s390, "e33040000024", None),                     # stg %r3,0(%r4)
]


@pytest.mark.parametrize("isa,raw,want", STACK_STORES, ids=[f"{m.__name__.split('.')[-1]}-{r}" for m, r, _ in
                                                            STACK_STORES])
def test_stack_store_decoders(isa, raw, want):
    order = "big" if isa is s390 else "little"
    assert isa.ISA.stack_store(bytes.fromhex(raw), None, order) == want
