"""Reliability figures, measured by hand (not a test: it takes minutes).

    .venv/bin/python scripts/reliability.py [--rounds N] [--kills N] [--spec-mutations N] [--seed S]

  concurrent  N rounds of two `vdsogen build` of different requests
              started together into one --out: a round fails when a build
              exits non-zero, or what is left is not a whole image `check`
              accepts, or temporaries are left behind
  kills       N builds killed with SIGKILL at a random moment: what is left
              must be a whole image `check` accepts or no image, and the
              next build must succeed and leave no temporary behind
  specs       N random line-level mutations of the shipped specs and layouts,
              each loaded and rendered in-process: every failure must be a
              SpecError naming a file (no other exception)

It prints one line per part and exits 1 if any part saw a failure.
"""

import argparse
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vdsogen.errors import SpecError  # noqa: E402

VDSOGEN = [sys.executable, "-m", "vdsogen"]


def build(out, *extra):
    return subprocess.Popen([*VDSOGEN, "build", "--arch=x86_64", f"--out={out}", *extra], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def whole(out):
    """None when out holds a whole image `check` accepts, else what is wrong."""
    so = out / "vdso.so"
    if not so.is_file() or not (out / "vdso.so.dbg").is_file():
        return "vdso.so or vdso.so.dbg missing"
    proc = subprocess.run([*VDSOGEN, "check", "--arch=x86_64", str(so)], cwd=ROOT, capture_output=True, text=True)
    return None if proc.returncode == 0 else f"check: {proc.stdout.strip().splitlines()[-1]}"


def temporaries(out):
    return [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def concurrent(work, rounds, rng):
    out = work / "concurrent"
    bad = []
    for r in range(rounds):
        emits = [rng.choice([(), ("--emit=c",), ("--emit=c,lds-offsets",)]) for _ in range(2)]
        procs = [build(out, *e) for e in emits]
        errs = [p.communicate()[1] for p in procs]
        why = [f"exit {p.returncode}: {e.strip()[-200:]}" for p, e in zip(procs, errs) if p.returncode != 0]
        why += [w for w in (whole(out),) if w] + [f"left {t}" for t in temporaries(out)]
        if why:
            bad.append(f"round {r}: {'; '.join(why)}")
    return bad


def kills(work, count, rng):
    bad = []
    for k in range(count):
        out = work / f"kill{k % 4}"
        proc = build(out, rng.choice(["--emit=c", "--emit=lds-offsets"]))
        time.sleep(rng.uniform(0.05, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        so = out / "vdso.so"
        if so.exists() and (w := whole(out)):
            bad.append(f"kill {k}: a half image left: {w}")
        again = build(out)
        err = again.communicate()[1]
        if again.returncode != 0:
            bad.append(f"kill {k}: the next build failed: {err.strip()[-200:]}")
        elif (w := whole(out)) or temporaries(out):
            bad.append(f"kill {k}: after the next build: {w or ''} {temporaries(out)}")
    return bad


VALUES = ["-1", "0", "1", "4095", "99999999999", "true", '"x"', "[]", "{}", "1.5"]


def mutate(text, rng):
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    kind = rng.choice(["drop", "dup", "swap", "value", "garble", "key"])
    line = lines[i]
    if kind == "drop":
        del lines[i]
    elif kind == "dup":
        lines.insert(i, line)
    elif kind == "swap" and len(lines) > 1:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "value" and "=" in line:
        key = line.split("=", 1)[0]
        lines[i] = f"{key}= {rng.choice(VALUES)}\n"
    elif kind == "garble":
        pos = rng.randrange(len(line)) if line else 0
        lines[i] = line[:pos] + rng.choice(["[", "]", "\"", "=", "\x00", "\xe9", "#", "{"]) + line[pos + 1:]
    elif kind == "key" and "=" in line:
        lines[i] = "bogus" + line
    return "".join(lines)


def specs(work, count, rng):
    from vdsogen.gen.render import sources
    from vdsogen.spec.model import list_targets, load_target

    names = list_targets()
    layouts = sorted((ROOT / "specs" / "layouts").glob("*.toml"))
    bad, errors = [], 0
    for n in range(count):
        d = work / f"specs{n}"
        (d / "layouts").mkdir(parents=True)
        name = rng.choice(names)
        shutil.copy(ROOT / "specs" / f"{name}.toml", d)
        for lay in layouts:
            shutil.copy(lay, d / "layouts")
        victim = rng.choice([d / f"{name}.toml", d / "layouts" / rng.choice(layouts).name])
        victim.write_text(mutate(victim.read_text(), rng))
        try:
            sources(load_target(name, d))
        except SpecError as e:
            errors += 1
            if str(d) not in str(e) and "vdsogen/" not in str(e):
                bad.append(f"mutation {n} ({victim.name}): an error that names no file: {e}")
        except Exception as e:      # noqa: BLE001 - the point is to catch any other kind
            bad.append(f"mutation {n} ({victim.name}): {type(e).__name__}: {e}")
        shutil.rmtree(d)
    return bad, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--kills", type=int, default=67)
    ap.add_argument("--spec-mutations", type=int, default=419)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    failed = False
    with tempfile.TemporaryDirectory(prefix="vdsogen-reliability-") as tmp:
        work = Path(tmp)
        t = time.monotonic()
        bad = concurrent(work, a.rounds, rng)
        print(f"concurrent  {a.rounds - len(bad)}/{a.rounds} rounds clean ({time.monotonic() - t:.0f} s)")
        t = time.monotonic()
        bad2 = kills(work, a.kills, rng)
        print(f"kills       {a.kills - len(bad2)}/{a.kills} kills clean ({time.monotonic() - t:.0f} s)")
        t = time.monotonic()
        bad3, errors = specs(work, a.spec_mutations, rng)
        print(f"specs       {a.spec_mutations - len(bad3)}/{a.spec_mutations} mutations clean, {errors} of them "
              f"refused with a SpecError ({time.monotonic() - t:.0f} s)")
        for line in bad + bad2 + bad3:
            print(f"  {line}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
