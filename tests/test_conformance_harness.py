"""benchmarks/conformance.py on a tiny p4c-style testdata directory built here from
tests/stf/programs: one program that passes, a wrong STF file, a reformatted and a
wrong P4Info, and a program that does not compile; the harness must count each."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "stf" / "programs"


def _load_harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "conformance", ROOT / "benchmarks" / "conformance.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["conformance"] = module
    spec.loader.exec_module(module)
    return module


conformance = _load_harness()
KVFABRIC = conformance.default_kvfabric()


def _wrong_expect(stf: str) -> str:
    """The STF text with the first byte of the first expected packet changed."""
    lines = stf.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("expect "):
            head, port, data = line.split(" ", 2)
            lines[i] = f"{head} {port} {'FF' if not data.startswith('FF') else '00'}{data[2:]}"
            return "".join(lines)
    raise AssertionError("no expect line")


@pytest.fixture(scope="module")
def testdata(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("testdata")
    samples, outputs = root / "p4_16_samples", root / "p4_16_samples_outputs"
    samples.mkdir()
    outputs.mkdir()
    program = PROGRAMS / "table_kinds.p4"
    stf = (PROGRAMS / "table_kinds.stf").read_text()
    for name in ("good", "wrong_stf", "wrong_p4info"):
        shutil.copy(program, samples / f"{name}.p4")
    (samples / "good.stf").write_text(stf)
    (samples / "wrong_stf.stf").write_text(_wrong_expect(stf))
    (samples / "broken.p4").write_text(
        "#include <core.p4>\n#include <v1model.p4>\ncontrol c() { apply { x = ; } }\n"
    )
    (samples / "broken.stf").write_text("packet 0 00\nexpect 0 00\n")
    (samples / "no_tests.p4").write_text("// neither an STF test nor a P4Info\n")

    reference = outputs / "good.p4.p4info.txtpb"
    status = conformance._execute(
        [KVFABRIC, "compile", str(samples / "good.p4"), "--p4runtime-files", str(reference)],
        120.0,
    ).returncode
    assert status == 0
    text = reference.read_text()
    # same message, different bytes: no header comments
    (outputs / "wrong_stf.p4.p4info.txtpb").write_text(text.split("\n\n", 1)[1])
    # different content: a table renamed
    assert 'name: "ingress.t_lpm"' in text
    wrong = text.replace('name: "ingress.t_lpm"', 'name: "ingress.t_lpm_renamed"')
    (outputs / "wrong_p4info.p4.p4info.txtpb").write_text(wrong)
    (outputs / "broken.p4.p4info.txtpb").write_text(text)
    return root


def test_discover_pairs_programs_with_their_tests(testdata: Path) -> None:
    cases = {c.name: c for c in conformance.discover(testdata)}
    assert sorted(cases) == ["broken", "good", "wrong_p4info", "wrong_stf"]
    assert cases["wrong_p4info"].stf is None
    assert cases["good"].stf is not None and cases["good"].p4info is not None
    assert [c.name for c in conformance.discover(testdata, "wrong_*")] == [
        "wrong_p4info",
        "wrong_stf",
    ]


def test_run_counts_every_outcome(testdata: Path) -> None:
    results = conformance.run_all(conformance.discover(testdata), KVFABRIC, jobs=2)
    by = {(r.kind, r.name): r for r in results}
    assert by["stf", "good"].outcome == "pass"
    assert by["stf", "wrong_stf"].outcome == "mismatch"
    assert by["stf", "broken"].outcome == "error"
    assert by["p4info", "good"].outcome == "identical"
    assert by["p4info", "wrong_stf"].outcome == "format"
    assert by["p4info", "wrong_p4info"].outcome == "content"
    assert by["p4info", "broken"].outcome == "error"

    assert conformance.counts(results, "stf") == {"pass": 1, "mismatch": 1, "error": 1}
    assert conformance.summary(results) == {
        "stf_total": 3,
        "stf_pass": 1,
        "stf_pass_rate": 0.3333,
        "p4info_total": 4,
        "p4info_identical": 1,
        "p4info_identical_rate": 0.25,
        "p4info_equal_as_message": 2,
    }

    mismatch = by["stf", "wrong_stf"]
    assert mismatch.first_line.startswith("packet 1")
    assert "N" in mismatch.group and "wrong_stf.stf" not in mismatch.group
    assert by["stf", "broken"].first_line.startswith(str(testdata))
    assert by["stf", "broken"].group.startswith("error:")
    content = by["p4info", "wrong_p4info"]
    assert content.group == "field tables[].preamble.name"
    assert "ingress.t_lpm_renamed" in content.first_line
    assert by["p4info", "wrong_stf"].first_line.startswith("line 1:")

    groups = conformance.group_failures(results)
    assert len(groups) == 5
    assert sum(len(members) for _, _, members in groups) == 5


def test_main_prints_progress_tables_groups_and_json(
    testdata: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = conformance.main(["--testdata", str(testdata), "--only", "good", "--jobs", "1"])
    out = capsys.readouterr().out
    assert status == 0
    assert "[   1/1] good" in out
    assert "failures by first error line" in out and "none" in out
    final = json.loads(out.strip().splitlines()[-1])
    assert final["stf_pass_rate"] == 1.0
    assert final["p4info_identical"] == 1


def test_failures_that_share_a_cause_share_a_group() -> None:
    c = conformance
    runs = [
        c.Run(2, "", "/a/x.p4:3:5: error: unsupported: extern Checksum16\n"),
        c.Run(2, "", "/b/y.p4:40:1: error: unsupported: extern Checksum16\n"),
        c.Run(2, "", "/b/z.p4:4:1: error: unsupported: statement Switch\n"),
    ]
    results = [c.classify_stf(f"p{i}", run) for i, run in enumerate(runs)]
    groups = c.group_failures(results)
    assert [(key, len(members)) for _, key, members in groups] == [
        ("error: unsupported: extern ChecksumN", 2),
        ("error: unsupported: statement Switch", 1),
    ]
    assert groups[0][2][0].first_line == "/a/x.p4:3:5: error: unsupported: extern Checksum16"


def test_timeouts_and_signals_are_crashes() -> None:
    c = conformance
    timeout = c.classify_stf("slow", c.Run(None, "", ""), 5.0)
    assert (timeout.outcome, timeout.first_line) == ("crash", "timeout after 5 s")
    killed = c.classify_stf("dead", c.Run(-11, "", "Traceback...\nKeyError: 'x'\n"))
    assert (killed.outcome, killed.first_line) == ("crash", "KeyError: 'x'")
    p4info = c.classify_p4info("slow", c.Run(None, "", ""), "", None)
    assert p4info.outcome == "crash"


def test_the_extern_funcs_program_gets_its_module_and_v1model_selects(tmp_path: Path) -> None:
    # a program of our own under the name of p4c's extern-funcs test: the harness
    # loads the module p4c's CMake gives simple_switch for it (extern_func: d <- s)
    samples = tmp_path / "p4_16_samples"
    samples.mkdir()
    (samples / "extern-funcs-bmv2.p4").write_text(
        """#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> v; }
struct hs_t { h_t h; }
struct m_t { }
extern void extern_func(out bit<32> d, bit<32> s);
parser P(packet_in p, out hs_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control N(inout hs_t h, inout m_t m) { apply { } }
control I(inout hs_t h, inout m_t m, inout standard_metadata_t sm) {
    apply { extern_func(h.h.v, 0x1234); }
}
control E(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in hs_t h) { apply { p.emit(h); } }
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""
    )
    (samples / "extern-funcs-bmv2.stf").write_text("packet 0 00000000 AB\nexpect 0 00001234 AB\n")
    (samples / "other.p4").write_text("#include <core.p4>\n")
    (samples / "other.stf").write_text("packet 0 00\n")
    cases = conformance.discover(tmp_path, v1model=True)
    assert [c.name for c in cases] == ["extern-funcs-bmv2"]
    assert [m.name for m in cases[0].modules] == ["extern_funcs_bmv2.py"]
    assert len(conformance.discover(tmp_path)) == 2
    (result,) = conformance.run_all(cases, KVFABRIC)
    assert result.outcome == "pass", result.first_line
