"""arm64's cpucap numbers by Linux version (vdsogen/harness/alternatives.toml).

A cap's number is its index among the names of arch/arm64/tools/cpucaps
(gen-cpucaps.awk); these are the numbers of the caps a vDSO is built with,
read from Debian's linux-source packages of each version (6.12.117,
7.2.13, 7.3.4): the row the table picks for an image of that version must give them.
"""

import pytest

from vdsogen.harness import alternatives

# version: {cap: number}, from that version's arch/arm64/tools/cpucaps.
FACTS = {
    (6, 12, 117): {"HAS_ECV": 19, "HAS_FPSIMD": 25},
    (7, 2, 13): {"HAS_ECV": 19, "HAS_FPSIMD": 26},
    (7, 3, 4): {"HAS_ECV": 20, "HAS_FPSIMD": 27},
}


@pytest.mark.parametrize("version", sorted(FACTS))
def test_the_row_of_each_version_numbers_its_caps_as_linux(version):
    _, names = alternatives.facts()["arm64"].names(version)
    assert {name: number for number, name in names.items()} == FACTS[version]
