"""What a benchmark run measured: the harness's lines read, summarised and shown.

The harness (harness/bench.c) prints, besides its "ok"/"#" lines:

    bench.cpu N                 the CPU it pinned itself to
    bench.data live|synthetic   where the image's time page came from
    bench.agree LINE ok|off: …  the image and the kernel agree on LINE
    bench.note TEXT             anything worth telling
    bench.live FILE N bytes     the kernel's vDSO, dumped for counting
    bench LINE WAY NS NS …      ns per call of each round, one line per (LINE, WAY)

LINE is "function" or "function:CLASS" ("clock_gettime:MONOTONIC"), or
"counter:READ" for an ordered counter read; WAY is image, live, syscall or
counter (the batch method: the answer stored where nothing aliases it and
never read), or image.caller and live.caller (the caller method: the answer
in the caller's frame, read back after every call).  Nothing here judges a
figure: a benchmark is never a test.
"""

import statistics
from dataclasses import dataclass, field

from vdsogen.spec import functions

WAYS = ("image", "live", "syscall", "counter", "image.caller", "live.caller")


@dataclass(frozen=True)
class Spread:
    """Median and spread of some samples."""

    median: float
    q1: float
    q3: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values):
        v = sorted(values)
        if not v:
            raise ValueError("no samples")
        if len(v) == 1:
            return cls(v[0], v[0], v[0], v[0], v[0], 1)
        q = statistics.quantiles(v, n=4, method="inclusive")
        return cls(statistics.median(v), q[0], q[2], v[0], v[-1], len(v))

    def as_dict(self):
        return {"median": self.median, "q1": self.q1, "q3": self.q3, "min": self.low, "max": self.high,
                "n": self.n}


@dataclass
class Line:
    name: str                                   # harness's LINE
    samples: dict = field(default_factory=dict)  # way -> [ns per call, one per round]

    @property
    def function(self):
        return self.name.partition(":")[0]

    @property
    def what(self):
        return self.name.partition(":")[2]

    @property
    def is_counter(self):
        return self.function == "counter"

    @property
    def is_floor(self):
        return self.function in ("counter", "call")

    @property
    def reads_counter(self):
        """A call whose answer comes from the counter: the floor is the read alone
        (functions.toml: a hot path of one counter read, on a row of a counter clock)."""
        f = functions.get(self.function)
        bench = f.harness.bench if f and f.harness else None
        return bench is not None and bench.reads_counter(self.what)

    @property
    def label(self):
        if self.name == "call:empty":
            return "empty call"
        if self.is_counter:
            return self.what.replace(";", "; ").replace("_", " ")
        return f"{self.function}({self.what})" if self.what else self.function

    def spread(self, way):
        return Spread.of(self.samples[way]) if way in self.samples else None

    def ratio(self, num="image", den="live"):
        """Spread of the per-round ratios num/den: each pair ran back to back."""
        a, b = self.samples.get(num), self.samples.get(den)
        if not a or not b:
            return None
        return Spread.of([x / y for x, y in zip(a, b) if y > 0])


@dataclass
class Run:
    lines: list = field(default_factory=list)
    cpu: int | None = None
    data: str | None = None
    agree: dict = field(default_factory=dict)   # line -> "ok" or what was off
    notes: list = field(default_factory=list)
    live_dump: str | None = None

    def line(self, name):
        for ln in self.lines:
            if ln.name == name:
                return ln
        return None

    @property
    def floors(self):
        """The empty call, then the ordered counter reads (the first is the one the image uses)."""
        return [ln for ln in self.lines if ln.is_floor]

    @property
    def counter_floor(self):
        return next((ln for ln in self.lines if ln.is_counter), None)

    @property
    def calls(self):
        return [ln for ln in self.lines if not ln.is_floor]


def parse(text):
    """A Run from the harness's output; lines it does not know are ignored."""
    run = Run()
    for raw in text.splitlines():
        words = raw.split()
        if not words:
            continue
        tag = words[0]
        if tag == "bench" and len(words) >= 4 and words[2] in WAYS:
            try:
                values = [float(w) for w in words[3:]]
            except ValueError:
                continue
            ln = run.line(words[1])
            if ln is None:
                ln = Line(words[1])
                run.lines.append(ln)
            ln.samples[words[2]] = values
        elif tag == "bench.cpu" and len(words) == 2:
            try:
                run.cpu = int(words[1])
            except ValueError:
                pass
        elif tag == "bench.data" and len(words) == 2:
            run.data = words[1]
        elif tag == "bench.agree" and len(words) >= 3:
            run.agree[words[1]] = raw.split(None, 2)[2]
        elif tag == "bench.note":
            run.notes.append(raw.partition(" ")[2])
        elif tag == "bench.live" and len(words) >= 2:
            run.live_dump = words[1]
    return run


# -- showing it -----------------------------------------------------------------------

def _fmt(x):
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 1000 else f"{x:.1f}" if x >= 100 else f"{x:.2f}"


def _cell(s):
    return "-" if s is None else f"{_fmt(s.median)} [{_fmt(s.q1)}-{_fmt(s.q3)}]"


def _ratio_cell(s):
    return "-" if s is None else f"{s.median:.3f} [{s.q1:.3f}-{s.q3:.3f}]"


@dataclass
class HotPaths:
    """Hot-path instruction counts: columns (label, path or None), rows (call, {label: count})."""

    columns: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def table(header, run, hot):
    """The text report: timings with their spread and ratios, then the hot paths."""
    out = list(header)
    has = {w: any(w in ln.samples for ln in run.calls) for w in ("image", "live", "syscall")}
    cols = [("image", "generated"), ("live", "live kernel"), ("syscall", "syscall")]
    cols = [(w, t) for w, t in cols if has[w]]
    floor = run.counter_floor
    rows = [["call", *(t for _, t in cols)]]
    if has["live"]:
        rows[0].append("gen/live")
    caller = any("image.caller" in ln.samples for ln in run.calls)
    if caller:
        rows[0].append("caller gen/live")
    if floor:
        rows[0].append("gen/floor")
    for ln in run.calls:
        r = [ln.label, *(_cell(ln.spread(w)) for w, _ in cols)]
        if has["live"]:
            r.append(_ratio_cell(ln.ratio("image", "live")))
        if caller:
            r.append(_ratio_cell(ln.ratio("image.caller", "live.caller")))
        if floor:
            r.append(_ratio_cell(_floor_ratio(ln, floor)) if ln.reads_counter else "")
        rows.append(r)
    out += _columns(rows)
    if run.floors:
        out.append("")
        out.append("floors: an empty call through the same loop; the ordered counter read alone (under the "
                   "counter clocks; the first is the image's):")
        out += _columns([[f"  {ln.label}", _cell(ln.spread("counter"))] for ln in run.floors])
    for name, what in run.agree.items():
        if what != "ok":
            out.append(f"warning: the image and the kernel disagree on {name}: {what}")
    for note in run.notes:
        out.append(f"note: {note}")
    if hot and hot.rows:
        out.append("")
        out.append("hot path, instructions (fewest from entry to return, counter read once or never, no syscall):")
        rows = [["call", *(c[0] for c in hot.columns)]]
        for call, counts in hot.rows:
            rows.append([call, *("-" if counts.get(c[0]) is None else str(counts[c[0]]) for c in hot.columns)])
        out += _columns(rows)
        for label, path in hot.columns[1:]:
            if path and label != "live kernel":
                out.append(f"  {label}: {path}")
        out += [f"note: {n}" for n in hot.notes]
    return "\n".join(out) + "\n"


def _floor_ratio(ln, floor):
    a, b = ln.samples.get("image"), floor.samples.get("counter")
    if not a or not b:
        return None
    return Spread.of([x / y for x, y in zip(a, b) if y > 0])


def _columns(rows):
    widths = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(max(len(r) for r in rows))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def document(meta, run, hot):
    """The JSON document (a dict): meta, then every line with every way's samples and spread."""
    floor = run.counter_floor
    lines = []
    for ln in run.lines:
        d = {"line": ln.name, "call": ln.label, "ways": {}}
        for way, values in ln.samples.items():
            d["ways"][way] = {**Spread.of(values).as_dict(), "samples": values}
        r = ln.ratio("image", "live")
        if r:
            d["image_over_live"] = r.as_dict()
        r = ln.ratio("image.caller", "live.caller")
        if r:
            d["caller_image_over_live"] = r.as_dict()
        if floor and ln.reads_counter and "image" in ln.samples:
            f = _floor_ratio(ln, floor)
            if f:
                d["image_over_floor"] = f.as_dict()
        if ln.name in run.agree:
            d["agree"] = run.agree[ln.name]
        lines.append(d)
    out = {**meta, "cpu": run.cpu, "data": run.data, "floor": floor.name if floor else None,
           "lines": lines, "notes": run.notes}
    if hot:
        out["hot_path"] = {"columns": [{"label": c[0], "path": c[1]} for c in hot.columns],
                           "rows": [{"call": call, "counts": counts} for call, counts in hot.rows],
                           "notes": hot.notes}
    return out


__all__ = ["parse", "Run", "Line", "Spread", "HotPaths", "table", "document"]
