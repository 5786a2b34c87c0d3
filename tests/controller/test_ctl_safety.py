"""Safety of the engine with a fake clock: reroutes, the fallback to ECMP and its end,
stale telemetry, and cables the audit finds down or miswired."""

from __future__ import annotations

import pytest

from controller.config import Mode
from controller.engine import (
    Alert,
    AuditRound,
    LinkStatusChanged,
    LogRecord,
    ProbeSeen,
    SetMode,
    TransferMoved,
    Update,
)
from controller.topology import LinkId, LinkStatus, PortRef
from tests.controller.ctl_harness import FakeClockEngine, settings

NO_SMOOTHING = settings(telemetry={"smoothing_s": 0.0})


def two_spines(spine1: float = 0.2, spine2: float = 0.4) -> FakeClockEngine:
    f = FakeClockEngine(controller=NO_SMOOTHING)
    for port in ("leaf1:3", "spine1:2"):
        f.set_load(port, spine1)
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, spine2)
    f.warm()
    return f


def with_baseline(f: FakeClockEngine, seconds: float = 1.0, count: int = 3) -> None:
    """Normal completions of the leaf1 -> leaf2 pair (three: just enough for a baseline)."""
    for _ in range(count):
        f.complete(f.decide("h11", "h21"), seconds)


def alerts(updates: list[Update], name: str) -> list[Alert]:
    return [u for u in updates if isinstance(u, Alert) and u.name == name]


# -- reroutes ----------------------------------------------------------------------------


def test_no_baseline_no_reroute() -> None:
    f = two_spines()
    f.complete(f.decide("h11", "h21"), 100.0)
    assert f.engine.counts.reroutes == 0


def test_a_transfer_slower_than_twice_the_baseline_reroutes_its_pair() -> None:
    f = two_spines()
    with_baseline(f)
    slow = f.decide("h11", "h21")
    assert f.spine(slow) == "spine1"
    updates = f.complete(slow, 2.5)
    record = next(u for u in updates if isinstance(u, LogRecord) and u.event == "transfer")
    assert record.fields["slow"] is True and record.fields["rerouted"] is True
    assert record.fields["baseline_s"] == 1.0
    assert f.engine.counts.reroutes == 1
    moved = f.decide("h12", "h22")  # same pair of racks
    assert (f.spine(moved), moved.reason) == ("spine2", "reroute")
    assert moved.best is not None and moved.best.spine == "spine1"
    f.complete(moved, 1.0)
    # the pair avoids spine1 for one reroute window (60 s), then may use it again
    f.poll(59.0)
    assert f.spine(f.decide("h11", "h21")) == "spine2"
    f.poll(1.0)
    assert f.spine(f.decide("h11", "h21")) == "spine1"


def test_slow_completions_of_one_burst_mark_the_pair_once() -> None:
    f = two_spines(spine1=0.0, spine2=0.5)
    with_baseline(f)
    burst = [f.decide("h11", "h21") for _ in range(3)]
    on_spine1 = [d for d in burst if f.spine(d) == "spine1"]
    for d in on_spine1:
        f.complete(d, 10.0)
    assert len(on_spine1) >= 2
    assert f.engine.counts.reroutes == 1


def marked_then_shifted(ratio: float | None = None) -> FakeClockEngine:
    """The failure that moves load: leaf1 -> leaf2 avoids spine1 (a slow transfer ran
    there), then background re-hashes onto spine2 (99% busy) and leaves spine1 idle."""
    selection = {"max_cost_ratio": ratio} if ratio is not None else {}
    f = FakeClockEngine(controller=settings(telemetry={"smoothing_s": 0.0}, selection=selection))
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, 0.2)
    f.warm()
    with_baseline(f)
    slow = f.decide("h11", "h21")
    assert f.spine(slow) == "spine1"
    f.complete(slow, 10.0)
    assert f.engine.pairs["leaf1", "leaf2"].avoiding(f.now) == "spine1"
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, 0.99)
    f.poll()
    return f


def test_a_reroute_mark_yields_when_the_avoided_spine_is_clearly_best() -> None:
    f = marked_then_shifted()
    d = f.decide("h11", "h21")
    assert (f.spine(d), d.reason) == ("spine1", "reroute yields")
    t = f.engine.inflight.transfers[d.transfer_id].choice
    assert t.costs[1] > 50 * t.costs[0]  # spine2 is about 100 times worse
    assert f.engine.pairs["leaf1", "leaf2"].avoiding(f.now) is None  # the mark is lifted
    f.complete(d, 1.0)
    again = f.decide("h12", "h22")
    assert (f.spine(again), again.reason) == ("spine1", "best")


def test_a_reroute_mark_holds_within_the_configured_cost_ratio() -> None:
    f = marked_then_shifted(ratio=1000.0)
    d = f.decide("h11", "h21")
    assert (f.spine(d), d.reason) == ("spine2", "reroute")
    assert f.engine.pairs["leaf1", "leaf2"].avoiding(f.now) == "spine1"


def storm(f: FakeClockEngine, reroutes: int, every: float = 1.0) -> list[Update]:
    """``reroutes`` slow completions, each on the spine the previous one moved to."""
    out: list[Update] = []
    for _ in range(reroutes):
        f.poll(every)
        out += f.complete(f.decide("h11", "h21"), 50.0)
    return out


def test_five_reroutes_a_minute_are_tolerated() -> None:
    f = two_spines()
    with_baseline(f, count=15)  # deep enough that six slow ones leave the median
    updates = storm(f, 5)
    assert f.engine.counts.reroutes == 5
    assert not any(isinstance(u, SetMode) for u in updates)
    assert f.engine.effective_mode is Mode.KV_AWARE


def test_reroutes_spread_over_more_than_a_minute_are_tolerated() -> None:
    f = two_spines()
    with_baseline(f, count=15)  # deep enough that six slow ones leave the median
    storm(f, 8, every=15.0)
    assert f.engine.counts.reroutes == 8
    assert f.engine.effective_mode is Mode.KV_AWARE


def test_six_reroutes_in_a_minute_fall_back_to_ecmp_with_an_alert() -> None:
    f = two_spines()
    with_baseline(f, count=15)  # deep enough that six slow ones leave the median
    updates = storm(f, 6)
    assert SetMode(Mode.ECMP, "reroute limit exceeded") in updates
    (alert,) = alerts(updates, "scheduler_fallback")
    assert alert.firing and alert.severity == "critical"
    assert alert.message.startswith("6 reroutes within 60s (limit 5)")
    assert f.engine.effective_mode is Mode.ECMP and f.engine.mode is Mode.KV_AWARE
    d = f.decide("h11", "h21")
    assert d.path is None and d.mode is Mode.ECMP
    assert d.fallbacks == ("kv-aware placement disabled by the reroute limit",)
    # slow transfers left to ECMP do not count as reroutes
    f.complete(d, 50.0)
    assert f.engine.counts.reroutes == 6


def test_placement_resumes_after_the_quiet_period() -> None:
    f = two_spines()
    with_baseline(f, count=15)  # deep enough that six slow ones leave the median
    storm(f, 6)
    quiet = f.engine.settings.safety.quiet_period_s
    f.poll(quiet - 1.0)
    assert not any(isinstance(u, SetMode) for u in f.tick())
    f.poll(1.0)
    updates = f.tick()
    assert SetMode(Mode.KV_AWARE, "quiet period over") in updates
    (alert,) = alerts(updates, "scheduler_fallback")
    assert not alert.firing
    assert f.decide("h11", "h21").path is not None


def test_an_operator_re_enables_placement() -> None:
    f = two_spines()
    with_baseline(f, count=15)  # deep enough that six slow ones leave the median
    storm(f, 6)
    updates = f.engine.set_mode(Mode.KV_AWARE, f.now)
    assert SetMode(Mode.KV_AWARE, "operator") in updates
    assert not alerts(updates, "scheduler_fallback")[0].firing
    assert f.decide("h11", "h21").path is not None
    assert f.engine.guard.count(f.now) == 0


# -- stale telemetry -----------------------------------------------------------------------


def test_no_telemetry_yet_means_ecmp() -> None:
    f = FakeClockEngine(controller=NO_SMOOTHING)
    d = f.decide("h11", "h21")
    assert d.path is None and d.reason == "fallback"
    assert d.fallbacks == ("stale telemetry: no sample from leaf1 yet",)
    assert f.engine.counts.fallbacks["stale"] == 1


def test_stale_source_leaf_falls_back_to_ecmp() -> None:
    f = two_spines()
    for _ in range(6):
        f.poll(switches=["leaf2", "spine1", "spine2"])
    d = f.decide("h11", "h21")
    assert d.path is None
    assert d.fallbacks == ("stale telemetry: leaf1 last sampled 600 ms ago",)
    f.poll()
    assert f.decide("h11", "h21").path is not None


def test_a_stale_spine_leaves_the_candidates_until_it_is_fresh_again() -> None:
    f = two_spines(spine1=0.6, spine2=0.1)
    assert f.spine(f.decide("h11", "h21")) == "spine2"
    for _ in range(6):
        f.poll(switches=["leaf1", "leaf2", "spine1"])
    d = f.decide("h11", "h21")
    assert f.spine(d) == "spine1"
    assert d.fallbacks == ("stale telemetry: left out spine2",)
    f.poll()
    assert f.spine(f.decide("h11", "h21")) == "spine2"


def test_every_spine_stale_means_ecmp() -> None:
    f = two_spines()
    for _ in range(6):
        f.poll(switches=["leaf1", "leaf2"])
    d = f.decide("h11", "h21")
    assert d.path is None
    assert d.fallbacks == ("stale telemetry: left out spine1, spine2",)


def test_staleness_alerts_start_and_stop() -> None:
    f = two_spines()
    for _ in range(6):
        f.poll(switches=["leaf1", "leaf2", "spine1"])
    (alert,) = alerts(f.tick(), "telemetry_stale")
    assert (alert.subject, alert.firing) == ("spine2", True)
    assert alerts(f.tick(), "telemetry_stale") == []
    (back,) = alerts(f.poll(), "telemetry_stale")
    assert (back.subject, back.firing) == ("spine2", False)


# -- cables found down or miswired ---------------------------------------------------------


def probe_round(
    f: FakeClockEngine, *, dead: tuple[str, ...] = (), rewire: dict[str, str] | None = None
):
    """A round over every fabric port: probes out of ``dead`` vanish, ``rewire`` moves them."""
    sent, seen = [], []
    for ref, port in f.topology.egress.items():
        if port.link is None or port.peer_port is None:
            continue
        sent.append(ref)
        if str(ref) in dead:
            continue
        at = (rewire or {}).get(str(ref))
        if at is not None:
            sw, n = at.split(":")
            seen.append(ProbeSeen(ref, PortRef(sw, int(n))))
        else:
            seen.append(ProbeSeen(ref, port.peer_port))
    return AuditRound(tuple(sent), tuple(seen))


LEAF1_SPINE2 = LinkId(PortRef("leaf1", 4), PortRef("spine2", 1))


def test_a_dead_link_leaves_selection_and_its_transfers_move() -> None:
    f = two_spines(spine1=0.5, spine2=0.0)
    d = f.decide("h11", "h21")
    assert f.spine(d) == "spine2"
    # one missed round may be a late PacketIn; the second is a verdict
    assert f.engine.audit(probe_round(f, dead=("spine2:1",)), f.now) == []
    f.poll()
    updates = f.engine.audit(probe_round(f, dead=("spine2:1",)), f.now)
    change = next(u for u in updates if isinstance(u, LinkStatusChanged))
    assert (change.link, change.status) == (LEAF1_SPINE2, LinkStatus.DOWN)
    # spine2 sends nothing towards leaf1: no queue could have dropped the probe
    assert change.detail == (
        "no probe from spine2:1 reached leaf1:4 (2 rounds, 0.1 s); "
        "the port is idle (sent 0 kB in 200 ms)"
    )
    (alert,) = alerts(updates, "link_down")
    assert alert.firing and alert.subject == "leaf1:4-spine2:1"
    # leaf1's entry of spine2's range now points at spine1: the transfer goes with it
    assert [u for u in updates if isinstance(u, TransferMoved)] == [
        TransferMoved(d.transfer_id, "spine1")
    ]
    assert f.inflight("leaf1:4") == 0 and f.inflight("leaf1:3") == d.bytes
    later = f.decide("h11", "h21")
    assert f.spine(later) == "spine1" and later.reason == "best"
    # the same verdict again changes nothing
    assert f.engine.audit(probe_round(f, dead=("spine2:1",)), f.now) == []
    back = f.engine.audit(probe_round(f), f.now)
    assert LinkStatusChanged(LEAF1_SPINE2, LinkStatus.UP, "leaf1:4 reaches spine2:1") in back
    assert not alerts(back, "link_down")[0].firing
    assert TransferMoved(d.transfer_id, "spine2") in back  # its range's entry is restored
    f.complete(d, 1.0)
    assert f.spine(f.decide("h12", "h22")) == "spine2"


def test_a_miswired_link_leaves_selection() -> None:
    f = two_spines(spine1=0.5, spine2=0.0)
    updates = f.engine.audit(probe_round(f, rewire={"leaf1:4": "spine2:2"}), f.now)
    change = next(u for u in updates if isinstance(u, LinkStatusChanged))
    assert (change.link, change.status) == (LEAF1_SPINE2, LinkStatus.MISWIRED)
    assert change.detail == "leaf1:4 reaches spine2:2; the model says spine2:1"
    assert alerts(updates, "link_miswired")[0].firing
    assert f.spine(f.decide("h11", "h21")) == "spine1"


def test_with_every_path_down_transfers_go_to_ecmp_and_pins_are_removed() -> None:
    f = two_spines()
    d = f.decide("h11", "h21")
    # both uplinks keep sending, and nothing comes out of the spines: counters frozen
    for port in ("leaf1:3", "leaf1:4"):
        f.set_load(port, 0.6)
    for port in ("spine1:2", "spine2:2"):
        f.set_load(port, 0.0)
    f.poll()
    f.poll()
    f.engine.audit(probe_round(f, dead=("leaf1:3", "leaf1:4")), f.now)
    updates = f.engine.audit(probe_round(f, dead=("leaf1:3", "leaf1:4")), f.now)
    assert [u for u in updates if isinstance(u, TransferMoved)] == [
        TransferMoved(d.transfer_id, None)
    ]
    later = f.decide("h11", "h21")
    assert later.path is None and later.fallbacks == ("no spine path with both links up",)
    f.complete(d, 1.0)
    f.complete(later, 1.0)
    assert set(f.engine.table.inflight) == {0}


def test_a_pair_that_stays_slow_becomes_its_own_baseline() -> None:
    f = two_spines()
    with_baseline(f)
    for _ in range(4):
        f.poll()
        d = f.decide("h11", "h21")
        f.complete(d, 5.0)
    # once slow samples are half the window, the median moves and 5 s is not slow
    assert f.engine.counts.reroutes == 3
    assert d.expected_s is not None
    usual = f.engine.pairs[("leaf1", "leaf2")].usual_slowdown(3)
    assert usual == pytest.approx(5.0 / d.expected_s)
