"""Placement on the lab's own counters: the decisions the first lab runs got wrong.

The lab (20 Mb/s links, 1 MB transfers) showed, for the design's example (UDP
background at 75% on spine1 and 62.5% on spine2):

- the second transfer of a burst of two was "rate-limited" onto the 62.5% spine,
  behind the first, instead of going alone on the 75% one;
- sharing a path, it took twice its pair's baseline, which counted as "slow" and
  made the pair avoid the 62.5% spine for a minute: both transfers of every later
  burst went to the 75% spine;
- almost every transfer was judged inefficient, because the offline recomputation
  charged its path with the transfer's own retransmissions (a port counts what its
  full queue then drops).

``World`` replays that: every 100 ms each switch reports cumulative counters in
which the background runs at its offered rate (jittered as the lab's did) and each
transfer in flight adds its KV bytes, 1.4 times its rate (retransmissions included),
on the two ports of its path.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from controller.engine import (
    Decision,
    Demand,
    EngineError,
    LogRecord,
    SwitchReading,
    Update,
)
from controller.engine.telemetry_math import PortCounters
from controller.topology import PortRef
from tests.controller.ctl_harness import MB, FakeClockEngine

LINK = 20_000_000
WIRE = 1.4  # wire bytes of a TCP transfer on a full tail-drop queue, per payload byte


@dataclass
class World:
    """An engine fed with the lab's kind of counters (see the module docstring)."""

    f: FakeClockEngine
    background: dict[PortRef, float]
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    sent: dict[PortRef, float] = field(default_factory=dict)
    kv: dict[PortRef, float] = field(default_factory=dict)
    running: dict[int, tuple[Decision, float, float, float]] = field(default_factory=dict)
    updates: list[Update] = field(default_factory=list)

    @classmethod
    def of(cls, spines: int, leaves: int, hosts: int, background: dict[str, float]) -> World:
        f = FakeClockEngine(spines=spines, leaves=leaves, hosts_per_leaf=hosts, link_bps=LINK)
        bg = {PortRef(p.split(":")[0], int(p.split(":")[1])): u for p, u in background.items()}
        w = cls(f, bg)
        for _ in range(20):  # two seconds of background before the first transfer
            w.poll()
        return w

    def poll(self) -> None:
        """100 ms pass; every switch reports."""
        f = self.f
        f.now = round(f.now + 0.1, 9)
        kv_rate: dict[PortRef, float] = {}
        for d, _, rate, _ in self.running.values():
            assert d.path is not None
            for ref in (d.path.up, d.path.down):
                kv_rate[ref] = kv_rate.get(ref, 0.0) + rate
        for sw in f.config.switches:
            ports: dict[int, PortCounters] = {}
            for ref, port in f.topology.egress.items():
                if ref.switch != sw.name:
                    continue
                bg = self.background.get(ref, 0.0) * (1 + self.rng.uniform(-0.04, 0.04))
                kv = kv_rate.get(ref, 0.0) * WIRE * 0.1
                self.sent[ref] = self.sent.get(ref, 0.0) + bg * port.capacity_bps / 8 * 0.1 + kv
                self.kv[ref] = self.kv.get(ref, 0.0) + kv
                total, kv_total = int(self.sent[ref]), int(self.kv[ref])
                ports[ref.port] = PortCounters(total, total // 9000, kv_total, 0)
            self.updates += f.engine.telemetry(SwitchReading(sw.name, ports), f.now)
        self.updates += f.engine.tick(f.now)
        for tid, (_, end, _, seconds) in list(self.running.items()):
            if f.now >= end - 1e-9:
                del self.running[tid]
                self.updates += f.engine.complete(tid, seconds, f.now)

    def start(self, src: str, dst: str, seconds: float, size: int = MB) -> Decision:
        """A transfer placed now that the world makes last ``seconds``."""
        d, updates = self.f.engine.decide(Demand(src, dst, size), self.f.now)
        self.updates += updates
        assert d.path is not None, d
        self.running[d.transfer_id] = (d, self.f.now + seconds, size / seconds, seconds)
        return d

    def wait(self, seconds: float) -> None:
        for _ in range(round(seconds / 0.1)):
            self.poll()

    def records(self, event: str) -> list[LogRecord]:
        return [u for u in self.updates if isinstance(u, LogRecord) and u.event == event]


DESIGN = {"leaf1:3": 0.75, "spine1:2": 0.75, "leaf1:4": 0.625, "spine2:2": 0.625}
"""The design's example: UDP background at 75% through spine1, 62.5% through spine2."""


def test_design_example_one_at_a_time_goes_on_the_62_5_percent_spine() -> None:
    w = World.of(2, 2, 2, DESIGN)
    for k in range(6):
        d = w.start(f"h1{1 + k % 2}", f"h2{1 + k // 2 % 2}", 0.8)
        assert d.path is not None and d.path.spine == "spine2", d
        w.wait(1.0)
    verdicts = w.records("efficiency")
    assert len(verdicts) == 6
    assert all(v.fields["efficient"] for v in verdicts), [v.fields for v in verdicts]


def test_design_example_bursts_of_two_go_one_per_spine_and_are_not_slow() -> None:
    w = World.of(2, 2, 2, DESIGN)
    for _ in range(4):  # a baseline of lone transfers, 0.8 s each
        w.start("h11", "h21", 0.8)
        w.wait(1.0)
    for _ in range(5):
        first = w.start("h11", "h21", 0.8)
        w.wait(0.0)
        second = w.start("h12", "h22", 1.2)  # alone on the 75% spine: a bit slower
        assert first.path is not None and second.path is not None
        assert (first.path.spine, second.path.spine) == ("spine2", "spine1")
        assert second.reason == "spread" and second.best == second.path
        w.wait(5.0)
    assert w.f.engine.counts.reroutes == 0
    verdicts = w.records("efficiency")
    assert len(verdicts) == 14
    assert sum(bool(v.fields["efficient"]) for v in verdicts) >= 13, [v.fields for v in verdicts]


def test_a_slowdown_the_engine_caused_itself_is_not_a_reroute() -> None:
    """Two transfers that must share the only good spine take twice their baseline."""
    w = World.of(2, 2, 2, {"leaf1:4": 0.95, "spine2:2": 0.95})
    for _ in range(3):
        w.start("h11", "h21", 0.5)
        w.wait(1.0)
    a = w.start("h11", "h21", 1.1)
    b = w.start("h12", "h22", 1.1)  # 2.2 baselines: slow, were it alone
    assert a.path is not None and b.path is not None and a.path.spine == b.path.spine == "spine1"
    w.wait(2.0)
    done = [
        r
        for r in w.records("transfer")
        if r.fields["transfer_id"] in (a.transfer_id, b.transfer_id)
    ]
    assert [r.fields["shared_bytes"] for r in done] == [MB, MB]
    assert [r.fields["slow"] for r in done] == [False, False]
    assert w.f.engine.counts.reroutes == 0
    alone = w.start("h11", "h21", 1.1)  # 2.2 baselines alone: that is slow
    w.wait(2.0)
    assert alone.path is not None and alone.path.spine == "spine1"
    assert w.f.engine.counts.reroutes == 1


def test_a_burst_of_four_between_two_racks_goes_one_per_spine() -> None:
    w = World.of(4, 2, 4, {})
    burst = [w.start(f"h1{k}", f"h2{k}", 0.5) for k in range(1, 5)]
    assert sorted(d.path.spine for d in burst if d.path) == ["spine1", "spine2", "spine3", "spine4"]


def test_collision_bursts_never_put_two_transfers_on_one_link() -> None:
    """The collisions scenario: two prefill racks, two decode racks, four spines.

    Transfers from different source leaves to different destination leaves share no
    link even through the same spine (a spine is non-blocking), so two spines can carry
    a collision-free burst of four; what must never happen is two transfers on one leaf
    uplink or one spine downlink.
    """
    w = World.of(4, 4, 3, {f"{sw}:{p}": 0.1 for sw in ("leaf1", "leaf2") for p in (4, 5, 6, 7)})
    pairs = [("h11", "h31"), ("h12", "h41"), ("h21", "h32"), ("h22", "h42")]
    for b in range(8):
        burst = [w.start(s, d, 0.5) for s, d in pairs[b % 4 :] + pairs[: b % 4]]
        ports = [p for d in burst if d.path for p in (d.path.up, d.path.down)]
        assert len(ports) == len(set(ports)) == 8, [str(d.path) for d in burst]
        w.wait(6.0)
    verdicts = w.records("efficiency")
    assert len(verdicts) == 32
    assert sum(bool(v.fields["efficient"]) for v in verdicts) >= 30


def test_a_forced_spine_is_pinned_and_counted_where_it_goes() -> None:
    """The lab's isolated reference forces a spine; the engine's accounting follows it."""
    w = World.of(2, 2, 2, DESIGN)
    f = w.f
    d, updates = f.engine.decide(Demand("h11", "h21", MB, spine="spine1"), f.now)
    assert d.path is not None and d.path.spine == "spine1" and d.reason == "forced"
    assert d.best is not None and d.best.spine == "spine2"
    assert updates == []  # spine1's range pins it: its tag port is from there
    assert d.tag is not None and f.engine.tags.spine_of(d.tag.src_port) == "spine1"
    assert f.inflight("leaf1:3") == MB and f.inflight("leaf1:4") == 0
    assert f.engine.pairs.get(("leaf1", "leaf2")) is None  # no hysteresis memory
    with pytest.raises(EngineError, match="spine 'spine9' is not on a path"):
        f.engine.decide(Demand("h11", "h21", MB, spine="spine9"), f.now)
    with pytest.raises(EngineError, match="crosses no spine"):
        f.engine.decide(Demand("h11", "h12", MB, spine="spine1"), f.now)
    assert f.engine.tags.in_use == 1  # refused requests take no tag
