"""The rule engine shared by `vdsogen check` and `vdsogen audit`.

A rule is one small function with a stable ID, a severity per profile, a
one-line reason and a longer explanation (`vdsogen rules ID`).  It receives
a Context and yields (where, message) pairs; the engine turns them into
findings with the severity the profile gives.  IDs never change meaning.

Severity follows harm to the consumers of the image's own era (the Linux
its version note names, vdsogen.audit.era): a rule may yield a third item,
a lower severity for this finding, where the image only departs from
today's conventions (a fixed link address from before Linux 5.11, a note
walk that still reaches the Linux version note).  `strict` and vdsogen's
own images (check) keep the rule's severity; `relief` says when it is
lowered, for `vdsogen rules ID`.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vdsogen.elf.reader import ElfImage, Unreadable
from vdsogen.errors import ImageError

if TYPE_CHECKING:
    from vdsogen.spec.abi import Abi

# What a rule yields for each finding: (where, message), or (where, message,
# the lower severity the image's era allows, None for none).
Findings = Iterator[tuple[str, str] | tuple[str, str, str | None]]
RuleFunc = Callable[["Context"], "Findings | None"]

PROFILES = ("linux", "qemu-user", "strict")
SEVERITIES = ("error", "warning", "info")
PROFILE_HELP = {
    "linux": "what Linux itself and the libraries that use its vDSO require (default)",
    "qemu-user": "QEMU's linux-user loader: it maps one writable PT_LOAD at 0 and relocates it itself",
    "strict": "every warning is an error",
}
# Expect fields `vdsogen audit` fills from the ABI catalogue; a rule that
# needs anything else compares with a target spec and runs in check only.
AUDIT_FIELDS = {"abi", "elf_class", "endian", "machine", "soname", "versions", "flags", "trampolines",
                "abi_info", "page_size"}


def worse(a: str, b: str) -> str:
    return a if SEVERITIES.index(a) <= SEVERITIES.index(b) else b


def _lesser(a: str, b: str) -> str:
    return a if SEVERITIES.index(a) >= SEVERITIES.index(b) else b


@dataclass(frozen=True)
class Rule:
    id: str
    severity: dict            # profile -> "error" | "warning" | "info"
    reason: str
    explain: str
    func: RuleFunc = field(compare=False, repr=False)
    needs: tuple = ()         # Expect attributes the rule compares against
    check: str | None = None  # severity when a vdsogen-built image is checked against its spec
    relief: str = ""          # when a finding gets a lower severity (the image's era, harmless forms)

    def applies(self, expect: Expect) -> bool:
        return all(getattr(expect, n) is not None for n in self.needs)

    @property
    def in_audit(self) -> bool:
        return set(self.needs) <= AUDIT_FIELDS

    def severity_for(self, profile: str, generated: bool = False) -> str:
        sev = self.severity[profile]
        return worse(sev, self.check) if generated and self.check else sev


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    where: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "severity": self.severity, "where": self.where, "message": self.message}


@dataclass(frozen=True)
class Expect:
    """What an image should be: from a target spec (check) or a detected ABI (audit).

    None means "not known": rules that need it do not run.
    """
    abi: str | None = None
    elf_class: int | None = None
    endian: str | None = None
    machine: int | None = None
    soname: str | tuple | None = None  # the soname, or every soname the ABI allows
    versions: tuple | None = None      # version node names
    exports: dict | None = None        # name -> (version, binding); the exact set
    trampolines: tuple | None = None   # (name, lead words, words[, bytes of words unwinders match])
    counter_words: tuple | None = None  # the counter read's instruction words (not in a test build)
    page_size: int | None = None
    data_pages: int | None = None
    flags: tuple | None = None         # vdsogen.spec.abi.FlagRule constraints on e_flags
    abi_info: Abi | None = None        # core entry points, consumers' lookups
    abi_problem: str | None = None     # why no catalogue ABI fits the image
    generated: bool = False            # a vdsogen-built image checked against its spec
    layout_note: str | None = None     # what its data-pages note must say (DataPages.note)
    layout_not_own: str | None = None  # why the spec's layout is not vdsogen's of that name


@dataclass
class Context:
    image: ElfImage
    expect: Expect
    profile: str = "linux"
    cache: dict = field(default_factory=dict)   # results rules share (consumer verdicts)

    @property
    def era(self) -> tuple[int, ...] | None:
        """(major, minor, sublevel) from the image's Linux version note, or None."""
        if "era" not in self.cache:
            from vdsogen.audit.era import version_of
            self.cache["era"] = version_of(self.image)
        return self.cache["era"]

    def before(self, since: str) -> bool:
        """True when the image's note names a Linux older than `since` ("5.11")."""
        from vdsogen.audit.era import parse
        return self.era is not None and self.era < parse(since)


REGISTRY: dict[str, Rule] = {}


def rule(rule_id: str, severity: str, reason: str, explain: str = "", needs: Iterable[str] = (),
         check: str | None = None, relief: str = "", **profiles: str) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule.  `profiles` override the severity, e.g. qemu_user="info";
    `check` raises it for vdsogen's own images checked against their spec;
    `relief` says when a finding is given a lower severity."""
    def register(func: RuleFunc) -> RuleFunc:
        if rule_id in REGISTRY:
            raise ValueError(f"rule {rule_id} registered twice")
        sev = {p: severity for p in PROFILES}
        for key, value in profiles.items():
            sev[key.replace("_", "-")] = value
        if sev["strict"] == "warning":
            sev["strict"] = "error"
        REGISTRY[rule_id] = Rule(rule_id, sev, reason, _dedent(explain) or reason, func, tuple(needs), check,
                                 _dedent(relief))
        return func
    return register


def _dedent(text: str) -> str:
    lines = text.strip().splitlines()
    if not lines:
        return ""
    return lines[0].strip() + ("\n" + textwrap.dedent("\n".join(lines[1:])) if len(lines) > 1 else "")


def all_rules() -> list[Rule]:
    _load()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def get_rule(rule_id: str) -> Rule | None:
    _load()
    return REGISTRY.get(rule_id.upper())


def _load() -> None:
    # Rule modules register themselves on import.
    for module in ("code", "consumers", "dynamic", "hashes", "header", "notes", "patches", "sections", "segments",
                   "symbols", "target", "versions"):
        importlib.import_module(f"vdsogen.audit.rules.{module}")


def run(ctx: Context, only: Iterable[str] | None = None) -> list[Finding]:
    """All findings for one image, in rule order."""
    out = []
    for r in all_rules():
        if only is not None and r.id not in only:
            continue
        if not r.applies(ctx.expect):
            continue
        sev = r.severity_for(ctx.profile, ctx.expect.generated)
        keep = ctx.profile == "strict" or ctx.expect.generated
        try:
            for where, message, *lowered in r.func(ctx) or ():
                low = lowered[0] if lowered and not keep else None
                out.append(Finding(r.id, sev if low is None else _lesser(sev, low), where, message))
        except Unreadable as err:
            # A structure the rule had to follow is damaged: the file is unusable.
            raise ImageError(ctx.image.path, str(err), err.offset) from None
    return out

