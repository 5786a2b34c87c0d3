"""p4/kv_fabric.p4: its STF tests, its P4Info against p4/README.md, and fake-clock runs.

The STF files are generated (tests/p4/make_stf.py); the first test keeps them current.
Each one runs through the target as ``kvfabric stf`` runs it, and must also send nothing
to a port the file does not name (STF alone cannot see such packets). The fake-clock
tests drive :class:`Pipeline` directly, with time under the test's control, for what an
STF file cannot show on this target: real idle gaps, and queue depths and delays (a
rate-limited egress queue in the traffic manager, as BMv2's ``set_queue_rate`` makes one).
Expected values come from tests/p4/fabric_model.py, never from the target.
"""

from __future__ import annotations

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
from tests.p4 import fabric_model, make_stf

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"
README = ROOT / "p4" / "README.md"
STF_FILES = sorted((ROOT / "p4" / "tests").glob("*.stf"))


# ------------------------------------------------------------------ STF files


def test_generated_stf_files_are_current() -> None:
    rendered = make_stf.render_all()
    assert sorted(rendered) == [p.name for p in STF_FILES]
    stale = [p.name for p in STF_FILES if p.read_text(encoding="utf-8") != rendered[p.name]]
    assert not stale, f"run .venv/bin/python -m tests.p4.make_stf to regenerate {stale}"


def test_every_documented_behaviour_has_an_stf_file() -> None:
    names = {p.stem for p in STF_FILES}
    wanted = {"leaf_routing", "spine_routing", "ttl", "checksum", "ecmp", "kv_range", "flow_pins"}
    wanted |= {"flowlet"}
    wanted |= {"counters", "telemetry", "telemetry_buckets", "probe", "arp"}
    assert wanted <= names


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
        written = set(re.findall(r"`([\w.]+)` (exact|lpm|ternary|range) \((\d+)\)", row.key))
        assert keys == {(name, int(width), kind) for name, kind, width in written}, row
        refs = {
            actions[r.id].preamble.name.split(".")[-1]: actions[r.id] for r in table.action_refs
        }
        named = _actions_in(row.data)
        # a default named as a call, e.g. `ecmp_mode()` (initial), need not be in the table
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
    documented = rows_of("counter")
    assert set(counters) == set(documented)
    for name, counter in counters.items():
        cells = int(re.search(r"\((\d+) cells\)", documented[name].key).group(1))  # type: ignore[union-attr]
        assert counter.size == cells, name
        assert counter.spec.unit == p4i.CounterSpec.Unit.BOTH
        assert "packets and bytes" in documented[name].data
    hist = [c for c in counters.values() if c.preamble.name.endswith("_hist")]
    assert len(hist) == 2 and all(c.size == 512 * fabric_model.HIST_BUCKETS for c in hist)

    registers = {r.preamble.name: r for r in p4info.registers}
    documented = rows_of("register")
    assert set(registers) == set(documented)
    for name, register in registers.items():
        row = documented[name]
        cells = int(re.search(r"\((\d+) cells\)", row.key).group(1))  # type: ignore[union-attr]
        width = int(re.search(r"(\d+)-bit", row.data).group(1))  # type: ignore[union-attr]
        assert register.size == cells, name
        assert register.type_spec.bitstring.bit.bitwidth == width, name
        # PI answers register reads with UNIMPLEMENTED: no register is the controller's
        assert "data plane only" in row.data, name

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
            load_program(str(PROGRAM)),
            clock=lambda: self.now_us * 1000,
            cpu_port=fabric_model.CPU_PORT,
        )
        self.state: Any = self.pipeline.state
        self._control = ControlPlane(self.state, "<setup>")
        self._parse: Callable[[str], Any] = parse_stf
        stf = make_stf.Stf("setup", "")
        make_stf.leaf_setup(stf)
        make_stf.histogram_setup(stf)
        self.configure(*stf.lines)

    def configure(self, *lines: str) -> None:
        """Apply STF control-plane lines (the controller's writes)."""
        for command in self._parse("\n".join(lines)).commands:
            assert not self._control.apply(command)

    def send(self, at_us: int, flow: fabric_model.Flow, **kw: Any) -> int:
        """Send one packet of ``flow`` from h1 at ``at_us``; the port it left by."""
        self.now_us = at_us
        packet = make_stf.from_h1(flow, **kw)
        ((port, _),) = self.pipeline.process(1, bytes(packet))
        return port

    def register(self, name: str, index: int) -> int:
        return int(self.state.register(name).get(index))

    def send_to(self, port: int, at_us: int) -> int | None:
        """At ``at_us``, a packet to the host of ``port`` (1: h2 -> h1, 2: h1 -> h2).

        Returns the length the switch counts, or None if the packet did not leave.
        """
        src, dst = (make_stf.H2, make_stf.H1) if port == 1 else (make_stf.H1, make_stf.H2)
        flow = fabric_model.Flow(src[0], dst[0], 17, 5000, 6000)
        data = bytes(fabric_model.packet(flow, src_mac=src[1], dst_mac=make_stf.LEAF_MAC))
        self.now_us = at_us
        out = self.pipeline.process(src[2], data)
        if not out:
            return None
        assert [p for p, _ in out] == [port]
        return len(data)

    def cells(self, counter: str, port: int) -> list[tuple[int, int]]:
        """(packets, bytes) of the port's buckets of a histogram counter."""
        c = self.state.counter(counter)
        return [
            (d.packets, d.bytes)
            for d in (
                c.read(fabric_model.hist_index(port, b)) for b in range(fabric_model.HIST_BUCKETS)
            )
        ]

    def port_tx(self, port: int) -> tuple[int, int]:
        d = self.state.counter("port_tx").read(port)
        return d.packets, d.bytes


def _flow(sport: int = 40500) -> fabric_model.Flow:
    return fabric_model.Flow("10.0.1.1", "10.0.2.7", 17, sport, 7000)


def test_flowlet_gap_must_exceed_the_timeout() -> None:
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:500, generation:1)")
    flow = _flow()
    uplink = [
        fabric_model.ecmp_port(flow, make_stf.UPLINKS, fabric_model.flowlet_salt(k))
        for k in range(4)
    ]
    slot = fabric_model.flowlet_slot(flow)
    assert leaf.send(10_000, flow) == uplink[1]  # empty slot: flowlet 1
    assert leaf.send(10_400, flow) == uplink[1]  # gap 400 us
    assert leaf.send(10_900, flow) == uplink[1]  # gap 500 us: not longer than the timeout
    assert leaf.register("flowlet_last_seen", slot) == 10_900
    assert leaf.send(11_401, flow) == uplink[2]  # gap 501 us: flowlet 2
    assert leaf.send(11_402, flow) == uplink[2]
    assert leaf.send(50_000, flow) == uplink[3]
    assert leaf.register("flowlet_state", slot) == fabric_model.flowlet_state(
        1, 1, fabric_model.flowlet_salt(3), uplink[3]
    )


def test_flowlets_of_different_flows_are_independent() -> None:
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:500, generation:1)")
    flows = [_flow(40600 + i) for i in range(8)]
    assert len({fabric_model.flowlet_slot(f) for f in flows}) == len(flows)
    first = {f: leaf.send(1000 + i, f) for i, f in enumerate(flows)}
    for f, port in first.items():
        assert port == fabric_model.ecmp_port(f, make_stf.UPLINKS, fabric_model.flowlet_salt(1))
    # each flow keeps sending every 100 us: none of them starts a new flowlet
    for step in range(1, 20):
        for i, f in enumerate(flows):
            assert leaf.send(1000 + step * 100 + i, f) == first[f]


def test_flowlet_mode_spreads_successive_flowlets() -> None:
    """LetFlow's premise: after idle gaps, a flow's flowlets visit the uplinks."""
    leaf = Leaf()
    leaf.configure("setdefault switch_config flowlet_mode(timeout_us:100, generation:1)")
    flow = _flow(40700)
    seen = [leaf.send(1000 * k, flow) for k in range(1, 41)]
    expected = [
        fabric_model.ecmp_port(flow, make_stf.UPLINKS, fabric_model.flowlet_salt(k))
        for k in range(1, 41)
    ]
    assert seen == expected
    assert set(seen) == set(make_stf.UPLINKS)
    changes = sum(a != b for a, b in itertools.pairwise(seen))
    assert changes >= 20


# ------------------------------------------------------------ queue histograms

HISTOGRAMS = (
    ("port_qdepth_hist", fabric_model.QDEPTH_BOUNDS, 0),
    ("port_qdelay_hist", fabric_model.QDELAY_BOUNDS, 1),
)


def _burst(
    leaf: Leaf, queue: fabric_model.Fifo, port: int, start_us: int, n: int, gap_us: int = 1
) -> list[tuple[int, int, int]]:
    """``n`` packets to ``port`` from ``start_us``, ``gap_us`` apart: (depth, delay, length)
    of each, as the model's queue gives them."""
    seen = []
    for i in range(n):
        t = start_us + i * gap_us
        expected = queue.arrive(t)
        length = leaf.send_to(port, t)
        if expected is None:
            assert length is None, f"packet {i} at {t} us should find the queue full"
            continue
        assert length is not None, f"packet {i} at {t} us was dropped"
        seen.append((*expected, length))
    return seen


def _histogram(seen: list[tuple[int, int, int]], which: int, bounds: Any) -> list[tuple[int, int]]:
    return fabric_model.histogram(((s[which], s[2]) for s in seen), bounds)


def test_histograms_bucket_real_queue_depths_and_delays() -> None:
    """Rate-limited ports build real queues; each packet lands in its depth and delay bucket."""
    leaf = Leaf()
    # port 2 sends a packet every ms, port 1 every 200 us (BMv2: set_queue_rate 1000 2, ...)
    leaf.state.tm.set_queue_rate(1000, port=2)
    leaf.state.tm.set_queue_rate(5000, port=1)
    queues = {2: fabric_model.Fifo(period_us=1000), 1: fabric_model.Fifo(period_us=200)}
    seen = {
        2: _burst(leaf, queues[2], 2, 10_000, 56),  # depths 0..54, delays up to 54 ms
        1: _burst(leaf, queues[1], 1, 200_000, 12, gap_us=3),  # delays of 197 us steps
    }
    reached: dict[str, set[int]] = {}
    for port, packets in seen.items():
        for counter, bounds, which in HISTOGRAMS:
            cells = leaf.cells(counter, port)
            assert cells == _histogram(packets, which, bounds), (counter, port)
            # with boundaries that cover every value, a port's buckets add up to port_tx
            total = (sum(p for p, _ in cells), sum(b for _, b in cells))
            assert total == leaf.port_tx(port), (counter, port)
            reached.setdefault(counter, set()).update(b for b, (p, _) in enumerate(cells) if p)
    assert reached["port_qdepth_hist"] == set(range(fabric_model.HIST_BUCKETS))
    assert reached["port_qdelay_hist"] == set(range(fabric_model.HIST_BUCKETS))
    assert max(s[0] for s in seen[2]) == 54


def test_a_packet_dropped_by_a_full_queue_is_in_no_histogram() -> None:
    leaf = Leaf()
    leaf.state.tm.set_queue_rate(1000, port=2)
    queue = fabric_model.Fifo(period_us=1000)
    seen = _burst(leaf, queue, 2, 10_000, fabric_model.BMV2_QUEUE_PACKETS + 6)
    assert (
        len(seen) == fabric_model.BMV2_QUEUE_PACKETS + 1
    )  # the one leaving at once, and 64 queued
    for counter, bounds, which in HISTOGRAMS:
        assert leaf.cells(counter, 2) == _histogram(seen, which, bounds)
    assert leaf.cells("port_qdepth_hist", 2)[7][0] == 16  # depths 48..63: a full queue
    assert leaf.port_tx(2)[0] == len(seen)


@pytest.mark.parametrize(("counter", "bounds", "which"), HISTOGRAMS, ids=["depth", "delay"])
def test_max_bucket_since_the_last_read_loses_no_sample(
    counter: str, bounds: tuple[tuple[int, int], ...], which: int
) -> None:
    """README's read procedure, every 100 ms: counter reads only, nothing written.

    A second reader (a backup controller, an audit) reads every third period on its
    own baseline, and sees the maximum over its three periods: readers do not disturb
    each other or the first reader.
    """
    leaf = Leaf()
    leaf.state.tm.set_queue_rate(1000, port=2)
    queue = fabric_model.Fifo(period_us=1000)
    bursts_per_period = [[3], [], [30, 2], [1], [60], [], [10, 10], [12], [], []]
    cells = fabric_model.HIST_BUCKETS
    first = [0] * cells
    second = [0] * cells
    total_sent = 0
    total_read = 0
    window: list[int | None] = []
    for k, bursts in enumerate(bursts_per_period):
        seen: list[tuple[int, int, int]] = []
        for j, n in enumerate(bursts):
            seen += _burst(leaf, queue, 2, 100_000 * k + 1000 + 50_000 * j, n)
        total_sent += len(seen)
        now = [p for p, _ in leaf.cells(counter, 2)]
        delta = [fabric_model.counter_delta(a, b) for a, b in zip(first, now, strict=True)]
        assert delta == [p for p, _ in _histogram(seen, which, bounds)], k
        expected_max = max(
            (fabric_model.bucket_of(s[which], bounds) or 0 for s in seen), default=None
        )
        assert fabric_model.max_bucket_grown(first, now) == expected_max, k
        window.append(expected_max)
        total_read += sum(delta)
        first = now
        if k % 3 == 2:
            top = [b for b in window if b is not None]
            assert fabric_model.max_bucket_grown(second, now) == max(top, default=None), k
            second, window = now, []
    assert total_read == total_sent == leaf.port_tx(2)[0]


def test_counter_delta_across_wraps_and_resets() -> None:
    top = 1 << 64
    assert fabric_model.counter_delta(10, 25) == 15
    assert fabric_model.counter_delta(top - 5, 3) == 8  # the uint64 cell wrapped
    assert fabric_model.counter_delta(-5, 3) == 8  # the same cell read over P4Runtime (int64)
    assert fabric_model.counter_delta((1 << 63) - 1, -(1 << 63)) == 1  # crossing 2^63 in int64
    assert (
        fabric_model.counter_delta(1_000_000, 40) == 40
    )  # reset (pipeline pushed again): since then
    assert fabric_model.max_bucket_grown([5, 5, 5], [5, 6, 5]) == 1
    assert fabric_model.max_bucket_grown([5, 5, 5], [5, 5, 5]) is None
    assert (
        fabric_model.max_bucket_grown([9, 9, 9], [2, 0, 0]) == 0
    )  # reset, then 2 packets in bucket 0


def _readme_bounds(column: str) -> tuple[tuple[int, int], ...]:
    """The default boundaries of the README's bucket table, column 'depth' or 'delay'."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Default buckets", 1)[1].split("\n#", 1)[0]
    bounds = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            text = cells[1 if column == "depth" else 2].replace(",", "")
            found = re.fullmatch(r"(\d+)(?:-(\d+|max))?", text)
            assert found, f"bucket {cells[0]}: cannot read {text!r}"
            low, high = found.groups(default=found.group(1))
            top = fabric_model.QDEPTH_MAX if column == "depth" else fabric_model.QDELAY_MAX
            bounds.append((int(low), top if high == "max" else int(high)))
    return tuple(bounds)


def test_readme_default_buckets_are_the_models() -> None:
    assert _readme_bounds("depth") == fabric_model.QDEPTH_BOUNDS
    assert _readme_bounds("delay") == fabric_model.QDELAY_BOUNDS
    for bounds in (fabric_model.QDEPTH_BOUNDS, fabric_model.QDELAY_BOUNDS):
        assert len(bounds) == fabric_model.HIST_BUCKETS and bounds[0][0] == 0
        assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(bounds))  # no gap


def test_a_histogram_cell_wraps_at_2_64_as_bmv2s_uint64_cells() -> None:
    from softswitch.runtime.externs import CounterData

    leaf = Leaf()
    index = fabric_model.hist_index(2, 0)
    top = fabric_model.COUNTER_MODULUS - 1
    leaf.state.counter("port_qdepth_hist").write(index, CounterData(top, top))
    length = leaf.send_to(2, 1000)
    assert length is not None
    assert leaf.cells("port_qdepth_hist", 2)[0] == (0, length - 1)
    assert fabric_model.counter_delta(top, 0) == 1  # and the read procedure sees one packet
