"""PT_GNU_STACK where Linux has one: its 7.2 images of the x86 ABIs carry a
PT_GNU_STACK header, read-write, never executable (and an empty
PT_GNU_PROPERTY: no .note.gnu.property, so no IBT or shadow-stack bits).
A spec asks for the header with `[elf] gnu_stack = true`."""

import pytest

from conftest import TARGETS
from vdsogen.elf.consts import PF_R, PF_W, PF_X, PT_GNU_STACK
from vdsogen.elf.reader import ElfImage
from vdsogen.spec.model import load_target


@pytest.mark.parametrize("name", TARGETS)
def test_gnu_stack_header_as_the_spec_says(built, name):
    target, so, _ = built(name)
    stacks = [s for s in ElfImage(so).segments if s.type == PT_GNU_STACK]
    if load_target(name).elf.gnu_stack:
        assert len(stacks) == 1, f"{name}: no PT_GNU_STACK"
        assert stacks[0].flags == PF_R | PF_W and not stacks[0].flags & PF_X
        assert stacks[0].filesz == stacks[0].memsz == 0
    else:
        assert not stacks, f"{name}: a PT_GNU_STACK its spec does not ask for"


def test_the_x86_specs_ask_for_it():
    assert all(load_target(n).elf.gnu_stack for n in ("x86_64", "i386", "x32"))
