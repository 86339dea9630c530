"""s390x in clock mode NONE (issue 19, point 1): the test build (its TOD
read swapped for the injected counter) runs in the harness, so its
mode_none.trap checks run there (tests/test_mode_first.py): the harness
reads the TOD clock itself, not through the image's counter fragment, which
a test build does not have.  The TOD steering check has nothing to check
there and says so.
"""

import io

from conftest import build_broken, expected_checks, run_broken
from vdsogen.build.toolchain import Builder
from vdsogen.harness.driver import build_harness
from vdsogen.spec.model import load_target


def test_test_build_runs_every_check_but_the_steering(tmp_path):
    """The test build's harness compiles and passes every check of the real
    build's but the TOD steering, which it names as not checked."""
    real = load_target("s390x")
    test = real.test_build()
    image = build_broken(test, tmp_path / "image", {})
    harness = build_harness(test, tmp_path / "h", Builder(test, stream=io.StringIO()))
    status, outcome, out = run_broken(test, harness, image)
    assert status == 0 and outcome.failed == {}, out
    assert set(expected_checks(real)) - set(outcome.passed) == {"tod_steering"}, out
    assert "# tod_steering: a test build's counter is injected, without TOD steering: not checked" in out
