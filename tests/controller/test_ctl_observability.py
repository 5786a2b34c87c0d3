"""Scheduling efficiency (the offline recomputation), alert windows and the fabric view."""

from __future__ import annotations

import json

import pytest

from controller.engine import Alert, FlowTuple, LogRecord, Update, fabric_view
from controller.engine.alerts import AlertBook, EfficiencyWindows, LatencyWindows, TierWindows
from controller.topology import PortRef, Tier
from tests.controller.ctl_harness import MB, FakeClockEngine, settings

FAST_WINDOWS = {"window_s": 10.0, "median_window_s": 100.0}


def fabric(**alerts: float) -> FakeClockEngine:
    return FakeClockEngine(
        controller=settings(telemetry={"smoothing_s": 0.0}, alerts={**FAST_WINDOWS, **alerts})
    )


def set_spines(f: FakeClockEngine, spine1: float, spine2: float) -> None:
    for port in ("leaf1:3", "spine1:2"):
        f.set_load(port, spine1)
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, spine2)


def records(updates: list[Update], event: str) -> list[LogRecord]:
    return [u for u in updates if isinstance(u, LogRecord) and u.event == event]


def alerts(updates: list[Update], name: str) -> list[Alert]:
    return [u for u in updates if isinstance(u, Alert) and u.name == name]


def run_transfer(f: FakeClockEngine, *, during: tuple[float, float] | None = None) -> list[Update]:
    """One 2 MB transfer h11 -> h21 lasting 0.5 s of polls, then the verdict.

    The background changes to ``during`` (spine1, spine2) for the transfer's lifetime;
    the transfer's own bytes cross its pinned ports as KV traffic.
    """
    d = f.decide("h11", "h21", size=2 * MB)
    spine = f.spine(d)
    assert spine is not None
    if during is not None:
        set_spines(f, *during)
    own = {"spine1": ("leaf1:3", "spine1:2"), "spine2": ("leaf1:4", "spine2:2")}[spine]
    kv_util = 2 * MB * 8 / 0.5 / f.config.links[0].capacity_bps  # 2 MB in 0.5 s
    for port in own:
        f.set_load(port, f.load[_ref(port)], kv=kv_util)
    for _ in range(5):
        f.poll()
    for port in own:
        f.set_load(port, f.load[_ref(port)], kv=0.0)
    out = f.complete(d, 0.5)
    f.poll()
    out += f.tick()
    return out


def _ref(port: str) -> PortRef:
    sw, n = port.split(":")
    return PortRef(sw, int(n))


def test_a_transfer_on_the_path_hindsight_finds_best_is_efficient() -> None:
    f = fabric()
    set_spines(f, 0.2, 0.5)
    f.warm()
    (verdict,) = records(run_transfer(f), "efficiency")
    assert verdict.fields["chosen"] == "leaf1>spine1>leaf2"
    assert verdict.fields["offline_best"] == "leaf1>spine1>leaf2"
    assert verdict.fields["efficient"] is True
    # its own 32 Mb/s on spine1's ports are not charged to spine1
    assert verdict.fields["chosen_cost_s"] == pytest.approx(16e6 / (20e6 * 0.8), rel=0.01)
    assert (f.engine.efficiency.total_evaluated, f.engine.efficiency.total_efficient) == (1, 1)


def test_a_spine_that_got_busy_during_the_transfer_makes_it_inefficient() -> None:
    f = fabric()
    set_spines(f, 0.1, 0.3)
    f.warm()
    (verdict,) = records(run_transfer(f, during=(0.9, 0.3)), "efficiency")
    assert verdict.fields["chosen"] == "leaf1>spine1>leaf2"
    assert verdict.fields["offline_best"] == "leaf1>spine2>leaf2"
    assert verdict.fields["efficient"] is False
    assert f.engine.efficiency.total_efficient == 0


def test_the_verdict_waits_for_the_poll_that_covers_the_end() -> None:
    f = fabric()
    f.warm()
    d = f.decide("h11", "h21")
    f.poll()
    f.tick(0.05)  # the completion arrives between two polls
    assert records(f.complete(d, 0.1), "efficiency") == []
    assert records(f.tick(), "efficiency") == []  # no poll after the completion yet
    f.poll(0.05)
    assert len(records(f.tick(), "efficiency")) == 1


def test_a_service_judges_a_slice_at_a_time_what_a_tick_judges_at_once() -> None:
    """``tick(judge=False)`` leaves the verdicts to ``judge``, which gives at most its
    limit per call and says whether more are ready: in all, the verdicts of one tick."""

    def finished(f: FakeClockEngine) -> None:
        f.warm()
        decided = [f.decide("h11", "h21") for _ in range(5)]
        f.poll()
        f.poll()
        for d in decided:
            f.complete(d, 0.2)
        f.poll()

    whole, sliced = fabric(), fabric()
    finished(whole)
    finished(sliced)
    at_once = records(whole.tick(), "efficiency")
    assert len(at_once) == 5
    assert records(sliced.engine.tick(sliced.now, judge=False), "efficiency") == []
    slices = []
    more = True
    while more:
        updates, more = sliced.engine.judge(sliced.now, 2)
        slices.append(records(updates, "efficiency"))
    assert [len(x) for x in slices] == [2, 2, 1]
    assert [r.fields for x in slices for r in x] == [r.fields for r in at_once]
    assert sliced.engine.judge(sliced.now, 2) == ([], False)


def test_transfers_left_to_ecmp_are_not_judged() -> None:
    from controller.config import Mode

    f = fabric()
    f.warm()
    f.engine.set_mode(Mode.ECMP, f.now)
    f.complete(f.decide("h11", "h21"), 0.05)
    f.poll()
    assert records(f.tick(), "efficiency") == []


def test_low_efficiency_in_two_consecutive_windows_fires_an_alert() -> None:
    f = fabric()
    set_spines(f, 0.1, 0.3)
    f.warm()
    fired: list[Alert] = []
    for _ in range(2):  # two windows of 10 s, one misplaced transfer each
        set_spines(f, 0.1, 0.3)
        f.poll()
        fired += alerts(run_transfer(f, during=(0.9, 0.3)), "efficiency_low")
        f.poll(10.0)
        fired += alerts(f.tick(), "efficiency_low")
    assert [a.firing for a in fired] == [True]
    assert fired[0].message.startswith("scheduling efficiency 0% (below 80% for 2 consecutive")
    set_spines(f, 0.1, 0.3)
    f.poll()
    run_transfer(f)
    f.poll(10.0)
    (resolved,) = alerts(f.tick(), "efficiency_low")
    assert not resolved.firing


def test_efficiency_windows_streak() -> None:
    s = settings(alerts=FAST_WINDOWS).alerts
    w = EfficiencyWindows(s, origin=0.0)
    book = AlertBook()
    w.add(1.0, False)
    (first,) = w.roll(10.0)
    assert (first.evaluated, first.ratio, w.streak) == (1, 0.0, 1)
    assert w.alerts(first, book) == []
    for _ in range(4):
        w.add(11.0, True)
    w.add(12.0, False)
    (second,) = w.roll(20.0)
    assert second.ratio == 0.8 and w.streak == 0  # 80% is not below 80%
    assert w.roll(30.0)[0].ratio is None  # an empty window breaks any streak


# -- latency and tiers --------------------------------------------------------------------


def test_p99_above_the_limit_fires_and_clears() -> None:
    s = settings(alerts=FAST_WINDOWS).alerts
    w = LatencyWindows(s, origin=0.0)
    book = AlertBook()
    for i in range(100):
        w.add(i * 0.05, 0.050 if i < 98 else 0.300)
    (window,) = w.roll(10.0)
    assert window.p99_s is not None and window.p99_s == pytest.approx(0.3)
    (fire, *_) = w.alerts(window, book)
    assert (fire.name, fire.firing) == ("latency_p99", True)
    assert fire.message == "p99 transfer latency 300.0 ms (limit 100 ms)"
    w.add(11.0, 0.05)
    (window,) = w.roll(20.0)
    assert [(a.name, a.firing) for a in w.alerts(window, book)] == [("latency_p99", False)]


def test_p99_rise_over_the_rolling_median_of_earlier_windows() -> None:
    s = settings(alerts=FAST_WINDOWS).alerts
    w = LatencyWindows(s, origin=0.0)
    book = AlertBook()
    for k in range(3):
        w.add(k * 10 + 1.0, 0.050)
        (window,) = w.roll((k + 1) * 10.0)
        assert window.median_p99_s is None  # fewer than three earlier windows
        assert w.alerts(window, book) == []
    w.add(31.0, 0.065)  # +30% on the median of 50 ms, still under 100 ms
    (window,) = w.roll(40.0)
    assert window.median_p99_s == pytest.approx(0.050)
    (rise,) = w.alerts(window, book)
    assert (rise.name, rise.firing) == ("latency_p99_rise", True)
    # the median only looks back one median window (100 s)
    w.add(141.0, 0.065)
    (window,) = w.roll(150.0)
    assert window.median_p99_s is None


def test_engine_latency_alert_from_completions() -> None:
    f = fabric()
    f.warm()
    for _ in range(3):
        f.complete(f.decide("h11", "h21"), 0.5)
    f.poll(10.0)
    fired = alerts(f.tick(), "latency_p99")
    assert [a.firing for a in fired] == [True]


def test_tier_alert_on_mean_or_p95() -> None:
    s = settings(alerts=FAST_WINDOWS).alerts
    w = TierWindows(s, origin=0.0)
    book = AlertBook()
    for _ in range(10):
        for u in (0.72, 0.75, 0.70, 0.73):
            w.add(Tier.INTER_RACK, u)
        for u in (0.95, 0.1, 0.1, 0.1):
            w.add(Tier.SPINE, u)
        w.add(Tier.INTRA_RACK, 0.5)
    stats = w.roll(10.0)
    assert stats is not None
    assert stats[Tier.INTER_RACK].mean == pytest.approx(0.725)
    assert stats[Tier.SPINE].mean == pytest.approx(0.3125)
    assert stats[Tier.SPINE].p95 == pytest.approx(0.95)
    fired = {a.subject: a for a in w.alerts(stats, book)}
    assert set(fired) == {"inter-rack", "spine"}
    assert fired["spine"].message == (
        "spine utilisation mean 31%, p95 95% (limits: mean 70%, p95 85%)"
    )


def test_engine_tier_utilisation_now_and_per_window() -> None:
    f = fabric()
    for port in ("leaf1:3", "leaf1:4", "leaf2:3", "leaf2:4"):
        f.set_load(port, 0.8)
    f.warm()
    now = f.engine.snapshot(f.now).tiers()
    assert now[Tier.INTER_RACK].mean == pytest.approx(0.8)
    assert now[Tier.SPINE].mean == 0.0
    f.poll(10.0)
    fired = alerts(f.tick(), "tier_utilisation")
    assert [(a.subject, a.firing) for a in fired] == [("inter-rack", True)]


def test_fabric_view_is_json() -> None:
    f = fabric()
    f.warm()
    d = f.decide("h11", "h21")
    view = fabric_view(f.engine, f.now)
    text = json.dumps(view)
    assert json.loads(text)["transfers"][0]["path"] == str(d.path)
    assert view["mode"] == "kv-aware" and view["fallback_active"] is False
    ports = json.loads(text)["ports"]
    assert {p["port"] for p in ports} >= {"leaf1:3", "spine2:2"}


def test_the_fabric_view_keeps_static_pins_as_a_deprecated_alias() -> None:
    """``static_pins``, the old name of ``flow_pins``, repeats them for one release."""
    f = fabric()
    f.warm()
    f.engine.pin_flow("p1", FlowTuple("h11", "h21", 6, 5000, 5001), "spine2", f.now)
    view = json.loads(json.dumps(fabric_view(f.engine, f.now)))
    assert [p["id"] for p in view["flow_pins"]] == ["p1"]
    assert view["static_pins"] == view["flow_pins"]
