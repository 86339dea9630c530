"""`vdsogen bench`: how fast an image answers, next to the running kernel's vDSO.

run.py builds the image (unless one is given) and the harness, runs the
harness's benchmark (harness/bench.c) pinned to one CPU, in interleaved
batches, and reports every export and clock class: ns per call (median and
quartiles over the rounds) through the image, through the running kernel's
own vDSO and through the raw syscall, the ordered counter read alone as the
floor, and the image's ratio to each per round.  hotpath.py counts the
instructions of each export's hot path in the image, in the kernel's vDSO
and in real Linux images of the same ABI; results.py reads the harness's
lines and renders the table or the JSON document.  A benchmark, never a
test: nothing here passes or fails a figure.
"""

from vdsogen.bench.run import run_bench

__all__ = ["run_bench"]
