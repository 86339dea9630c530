"""The rule engine shared by `vdsogen check` and `vdsogen audit`.

A rule is one small function with a stable ID, a severity per profile, a
one-line reason and a longer explanation (`vdsogen rules ID`).  It receives
a Context and yields (where, message) pairs; the engine turns them into
findings with the severity the profile gives.  IDs never change meaning.
"""

from dataclasses import dataclass, field

from vdsogen.elf import Unreadable
from vdsogen.errors import ImageError

PROFILES = ("linux", "qemu-user", "strict")
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    id: str
    severity: dict            # profile -> "error" | "warning" | "info"
    reason: str
    explain: str
    func: object = field(compare=False, repr=False)
    needs: tuple = ()         # Expect attributes the rule compares against

    def applies(self, expect):
        return all(getattr(expect, n) is not None for n in self.needs)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    where: str
    message: str

    def as_dict(self):
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
    soname: str | None = None
    versions: tuple | None = None      # version node names
    exports: dict | None = None        # name -> (version, binding); the exact set
    trampolines: tuple | None = None   # (name, lead words, words)
    page_size: int | None = None
    data_pages: int | None = None


@dataclass
class Context:
    image: object               # vdsogen.elf.ElfImage
    expect: Expect
    profile: str = "linux"


REGISTRY = {}


def rule(rule_id, severity, reason, explain="", needs=(), **profiles):
    """Register a rule.  `profiles` override the severity, e.g. qemu_user="info"."""
    def register(func):
        if rule_id in REGISTRY:
            raise ValueError(f"rule {rule_id} registered twice")
        sev = {p: severity for p in PROFILES}
        for key, value in profiles.items():
            sev[key.replace("_", "-")] = value
        if sev["strict"] == "warning":
            sev["strict"] = "error"
        REGISTRY[rule_id] = Rule(rule_id, sev, reason, explain.strip() or reason, func, tuple(needs))
        return func
    return register


def all_rules():
    _load()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def get_rule(rule_id):
    _load()
    return REGISTRY.get(rule_id.upper())


def _load():
    # Rule modules register themselves on import.
    from vdsogen.rules import code, dynamic, header, notes, segments, symbols, target, versions  # noqa: F401


def run(ctx, only=None):
    """All findings for one image, in rule order."""
    out = []
    for r in all_rules():
        if only is not None and r.id not in only:
            continue
        if not r.applies(ctx.expect):
            continue
        sev = r.severity[ctx.profile]
        try:
            for where, message in r.func(ctx) or ():
                out.append(Finding(r.id, sev, where, message))
        except Unreadable as err:
            # A structure the rule had to follow is damaged: the file is unusable.
            raise ImageError(ctx.image.path, str(err), err.offset) from None
    return out


def where_offset(offset):
    return f"@0x{offset:x}"
