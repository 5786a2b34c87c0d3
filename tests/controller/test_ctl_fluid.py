"""The engine's fluid picture (bytes left and rates), slices, and the vectorised
path selection against the one-by-one one (fake clock, no switch)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config.generate import leaf_spine
from controller.engine import Demand
from controller.engine.fluid import Fluid
from controller.engine.selection import evaluate
from controller.engine.slicing import auto_slices
from tests.controller.ctl_harness import MB, FakeClockEngine
from tests.controller.ctl_harness import settings as ctl_settings

GB = 1e9


def test_one_flow_drains_at_its_ports_lower_share() -> None:
    f = Fluid([100 * GB, 50 * GB, 100 * GB])
    f.add(1, (0, 1), 1e9, 0.0)
    assert f.rate(1) == 50 * GB
    assert f.left(1, 0.08) == pytest.approx(1e9 - 50 * GB * 0.08 / 8)
    assert f.expected_end(1, 0.0) == pytest.approx(8 * 1e9 / (50 * GB))


def test_a_second_flow_halves_the_first_and_settles_it_first() -> None:
    f = Fluid([100 * GB, 100 * GB])
    f.add(1, (0,), 1e9, 0.0)  # 80 ms alone
    f.add(2, (0,), 1e9, 0.04)  # half done when the second comes
    assert f.left(1, 0.04) == pytest.approx(0.5e9)
    assert f.rate(1) == f.rate(2) == 50 * GB
    # the first finishes its 0.5 GB at half rate: 80 ms after the second came
    assert f.expected_end(1, 0.04) == pytest.approx(0.12)
    f.remove(2, 0.06)
    assert f.rate(1) == 100 * GB
    assert f.left(1, 0.06) == pytest.approx(0.5e9 - 50 * GB * 0.02 / 8)


def test_a_candidate_costs_the_processor_sharing_time_of_its_worse_port() -> None:
    f = Fluid([100 * GB, 100 * GB])
    f.add(1, (0,), 0.2e9, 0.0)  # less left than the new transfer: finishes first
    f.add(2, (0,), 5e9, 0.0)  # more: shares with it
    # 1 GB new: 8 * (1 + 0.2 + 1) GB / 100 Gb/s on port 0; alone on port 1
    assert f.completion((0, 1), 1e9, 0.0) == pytest.approx(8 * 2.2e9 / (100 * GB))
    assert f.completion((1,), 1e9, 0.0) == pytest.approx(8 * 1e9 / (100 * GB))
    # the old estimate counted both whole: 8 * (1 + 0.2 + 5) GB
    assert f.drain((0,), 1e9, 0.0) == pytest.approx(8 * 6.2e9 / (100 * GB))


def test_a_waiting_flow_counts_whole_ahead_and_runs_once_added() -> None:
    f = Fluid([100 * GB])
    f.wait(7, (0,), 1e9)
    assert f.count(0) == 0 and f.busy_until(0, 0.0) == 0.0
    assert f.completion((0,), 1e9, 0.0) == pytest.approx(8 * 2e9 / (100 * GB))
    f.add(7, (0,), 1e9, 0.5)
    assert f.count(0) == 1 and f.busy_until(0, 0.5) == pytest.approx(0.58)
    assert f.completion((0,), 1e9, 0.5) == pytest.approx(8 * 2e9 / (100 * GB))


def test_without_counting_the_costs_see_only_the_polls() -> None:
    f = Fluid([100 * GB], counting=False)
    f.add(1, (0,), 9e9, 0.0)
    assert f.count(0) == 1  # still known: the scheduler's holds need it
    assert f.completion((0,), 1e9, 0.0) == pytest.approx(0.08)


def test_auto_slices_are_the_nic_over_one_uplink() -> None:
    assert auto_slices(400e9, 100e9) == 4
    assert auto_slices(400e9, 400e9) == 1
    assert auto_slices(100e9, 400e9) == 1
    assert auto_slices(40e6, 20e6) == 2


def test_an_idle_transfer_is_split_over_every_spine_its_nic_can_fill() -> None:
    config = leaf_spine(4, 2, 2, link_bps=20 * MB, host_bps=80 * MB)
    f = FakeClockEngine(config=config)
    f.warm()
    d, _ = f.engine.decide(Demand("h11", "h21", 4 * MB), f.now)
    assert sorted(s.path.spine for s in d.slices) == ["spine1", "spine2", "spine3", "spine4"]
    assert sum(s.bytes for s in d.slices) == 4 * MB
    assert len({s.tag.src_port for s in d.slices}) == 4
    for s in d.slices:
        assert f.engine.tags.spine_of(s.tag.src_port) == s.path.spine
    # four times one cable's rate: 4 MB at 80 Mb/s
    assert d.expected_s == pytest.approx(8 * 4 * MB / (80 * MB), rel=0.01)
    f.complete(d, 0.4)
    assert f.engine.tags.in_use == 0
    assert len(f.engine.fluid) == 0


def test_a_loaded_spine_gets_a_smaller_slice_or_none() -> None:
    config = leaf_spine(2, 2, 2, link_bps=20 * MB, host_bps=40 * MB)
    f = FakeClockEngine(config=config, controller=ctl_settings(telemetry={"smoothing_s": 0.0}))
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, 0.5)
    f.warm()
    d, _ = f.engine.decide(Demand("h11", "h21", 3 * MB), f.now)
    sizes = {s.path.spine: s.bytes for s in d.slices}
    assert sizes["spine1"] == pytest.approx(2 * sizes["spine2"], rel=0.01)
    for port in ("leaf1:4", "spine2:2"):
        f.set_load(port, 0.97)
    f.poll()
    f.poll()
    d, _ = f.engine.decide(Demand("h12", "h22", 3 * MB), f.now)
    assert [s.path.spine for s in d.slices] == ["spine1"]


@settings(max_examples=40, deadline=None)
@given(
    loads=st.lists(st.floats(0.0, 0.95), min_size=8, max_size=8),
    sizes=st.lists(st.integers(1, 8 * MB), min_size=0, max_size=12),
    size=st.integers(1, 8 * MB),
    later=st.floats(0.0, 2.0),
)
def test_vectorised_selection_gives_the_one_by_one_figures(
    loads: list[float], sizes: list[int], size: int, later: float
) -> None:
    f = FakeClockEngine(spines=8, leaves=2, controller=ctl_settings(selection={"max_slices": 1}))
    for k, load in enumerate(loads, start=1):
        f.set_load(f"leaf1:{2 + k}", load)
    f.warm()
    for k, nbytes in enumerate(sizes):
        f.engine.decide(Demand(f"h1{1 + k % 2}", f"h2{1 + k % 2}", nbytes), f.now)
    e = f.engine
    candidates = e._usable_paths(("leaf1", "leaf2"))
    assert len(candidates) == 8
    now = f.now + later
    seen_all: list[float] = []
    alone_all: list[float] = []
    costs, loads_all = evaluate(
        candidates, e.table, e.fluid, size, now, seen=seen_all, alone=alone_all
    )
    for k, c in enumerate(candidates):
        seen_one: list[float] = []
        alone_one: list[float] = []
        one, one_load = evaluate((c,), e.table, e.fluid, size, now, seen=seen_one, alone=alone_one)
        assert costs[k] == pytest.approx(one[0], rel=1e-9)
        assert loads_all[k] == pytest.approx(one_load[0], rel=1e-9, abs=1e-12)
        assert alone_all[k] == pytest.approx(alone_one[0], rel=1e-9)
        assert seen_all[4 * k : 4 * k + 4] == pytest.approx(seen_one)
