"""`vdsogen check`: the rule engine plus the target spec's own expectations."""

import json
import sys

from vdsogen.audit import rules
from vdsogen.spec import abi
from vdsogen.elf.reader import ElfImage
from vdsogen.errors import ImageError


def expect_from_target(target):
    """Everything the spec promises; the consumers' lookups come from the ABI
    catalogue entry of the same name, when there is one."""
    exports = {name: (version, binding) for name, version, binding in target.symbols()}
    return rules.Expect(
        abi=target.name, elf_class=target.elf.elf_class, endian=target.elf.endian,
        machine=target.elf.machine, soname=target.soname, versions=target.versions,
        exports=exports,
        trampolines=tuple((t.name, t.lead, t.words) for t in target.trampolines),
        page_size=target.datapage.page_size, data_pages=target.datapage.pages,
        flags=(abi.FlagRule(0xFFFFFFFF, (target.elf.flags,), f"0x{target.elf.flags:x} as the spec says"),),
        abi_info=abi.get(target.name), generated=True)


def check_image(target, path, profile="linux"):
    image = ElfImage(path)
    return rules.run(rules.Context(image, expect_from_target(target), profile))


def errors(findings):
    return [f for f in findings if f.severity == "error"]


def build_validator(target, so, dbg):
    """Error lines for a freshly built image (stripped and unstripped)."""
    out = []
    for path in (so, dbg):
        out += [format_finding(f, path) for f in errors(check_image(target, path))]
    return out


def format_finding(f, path=None):
    prefix = f"{path}: " if path else ""
    return f"{prefix}{f.rule} {f.severity:<7} {f.where}: {f.message}"


def print_report(path, findings, fmt="text", stream=None, extra=None):
    stream = stream or sys.stdout
    if fmt == "json":
        doc = {"file": str(path), "status": "checked", "error": None, "findings": [f.as_dict() for f in findings],
               "errors": len(errors(findings)),
               "warnings": sum(f.severity == "warning" for f in findings)}
        doc.update(extra or {})
        json.dump(doc, stream, indent=2)
        stream.write("\n")
        return
    for f in findings:
        print(format_finding(f, path), file=stream)
    n_err = len(errors(findings))
    n_warn = sum(f.severity == "warning" for f in findings)
    print(f"{path}: {n_err} error(s), {n_warn} warning(s)", file=stream)


def print_unusable(path, err, stream=None):
    """The JSON document for an image that cannot be read: as `audit
    --format=json` reports one (status "unusable", the error and its offset)."""
    from vdsogen.audit.run import error_message
    doc = {"file": str(path), "status": "unusable",
           "error": {"message": error_message(err), "offset": err.offset},
           "findings": [], "errors": 0, "warnings": 0}
    stream = stream or sys.stdout
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def check_file(target, path, fmt="text"):
    """Exit status: 0 clean, 1 errors, 2 unusable (ImageError, which the
    command line reports; with --format=json a document is printed too)."""
    try:
        findings = check_image(target, path)
    except ImageError as err:
        if fmt != "json" or err.path != str(path):
            raise
        print_unusable(path, err)
        print(f"vdsogen: {err}", file=sys.stderr)
        return 2
    print_report(path, findings, fmt)
    return 1 if errors(findings) else 0
