"""Property tests: random event sequences against the engine's invariants, and
round trips of the fabric file's units and generated fabrics."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import HealthCheck, event, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controller.config import Mode, SelectionSettings, parse_config
from controller.config.generate import leaf_spine, to_yaml
from controller.config.units import format_capacity, format_duration, parse_capacity, parse_duration
from controller.engine import (
    AuditRound,
    Decision,
    Demand,
    PathDownError,
    ProbeSeen,
    TransferMoved,
)
from controller.engine.selection import PathIndex, choose
from controller.topology import LinkStatus
from tests.controller.ctl_harness import MB, FakeClockEngine, settings


class EngineMachine(RuleBasedStateMachine):
    """Random polls, loads, requests, completions, audits, ticks and mode changes."""

    def __init__(self) -> None:
        super().__init__()
        self.f = FakeClockEngine(spines=3, leaves=3, hosts_per_leaf=2, controller=settings(
            telemetry={"smoothing_s": 0.05}, safety={"transfer_timeout_s": 5.0}
        ))  # fmt: skip
        self.f.warm()
        self.hosts = [h.name for h in self.f.config.hosts]
        self.switches = [s.name for s in self.f.config.switches]
        self.ports = [str(ref) for ref in self.f.topology.egress]
        self.fabric_ports = [r for r, p in self.f.topology.egress.items() if p.link is not None]
        self.live: dict[int, Decision] = {}

    @rule(dt=st.sampled_from([0.05, 0.1, 0.3, 0.7]), data=st.data())
    def poll(self, dt: float, data: st.DataObject) -> None:
        subset = data.draw(st.lists(st.sampled_from(self.switches), unique=True))
        self.f.poll(dt, switches=subset or None)

    @rule(port=st.sampled_from(range(30)), util=st.floats(0.0, 1.6), kv=st.floats(0.0, 0.5))
    def load(self, port: int, util: float, kv: float) -> None:
        # over 1.0: the switch counts more than the cable carries (an oversubscribed
        # port whose drops happen below the switch, in the kernel's queue)
        self.f.set_load(self.ports[port % len(self.ports)], util, kv=kv)

    @rule(src=st.integers(0, 5), dst=st.integers(0, 5), size=st.integers(1, 50 * MB))
    def decide(self, src: int, dst: int, size: int) -> None:
        if src == dst:
            return
        topo = self.f.engine.topology
        request = Demand(self.hosts[src], self.hosts[dst], size)
        d, updates = self.f.engine.decide(request, self.f.now)
        self.live[d.transfer_id] = d
        event("pinned" if d.path is not None else f"not pinned: {d.reason}")
        if d.path is None:
            assert not any(isinstance(u, TransferMoved) for u in updates)
            return
        # the chosen path is a candidate: both cables up, every switch on it fresh
        assert d.path in topo.candidate_paths(d.path.src_leaf, d.path.dst_leaf)
        for link in d.path.links:
            assert topo.link_status(link) is LinkStatus.UP
        for sw in (d.path.src_leaf, d.path.spine, d.path.dst_leaf):
            assert self.f.engine.table.is_fresh(sw, self.f.now)
        assert self.f.engine.effective_mode is Mode.KV_AWARE
        assert d.tag is not None and self.f.engine.tags.spine_of(d.tag.src_port) == d.path.spine
        self.check_cost_bound(d)

    @rule(src=st.integers(0, 5), dst=st.integers(0, 5), spine=st.integers(0, 2))
    def forced(self, src: int, dst: int, spine: int) -> None:
        if src == dst or self.hosts[src][:2] == self.hosts[dst][:2]:
            return  # one rack: no spine to force
        request = Demand(self.hosts[src], self.hosts[dst], MB, spine=f"spine{spine + 1}")
        try:
            d, _ = self.f.engine.decide(request, self.f.now)
        except PathDownError:
            return
        self.live[d.transfer_id] = d
        if self.f.engine.effective_mode is not Mode.KV_AWARE:  # the leaves' ranges are off
            assert d.path is None and any("forced spine" in why for why in d.fallbacks)
            return
        assert d.path is not None and d.path.spine == request.spine and d.reason == "forced"
        self.check_cost_bound(d)

    def check_cost_bound(self, d: Decision) -> None:
        """No decision takes a path expected to take over twice the best's time, unless
        the operator forced that spine; every estimate is finite."""
        pl = self.f.engine.inflight.transfers[d.transfer_id].choice
        assert all(math.isfinite(c) and c > 0 for c in pl.costs)
        assert d.expected_s == pl.costs[pl.chosen]
        if d.reason != "forced":
            assert pl.costs[pl.chosen] <= 2.0 * pl.costs[pl.best], d.reason

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data(), duration=st.floats(0.001, 20.0))
    def complete(self, data: st.DataObject, duration: float) -> None:
        tid = data.draw(st.sampled_from(sorted(self.live)))
        if tid in self.f.engine.inflight.transfers:
            self.f.engine.complete(tid, duration, self.f.now)
        del self.live[tid]

    @rule(dead=st.sets(st.integers(0, 11), max_size=4))
    def audit(self, dead: set[int]) -> None:
        gone = {self.fabric_ports[i % len(self.fabric_ports)] for i in dead}
        seen = tuple(
            ProbeSeen(r, p)
            for r in self.fabric_ports
            if r not in gone and (p := self.f.topology.egress[r].peer_port) is not None
        )
        self.f.engine.audit(AuditRound(tuple(self.fabric_ports), seen), self.f.now)

    @rule(dt=st.sampled_from([0.0, 0.5, 3.0, 6.0]))
    def tick(self, dt: float) -> None:
        self.f.tick(dt)

    @rule(mode=st.sampled_from([Mode.KV_AWARE] * 4 + [Mode.ECMP, Mode.FLOWLET]))
    def mode(self, mode: Mode) -> None:
        self.f.engine.set_mode(mode, self.f.now)

    @invariant()
    def in_flight_bytes_match_the_transfers_in_flight(self) -> None:
        engine = self.f.engine
        expected: Counter[int] = Counter()
        for t in engine.inflight.transfers.values():
            for port, b in t.choice.contributions:
                expected[port] += b
        for i, b in enumerate(engine.table.inflight):
            assert b >= 0
            assert b == expected[i]

    @invariant()
    def tags_are_unique_and_none_is_lost(self) -> None:
        engine = self.f.engine
        held = [
            (t.decision.src, t.decision.tag.src_port)
            for t in engine.inflight.transfers.values()
            if t.decision.tag
        ]
        assert len(held) == len(set(held))
        assert engine.tags.in_use == len(held)

    @invariant()
    def pins_never_cross_a_broken_cable(self) -> None:
        topo = self.f.engine.topology
        for t in self.f.engine.inflight.transfers.values():
            if t.path is not None:
                assert all(topo.link_status(link) is LinkStatus.UP for link in t.path.path.links)


EngineMachine.TestCase.settings = hsettings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_engine_invariants = EngineMachine.TestCase


@given(
    costs=st.lists(st.floats(1e-3, 1e6), min_size=1, max_size=6),
    data=st.data(),
    ratio=st.floats(1.0, 10.0),
    hysteresis=st.floats(0.0, 1.0),
    util_delta=st.floats(0.0, 1.0),
)
def test_no_rule_keeps_a_path_beyond_the_cost_ratio(
    costs: list[float],
    data: st.DataObject,
    ratio: float,
    hysteresis: float,
    util_delta: float,
) -> None:
    f = FakeClockEngine(spines=len(costs), leaves=2)
    candidates: tuple[PathIndex, ...] = f.engine._all_paths(("leaf1", "leaf2"))
    spines = [None, *(c.path.spine for c in candidates)]
    loads = data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(costs), max_size=len(costs)))
    alone = data.draw(st.lists(st.floats(1e-3, 1e6), min_size=len(costs), max_size=len(costs)))
    choice = choose(
        candidates,
        costs,
        loads,
        SelectionSettings(hysteresis, util_delta, max_cost_ratio=ratio),
        last_spine=data.draw(st.sampled_from(spines)),
        avoid_spine=data.draw(st.sampled_from(spines)),
        latency_high=data.draw(st.booleans()),
        alone=alone,
    )
    assert costs[choice.chosen] <= ratio * min(costs)


def _spine_loads(f: FakeClockEngine, loads: list[float]) -> None:
    for k, util in enumerate(loads):
        for port in (f"leaf1:{3 + k}", f"spine{k + 1}:2"):
            f.set_load(port, util)


@given(
    before=st.lists(st.floats(0.0, 1.6), min_size=3, max_size=3),
    after=st.lists(st.floats(0.0, 1.6), min_size=3, max_size=3),
    slow=st.floats(0.5, 60.0),
    burst=st.integers(1, 8),
    sizes=st.lists(st.integers(MB // 10, 20 * MB), min_size=8, max_size=8),
)
@hsettings(deadline=None, max_examples=150)
def test_decisions_stay_within_twice_the_best_through_a_shift_of_load(
    before: list[float], after: list[float], slow: float, burst: int, sizes: list[int]
) -> None:
    """Three spines loaded unevenly, a pair marked by a slow transfer, then the load
    moves (a failure re-hashes the background): every decision of the next burst is
    expected to take at most twice the best candidate's time."""
    f = FakeClockEngine(spines=3, leaves=2, controller=settings(telemetry={"smoothing_s": 0.0}))
    _spine_loads(f, before)
    f.warm()
    for _ in range(3):
        f.complete(f.decide("h11", "h21"), 1.0)
    f.complete(f.decide("h12", "h22"), slow)
    _spine_loads(f, after)
    f.poll()
    for k in range(burst):
        d = f.decide(f"h1{1 + k % 2}", f"h2{1 + k % 2}", sizes[k])
        assert d.path is not None
        pl = f.engine.inflight.transfers[d.transfer_id].choice
        assert all(math.isfinite(c) for c in pl.costs)
        assert pl.costs[pl.chosen] <= 2.0 * pl.costs[pl.best], (d.reason, pl.costs)


def test_an_oversubscribed_spine_costs_more_than_a_full_one_never_less() -> None:
    """Counters that show more than a port's capacity (drops below the switch) give
    the same finite, highest estimate as a full port: ordered, never cheaper."""
    f = FakeClockEngine(spines=3, leaves=2, controller=settings(telemetry={"smoothing_s": 0.0}))
    _spine_loads(f, [1.5, 1.0, 0.5])
    f.warm()
    d = f.decide("h11", "h21")
    costs = f.engine.inflight.transfers[d.transfer_id].choice.costs
    assert all(math.isfinite(c) for c in costs)
    assert costs[0] >= costs[1] > costs[2]
    assert f.spine(d) == "spine3"


def test_everything_completed_leaves_nothing_in_flight() -> None:
    f = FakeClockEngine(spines=4, leaves=3)
    f.warm()
    ds = [f.decide(f"h{1 + i % 3}1", f"h{1 + (i + 1) % 3}2", size=(i + 1) * MB) for i in range(40)]
    for d in ds:
        f.complete(d, 0.5)
    assert set(f.engine.table.inflight) == {0}
    assert f.engine.tags.in_use == 0


@given(bps=st.integers(1, 10**15))
def test_capacity_format_round_trips(bps: int) -> None:
    assert parse_capacity(format_capacity(bps)) == bps


@given(ms=st.integers(1, 10**9))
def test_duration_format_round_trips(ms: int) -> None:
    seconds = ms / 1000
    assert abs(parse_duration(format_duration(seconds)) - seconds) <= 1e-9 * max(1.0, seconds)


@hsettings(max_examples=25, deadline=None)
@given(
    spines=st.integers(1, 6),
    leaves=st.integers(1, 6),
    hosts=st.integers(0, 4),
    gbps=st.integers(1, 800),
)
def test_generated_fabrics_are_valid_and_round_trip(
    spines: int, leaves: int, hosts: int, gbps: int
) -> None:
    cfg = leaf_spine(spines, leaves, hosts, link_bps=gbps * 10**9)
    assert parse_config(to_yaml(cfg), "<generated>") == cfg
