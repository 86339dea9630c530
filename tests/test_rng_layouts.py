"""s390's getrandom where the CPU lacks the vector facility (issue 21): as
Linux, the syscall."""

import io
import re

from conftest import build_broken
from vdsogen.harness.driver import run_tests_full
from vdsogen.spec.model import load_target


def _run(target, tmp_path, **kw):
    out = io.StringIO()
    status, outcome = run_tests_full(target, workdir=tmp_path, stream=out, **kw)
    return status, outcome, out.getvalue()


# qemu's CPU without the vector facility (facility 129) or its extensions.
NO_VECTOR = "max,vx=off,vxeh=off,vxeh2=off"
# Where the getrandom entry tests the facility (arch/s390/entry.S.j2).
CHECK = "\t.ifc\t\\cfunc, vdso_c_getrandom\n\tvector_or_syscall\n"


def test_s390x_without_the_vector_facility_takes_the_syscall(tmp_path):
    """As Linux: the query answers -ENOSYS and every call is the syscall's,
    where a vector instruction would raise an exception; with the facility
    check taken out of the entry, the ChaCha20 kills the harness."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "s390x.toml").write_text(f'extends = "s390x"\n\n[toolchain]\nqemu_cpu = "{NO_VECTOR}"\n')
    target = load_target("s390x", specs)
    status, outcome, output = _run(target, tmp_path / "w")
    assert "returned -38, want 0" in outcome.failed.get("getrandom.query", ""), output
    assert "killed by signal" not in output, output
    # Every other check passes; getrandom's own fail only as the syscall's random answers do.
    assert all(name.startswith("getrandom.") for name in outcome.failed), outcome.failed
    assert "getrandom.fork" in outcome.passed and "getrandom.map" in outcome.passed, output

    unchecked = CHECK.replace("\tvector_or_syscall\n", "")
    broken = build_broken(target, tmp_path / "broken", {"entry.S": [(CHECK, unchecked)]})
    status, outcome, output = _run(target, tmp_path / "b", image=broken)
    assert status != 0 and re.search(r"FAIL getrandom\.\w+: killed by signal", output), output
