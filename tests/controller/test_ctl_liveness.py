"""Link liveness with a fake clock: lost probes on loaded links, hold time, counter evidence.

The 2 x 2 fabric at 20 Mb/s: leaf1:3 -> spine1:1 and spine1:2 -> leaf2:3 carry
leaf1 -> leaf2 traffic through spine1. One audit round follows every 100 ms poll.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.config import ControllerSettings
from controller.engine import (
    Alert,
    AuditRound,
    Demand,
    LinkStatusChanged,
    PathDownError,
    ProbeSeen,
    SwitchReading,
    Update,
)
from controller.engine.liveness import Evidence, counter_evidence
from controller.engine.telemetry_math import PortCounters
from controller.topology import LinkId, LinkStatus, PortRef
from tests.controller.ctl_harness import FakeClockEngine, settings

CABLE = LinkId(PortRef("leaf1", 3), PortRef("spine1", 1))


def probe_round(f: FakeClockEngine, dead: tuple[str, ...] = ()) -> AuditRound:
    """Every fabric port probed; the probes out of ``dead`` are lost."""
    sent, seen = [], []
    for ref, port in f.topology.egress.items():
        if port.peer_port is None:
            continue
        sent.append(ref)
        if str(ref) not in dead:
            seen.append(ProbeSeen(ref, port.peer_port))
    return AuditRound(tuple(sent), tuple(seen))


def rounds(f: FakeClockEngine, n: int, dead: tuple[str, ...] = ()) -> list[Update]:
    """``n`` times: a poll 100 ms later, then an audit round losing ``dead``'s probes."""
    out: list[Update] = []
    for _ in range(n):
        f.poll()
        out += f.engine.audit(probe_round(f, dead), f.now)
    return out


def changes(updates: list[Update]) -> list[LinkStatusChanged]:
    return [u for u in updates if isinstance(u, LinkStatusChanged)]


def alerts(updates: list[Update], name: str) -> list[Alert]:
    return [u for u in updates if isinstance(u, Alert) and u.name == name]


def loaded(**controller: object) -> FakeClockEngine:
    """leaf1 -> spine1 -> leaf2 at 95% (a full tail-drop queue), the rest idle."""
    f = FakeClockEngine(controller=settings(**controller) if controller else None)  # type: ignore[arg-type]
    f.set_load("leaf1:3", 0.95)
    f.set_load("spine1:2", 0.95)
    f.warm()
    f.engine.audit(probe_round(f), f.now)
    return f


def test_a_loaded_link_that_loses_its_probes_stays_up() -> None:
    f = loaded()
    # 4 s of lost probes out of leaf1:3: twice the hold time
    updates = rounds(f, 40, dead=("leaf1:3",))
    assert changes(updates) == []
    assert f.engine.topology.link_status(CABLE) is LinkStatus.UP
    (lost,) = alerts(updates, "probes_lost")
    assert lost.firing and lost.subject == "leaf1:3" and lost.severity == "warning"
    assert "the link delivers traffic" in lost.message and "a full queue" in lost.message
    assert f.engine.counts.probes_missed == 40
    (back,) = alerts(rounds(f, 1), "probes_lost")
    assert not back.firing


def test_a_loaded_link_that_dies_leaves_once_its_counters_freeze() -> None:
    f = loaded()
    rounds(f, 3, dead=("leaf1:3",))  # a full queue: held
    # leaf1 -> spine1 dies: leaf1 keeps sending into it, spine1 receives nothing to
    # forward (spine1 -> leaf1 still works: its probes come back)
    f.set_load("spine1:2", 0.0)
    t_death = f.now
    assert changes(rounds(f, 1, dead=("leaf1:3",))) == []  # half the interval delivered
    updates = rounds(f, 1, dead=("leaf1:3",))
    (change,) = changes(updates)
    assert (change.link, change.status) == (CABLE, LinkStatus.DOWN)
    assert "counters frozen (sent 475 kB in 200 ms, at least 0 kB arrived)" in change.detail
    assert f.now - t_death <= 0.2 + 1e-9  # two polls after the death
    assert alerts(updates, "link_down")[0].firing


def test_a_burst_that_has_not_crossed_yet_is_not_frozen_counters() -> None:
    """A TCP burst fills the queue at the end of the interval and takes the probe."""
    f = loaded()
    f.set_load("leaf1:3", 0.0)
    f.set_load("spine1:2", 0.0)
    rounds(f, 3)
    f.set_load("leaf1:3", 0.36)  # 90 kB (a full 10-frame queue) in the last 100 ms
    assert changes(rounds(f, 1, dead=("leaf1:3",))) == []


def test_a_busy_direction_towards_a_leaf_stays_up_whatever_its_probes() -> None:
    """Probes tail-dropped on a saturated spine -> leaf direction: a warning, not a
    cable taken down (which would rewrite ECMP and refuse the isolated reference)."""
    f = FakeClockEngine()
    f.set_load("spine1:1", 0.9)  # spine1 -> leaf1 busy; a leaf's inputs bound nothing
    f.warm()
    f.engine.audit(probe_round(f), f.now)
    updates = rounds(f, 60, dead=("spine1:1",))  # 6 s: three times the hold time
    assert changes(updates) == []
    assert f.engine.topology.link_status(CABLE) is LinkStatus.UP
    (lost,) = alerts(updates, "probes_lost")
    assert lost.firing and lost.subject == "spine1:1" and lost.severity == "warning"
    assert "but the link carries traffic (sent 450 kB in 200 ms)" in lost.message


def test_a_quiet_direction_towards_a_leaf_is_down_after_the_hold_time() -> None:
    f = FakeClockEngine()
    f.set_load("spine1:1", 0.15)  # between idle and busy: the counters cannot tell
    f.warm()
    f.engine.audit(probe_round(f), f.now)
    first_miss = f.now + 0.1
    held = rounds(f, 20, dead=("spine1:1",))  # 0 to 1.9 s of silence
    assert changes(held) == []
    (change,) = changes(rounds(f, 1, dead=("spine1:1",)))
    assert f.now - first_miss >= 2.0 - 1e-9
    assert change.status is LinkStatus.DOWN
    assert change.detail.endswith("silent for the hold time (2 s)")


def test_an_oversubscribed_spine_does_not_make_a_working_cable_look_frozen() -> None:
    """leaf1 and leaf2 both send spine1 a full link towards leaf2: spine1 forwards one
    link's worth and drops the rest, so conservation bounds what leaf1's cable carried
    by nothing. Its lost probes are a full queue, not a dead cable."""
    f = FakeClockEngine()
    for port in ("leaf1:3", "leaf2:3", "spine1:2"):
        f.set_load(port, 1.0)
    f.warm()
    f.engine.audit(probe_round(f), f.now)
    updates = rounds(f, 40, dead=("leaf1:3",))
    assert changes(updates) == []
    assert f.engine.topology.link_status(CABLE) is LinkStatus.UP
    (lost,) = alerts(updates, "probes_lost")
    assert "the link carries traffic" in lost.message


def test_an_idle_direction_is_down_after_the_allowed_misses() -> None:
    f = FakeClockEngine(controller=replace(ControllerSettings(), audit_misses=3))
    f.warm()
    assert changes(rounds(f, 2, dead=("leaf1:3",))) == []
    (change,) = changes(rounds(f, 1, dead=("leaf1:3",)))
    assert change.status is LinkStatus.DOWN
    assert "(3 rounds, 0.2 s); the port is idle" in change.detail
    (up,) = changes(rounds(f, 1))
    assert up.status is LinkStatus.UP and up.detail == "leaf1:3 reaches spine1:1"


def test_a_silent_direction_keeps_a_cable_down_that_the_other_direction_reaches() -> None:
    f = loaded()
    f.set_load("spine1:2", 0.0)
    rounds(f, 2, dead=("leaf1:3", "spine1:1"))
    assert f.engine.topology.link_status(CABLE) is LinkStatus.DOWN
    # spine1 -> leaf1 works again; leaf1 -> spine1 stays silent: the cable stays down
    assert changes(rounds(f, 3, dead=("leaf1:3",))) == []
    assert f.engine.topology.link_status(CABLE) is LinkStatus.DOWN


def test_a_forced_spine_across_a_dead_cable_is_refused_and_takes_nothing() -> None:
    """The lab's isolated reference must not pin a transfer onto a cable known down."""
    f = FakeClockEngine(controller=replace(ControllerSettings(), audit_misses=3))
    f.warm()
    rounds(f, 3, dead=("leaf1:3",))
    assert f.engine.topology.link_status(CABLE) is LinkStatus.DOWN
    held = f.engine.tags.in_use
    refused = r"spine 'spine1' cannot carry leaf1 -> leaf2: .* not up"
    with pytest.raises(PathDownError, match=refused):
        f.engine.decide(Demand("h11", "h21", 1_000_000, spine="spine1"), f.now)
    assert f.engine.tags.in_use == held and not f.engine.inflight.transfers
    d, _ = f.engine.decide(Demand("h11", "h21", 1_000_000, spine="spine2"), f.now)
    assert d.path is not None and d.path.spine == "spine2" and d.reason == "forced"
    rounds(f, 1)  # the cable is back: spine1 can be forced again
    d, _ = f.engine.decide(Demand("h11", "h21", 1_000_000, spine="spine1"), f.now)
    assert d.path is not None and d.path.spine == "spine1"


def feed(f: FakeClockEngine, switch: str, at: float, sent: dict[int, int]) -> None:
    """One reading of ``switch`` at time ``at``: cumulative bytes per port."""
    ports = {p: PortCounters(b, b // 9000, 0, 0) for p, b in sent.items()}
    f.engine.telemetry(SwitchReading(switch, ports), at)


def test_counter_evidence_interpolates_reads_taken_at_different_times() -> None:
    """Leaves read at k * 100 ms, spines 40 ms later: 2.5 MB/s through spine1."""
    f = FakeClockEngine()
    rate = 2_500_000 * 0.9  # bytes/s, 90% of 20 Mb/s
    for k in range(4):
        t_leaf, t_spine = k * 0.1, k * 0.1 + 0.04
        feed(f, "leaf1", t_leaf, {1: 0, 2: 0, 3: int(rate * t_leaf), 4: 0})
        feed(f, "leaf2", t_leaf, {1: 0, 2: 0, 3: 0, 4: 0})
        # spine1 forwards leaf1's bytes to leaf2 (port 2); nothing the other way
        feed(f, "spine1", t_spine, {1: 0, 2: int(rate * t_spine)})
        feed(f, "spine2", t_spine, {1: 0, 2: 0})
    table, topo = f.engine.table, f.engine.topology
    alive = counter_evidence(table, topo, PortRef("leaf1", 3), 0.1, now=0.35, max_age_s=0.5)
    assert alive.evidence is Evidence.DELIVERING
    assert alive.sent == pytest.approx(rate * 0.1)
    assert alive.arrived == pytest.approx(rate * 0.1)  # exact despite the 40 ms skew
    idle = counter_evidence(table, topo, PortRef("leaf1", 4), 0.1, now=0.35, max_age_s=0.5)
    assert idle.evidence is Evidence.IDLE
    towards_leaf = counter_evidence(table, topo, PortRef("spine1", 2), 0.1, now=0.35, max_age_s=0.5)
    assert towards_leaf.evidence is Evidence.BUSY  # sent a lot; leaf2's hosts bound nothing
    old = counter_evidence(table, topo, PortRef("leaf1", 3), 0.1, now=2.0, max_age_s=0.5)
    assert old.evidence is Evidence.UNKNOWN
