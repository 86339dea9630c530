"""The conventions every command follows (README.rst, "Command-line conventions"):
results on stdout and progress on stderr, --format=json with a versioned
schema, KTAP from `test`, -q and -v, one exit-status table, help for every
option, `list` that reports bad specs and goes on."""

import argparse
import json
import re
import shutil

import pytest

from conftest import ROOT, vdsogen
from test_harness_timeout import wrong_number
from vdsogen import cli
from vdsogen.harness.driver import Outcome


def _json(text, schema):
    doc = json.loads(text)
    assert doc["schema"] == schema, doc.get("schema")
    return doc


# --- help and exit statuses --------------------------------------------------

def _subparsers(p):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_option_has_help():
    missing = []
    for name, sub in _subparsers(cli.parser()).items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, "options without help text: " + ", ".join(missing)


def test_readme_has_one_exit_status_table_for_every_command():
    text = (ROOT / "README.rst").read_text()
    section = text[text.index("Command-line conventions"):]
    table = section[section.index("Exit status, the same for every command"):]
    rows = re.findall(r"(?m)^(\d\S*)\s{2,}", table.split("\n\n")[1])
    assert rows[:3] == ["0", "1", "2"], rows
    for name in _subparsers(cli.parser()):
        assert f"vdsogen {name}" in text, f"README.rst does not show `vdsogen {name}`"


MISSING = [
    ("build", "--arch=x86_64", "--out={tmp}/out", "--specs=/nonexistent"),
    ("build", "--arch=x86_64", "--out={tmp}/out", "--kconfig=/nonexistent"),
    ("list", "--specs=/nonexistent"),
    ("test", "--arch=x86_64", "--image=/nonexistent"),
    ("run", "--arch=x86_64", "--image=/nonexistent", "--", "true"),
    ("bench", "--arch=x86_64", "--image=/nonexistent"),
    ("check", "--arch=x86_64", "/nonexistent"),
    ("audit", "/nonexistent"),
    ("diff", "/nonexistent", "/nonexistent2"),
]


@pytest.mark.parametrize("argv", MISSING, ids=lambda a: " ".join(a[:1] + a[-1:]))
def test_a_missing_file_is_status_2(argv, tmp_path, capsys):
    status = cli.main([a.format(tmp=tmp_path) for a in argv])
    captured = capsys.readouterr()
    assert status == 2, captured
    assert "/nonexistent" in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


def test_usage_errors_are_status_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["build", "--arch=x86_64"])
    assert e.value.code == 2
    assert cli.main(["rules", "Z999"]) == 2
    assert cli.main(["test", "--arch=x86_64", "--bench", "--format=json"]) == 2
    assert "--bench" in capsys.readouterr().err


# --- build: progress on stderr, -q, -v, JSON -----------------------------------

def test_build_progress_goes_to_stderr(tmp_path):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    tags = [line.split()[0] for line in proc.stderr.splitlines()]
    # vdso.c, note.S, then getrandom's vdso-getrandom.c and chacha20.S.
    assert list(dict.fromkeys(tags)) == ["GEN", "CC", "AS", "LD", "OBJCOPY", "CHECK"], proc.stderr
    assert tags.count("CC") == 2 and tags.count("AS") >= 2, proc.stderr


def test_build_quiet_and_verbose(tmp_path):
    quiet = vdsogen("build", "-q", "--arch=x86_64", f"--out={tmp_path / 'q'}", env={"V": "1"})
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == "", quiet
    verbose = vdsogen("build", "-v", "--arch=x86_64", f"--out={tmp_path / 'v'}")
    assert verbose.returncode == 0 and verbose.stdout == "", verbose
    assert "clang-19 --target=x86_64-linux-gnu" in verbose.stderr and "  CC " not in verbose.stderr


def test_build_json_says_what_was_written_and_skipped(tmp_path):
    first = vdsogen("build", "--arch=x86_64,arm", f"--out={tmp_path}", "--format=json")
    assert first.returncode == 0, first.stderr
    doc = _json(first.stdout, "vdsogen-build/1")
    assert [(t["target"], t["status"]) for t in doc["targets"]] == [("x86_64", "built"), ("arm", "built")]
    assert doc["targets"][0]["outputs"] == [str(tmp_path / "x86_64" / n) for n in ("vdso.so.dbg", "vdso.so")]
    assert "  CC " in first.stderr
    again = vdsogen("build", "--arch=x86_64,arm", f"--out={tmp_path}", "--format=json")
    doc = _json(again.stdout, "vdsogen-build/1")
    assert [t["status"] for t in doc["targets"]] == ["up to date", "up to date"] and again.stderr == ""


# --- list, rules, check, audit, diff: JSON ----------------------------------------

def test_list_json(capsys):
    assert cli.main(["list", "--format=json"]) == 0
    doc = _json(capsys.readouterr().out, "vdsogen-list/1")
    x86 = next(t for t in doc["targets"] if t["name"] == "x86_64")
    assert x86["versions"] == ["LINUX_2.6"] and x86["spec"].endswith("specs/x86_64.toml")
    assert doc["bad"] == []


@pytest.fixture
def specs_with_bad_ones(tmp_path):
    d = tmp_path / "specs"
    d.mkdir()
    for name in ("x86_64", "arm"):
        shutil.copy(ROOT / "specs" / f"{name}.toml", d)
    (d / "broken.toml").write_text("this is [ not toml\n")
    (d / "nobase.toml").write_text('extends = "no-such-spec"\n')
    return d


def test_list_reports_bad_specs_and_goes_on(specs_with_bad_ones, capsys):
    assert cli.main(["list", f"--specs={specs_with_bad_ones}"]) == 1
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()] == ["arm", "x86_64"], out
    errs = err.splitlines()
    assert any(e.startswith(f"vdsogen: {specs_with_bad_ones / 'broken.toml'}: invalid TOML") for e in errs), err
    assert any(e.startswith(f"vdsogen: {specs_with_bad_ones / 'nobase.toml'}: extends") for e in errs), err
    assert "Traceback" not in err

    assert cli.main(["list", f"--specs={specs_with_bad_ones}", "--format=json"]) == 1
    doc = _json(capsys.readouterr().out, "vdsogen-list/1")
    assert [t["name"] for t in doc["targets"]] == ["arm", "x86_64"]
    assert sorted(b["target"] for b in doc["bad"]) == ["broken", "nobase"]
    assert all(b["file"].startswith(str(specs_with_bad_ones)) and b["message"] for b in doc["bad"])


def test_rules_json(capsys):
    assert cli.main(["rules", "--format=json"]) == 0
    doc = _json(capsys.readouterr().out, "vdsogen-rules/1")
    ids = [r["id"] for r in doc["rules"]]
    assert "H001" in ids and len(ids) == len(set(ids)) > 20
    assert set(doc["rules"][0]["severity"]) == set(doc["profiles"])
    assert cli.main(["rules", "H001", "--format=json"]) == 0
    one = _json(capsys.readouterr().out, "vdsogen-rules/1")
    assert [r["id"] for r in one["rules"]] == ["H001"] and one["rules"][0]["explain"]


def test_check_audit_diff_name_their_schema(built, capsys):
    _t, so, _dbg = built("x86_64")
    assert cli.main(["check", "--arch=x86_64", str(so), "--format=json"]) == 0
    doc = _json(capsys.readouterr().out, "vdsogen-check/1")
    assert doc["schema_version"] == 1
    assert cli.main(["audit", str(so), "--format=json"]) == 0
    _json(capsys.readouterr().out, "vdsogen-audit/1")
    assert cli.main(["diff", str(so), str(so), "--format=json"]) == 0
    _json(capsys.readouterr().out, "vdsogen-diff/1")


def test_check_quiet_keeps_errors_and_the_counts(built, capsys):
    _t, so, _dbg = built("x86_64")
    assert cli.main(["check", "-q", "--arch=x86_64", str(so)]) == 0
    out = capsys.readouterr().out
    assert out == f"{so}: 0 error(s), 0 warning(s), 0 info (profile linux)\n", out


# --- test: JSON, KTAP, -q ----------------------------------------------------

def _outcome(lines):
    o = Outcome()
    for line in lines:
        o.feed(line)
    return o


def test_ktap_lines():
    o = _outcome(["# vdsogen harness", "ok map", "FAIL syscall_numbers: clock_gettime is 229",
                  "not run counter: syscall_numbers failed", "0 passed, 1 failed, 1 not run"])
    o.layout = "# layout: linux-6.17-x86"
    assert cli._ktap(1, o).splitlines() == [
        "KTAP version 1",
        "1..3",
        "# layout: linux-6.17-x86",
        "ok 1 map",
        "not ok 2 syscall_numbers # clock_gettime is 229",
        "not ok 3 counter # not run: syscall_numbers failed",
        "# 1 passed, 1 failed, 1 not run; exit 1",
    ]


@pytest.fixture(scope="module")
def good_image(built):
    return built("x86_64")[1]


def test_test_json_and_ktap_of_a_good_image(good_image, tmp_path, capsys):
    argv = ["test", "--arch=x86_64", f"--image={good_image}", f"--workdir={tmp_path}"]
    assert cli.main([*argv, "--format=json"]) == 0
    out, err = capsys.readouterr()
    doc = _json(out, "vdsogen-test/1")
    assert doc["exit_code"] == 0 and doc["layout"].startswith("layout: ")
    assert doc["totals"]["passed"] == len(doc["checks"]) > 50 and doc["totals"]["failed"] == 0
    assert {"name": "map", "result": "passed", "message": ""} in doc["checks"]
    assert "  HOSTCC " in err

    assert cli.main([*argv, "--format=ktap"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["KTAP version 1", f"1..{len(doc['checks'])}"]
    results = [ln for ln in lines if not ln.startswith("#")][2:]
    assert results == [f"ok {n} {c['name']}" for n, c in enumerate(doc["checks"], 1)]


def test_test_quiet_prints_only_failures_and_the_summary(good_image, tmp_path, capsys):
    assert cli.main(["test", "-q", "--arch=x86_64", f"--image={good_image}", f"--workdir={tmp_path}"]) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(r"\d+ passed, 0 failed\n", out), out
    assert err == ""


def test_test_json_and_ktap_of_a_run_a_failure_stops(catalogue_copy, tmp_path, capsys):
    wrong_number(catalogue_copy, "x86_64", "clock_gettime", 229)
    argv = ["test", "--arch=x86_64", f"--workdir={tmp_path}"]
    assert cli.main([*argv, "--format=json"]) == 1
    doc = _json(capsys.readouterr().out, "vdsogen-test/1")
    by_name = {c["name"]: c for c in doc["checks"]}
    assert by_name["syscall_numbers"]["result"] == "failed"
    assert "229 in the spec" in by_name["syscall_numbers"]["message"]
    assert by_name["counter"] == {"name": "counter", "result": "not run", "message": "syscall_numbers failed"}
    assert doc["totals"]["failed"] == 1 and doc["totals"]["not_run"] >= 3 and doc["exit_code"] == 1

    assert cli.main([*argv, "--format=ktap"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"(?m)^not ok \d+ syscall_numbers # clock_gettime is 229 in the spec", out), out
    assert re.search(r"(?m)^not ok \d+ counter # not run: syscall_numbers failed$", out), out
    assert "SKIP" not in out


def test_bench_json_names_its_schema(good_image, capsys):
    status = cli.main(["bench", "--arch=x86_64", f"--image={good_image}", "--rounds=1", "--batch-us=50",
                       "--format=json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = _json(out, "vdsogen-bench/1")
    assert doc["target"] == "x86_64" and doc["lines"]
    assert "  HOSTCC " in err


@pytest.mark.parametrize("makeflags, silent", [("s", True), ("rRs", True), ("s -j2 --no-print-directory", True),
                                               ("-j2", False), ("", False), ("--no-print-directory", False),
                                               (" --jobserver-auth=3,4", False)])
def test_make_s_silences_the_progress_lines(makeflags, silent):
    """Under `make -s` (MAKEFLAGS "s..."), as kbuild's quiet=silent_, no progress lines."""
    from vdsogen.build.toolchain import make_silent
    assert make_silent({"MAKEFLAGS": makeflags}) == silent


def test_build_under_make_s_prints_nothing(tmp_path):
    proc = vdsogen("build", "--arch=x86_64", f"--out={tmp_path}", env={"MAKEFLAGS": "s"})
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stdout + proc.stderr
