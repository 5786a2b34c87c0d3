"""The SRPT allocator against hand-computed cases, and its defining property."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.maxmin import link_loads
from simulator.srpt import srpt_rates
from tests.simulate.flow_problems import links_and_paths

INF = math.inf


def rates(paths, capacity, remaining, caps=None, order=None) -> list[float]:
    p = np.array(paths, dtype=np.int64).reshape(len(paths), -1)
    n = len(paths)
    got = srpt_rates(
        p,
        np.array(capacity, dtype=np.float64),
        np.full(n, INF) if caps is None else np.array(caps, dtype=np.float64),
        np.array(remaining, dtype=np.float64),
        np.arange(n, dtype=np.int64) if order is None else np.array(order, dtype=np.int64),
    )
    return [float(x) for x in got]


def test_the_fewest_bytes_left_go_first():
    # link 0 (10) is shared; flow 1 has fewer bytes left and takes it all
    assert rates([[0, 1], [0, 2]], [10.0, 20.0, 20.0, INF], [5.0, 1.0]) == [0.0, 10.0]


def test_a_flow_takes_what_its_narrowest_link_leaves():
    # flow 1 (first) is held to 4 by link 1; flow 0 gets the 6 of link 0 it leaves
    assert rates([[0, 3], [0, 1]], [10.0, 4.0, 0.0, INF], [5.0, 1.0]) == [6.0, 4.0]


def test_caps_and_ties():
    # equal bytes left: the earlier flow first; a capped flow leaves the rest
    assert rates([[0], [0]], [10.0], [1.0, 1.0], order=[1, 0]) == [0.0, 10.0]
    assert rates([[0], [0]], [10.0], [1.0, 2.0], caps=[3.0, INF]) == [3.0, 7.0]


def test_errors():
    with pytest.raises(ValueError, match="unbounded"):
        rates([[0]], [INF], [1.0])
    with pytest.raises(ValueError, match="negative"):
        rates([[0]], [-1.0], [1.0])


@st.composite
def problems(draw):
    nflows, paths, capacity = links_and_paths(draw)
    left = draw(st.lists(st.floats(1.0, 1e6), min_size=nflows, max_size=nflows))
    return paths, capacity, np.array(left)


@settings(max_examples=300, deadline=None)
@given(problems())
def test_every_allocation_is_feasible_and_greedy(problem):
    paths, capacity, left = problem
    order = np.arange(len(left), dtype=np.int64)
    r = srpt_rates(paths, capacity, np.full(len(left), INF), left, order)
    load = link_loads(paths, r, capacity.size)
    tol = 1e-6
    assert np.all(r >= 0)
    assert np.all(load[:-1] <= capacity[:-1] + tol * (1 + capacity[:-1]))
    # greedy: each flow gets exactly what the flows before it left on its narrowest link
    residual = capacity.copy()
    for i in np.lexsort((order, left)):
        want = max(min(residual[x] for x in paths[i]), 0.0)
        assert r[i] == pytest.approx(want, abs=tol)
        for x in set(paths[i].tolist()):
            residual[x] -= r[i]
