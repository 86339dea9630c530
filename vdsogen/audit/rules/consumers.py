"""Consumer rules: what glibc, musl, the Go runtime and a DT_HASH-only parser
make of the image (vdsogen.consumers simulates their lookups)."""

from vdsogen.audit.consumers import Verdict, simulate
from vdsogen.audit.rules import Context, Findings, rule


def verdicts(ctx: Context) -> list[Verdict]:
    """Per-consumer verdicts, computed once per image."""
    if "consumers" not in ctx.cache:
        ctx.cache["consumers"] = simulate(ctx.image, ctx.expect.abi_info)
    return ctx.cache["consumers"]


@rule("L001", "error", "no consumer may crash, hang or call the wrong address on the image",
      """Simulates how glibc, musl, the Go runtime and a DT_HASH-only parser
      find their entry points: the PT_LOAD each takes the base from, where
      each reads PT_DYNAMIC, the hash table each walks, the symbol types and
      versions each accepts.  A read outside the mapped image, a chain that
      never ends, a documented crash (Go without DT_VERDEF, glibc's PT_TLS
      assertion) or an entry point whose address is not its code breaks
      every program that uses that consumer.""", needs=("abi_info",))
def consumer_breaks(ctx: Context) -> Findings:
    for v in verdicts(ctx):
        if v.verdict == "breaks":
            yield v.consumer, f"{v.title} breaks: {v.reason}"


@rule("L002", "warning", "every consumer should find the entry points the image defines for it",
      """A consumer that cannot find an entry point the image defines (musl
      without DT_HASH, a FUNC-only reader and STT_NOTYPE exports, a broken
      hash chain, a version node it cannot match) silently falls back to the
      syscall: the program works, slower.""", needs=("abi_info",))
def consumer_misses(ctx: Context) -> Findings:
    for v in verdicts(ctx):
        if v.verdict == "breaks":
            continue
        for r in v.lookups:
            if r.status == "missed":
                yield v.consumer, f"{v.title} misses {r.symbol}@{r.version}: {r.detail}"
