"""Arrivals are a pure function of the seed: every mode sees the same traffic."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from experiment.arrivals import generate
from experiment.flows import ECMP_PORTS
from experiment.roles import Roles
from experiment.scenario import Phase, PhaseKind

LEAF = {"h11": "leaf1", "h12": "leaf1", "h21": "leaf2", "h22": "leaf2", "h31": "leaf3"}
ROLES = Roles(("h11", "h12"), ("h21", "h22"), (), LEAF)
PHASES = (
    Phase(PhaseKind.SEQUENTIAL, count=4, gap_s=0.5),
    Phase(PhaseKind.BURST, size=2, bursts=5, window_s=0.1, every_s=4.0),
    Phase(PhaseKind.POISSON, count=30, mean_gap_s=2.0),
)


def test_same_seed_same_schedule():
    a = generate(PHASES, ROLES, 2_000_000, seed=7)
    b = generate(PHASES, ROLES, 2_000_000, seed=7)
    assert a == b
    c = generate(PHASES, ROLES, 2_000_000, seed=8)
    assert a.arrivals != c.arrivals


def test_counts_indices_and_sizes():
    s = generate(PHASES, ROLES, 1234, seed=1)
    arrivals = s.arrivals
    assert len(arrivals) == 4 + 10 + 30
    assert [a.index for a in arrivals] == list(range(len(arrivals)))
    assert {a.nbytes for a in arrivals} == {1234}
    assert [p.sequential for p in s.phases] == [True, False, False]


def test_every_transfer_crosses_the_fabric_and_ports_are_unique():
    s = generate(PHASES, ROLES, 1, seed=3)
    assert all(LEAF[a.src] != LEAF[a.dst] for a in s.arrivals)
    ports = [a.ecmp_port for a in s.arrivals]
    assert len(set(ports)) == len(ports)
    assert all(p in ECMP_PORTS for p in ports)


def test_sequential_offsets_are_gaps():
    s = generate(PHASES[:1], ROLES, 1, seed=3)
    assert [a.at_s for a in s.arrivals] == [0.0, 0.5, 0.5, 0.5]


def test_bursts_fall_in_their_window_with_distinct_hosts():
    s = generate(PHASES[1:2], ROLES, 1, seed=5)
    arrivals = s.arrivals
    for k in range(5):
        group = arrivals[2 * k : 2 * k + 2]
        assert all(4.0 * k <= a.at_s <= 4.0 * k + 0.1 for a in group)
        assert len({a.src for a in group}) == 2
        assert len({a.dst for a in group}) == 2


def test_poisson_mean_gap_is_roughly_right():
    phase = Phase(PhaseKind.POISSON, count=2000, mean_gap_s=2.0)
    s = generate((phase,), ROLES, 1, seed=11)
    times = [a.at_s for a in s.arrivals]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert sum(gaps) / len(gaps) == pytest.approx(2.0, rel=0.1)


def test_larger_bursts_than_hosts_repeat_hosts():
    phase = Phase(PhaseKind.BURST, size=8, bursts=1, window_s=0.0, every_s=1.0)
    s = generate((phase,), ROLES, 1, seed=2)
    srcs = Counter(a.src for a in s.arrivals)
    assert sum(srcs.values()) == 8 and set(srcs) == {"h11", "h12"}
    assert all(a.at_s == 0.0 for a in s.arrivals)


def test_receivers_on_the_senders_leaf_are_never_chosen():
    roles = Roles(("h11",), ("h12", "h21"), (), LEAF)
    s = generate(PHASES, roles, 1, seed=4)
    assert {a.dst for a in s.arrivals} == {"h21"}


def test_no_remote_pair_is_an_error():
    with pytest.raises(ValueError):
        generate(PHASES, Roles(("h11",), ("h12",), (), LEAF), 1, seed=1)


def test_a_stagger_spreads_each_bursts_starts_and_keeps_its_arrivals():
    plain = Phase(PhaseKind.BURST, size=4, bursts=3, window_s=0.01, every_s=2.0)
    staggered = Phase(PhaseKind.BURST, size=4, bursts=3, window_s=0.01, every_s=2.0, stagger_s=0.3)
    a = generate((plain,), ROLES, 1, seed=6).arrivals
    b = generate((staggered,), ROLES, 1, seed=6).arrivals
    # the same transfers arrive at the same times: only the senders' starts move
    assert [(x.at_s, x.src, x.dst, x.ecmp_port) for x in a] == [
        (x.at_s, x.src, x.dst, x.ecmp_port) for x in b
    ]
    assert all(x.hold_s == 0.0 for x in a)
    for k in range(3):
        group = b[4 * k : 4 * k + 4]
        starts = [x.at_s + x.hold_s for x in group]
        # the i-th starts no earlier than 0.1 s x i after the burst's start, and never
        # before it arrived
        for i, (x, start) in enumerate(zip(group, starts, strict=True)):
            assert start == pytest.approx(max(x.at_s, 2.0 * k + 0.1 * i))
            assert x.hold_s >= 0.0
        assert starts[-1] == pytest.approx(2.0 * k + 0.3)


def test_a_stagger_does_not_touch_other_phases():
    assert all(x.hold_s == 0.0 for x in generate(PHASES, ROLES, 1, seed=6).arrivals)


def test_deadlines_are_drawn_in_their_range_without_changing_the_schedule():
    plain = generate(PHASES, ROLES, 1, seed=9)
    due = generate(PHASES, ROLES, 1, seed=9, deadline=(0.5, 1.5))
    assert all(a.deadline_s is None for a in plain.arrivals)
    assert [a.at_s for a in plain.arrivals] == [a.at_s for a in due.arrivals]
    deadlines = [a.deadline_s for a in due.arrivals]
    assert all(d is not None and 0.5 <= d <= 1.5 for d in deadlines)
    assert len(set(deadlines)) > 1
    assert due == generate(PHASES, ROLES, 1, seed=9, deadline=(0.5, 1.5))
