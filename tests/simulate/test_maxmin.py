"""The max-min allocator against hand-computed cases, and its defining property."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.maxmin import link_loads, max_min_rates
from tests.simulate.flow_problems import links_and_paths

INF = math.inf


def rates(paths, capacity, caps=None) -> list[float]:
    p = np.array(paths, dtype=np.int64).reshape(len(paths), -1)
    c = np.array(capacity, dtype=np.float64)
    k = None if caps is None else np.array(caps, dtype=np.float64)
    return [float(x) for x in max_min_rates(p, c, k)]


def test_one_flow_takes_its_bottleneck():
    assert rates([[0, 1]], [10.0, 4.0]) == [4.0]


def test_flows_share_a_link_equally():
    assert rates([[0], [0], [0]], [9.0]) == pytest.approx([3.0, 3.0, 3.0])


def test_the_classic_parking_lot():
    # links 0 and 1 of capacity 1; flow A crosses both, B only 0, C only 1
    assert rates([[0, 1], [0, 2], [1, 2]], [1.0, 1.0, INF]) == pytest.approx([0.5, 0.5, 0.5])


def test_a_flow_held_elsewhere_leaves_its_share_to_the_others():
    # link 0: 10, shared by A and B; B also crosses link 1 of 2: B=2, A=8
    assert rates([[0, 2], [0, 1]], [10.0, 2.0, INF]) == pytest.approx([8.0, 2.0])


def test_three_levels():
    # link0 cap 3 (A,B,C), link1 cap 10 (C,D), link2 cap 1 (A): A=1, B=C=1, D=9
    got = rates([[0, 2], [0, 3], [0, 1], [1, 3]], [3.0, 10.0, 1.0, INF])
    assert got == pytest.approx([1.0, 1.0, 1.0, 9.0])


def test_a_cap_is_a_demand():
    assert rates([[0], [0]], [10.0], caps=[2.0, INF]) == pytest.approx([2.0, 8.0])


def test_a_dead_link_stalls_its_flows_only():
    assert rates([[0], [1]], [0.0, 5.0]) == pytest.approx([0.0, 5.0])


def test_no_flows():
    assert max_min_rates(np.zeros((0, 4), dtype=np.int64), np.array([1.0])).size == 0


def test_an_unbounded_flow_is_an_error():
    with pytest.raises(ValueError, match="unbounded"):
        rates([[0]], [INF])


def test_link_loads_add_the_rates_of_each_link():
    p = np.array([[0, 1], [0, 2]], dtype=np.int64)
    assert link_loads(p, np.array([1.0, 2.0]), 3).tolist() == [3.0, 1.0, 2.0]


@st.composite
def problems(draw):
    nflows, paths, capacity = links_and_paths(draw)
    demand = draw(
        st.lists(st.one_of(st.just(INF), st.floats(0.0, 50.0)), min_size=nflows, max_size=nflows)
    )
    return paths, capacity, np.array(demand)


@settings(max_examples=300, deadline=None)
@given(problems())
def test_every_allocation_is_feasible_and_max_min_fair(problem):
    paths, capacity, demand = problem
    r = max_min_rates(paths, capacity, demand)
    nlinks = capacity.size
    load = link_loads(paths, r, nlinks)
    tol = 1e-6
    # feasible: no link over capacity, no flow over its demand, no negative rate
    assert np.all(r >= -tol)
    assert np.all(r <= demand + tol)
    assert np.all(load[:-1] <= capacity[:-1] + tol * (1 + capacity[:-1]))
    # max-min fair: every flow is at its demand or has a bottleneck, a saturated link
    # on its path where no other flow gets more than it does
    for i, path in enumerate(paths):
        if r[i] >= demand[i] - tol:
            continue
        bottleneck = False
        for link in set(path.tolist()) - {nlinks - 1}:
            saturated = load[link] >= capacity[link] - tol * (1 + capacity[link])
            on_link = [j for j, p in enumerate(paths) if link in p.tolist()]
            if saturated and all(r[j] <= r[i] + tol for j in on_link):
                bottleneck = True
                break
        assert bottleneck, (i, r.tolist(), load.tolist())


def test_a_negative_capacity_is_an_error():
    with pytest.raises(ValueError, match="negative"):
        rates([[0]], [-1.0])
