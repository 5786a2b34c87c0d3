"""p4/kv_fabric.p4: its STF tests, its P4Info against p4/README.md, and fake-clock runs.

The STF files are generated (tests/p4/make_stf.py); the first test keeps them current.
Each one runs through the target as ``kvfabric stf`` runs it, and must also send nothing
to a port the file does not name (STF alone cannot see such packets). The fake-clock
tests drive :class:`Pipeline` directly, with time under the test's control, for what an
STF file cannot show on this target: real idle gaps, queue depths and queueing delays.
Expected values come from tests/p4/fabric_model.py, never from the target.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from finsy.proto import p4i
from google.protobuf import text_format

from kvfabric.cli import main
from tests.p4 import fabric_model as m
from tests.p4 import make_stf

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"
README = ROOT / "p4" / "README.md"
STF_FILES = sorted((ROOT / "p4" / "tests").glob("*.stf"))

HAVE_PIPELINE = importlib.util.find_spec("softswitch.interp.pipeline") is not None
needs_pipeline = pytest.mark.skipif(
    not HAVE_PIPELINE, reason="softswitch.interp.pipeline cannot be imported"
)


# ------------------------------------------------------------------ STF files


def test_generated_stf_files_are_current() -> None:
    rendered = make_stf.render_all()
    assert sorted(rendered) == [p.name for p in STF_FILES]
    stale = [p.name for p in STF_FILES if p.read_text(encoding="utf-8") != rendered[p.name]]
    assert not stale, f"run .venv/bin/python -m tests.p4.make_stf to regenerate {stale}"


def test_every_documented_behaviour_has_an_stf_file() -> None:
    names = {p.stem for p in STF_FILES}
    wanted = {"leaf_routing", "spine_routing", "ttl", "checksum", "ecmp", "pins", "flowlet"}
    wanted |= {"counters", "telemetry", "probe", "arp"}
    assert wanted <= names


@needs_pipeline
@pytest.mark.parametrize("stf", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_stf(stf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from softswitch.stf import run_stf

    status = main(["stf", str(PROGRAM), str(stf)])
    out = capsys.readouterr().out
    assert status == 0, out
    result = run_stf(PROGRAM, stf)
    assert result.passed, result.report(verbose=True)
    named = {report.port for report in result.ports if report.captured}
    stray = {port: n for port, n in result.outputs.items() if port not in named and n}
    assert not stray, f"packets sent to ports the STF file does not name: {stray}"


# ---------------------------------------------------------------- P4Info


@dataclass(frozen=True)
class Row:
    kind: str
    name: str
    key: str
    data: str


def readme_rows() -> list[Row]:
    """The rows of the 'Control-plane objects' table of p4/README.md."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Control-plane objects", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`"):
            rows.append(Row(cells[0], cells[1].strip("`"), cells[2], cells[3]))
    return rows


def rows_of(kind: str) -> dict[str, Row]:
    return {row.name: row for row in readme_rows() if row.kind == kind}


@pytest.fixture(scope="module")
def p4info(tmp_path_factory: pytest.TempPathFactory) -> p4i.P4Info:
    out = tmp_path_factory.mktemp("p4info") / "kv_fabric.p4info.txt"
    assert main(["compile", str(PROGRAM), "--p4runtime-files", str(out)]) == 0
    return text_format.Parse(out.read_text(encoding="utf-8"), p4i.P4Info())


def _actions_in(text: str) -> dict[str, dict[str, int]]:
    """``name(param: width, ...)`` mentions of a README cell: action -> {param: width}."""
    found: dict[str, dict[str, int]] = {}
    for name, params in re.findall(r"`(\w+)\(([^)]*)\)`", text):
        widths = {}
        for part in filter(None, (p.strip() for p in params.split(","))):
            if ":" in part:
                param, width = (s.strip() for s in part.split(":"))
                widths[param] = int(width)
        found.setdefault(name, {}).update(widths)
    return found


def test_p4info_tables_are_the_documented_ones(p4info: p4i.P4Info) -> None:
    documented = rows_of("table")
    actions = {a.preamble.id: a for a in p4info.actions}
    assert {t.preamble.name for t in p4info.tables} == set(documented)
    for table in p4info.tables:
        row = documented[table.preamble.name]
        keys = {
            (f.name, f.bitwidth, p4i.MatchField.MatchType.Name(f.match_type).lower())
            for f in table.match_fields
        }
        written = set(re.findall(r"`([\w.]+)` (exact|lpm|ternary) \((\d+)\)", row.key))
        assert keys == {(name, int(width), kind) for name, kind, width in written}, row
        refs = {
            actions[r.id].preamble.name.split(".")[-1]: actions[r.id] for r in table.action_refs
        }
        named = _actions_in(row.data)
        # the initial default of a keyless table is named as a call, e.g. set_epoch(0)
        named = {k: v for k, v in named.items() if k in refs or not v}
        assert set(named) | {"NoAction"} >= set(refs) - {"NoAction"}, row
        for name, widths in named.items():
            if widths:
                params = {p.name: p.bitwidth for p in refs[name].params}
                assert params == widths, (table.preamble.name, name)


def test_p4info_selector_counters_registers_and_headers(p4info: p4i.P4Info) -> None:
    (selector,) = p4info.action_profiles
    assert selector.preamble.name in rows_of("action selector")
    assert selector.with_selector and selector.size == 1024
    ecmp = next(t for t in p4info.tables if t.preamble.name == "FabricIngress.ecmp")
    assert list(selector.table_ids) == [ecmp.preamble.id]
    assert ecmp.implementation_id == selector.preamble.id

    counters = {c.preamble.name: c for c in p4info.counters}
    assert set(counters) == set(rows_of("counter"))
    for counter in counters.values():
        assert counter.size == 512
        assert counter.spec.unit == p4i.CounterSpec.Unit.BOTH

    registers = {r.preamble.name: r for r in p4info.registers}
    documented = rows_of("register")
    assert set(registers) == set(documented)
    for name, register in registers.items():
        row = documented[name]
        cells = int(re.search(r"\((\d+) cells\)", row.key).group(1))  # type: ignore[union-attr]
        width = int(re.search(r"(\d+)-bit", row.data).group(1))  # type: ignore[union-attr]
        assert register.size == cells, name
        assert register.type_spec.bitstring.bit.bitwidth == width, name

    headers = {h.preamble.name: h for h in p4info.controller_packet_metadata}
    documented = rows_of("controller header")
    assert set(headers) == set(documented)
    for name, header in headers.items():
        fields = [(md.id, md.name, md.bitwidth) for md in header.metadata]
        written = re.findall(r"`(\w+)` \((\d+)\)", documented[name].data)
        assert fields == [(i, n, int(w)) for i, (n, w) in enumerate(written, start=1)], name


# ------------------------------------------------------- fake-clock pipeline


class Leaf:
    """kv_fabric.p4 loaded with the leaf of the STF tests, and a clock the test sets."""

    def __init__(self) -> None:
        from softswitch.frontend import load_program
        from softswitch.interp.pipeline import Pipeline
        from softswitch.stf.control import ControlPlane
        from softswitch.stf.syntax import parse_stf

        self.now_us = 0
        self.pipeline = Pipeline.load(
            load_program(str(PROGRAM)), clock=lambda: self.now_us * 1000, cpu_port=m.CPU_PORT
        )
        self.state: Any = self.pipeline.state
        self._control = ControlPlane(self.state, "<setup>")
        self._parse: Callable[[str], Any] = parse_stf
        stf = make_stf.Stf("setup", "")
        make_stf.leaf_setup(stf)
        self.configure(*stf.lines)

    def configure(self, *lines: str) -> None:
        """Apply STF control-plane lines (the controller's writes)."""
        for command in self._parse("\n".join(lines)).commands:
            assert not self._control.apply(command)

    def send(self, at_us: int, flow: m.Flow, **kw: Any) -> int:
        """Send one packet of ``flow`` from h1 at ``at_us``; the port it left by."""
        self.now_us = at_us
        packet = make_stf.from_h1(flow, **kw)
        ((port, _),) = self.pipeline.process(1, bytes(packet))
        return port

    def register(self, name: str, index: int) -> int:
        return int(self.state.register(name).get(index))


def _flow(sport: int = 40500) -> m.Flow:
    return m.Flow("10.0.1.1", "10.0.2.7", 17, sport, 7000)


@needs_pipeline
def test_flowlet_gap_must_exceed_the_timeout() -> None:
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:500, generation:1)")
    flow = _flow()
    uplink = [m.ecmp_port(flow, make_stf.UPLINKS, m.flowlet_salt(k)) for k in range(4)]
    slot = m.flowlet_slot(flow)
    assert leaf.send(10_000, flow) == uplink[1]  # empty slot: flowlet 1
    assert leaf.send(10_400, flow) == uplink[1]  # gap 400 us
    assert leaf.send(10_900, flow) == uplink[1]  # gap 500 us: not longer than the timeout
    assert leaf.register("flowlet_last_seen", slot) == 10_900
    assert leaf.send(11_401, flow) == uplink[2]  # gap 501 us: flowlet 2
    assert leaf.send(11_402, flow) == uplink[2]
    assert leaf.send(50_000, flow) == uplink[3]
    assert leaf.register("flowlet_state", slot) == m.flowlet_state(
        1, 1, m.flowlet_salt(3), uplink[3]
    )


@needs_pipeline
def test_flowlets_of_different_flows_are_independent() -> None:
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:500, generation:1)")
    flows = [_flow(40600 + i) for i in range(8)]
    assert len({m.flowlet_slot(f) for f in flows}) == len(flows)
    first = {f: leaf.send(1000 + i, f) for i, f in enumerate(flows)}
    for f, port in first.items():
        assert port == m.ecmp_port(f, make_stf.UPLINKS, m.flowlet_salt(1))
    # each flow keeps sending every 100 us: none of them starts a new flowlet
    for step in range(1, 20):
        for i, f in enumerate(flows):
            assert leaf.send(1000 + step * 100 + i, f) == first[f]


@needs_pipeline
def test_flowlet_mode_spreads_successive_flowlets() -> None:
    """LetFlow's premise: after idle gaps, a flow's flowlets visit the uplinks."""
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:100, generation:1)")
    flow = _flow(40700)
    seen = [leaf.send(1000 * k, flow) for k in range(1, 41)]
    expected = [m.ecmp_port(flow, make_stf.UPLINKS, m.flowlet_salt(k)) for k in range(1, 41)]
    assert seen == expected
    assert set(seen) == set(make_stf.UPLINKS)
    changes = sum(a != b for a, b in itertools.pairwise(seen))
    assert changes >= 20


def _send_to_h2(leaf: Leaf, at_us: int, queued_ahead: int = 0) -> None:
    """A packet to h2 (port 2) that finds ``queued_ahead`` packets in port 2's queue."""
    for _ in range(queued_ahead):
        assert leaf.state.tm.enqueue(2, at_us * 1000) is not None
    leaf.now_us = at_us
    flow = m.Flow("10.0.1.1", "10.0.1.2", 17, 5000, 6000)
    ((port, _),) = leaf.pipeline.process(1, bytes(make_stf.from_h1(flow)))
    assert port == 2


@needs_pipeline
def test_queue_bank_keeps_the_largest_depth_and_delay_of_the_epoch() -> None:
    leaf = Leaf()
    leaf.configure("setdefault telemetry_epoch set_epoch(epoch:1)")
    _send_to_h2(leaf, 1000, queued_ahead=3)
    _send_to_h2(leaf, 2000, queued_ahead=9)
    _send_to_h2(leaf, 3000, queued_ahead=4)
    assert leaf.register("queue_bank1", 2) == m.queue_cell(1, depth=9)
    # A rate limit makes packets wait: at 1000 packets/s a packet leaves 1 ms after the
    # one before it. Four packets 10 us apart from t = 10 ms leave at 10, 11, 12 and 13 ms;
    # the last one entered at 10.03 ms behind the two still queued and waited 2970 us.
    leaf.state.tm.set_queue_rate(1000, port=2)
    leaf.configure("setdefault telemetry_epoch set_epoch(epoch:2)")
    for i in range(4):
        _send_to_h2(leaf, 10_000 + 10 * i)
    assert leaf.register("queue_bank0", 2) == m.queue_cell(2, depth=2, delay_us=2970)
    assert leaf.register("queue_bank1", 2) == m.queue_cell(1, depth=9)


@needs_pipeline
def test_queue_read_protocol_loses_no_sample() -> None:
    """The controller of README's protocol reads, per epoch, the maximum of what was sent."""
    leaf = Leaf()
    epoch = 0
    leaf.configure(f"setdefault telemetry_epoch set_epoch(epoch:{epoch})")
    depths_per_period = [[3, 1, 7], [], [2], [5, 5, 0, 6], [1], []]
    readings: list[int | None] = []
    t = 0
    for depths in depths_per_period:
        for depth in depths:
            t += 100
            _send_to_h2(leaf, t, queued_ahead=depth)
        # one polling period ends: flip, then read the bank of the epoch that just ended
        leaf.configure(f"setdefault telemetry_epoch set_epoch(epoch:{epoch + 1})")
        cell = leaf.register(f"queue_bank{epoch % 2}", 2)
        readings.append((cell >> 32) & 0xFFFFFFFF if cell >> 64 == epoch else None)
        epoch += 1
    assert readings == [7, None, 2, 6, 1, None]
