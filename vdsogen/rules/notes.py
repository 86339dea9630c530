"""Note rules."""

from vdsogen.rules import rule

NT_GNU_BUILD_ID = 3


@rule("N001", "error", "a Linux version note (\"Linux\", type 0, 4-byte LINUX_VERSION_CODE) must be present",
      """Linux emits it in every vDSO; older glibc read the kernel version
      from it.""", strict="error")
def linux_note(ctx):
    if not any(n.name == "Linux" and n.type == 0 and len(n.desc) == 4 for n in ctx.image.notes):
        yield "PT_NOTE", "no Linux version note"


@rule("N002", "error", "a GNU build-id note must be present: debuggers fetch the unstripped image by it")
def build_id(ctx):
    if not any(n.name == "GNU" and n.type == NT_GNU_BUILD_ID and n.desc for n in ctx.image.notes):
        yield "PT_NOTE", "no GNU build-id note"
