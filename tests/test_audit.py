"""`vdsogen audit` and `vdsogen rules` as a user runs them, the JSON schema,
the live vDSO, and the consumer simulation (glibc, musl, Go, DT_HASH-only)."""

import json
import os
import platform

import pytest

from conftest import ROOT, vdsogen
import corpus as corpus_images
from elfmut import Mutant
from vdsogen.audit import rules
from vdsogen.spec import abi
from vdsogen.audit.report import SCHEMA_VERSION
from vdsogen.audit.run import audit_live, audit_path, live_bytes
from vdsogen.elf.consts import STB_LOCAL
from vdsogen.elf.reader import ElfImage


HOST_ABI = {"x86_64": "x86_64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x",
            "riscv64": "riscv64", "loongarch64": "loongarch64", "i686": "i386"}


def verdicts(report):
    return {c.consumer: c.verdict for c in report.consumers}


def lookup(report, consumer, symbol):
    c = next(c for c in report.consumers if c.consumer == consumer)
    return next(r for r in c.lookups if r.symbol == symbol)


# -- the command line ---------------------------------------------------------------

def test_audit_text_report(built):
    _t, so, dbg = built("x86_64")
    proc = vdsogen("audit", str(so), str(dbg))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert f"{so}: ABI x86_64 (detected)" in proc.stdout
    assert any(line.startswith(f"{so}: size ") and "page(s) of 4096" in line for line in lines)
    for consumer in ("glibc", "musl", "Go runtime", "DT_HASH-only parser"):
        assert any(line.startswith(f"{so}: {consumer}") and " works " in line for line in lines), consumer
    assert f"{dbg}: 0 error(s), 0 warning(s)" in proc.stdout


def test_audit_one_line_per_finding_and_exit_1(corpus):
    path = corpus("x86_64-stack-protector")
    proc = vdsogen("audit", str(path))
    assert proc.returncode == 1
    finding_lines = [line for line in proc.stdout.splitlines() if " error " in line or " warning " in line]
    assert finding_lines
    for line in finding_lines:
        file, rule_id, severity, rest = line.split(None, 3)
        assert file == f"{path}:" and rules.get_rule(rule_id) is not None
        assert severity in ("error", "warning") and ": " in rest
    assert any("S005 error" in line and "__stack_chk_fail" in line for line in finding_lines)


def test_warnings_alone_exit_0_and_strict_makes_them_errors(corpus):
    path = str(corpus("arm64-gnu-hash-only"))
    assert vdsogen("audit", path).returncode == 0
    assert vdsogen("audit", "--profile=strict", path).returncode == 1


def test_qemu_user_profile_accepts_a_writable_load(corpus):
    path = str(corpus("x86_64-writable"))
    assert vdsogen("audit", path).returncode == 1
    assert vdsogen("audit", "--profile=qemu-user", path).returncode == 0


def test_unusable_inputs_exit_2_with_file_and_offset(built, tmp_path):
    _t, so, _dbg = built("x86_64")
    data = so.read_bytes()
    cases = {"empty": b"", "text": b"not an elf at all", "magic": b"\x7fELF", "header": data[:100],
             "tables": data[:0x200]}
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        proc = vdsogen("audit", str(p))
        assert proc.returncode == 2, name
        assert "Traceback" not in proc.stderr and str(p) in proc.stderr, name
    proc = vdsogen("audit", str(tmp_path / "header"))
    assert "@0x" in proc.stderr            # where in the file
    missing = vdsogen("audit", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_one_unusable_file_makes_exit_2_and_the_others_are_still_audited(built, tmp_path):
    _t, so, _dbg = built("x86_64")
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF\x02\x01")
    proc = vdsogen("audit", str(bad), str(so))
    assert proc.returncode == 2
    assert f"{so}: 0 error(s)" in proc.stdout


def test_audit_needs_input_and_a_known_arch(built):
    assert vdsogen("audit").returncode == 2
    _t, so, _dbg = built("x86_64")
    proc = vdsogen("audit", "--arch=vax", str(so))
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_arch_overrides_detection(built):
    _t, so, _dbg = built("arm64")
    proc = vdsogen("audit", "--arch=x86_64", str(so))
    assert proc.returncode == 1
    assert "ABI x86_64 (--arch)" in proc.stdout and "H003 error" in proc.stdout


def test_rules_lists_every_rule_with_its_severities():
    proc = vdsogen("rules")
    assert proc.returncode == 0
    rows = proc.stdout.splitlines()[1:]
    assert len(rows) == len(rules.all_rules())
    for row, r in zip(rows, rules.all_rules()):
        rid, linux, qemu, strict, reason = row.split(None, 4)
        assert (rid, linux, qemu, strict) == (r.id, r.severity["linux"], r.severity["qemu-user"],
                                              r.severity["strict"])
        assert reason.startswith(r.reason)


def test_rules_explains_one():
    proc = vdsogen("rules", "k002")
    assert proc.returncode == 0
    assert proc.stdout.startswith("K002: ") and "linux error" in proc.stdout and "runs in:  audit" in proc.stdout
    assert "every function symbol" in proc.stdout
    proc = vdsogen("rules", "X001")
    assert "error when `vdsogen check` checks vdsogen's own images" in proc.stdout
    unknown = vdsogen("rules", "Z999")
    assert unknown.returncode == 2 and "no rule" in unknown.stderr


def test_rules_have_one_line_reasons_and_explanations():
    for r in rules.all_rules():
        assert r.reason and "\n" not in r.reason and len(r.explain) >= len(r.reason)
        assert r.id[0] in "HPDXRSVNKTCL" and len(r.id) == 4


# -- JSON ---------------------------------------------------------------------------------

IMAGE_KEYS = {"file", "status", "error", "abi", "elf", "size", "findings", "consumers", "counts", "exports"}


def check_schema(doc):
    """The documented schema (docs/audit.rst), version 1."""
    assert set(doc) == {"schema", "schema_version", "tool", "profile", "exit_code", "images"}
    assert doc["schema_version"] == SCHEMA_VERSION == 1 and doc["schema"] == "vdsogen-audit/1"
    assert doc["profile"] in rules.PROFILES and doc["exit_code"] in (0, 1, 2)
    for image in doc["images"]:
        assert set(image) == IMAGE_KEYS
        assert image["status"] in ("audited", "unusable")
        assert set(image["counts"]) == set(rules.SEVERITIES)
        if image["status"] == "unusable":
            assert set(image["error"]) == {"message", "offset"} and image["abi"] is None
            continue
        assert image["error"] is None
        assert set(image["abi"]) == {"name", "source", "also", "description", "notes"}
        assert image["abi"]["source"] in ("detected", "--arch", "unknown")
        assert set(image["elf"]) == {"class", "endian", "machine", "machine_name", "flags", "soname", "versions"}
        assert set(image["size"]) == {"file", "load", "pages", "page_size"}
        for f in image["findings"]:
            assert set(f) == {"rule", "severity", "where", "message"} and f["severity"] in rules.SEVERITIES
        for c in image["consumers"]:
            assert set(c) == {"consumer", "name", "verdict", "reason", "lookups"}
            assert c["consumer"] in abi.CONSUMERS and c["verdict"] in ("works", "degraded", "breaks", "n/a")
            for lk in c["lookups"]:
                assert set(lk) == {"symbol", "version", "status", "address", "detail"}
                assert lk["status"] in ("found", "absent", "missed", "bad", "skipped")


def test_json_report(built, corpus, tmp_path):
    _t, so, _dbg = built("ppc64le")
    bad = tmp_path / "junk.so"
    bad.write_bytes(b"\x7fELF")
    proc = vdsogen("audit", "--format=json", str(so), str(corpus("ppc64-lld-opd")), str(bad))
    doc = json.loads(proc.stdout)
    check_schema(doc)
    assert proc.returncode == doc["exit_code"] == 2
    good, opd, junk = doc["images"]
    assert good["abi"] == {"name": "ppc64le", "source": "detected", "also": [],
                           "description": abi.get("ppc64le").description, "notes": abi.get("ppc64le").notes}
    assert good["elf"]["soname"] == "linux-vdso64.so.1" and good["elf"]["versions"] == ["LINUX_2.6.15"]
    assert good["counts"] == {"error": 0, "warning": 0, "info": 0}
    assert {c["verdict"] for c in good["consumers"]} == {"works"}
    assert opd["abi"]["name"] == "ppc64" and opd["counts"]["error"] >= 2
    assert {"R004", "R001"} <= {f["rule"] for f in opd["findings"]}
    assert junk["status"] == "unusable" and junk["error"]["message"]


# -- the live vDSO ----------------------------------------------------------------------

def test_live_vdso_has_no_errors():
    """The vDSO of the running kernel, read from this process's own memory:
    no errors under the linux profile.  Warnings and degraded consumers are
    allowed: arm64 kernels v6.11+ have no DT_HASH, so musl and the
    DT_HASH-only parser fall back to syscalls there."""
    report = audit_live()
    assert report.status == "audited", report.error
    assert report.path == "[vdso]"
    assert report.count("error") == 0, [f"{f.rule} {f.where}: {f.message}" for f in report.findings]
    assert report.detection.abi is not None, report.detection.reason
    machine = platform.machine()
    if machine in HOST_ABI:
        assert report.detection.abi.name == HOST_ABI[machine]
    assert [c.consumer for c in report.consumers] == list(abi.CONSUMERS)
    assert set(verdicts(report).values()) <= {"works", "degraded", "n/a"}


def test_live_through_the_cli():
    proc = vdsogen("audit", "--live", "--format=json")
    doc = json.loads(proc.stdout)
    check_schema(doc)
    assert proc.returncode == 0 and doc["images"][0]["file"] == "[vdso]"
    assert doc["images"][0]["status"] == "audited"


# -- files that are not files -------------------------------------------------------------

@pytest.fixture
def not_files(tmp_path):
    """A FIFO nobody writes to, a directory and two character devices: each
    would block or never end if read."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"FIFO": fifo, "directory": tmp_path, "character device": "/dev/null", "/dev/zero": "/dev/zero"}


def test_special_files_are_unusable_not_read(not_files):
    for what, path in not_files.items():
        for argv in (("audit", str(path)), ("check", "--arch=x86_64", str(path))):
            proc = vdsogen(*argv)          # a hang fails through the subprocess timeout
            assert proc.returncode == 2, (what, argv, proc.stderr)
            assert f"vdsogen: {path}: not a regular file" in proc.stderr, (what, proc.stderr)
            assert "Traceback" not in proc.stderr
    report = audit_path(not_files["FIFO"])
    assert report.status == "unusable" and "(a FIFO)" in str(report.error)
    assert "(a directory)" in str(audit_path(not_files["directory"]).error)
    assert "(a character device)" in str(audit_path("/dev/zero").error)


def test_special_file_among_others_and_live(built, not_files):
    """The other files, and --live (which reads [vdso] itself), are still audited."""
    _t, so, _dbg = built("x86_64")
    proc = vdsogen("audit", "--live", str(not_files["FIFO"]), str(so))
    assert proc.returncode == 2
    assert "[vdso]: 0 error(s)" in proc.stdout and f"{so}: 0 error(s)" in proc.stdout


def test_check_json_reports_an_unusable_image(not_files, tmp_path):
    """As `audit --format=json` does: a document, status "unusable", exit 2."""
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"\x7fELF\x02\x01" + bytes(10))
    for path in (not_files["FIFO"], junk):
        proc = vdsogen("check", "--arch=x86_64", "--format=json", str(path))
        assert proc.returncode == 2 and str(path) in proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["exit_code"] == 2 and len(doc["images"]) == 1
        image = doc["images"][0]
        assert image["file"] == str(path) and image["status"] == "unusable" and image["findings"] == []
        assert set(image["error"]) == {"message", "offset"} and image["error"]["message"]
    audit = json.loads(vdsogen("audit", "--format=json", str(junk)).stdout)["images"][0]
    assert image == audit


def test_check_json_status_of_a_readable_image(built):
    """The document `audit` prints, with status "checked" and the spec's ABI."""
    _t, so, _dbg = built("x86_64")
    doc = json.loads(vdsogen("check", "--arch=x86_64", "--format=json", str(so)).stdout)
    image, = doc["images"]
    assert doc["schema_version"] == SCHEMA_VERSION and doc["exit_code"] == 0
    assert image["status"] == "checked" and image["error"] is None and image["counts"]["error"] == 0
    assert image["abi"]["name"] == "x86_64" and image["abi"]["source"] == "spec x86_64"
    assert {c["consumer"] for c in image["consumers"]} == {"glibc", "musl", "go", "sysv"}


def test_live_bytes_are_an_elf_image():
    data = live_bytes()
    assert data[:4] == b"\x7fELF" and len(data) % 4096 == 0
    assert ElfImage("[vdso]", data).dyn("SONAME") is not None


def test_live_without_auxv_entry_is_unusable(tmp_path):
    from vdsogen.errors import ImageError
    auxv = tmp_path / "auxv"
    auxv.write_bytes(bytes(16 * 4))
    with pytest.raises(ImageError, match="no vDSO"):
        live_bytes(auxv=str(auxv))


# -- every ABI of the catalogue -----------------------------------------------------------

def test_catalogue_covers_every_target_abi():
    want = {"x86_64", "x32", "i386", "arm64", "arm64-compat", "arm", "mips-o32", "mips-n32", "mips-n64", "ppc32",
            "ppc64", "ppc64le", "riscv64", "s390x", "s390", "loongarch64",
            "riscv32", "sh4", "sh4eb", "sparc64", "sparc32", "parisc"}
    assert set(abi.names()) == want
    for a in abi.catalogue().values():
        if a.name in ("sh4", "sh4eb"):                        # no C library or runtime looks one up
            assert not any(a.lookups.values())
            continue
        assert a.lookups["glibc"] or a.name == "parisc"    # glibc's hppa port looks nothing up
        assert a.lookups["sysv"]
        assert a.lookups["musl"] or a.name in ("s390", "sparc64", "sparc32", "parisc")  # musl: no s390, sparc or hppa port
        for lookups in a.lookups.values():
            for lk in lookups:
                assert lk.version in a.versions or (a.name, lk.symbol) == ("ppc32", "__kernel_clock_gettime64")


@pytest.mark.parametrize("name", ["x86_64", "x32", "i386", "arm64", "arm64-be", "arm", "arm-be", "mips-o32",
                                  "mips-o32-be", "mips-n32", "mips-n32-be", "mips-n64", "mips-n64-be", "ppc32",
                                  "ppc64", "ppc64le", "riscv64", "s390x", "loongarch64"])
def test_abi_is_detected_from_the_elf(corpus, name):
    report = audit_path(corpus(name))
    assert report.detection.source == "detected"
    assert report.detection.abi.name == corpus_images.RECIPES[name].abi


def test_unknown_machine_is_a_warning_not_a_failure(corpus, tmp_path):
    m = Mutant(corpus("x86_64"))
    m.set_e_machine(252)    # EM_CSKY: has a Linux vDSO, but not in the catalogue
    report = audit_path(m.save(tmp_path / "csky.so"))
    assert report.detection.abi is None and report.exit_code == 0
    assert [f.rule for f in report.findings] == ["H010"] and report.consumers == []


# -- consumers ----------------------------------------------------------------------------

def test_consumers_find_everything_in_a_good_image(built):
    _t, so, _dbg = built("x86_64")
    report = audit_path(so)
    assert verdicts(report) == {"glibc": "works", "musl": "works", "go": "works", "sysv": "works"}
    found = lookup(report, "glibc", "__vdso_clock_gettime")
    sym = next(s for s in ElfImage(so).dynsym if s.name == "__vdso_clock_gettime")
    assert found.status == "found" and found.address == sym.value
    # x86_64's spec exports getrandom (Linux 6.11), and glibc finds it too.
    rng = next(s for s in ElfImage(so).dynsym if s.name == "__vdso_getrandom")
    found = lookup(report, "glibc", "__vdso_getrandom")
    assert found.status == "found" and found.address == rng.value


def test_no_dt_hash_degrades_musl_and_the_sysv_parser(corpus):
    report = audit_path(corpus("arm64-gnu-hash-only"))
    assert verdicts(report) == {"glibc": "works", "musl": "degraded", "go": "works", "sysv": "degraded"}
    r = lookup(report, "musl", "__kernel_clock_gettime")
    assert r.status == "missed" and "no DT_HASH" in r.detail


def test_no_verdef_crashes_go(corpus):
    report = audit_path(corpus("x86_64-unversioned"))
    v = verdicts(report)
    assert v["go"] == "breaks" and v["musl"] == "works" and v["glibc"] == "degraded"
    go = next(c for c in report.consumers if c.consumer == "go")
    assert "DT_VERDEF" in go.reason
    assert {f.rule for f in report.findings if f.severity == "error"} >= {"V001", "L001"}


def test_notype_exports_are_refused_by_func_only_readers(corpus):
    report = audit_path(corpus("ppc64le-notype"))
    assert verdicts(report) == {"glibc": "works", "musl": "works", "go": "works", "sysv": "degraded"}
    r = lookup(report, "sysv", "__kernel_clock_gettime")
    assert r.status == "missed" and "STT_NOTYPE" in r.detail
    assert report.exit_code == 0


def test_wrong_vd_hash_hides_the_version_from_go_and_the_parser(corpus, tmp_path):
    m = Mutant(corpus("x86_64"))
    m.set_verdef_hash(1, 0x1234)
    report = audit_path(m.save(tmp_path / "h.so"))
    assert verdicts(report) == {"glibc": "works", "musl": "works", "go": "degraded", "sysv": "degraded"}
    assert "vd_hash" in lookup(report, "go", "__vdso_clock_gettime").detail


def test_pt_tls_trips_glibc(corpus, tmp_path):
    from vdsogen.elf.consts import PT_GNU_EH_FRAME, PT_TLS
    m = Mutant(corpus("x86_64"))
    m.set_phdr(m.phdr(PT_GNU_EH_FRAME), type=PT_TLS)
    report = audit_path(m.save(tmp_path / "tls.so"))
    assert verdicts(report)["glibc"] == "breaks" and verdicts(report)["musl"] == "works"


def test_entry_point_outside_the_image_breaks_every_caller(corpus, tmp_path):
    m = Mutant(corpus("x86_64"))
    m.set_sym_value(m.dynsym("__vdso_clock_gettime"), 0x400000)
    report = audit_path(m.save(tmp_path / "far.so"))
    assert set(verdicts(report).values()) == {"breaks"}
    assert lookup(report, "musl", "__vdso_clock_gettime").status == "bad"


def test_s390x_hash_words(corpus):
    """8-byte .hash words (GNU ld) work for all; lld's 4-byte words break the DT_HASH readers."""
    good = audit_path(corpus("s390x"))
    assert set(verdicts(good).values()) == {"works"}
    img = ElfImage(corpus("s390x"))
    assert img.sysv_hash_word_in_file() == 8 and img.sysv_hash()[1] == len(img.dynsym)
    bad = audit_path(corpus("s390x-lld-hash-words"))
    # The parser reads nbucket as one 8-byte word (both 4-byte words), and so far past the image.
    assert verdicts(bad)["sysv"] == "breaks"
    assert verdicts(bad)["glibc"] == "works"      # it takes DT_GNU_HASH


def test_musl_on_ppc32_asks_for_a_version_no_kernel_defines(corpus):
    report = audit_path(corpus("ppc32"))
    assert lookup(report, "musl", "__kernel_clock_gettime64").status == "absent"
    assert lookup(report, "musl", "__kernel_clock_gettime").status == "found"
    assert verdicts(report)["musl"] == "works" and verdicts(report)["go"] == "n/a"


def test_musl_uses_time64_on_arm_only_with_time32(corpus, tmp_path):
    assert lookup(audit_path(corpus("arm")), "musl", "__vdso_clock_gettime64").status == "found"
    m = Mutant(corpus("arm"))
    m.set_sym_bind(m.dynsym("__vdso_clock_gettime"), STB_LOCAL)
    report = audit_path(m.save(tmp_path / "arm.so"))
    assert lookup(report, "musl", "__vdso_clock_gettime64").status == "skipped"


def test_thumb_entry_points_are_followed(corpus):
    img = ElfImage(corpus("arm64-compat"))
    assert all(s.value & 1 for s in img.dynsym[1:] if s.name.startswith("__vdso_"))
    report = audit_path(corpus("arm64-compat"), "arm64-compat")
    assert set(verdicts(report).values()) == {"works"}


def test_loader_view_of_symbols_without_section_headers(built, tmp_path):
    """With the section table gone, symbols are read as a loader reads them."""
    _t, so, _dbg = built("x86_64")
    m = Mutant(so)
    m.put("H", 0x3C, 0)      # e_shnum
    img = ElfImage("nosh.so", bytes(m.data))
    assert not img.dynsym_from_sections
    assert [s.name for s in img.dynsym] == [s.name for s in ElfImage(so).dynsym]
    report = audit_path(m.save(tmp_path / "nosh.so"))
    assert {f.rule for f in report.findings} == {"H005"}
    assert set(verdicts(report).values()) == {"works"}


def test_docs_list_every_rule_and_the_schema():
    text = (ROOT / "docs" / "audit.rst").read_text()
    for r in rules.all_rules():
        row = next((line for line in text.splitlines() if line.startswith(r.id + " ")), None)
        assert row is not None, r.id
        assert row.split()[1:4] == [r.severity[p] for p in rules.PROFILES], r.id
    for key in IMAGE_KEYS | {"schema", "schema_version", "exit_code"}:
        assert f'"{key}"' in text, key
