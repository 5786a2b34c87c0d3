"""The decision engine with a fake clock: placement, herding, hysteresis, rate limits,
in-flight accounting, modes, tags and request errors."""

from __future__ import annotations

import pytest

from controller.config import Mode
from controller.engine import (
    Demand,
    EngineError,
    LogRecord,
    SetMode,
    UnknownHostError,
    UnknownTransferError,
)
from controller.engine.updates import Marking
from tests.controller.ctl_harness import MB, FakeClockEngine, settings

NO_SMOOTHING = settings(telemetry={"smoothing_s": 0.0})


def loaded(spine1: float, spine2: float, **kw: object) -> FakeClockEngine:
    """A 2x2 fabric whose leaf1->leaf2 paths carry the given background load."""
    f = FakeClockEngine(controller=NO_SMOOTHING, **kw)  # type: ignore[arg-type]
    set_spines(f, spine1, spine2)
    f.warm()
    return f


def set_spines(f: FakeClockEngine, spine1: float, spine2: float) -> None:
    f.set_load("leaf1:3", spine1)
    f.set_load("spine1:2", spine1)
    f.set_load("leaf1:4", spine2)
    f.set_load("spine2:2", spine2)


# -- placement -------------------------------------------------------------------------


def test_design_example_puts_the_transfer_on_the_less_loaded_spine() -> None:
    f = loaded(0.75, 0.625)
    d, updates = f.engine.decide(Demand("h11", "h21", 2 * MB), f.now)
    assert d.path is not None and d.path.spine == "spine2"
    assert d.best is not None and d.best.spine == "spine2"
    assert d.reason == "best"
    assert d.mode is Mode.KV_AWARE
    assert d.tag == Marking(10, 40500)  # the first port of spine2's range (40500-40999)
    assert f.engine.tags.spine_of(d.tag.src_port) == "spine2"
    # 2 MB over the 37.5% of 20 Mb/s that the background leaves: 2.13 s
    assert d.expected_s == pytest.approx(16e6 / (20e6 * 0.375))
    assert updates == []  # the leaves' static ranges pin it: nothing to write


def test_queue_occupancy_counts_as_delay() -> None:
    f = loaded(0.3, 0.3)
    f.set_queue("spine1:2", 100)
    f.poll()
    d = f.decide("h11", "h21")
    assert f.spine(d) == "spine2"
    assert d.expected_s == pytest.approx(16e6 / 14e6)
    # the queued 100 packets of 1500 bytes add 60 ms to spine1's expected time
    costs = f.engine.inflight.transfers[d.transfer_id].choice.costs
    assert costs[0] == pytest.approx(16e6 / 14e6 + 0.060)


def test_kv_class_bytes_are_not_counted_as_background() -> None:
    f = FakeClockEngine(controller=NO_SMOOTHING)
    f.set_load("leaf1:3", 0.1, kv=0.6)  # mostly the engine's own KV traffic
    f.set_load("leaf1:4", 0.3)
    f.warm()
    assert f.spine(f.decide("h11", "h21")) == "spine1"


def test_transfer_inside_a_rack_is_local_and_not_pinned() -> None:
    f = loaded(0.0, 0.0)
    d, updates = f.engine.decide(Demand("h11", "h12", MB), f.now)
    assert d.local and d.path is None and d.reason == "same rack"
    assert d.tag is not None
    assert updates == []


# -- herding ------------------------------------------------------------------------------


def test_simultaneous_requests_spread_over_idle_spines() -> None:
    f = FakeClockEngine(spines=4, controller=NO_SMOOTHING)
    f.warm()
    hosts = [("h11", "h21"), ("h12", "h22")]
    spines = [f.spine(f.decide(*hosts[i % 2], size=4 * MB)) for i in range(8)]
    assert sorted(s or "" for s in spines) == sorted(["spine1", "spine2", "spine3", "spine4"] * 2)
    for s in range(1, 5):
        assert f.inflight(f"leaf1:{2 + s}") == 8 * MB
        assert f.inflight(f"spine{s}:2") == 8 * MB


def test_burst_fills_the_idle_spine_only_while_it_stays_the_better_one() -> None:
    f = FakeClockEngine(spines=2, controller=NO_SMOOTHING)
    f.set_load("leaf1:4", 0.5)
    f.warm()
    spines = [f.spine(f.decide("h11", "h21")) for _ in range(6)]
    # shares of 20 Mb/s: spine1 20/(k+1) with k of ours in flight, spine2 10/(k+1)
    assert spines.count("spine1") == 4
    assert spines.count("spine2") == 2


def test_without_in_flight_accounting_a_burst_would_herd() -> None:
    """The counterfactual: what the poll alone shows never changes within a burst."""
    f = FakeClockEngine(spines=4, controller=NO_SMOOTHING)
    f.warm()
    f.decide("h11", "h21")
    # the measured picture is still idle everywhere: only in-flight bytes differ
    table = f.engine.table
    assert len({table.avail_bps[table.index[p]] for p in table.index}) == 1
    assert f.inflight("leaf1:3") == 2 * MB
    assert f.inflight("leaf1:4") == 0


def test_with_in_flight_accounting_off_a_burst_herds_onto_the_idle_spine() -> None:
    """The ``inflight_accounting`` setting turned off: every request of a burst sees
    only the last poll, so all of them go where the poll looked best."""
    off = settings(telemetry={"smoothing_s": 0.0}, selection={"inflight_accounting": False})
    f = FakeClockEngine(spines=4, controller=off)
    f.set_load("leaf1:4", 0.1)
    f.set_load("leaf1:5", 0.1)
    f.set_load("leaf1:6", 0.1)
    f.warm()
    spines = [
        f.spine(f.decide(*pair, size=4 * MB)) for pair in [("h11", "h21"), ("h12", "h22")] * 4
    ]
    assert spines == ["spine1"] * 8
    assert all(f.inflight(f"leaf1:{2 + s}") == 0 for s in range(1, 5))


# -- hysteresis and rate limits ----------------------------------------------------------


def test_hysteresis_keeps_the_last_path_within_ten_percent_of_the_best() -> None:
    f = loaded(0.30, 0.35)
    first = f.decide("h11", "h21")
    assert f.spine(first) == "spine1"
    f.complete(first, 1.0)
    set_spines(f, 0.35, 0.30)
    f.poll()
    again = f.decide("h12", "h22")
    assert f.spine(again) == "spine1"
    assert again.best is not None and again.best.spine == "spine2"
    assert again.reason == "hysteresis"


def test_beyond_hysteresis_the_rate_limit_needs_a_ten_point_utilisation_gap() -> None:
    f = loaded(0.50, 0.90)
    f.complete(f.decide("h11", "h21"), 1.0)
    set_spines(f, 0.80, 0.72)  # spine2 is 40% faster but only 8 points less loaded
    f.poll()
    held = f.decide("h11", "h21")
    assert (f.spine(held), held.reason) == ("spine1", "rate-limited")
    f.complete(held, 1.0)
    set_spines(f, 0.80, 0.65)
    f.poll()
    moved = f.decide("h11", "h21")
    assert (f.spine(moved), moved.reason) == ("spine2", "utilisation delta")


def test_the_rate_limit_never_keeps_a_path_over_twice_as_slow_as_the_best() -> None:
    f = loaded(0.50, 0.90)
    f.complete(f.decide("h11", "h21"), 1.0)
    set_spines(f, 0.99, 0.91)  # 8 points apart, but spine1 leaves 1% and spine2 9%
    f.poll()
    d = f.decide("h11", "h21")
    assert (f.spine(d), d.reason) == ("spine2", "cost bound")


def test_hysteresis_yields_to_a_cost_ratio_below_its_band() -> None:
    f = FakeClockEngine(controller=settings(
        telemetry={"smoothing_s": 0.0}, selection={"max_cost_ratio": 1.05}
    ))  # fmt: skip
    set_spines(f, 0.30, 0.35)
    f.warm()
    f.complete(f.decide("h11", "h21"), 1.0)
    set_spines(f, 0.35, 0.30)  # spine1 is 8% slower: within the 10% band, over 1.05x
    f.poll()
    d = f.decide("h12", "h22")
    assert (f.spine(d), d.reason) == ("spine2", "cost bound")


def test_latency_above_one_and_a_half_baselines_lifts_the_rate_limit() -> None:
    f = loaded(0.50, 0.90)
    for _ in range(3):
        usual = f.decide("h11", "h21")
        f.complete(usual, 1.0)
    assert usual.expected_s is not None
    slowdown = 1.0 / usual.expected_s  # the pair's transfers take this much longer
    set_spines(f, 0.80, 0.72)
    f.poll()
    held = f.decide("h11", "h21")
    assert held.reason == "rate-limited" and held.expected_s is not None
    # the baseline is its expectation (on the busier spine) times the pair's usual
    # slowdown; 1.6x that: not slow enough to reroute, enough to move
    f.complete(held, 1.6 * held.expected_s * slowdown)
    assert f.engine.counts.reroutes == 0
    moved = f.decide("h11", "h21")
    assert (f.spine(moved), moved.reason) == ("spine2", "latency above baseline")


def test_a_path_change_from_a_pair_does_not_change_another_pair() -> None:
    f = FakeClockEngine(spines=2, leaves=3, controller=NO_SMOOTHING)
    f.warm()
    assert f.spine(f.decide("h11", "h21")) == "spine1"
    # leaf1->leaf3 shares the uplink leaf1:3, now carrying 2 MB: spine2 is better
    assert f.spine(f.decide("h11", "h31")) == "spine2"


# -- in-flight accounting ------------------------------------------------------------------


def test_completion_removes_in_flight_bytes_and_the_pin() -> None:
    f = loaded(0.0, 0.5)
    d = f.decide("h11", "h21", size=3 * MB)
    assert f.inflight("leaf1:3") == 3 * MB and f.inflight("spine1:2") == 3 * MB
    updates = f.complete(d, 1.5)
    assert f.inflight("leaf1:3") == 0 and f.inflight("spine1:2") == 0
    assert f.engine.tags.in_use == 0  # its port is free again
    (record,) = [u for u in updates if isinstance(u, LogRecord) and u.event == "transfer"]
    fields = record.as_dict()
    assert fields["trace_id"] == d.trace_id
    assert fields["path"] == "leaf1>spine1>leaf2"
    assert fields["best"] == "leaf1>spine1>leaf2"
    assert fields["duration_s"] == 1.5 and fields["timed_out"] is False
    util = fields["utilisation"]
    assert isinstance(util, dict)
    assert util["spine"] == ["spine1", "spine2"]
    assert util["up_util"] == [0.0, 0.5]


def test_timeout_frees_the_transfer_and_counts_as_slow() -> None:
    f = loaded(0.0, 0.0)
    d = f.decide("h11", "h21")
    updates = f.tick(f.engine.settings.safety.transfer_timeout_s)
    record = next(u for u in updates if isinstance(u, LogRecord) and u.event == "transfer")
    assert record.fields["timed_out"] is True and record.fields["slow"] is True
    assert f.inflight("leaf1:3") == 0
    assert f.engine.tags.in_use == 0
    assert f.engine.counts.timeouts == 1
    # the sender still reports it, late: logged as such, never lost
    late = f.complete(d, 40.0)
    record = next(u for u in late if isinstance(u, LogRecord) and u.event == "transfer")
    assert record.fields["late"] is True and record.fields["timed_out"] is False
    assert record.fields["duration_s"] == 40.0 and record.fields["transfer_id"] == d.transfer_id
    assert f.engine.counts.late == 1 and f.engine.counts.completed == 0
    assert f.engine.tags.in_use == 0
    with pytest.raises(UnknownTransferError):
        f.complete(d, 1.0)  # only once


def test_a_transfer_times_out_after_four_times_its_expected_completion() -> None:
    f = FakeClockEngine(controller=settings(
        telemetry={"smoothing_s": 0.0}, safety={"transfer_timeout_s": 1.0}
    ))  # fmt: skip
    set_spines(f, 0.9, 0.9)  # 2 MB at 2 Mb/s: 8 s expected
    f.warm()
    d = f.decide("h11", "h21")
    assert d.expected_s is not None and 7.9 < d.expected_s < 8.1
    assert f.engine.inflight.transfers[d.transfer_id].deadline == f.now + 4 * d.expected_s
    f.tick(4 * d.expected_s - 0.5)
    assert d.transfer_id in f.engine.inflight.transfers  # still running: not given up on
    f.tick(0.6)
    assert d.transfer_id not in f.engine.inflight.transfers
    assert f.engine.counts.timeouts == 1


def test_transfer_timeouts_stay_within_their_floor_and_ceiling() -> None:
    f = FakeClockEngine(controller=settings(safety={
        "transfer_timeout_s": 5.0, "timeout_factor": 4.0, "transfer_timeout_max_s": 100.0
    }))  # fmt: skip
    assert f.engine.timeout_s(None) == 5.0  # ECMP, one rack: no estimate
    assert f.engine.timeout_s(0.1) == 5.0
    assert f.engine.timeout_s(10.0) == 40.0
    assert f.engine.timeout_s(560.0) == 100.0


def test_tags_are_unique_among_transfers_in_flight_and_reused_after() -> None:
    f = loaded(0.0, 0.0)
    ds = [f.decide("h11", "h21") for _ in range(5)]
    ports = [d.tag.src_port for d in ds if d.tag is not None]
    assert len(set(ports)) == 5
    f.complete(ds[0], 1.0)
    later = [f.decide("h11", "h21").tag for _ in range(2 * f.engine.tags.size - 4)]
    assert ds[0].tag in later
    assert all(tag is not None for tag in later)  # every port of both ranges, once


def test_exhausted_tag_ports_fall_back_to_ecmp() -> None:
    from dataclasses import replace

    from controller.config import KvClassSettings

    f = FakeClockEngine(
        controller=replace(NO_SMOOTHING, kv_class=KvClassSettings(12, 40000, 40003))
    )
    f.warm()
    ds = [f.decide("h11", "h21") for _ in range(4)]  # two ports per spine
    assert sorted(d.tag.src_port for d in ds if d.tag is not None) == [40000, 40001, 40002, 40003]
    for d in ds:
        assert d.tag is not None and d.path is not None
        assert f.engine.tags.spine_of(d.tag.src_port) == d.path.spine
    c = f.decide("h11", "h21")
    assert c.tag is None and c.path is None
    assert c.fallbacks == ("every tag port of spine1, spine2 is in use for h11",)
    assert f.decide("h12", "h21").tag is not None  # each source host has its own ports
    f.complete(ds[0], 1.0)
    again = f.decide("h11", "h21")
    assert again.tag == ds[0].tag and again.path == ds[0].path


# -- modes ---------------------------------------------------------------------------------


def test_ecmp_and_flowlet_modes_pin_nothing_and_spread_in_flight_bytes() -> None:
    f = loaded(0.0, 0.9)
    assert f.engine.set_mode(Mode.ECMP, f.now)[0] == SetMode(Mode.ECMP, "operator")
    d, updates = f.engine.decide(Demand("h11", "h21", 3 * MB + 1), f.now)
    assert d.path is None and d.mode is Mode.ECMP and d.reason == "mode ecmp"
    assert d.tag is not None
    assert updates == []
    assert f.inflight("leaf1:3") + f.inflight("leaf1:4") == 3 * MB + 1
    assert abs(f.inflight("leaf1:3") - f.inflight("leaf1:4")) <= 1
    assert f.engine.set_mode(Mode.FLOWLET, f.now)[0] == SetMode(Mode.FLOWLET, "operator")
    assert f.decide("h11", "h21").reason == "mode flowlet"
    assert f.engine.set_mode(Mode.FLOWLET, f.now) == []
    f.engine.set_mode(Mode.KV_AWARE, f.now)
    assert f.spine(f.decide("h11", "h21")) == "spine1"


# -- request errors ------------------------------------------------------------------------


def test_unknown_host_guesses_the_name_meant() -> None:
    f = loaded(0.0, 0.0)
    with pytest.raises(UnknownHostError, match=r"dst: no host named 'h211'; did you mean 'h21'\?"):
        f.decide("h11", "h211")


@pytest.mark.parametrize(
    ("src", "dst", "size", "message"),
    [
        ("h11", "h21", 0, "a transfer needs a positive size, got 0 bytes"),
        ("h11", "h11", 10, "source and destination are both 'h11'"),
    ],
)
def test_bad_requests_are_refused(src: str, dst: str, size: int, message: str) -> None:
    f = loaded(0.0, 0.0)
    with pytest.raises(EngineError, match=message):
        f.decide(src, dst, size)


def test_completion_errors() -> None:
    f = loaded(0.0, 0.0)
    d = f.decide("h11", "h21")
    with pytest.raises(EngineError, match="a duration must be positive"):
        f.complete(d, 0.0)
    with pytest.raises(UnknownTransferError, match="no transfer 999 in flight"):
        f.engine.complete(999, 1.0, f.now)
