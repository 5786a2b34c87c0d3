"""A batch decided as one (``Engine.decide_batch``): the policy's order, holds up to
``batch_max_wait``, refusals kept apart, and properties against deciding one by one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from controller.config import Policy
from controller.engine import Decision, Demand
from controller.engine.batch import batch_order
from controller.errors import EngineError
from tests.controller.ctl_harness import FakeClockEngine, settings

KB = 1000
HOSTS = ["h11", "h12", "h21", "h22", "h31", "h32"]


def fabric(
    policy: Policy = Policy.SRPT, max_wait: float = 0.05, batch_wait: float | None = 1.0,
    spines: int = 2,
) -> FakeClockEngine:  # fmt: skip
    f = FakeClockEngine(
        spines=spines,
        leaves=3,
        controller=settings(
            scheduling={"policy": policy, "max_wait_s": max_wait, "batch_max_wait_s": batch_wait}
        ),
    )
    f.warm()
    return f


def decided(out: list[Decision | EngineError]) -> list[Decision]:
    assert all(isinstance(d, Decision) for d in out), out
    return [d for d in out if isinstance(d, Decision)]


def test_a_refused_member_is_its_error_and_the_others_are_decided_in_order() -> None:
    f = fabric()
    out, _ = f.engine.decide_batch(
        [Demand("h11", "h21", 50 * KB), Demand("h11", "nope", 50 * KB),
         Demand("h11", "h11", 50 * KB), Demand("h12", "h22", 20 * KB, trace_id="last")],
        f.now,
    )  # fmt: skip
    assert isinstance(out[1], EngineError) and "nope" in str(out[1])
    assert isinstance(out[2], EngineError) and "both 'h11'" in str(out[2])
    first, last = out[0], out[3]
    assert isinstance(first, Decision) and isinstance(last, Decision)
    assert (first.src, first.dst, last.trace_id) == ("h11", "h21", "last")
    assert len(f.engine.inflight.transfers) == 2


def test_srpt_places_the_shortest_first_and_holds_the_longest() -> None:
    f = fabric(Policy.SRPT, spines=2)
    sizes = [200 * KB, 20 * KB, 100 * KB]
    out = decided(f.engine.decide_batch([Demand("h11", "h21", s) for s in sizes], f.now)[0])
    by_size = dict(zip(sizes, out, strict=True))
    # the two shorter run at once, one spine each; the longest waits behind the shortest
    assert not by_size[20 * KB].held and not by_size[100 * KB].held
    assert by_size[200 * KB].held
    assert f.spine(by_size[200 * KB]) == f.spine(by_size[20 * KB])
    assert out[0].transfer_id > out[1].transfer_id  # decided after the others


def test_a_batch_member_may_wait_up_to_batch_max_wait_and_a_lone_request_max_wait() -> None:
    asks = [Demand("h11", "h21", 50 * KB) for _ in range(8)]  # 20 ms alone each
    f = fabric(Policy.SRPT, max_wait=0.05, batch_wait=1.0)
    out = decided(f.engine.decide_batch(asks, f.now)[0])
    waits = sorted(d.start_at - f.now for d in out if d.start_at is not None)
    assert len(waits) == 6  # two run, six queue on two spines, three deep each
    assert waits[-1] == pytest.approx(0.06, rel=1e-6) and waits[-1] > 0.05
    one_by_one = fabric(Policy.SRPT, max_wait=0.05, batch_wait=1.0)
    singles = [one_by_one.engine.decide(a, one_by_one.now)[0] for a in asks]
    assert max(d.start_at - one_by_one.now for d in singles if d.start_at is not None) <= 0.05
    # what max_wait leaves out goes at once: fewer held than the batch
    assert sum(d.held for d in singles) < sum(d.held for d in out)


def test_without_batch_max_wait_a_batch_waits_as_long_as_a_request() -> None:
    f = fabric(Policy.SRPT, max_wait=0.05, batch_wait=None)
    out = decided(f.engine.decide_batch([Demand("h11", "h21", 50 * KB)] * 8, f.now)[0])
    assert max(d.start_at - f.now for d in out if d.start_at is not None) <= 0.05


def test_without_a_policy_a_batch_holds_nothing() -> None:
    f = fabric(Policy.NONE)
    out = decided(
        f.engine.decide_batch([Demand("h11", "h21", s * KB) for s in (300, 10, 20)], f.now)[0]
    )
    assert not any(d.held for d in out)
    assert f.engine.next_release() is None and len(f.engine.inflight.transfers) == 3


def test_edf_orders_by_deadline_and_puts_members_without_one_last() -> None:
    members = [
        (0, Demand("h11", "h21", 10 * KB)),
        (1, Demand("h11", "h21", 90 * KB, deadline_s=0.2)),
        (2, Demand("h11", "h21", 50 * KB, deadline_s=0.1)),
    ]
    order = batch_order(members, Policy.EDF, lambda r: 20e6, now=5.0, max_wait_s=1.0)
    assert order == [2, 1, 0]
    assert batch_order(members, Policy.FIFO, lambda r: 20e6, now=5.0, max_wait_s=1.0) == [0, 1, 2]
    assert batch_order(members, Policy.SRPT, lambda r: 20e6, now=5.0, max_wait_s=1.0) == [0, 2, 1]


# -- properties ---------------------------------------------------------------------

demands = st.lists(
    st.tuples(
        st.sampled_from(HOSTS), st.sampled_from(HOSTS),
        st.integers(5, 300).map(lambda k: k * KB),
        st.one_of(st.none(), st.floats(0.01, 0.5)),
    ).filter(lambda t: t[0][1] != t[1][1]),  # other racks: the ones a batch places
    min_size=1, max_size=24,
)  # fmt: skip


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from([Policy.SRPT, Policy.EDF, Policy.FIFO]),
    batch_wait=st.sampled_from([0.05, 0.3, 1.0]),
    spines=st.sampled_from([1, 2, 3]),
    asks=demands,
)
def test_batch_properties(
    policy: Policy, batch_wait: float, spines: int, asks: list[tuple[str, str, int, float | None]]
) -> None:
    requests = [Demand(s, d, b, deadline_s=dl) for s, d, b, dl in asks]
    f = fabric(policy, max_wait=0.05, batch_wait=batch_wait, spines=spines)
    out = decided(f.engine.decide_batch(requests, f.now)[0])
    now = f.now
    # every member gets a start no later than batch_max_wait
    for d in out:
        if d.held:
            assert d.start_at is not None and now < d.start_at <= now + batch_wait + 1e-9
    # on each shared port the held members start in the policy's order
    queue = f.engine.queue
    held = sorted(queue.held.values(), key=lambda h: h.key)
    for a_i, a in enumerate(held):
        for b in held[a_i + 1 :]:
            if set(a.ports) & set(b.ports) and b.start_at < a.latest and a.start_at < a.latest:
                assert a.start_at <= b.start_at + 1e-9
    # never worse, by the engine's own picture once all are placed and the policy's
    # measure, than the same requests one by one: the total completion time (srpt), the
    # latest finish past a deadline (edf), the last finish (fifo: first come, first
    # served, so a short transfer may wait behind a long one, which a sum would count
    # against it)
    g = fabric(policy, max_wait=0.05, batch_wait=batch_wait, spines=spines)
    singles = [g.engine.decide(r, g.now)[0] for r in requests]
    assert (
        _measure(policy, f, out, requests)
        <= _measure(policy, g, singles, requests) * (1 + 1e-9) + 1e-12
    )
    # whichever plan was kept, the engine's books hold exactly it: every member ends,
    # and nothing is left counted, held or tagged
    assert {d.transfer_id for d in out} == set(f.engine.inflight.transfers)
    for d in out:
        f.now += 0.001
        f.complete(d, 0.001)
    e = f.engine
    assert not e.inflight.transfers and not e.queue.held and len(e.fluid) == 0
    assert not any(e.table.inflight) and not e.table.arrays.inflight.any()
    assert e.counts.decisions == len(out)
    again = decided(e.decide_batch(requests, f.now)[0])
    assert len({d.transfer_id for d in again}) == len(out)


def _measure(policy: Policy, f: FakeClockEngine, ds: list[Decision], rs: list[Demand]) -> float:
    assert f.engine.queue.policy is policy
    return f.engine.batch_measure(ds, rs, f.now)
