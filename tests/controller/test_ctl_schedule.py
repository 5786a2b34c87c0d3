"""Temporal scheduling in the engine: holding, release, cancel, max_wait, policies,
and a random event sequence against the scheduling invariants (fake clock)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from controller.config import Mode, Policy
from controller.engine import (
    Decision,
    Demand,
    LogRecord,
    Released,
    TransferStartedError,
    Update,
)
from controller.errors import EngineError, UnknownTransferError
from tests.controller.ctl_harness import FakeClockEngine, settings

KB = 1000
SMALL = 50 * KB
"""20 ms alone on the harness's 20 Mbit/s links: a queue fits in the default 50 ms."""


def fabric(
    policy: Policy = Policy.FIFO, max_wait_s: float = 0.05, spines: int = 2
) -> FakeClockEngine:
    f = FakeClockEngine(
        spines=spines,
        leaves=3,
        controller=settings(scheduling={"policy": policy, "max_wait_s": max_wait_s}),
    )
    f.warm()
    return f


def ask(f: FakeClockEngine, size: int = SMALL, deadline_s: float | None = None) -> Decision:
    d, updates = f.engine.decide(Demand("h11", "h21", size, deadline_s=deadline_s), f.now)
    f.updates += updates
    return d


def released(updates: list[Update]) -> list[int]:
    return [u.transfer_id for u in updates if isinstance(u, Released)]


def test_no_policy_holds_nothing() -> None:
    f = fabric(Policy.NONE)
    decisions = [ask(f) for _ in range(4)]
    assert not any(d.held for d in decisions)
    assert all(d.start_at is None for d in decisions)
    assert f.engine.next_release() is None


def test_a_third_transfer_on_two_spines_is_held_behind_the_first_to_end() -> None:
    f = fabric()
    first, second = ask(f), ask(f)
    assert not first.held and not second.held
    assert {f.spine(first), f.spine(second)} == {"spine1", "spine2"}
    third = ask(f)
    assert third.held and third.reason == "held" and first.expected_s is not None
    assert third.start_at == pytest.approx(f.now + first.expected_s, rel=1e-6)
    assert third.expected_s == pytest.approx(first.expected_s)
    # its pin is in force already (its tag port is in its spine's range), and its bytes
    # count on its path
    assert third.tag is not None and f.engine.tags.spine_of(third.tag.src_port) == f.spine(third)
    assert f.engine.waiting(third.transfer_id, f.now) == pytest.approx(first.expected_s)
    assert f.engine.waiting(first.transfer_id, f.now) == 0.0
    assert f.engine.held_by_path() == {str(third.path): 1}
    assert f.engine.next_release() == pytest.approx(f.now + 0.05)


def test_an_early_completion_releases_the_held_transfer_on_its_path() -> None:
    f = fabric()
    first, second, third = ask(f), ask(f), ask(f)
    ahead = first if f.spine(first) == f.spine(third) else second
    other = second if ahead is first else first
    f.now += 0.005
    assert released(f.complete(other, 0.005)) == []  # the other path frees: not its own
    out = f.complete(ahead, 0.005)
    (release,) = [u for u in out if isinstance(u, Released)]
    assert release.transfer_id == third.transfer_id and not release.expired
    assert release.queued_s == pytest.approx(0.005)
    assert f.engine.waiting(third.transfer_id, f.now) == 0.0
    done = f.complete(third, 0.02)
    (record,) = [u for u in done if isinstance(u, LogRecord) and u.event == "transfer"]
    assert record.fields["held"] is True
    assert record.fields["requested_at"] == pytest.approx(f.now - 0.005)
    assert record.fields["granted_start_at"] == third.start_at
    assert record.fields["started_at"] == pytest.approx(f.now)
    assert record.fields["queue_s"] == pytest.approx(0.005)


def test_a_held_transfer_is_released_at_max_wait_whatever_runs() -> None:
    f = fabric(max_wait_s=0.03)
    ask(f), ask(f)
    third = ask(f)
    assert third.held
    assert released(f.tick(0.029)) == []
    out = f.tick(0.001)
    (release,) = [u for u in out if isinstance(u, Released)]
    assert release.transfer_id == third.transfer_id and release.expired
    assert f.engine.next_release() is None


def test_nothing_is_held_when_a_path_is_free_or_the_queue_exceeds_max_wait() -> None:
    f = fabric()
    assert not ask(f, 2000 * KB).held  # 800 ms on spine1 or spine2
    assert not ask(f, 2000 * KB).held
    # behind 800 ms: past max_wait, so it is shared now
    late = ask(f)
    assert not late.held and late.start_at is None


def test_cancel_frees_the_pin_tag_and_bytes_and_moves_the_queue() -> None:
    f = fabric(max_wait_s=1.0)
    first, second = ask(f), ask(f)
    third, fourth = ask(f), ask(f)
    assert third.held and fourth.held
    held_tags = f.engine.tags.in_use
    out = f.engine.cancel(third.transfer_id, f.now)
    (record,) = [u for u in out if isinstance(u, LogRecord)]
    assert record.fields["cancelled"] is True and record.fields["started_at"] is None
    assert not record.fields["timed_out"]
    assert f.engine.tags.in_use == held_tags - 1
    with pytest.raises(UnknownTransferError):
        f.engine.cancel(third.transfer_id, f.now)
    with pytest.raises(UnknownTransferError):
        f.engine.waiting(third.transfer_id, f.now)
    with pytest.raises(TransferStartedError, match="report its completion instead"):
        f.engine.cancel(first.transfer_id, f.now)
    assert f.engine.counts.cancelled == 1
    assert [d.transfer_id for d in (first, second)]  # both still run
    assert fourth.transfer_id in f.engine.queue


def test_a_completion_without_waiting_for_the_release_ends_the_hold() -> None:
    f = fabric()
    ask(f), ask(f)
    third = ask(f)
    f.now += 0.03
    f.complete(third, 0.02)
    assert third.transfer_id not in f.engine.queue
    assert f.engine.next_release() is None


def test_leaving_kv_aware_releases_every_held_transfer() -> None:
    f = fabric()
    ask(f), ask(f)
    third = ask(f)
    assert released(f.engine.set_mode(Mode.ECMP, f.now)) == [third.transfer_id]
    assert f.engine.next_release() is None


def test_a_bad_deadline_is_refused() -> None:
    f = fabric()
    with pytest.raises(EngineError, match="a deadline must be positive"):
        ask(f, deadline_s=0.0)


@pytest.mark.parametrize(
    ("policy", "asks", "order"),
    [
        # (size, deadline) of two transfers held on one path, and which goes first
        (Policy.FIFO, [(60 * KB, None), (20 * KB, None)], [0, 1]),
        (Policy.SRPT, [(60 * KB, None), (20 * KB, None)], [1, 0]),
        (Policy.EDF, [(20 * KB, 0.5), (20 * KB, 0.1)], [1, 0]),
        (Policy.EDF, [(20 * KB, None), (20 * KB, 0.2)], [1, 0]),
    ],
)
def test_the_queue_order_follows_the_policy(
    policy: Policy, asks: list[tuple[int, float | None]], order: list[int]
) -> None:
    f = fabric(policy, max_wait_s=1.0, spines=1)
    running = ask(f, SMALL)
    assert not running.held
    held = [ask(f, size, deadline) for size, deadline in asks]
    assert all(d.held for d in held)
    first, second = (held[k] for k in order)
    assert f.engine.waiting(first.transfer_id, f.now) < f.engine.waiting(second.transfer_id, f.now)
    f.now += 0.01
    assert released(f.complete(running, 0.01)) == [first.transfer_id]
    f.now += 0.01
    assert released(f.complete(first, 0.01)) == [second.transfer_id]


def test_srpt_ages_a_long_wait_ahead_of_a_shorter_newcomer() -> None:
    f = fabric(Policy.SRPT, max_wait_s=1.0, spines=1)
    running = ask(f, 200 * KB)  # 80 ms
    big = ask(f, 40 * KB)  # 16 ms alone
    f.now += 0.05
    small = ask(f, 20 * KB)  # 8 ms, but 50 ms later
    assert big.held and small.held
    f.now += 0.01
    assert released(f.complete(running, 0.06)) == [big.transfer_id]
    assert small.transfer_id in f.engine.queue


Op = tuple[str, int, int, float | None]
"""One step: (kind, a, b, x): decide (src index, size, deadline), complete (which,
duration ms), cancel (which), tick (ms)."""

_SRC = ["h11", "h12", "h21", "h31"]
_DST = ["h22", "h32", "h11"]
ops = st.one_of(
    st.tuples(st.just("decide"), st.integers(0, 11), st.integers(5, 120),
              st.one_of(st.none(), st.floats(0.005, 0.5))),
    st.tuples(st.just("decide"), st.just(0), st.integers(5, 60), st.none()),
    st.tuples(st.just("complete"), st.integers(0, 1000), st.integers(1, 200), st.none()),
    st.tuples(st.just("cancel"), st.integers(0, 1000), st.just(0), st.none()),
    st.tuples(st.just("tick"), st.sampled_from([1, 5, 20, 60]), st.just(0), st.none()),
)  # fmt: skip


class Scheduling:
    """A fabric driven by steps, checking the scheduling invariants after each."""

    def __init__(self, policy: Policy, max_wait_s: float) -> None:
        self.f = fabric(policy, max_wait_s=max_wait_s)
        self.engine = self.f.engine
        self.held: set[int] = set()
        self.running: set[int] = set()
        self.keys: dict[int, tuple[float, float, int]] = {}

    def step(self, op: Op) -> None:
        kind, a, b, x = op
        if kind == "decide":
            self.decide(_SRC[a % 4], _DST[a // 4 % 3], b * KB, x)
        elif kind == "complete" and (self.running or self.held):
            tid = sorted(self.running | self.held)[a % len(self.running | self.held)]
            self.held.discard(tid)
            self.running.discard(tid)
            self.apply(self.engine.complete(tid, b / 1e3, self.f.now))
        elif kind == "cancel" and self.held:
            tid = sorted(self.held)[a % len(self.held)]
            self.held.discard(tid)
            self.apply(self.engine.cancel(tid, self.f.now))
        elif kind == "tick":
            # the clock steps as the service's does: never past the next release due
            due = self.engine.next_release()
            dt = a / 1e3 if due is None else min(a / 1e3, due - self.f.now)
            self.f.poll(dt)
            self.apply(self.f.tick())
        self.check()

    def decide(self, src: str, dst: str, size: int, deadline: float | None) -> None:
        engine = self.engine
        if self.f.topology.hosts[src].leaf == self.f.topology.hosts[dst].leaf:
            return
        before = list(engine.table.inflight)
        request = Demand(src, dst, size, deadline_s=deadline)
        d, updates = engine.decide(request, self.f.now)
        self.apply(updates)
        event("held" if d.held else "sent now")
        if not d.held:
            assert d.start_at is None
            self.running.add(d.transfer_id)
            return
        self.keys[d.transfer_id] = engine.queue.held[d.transfer_id].key
        # nothing is held while a candidate path carries nothing, or runs nothing
        running = engine.fluid.count
        for c in engine.inflight.transfers[d.transfer_id].choice.candidates:
            assert before[c.up] > 0 or before[c.down] > 0
            assert running(c.up) or running(c.down)
        assert d.start_at is not None
        assert self.f.now < d.start_at <= self.f.now + engine.queue.max_wait_s + 1e-9
        self.held.add(d.transfer_id)

    def apply(self, updates: list[Update]) -> None:
        """Track releases: none waited past max_wait, and of the transfers held on one
        path, the one released first came first in the policy's order (unless it went
        because it had waited max_wait)."""
        engine = self.engine
        for u in updates:
            if not isinstance(u, Released):
                continue
            assert u.transfer_id in self.held
            self.held.discard(u.transfer_id)
            self.running.add(u.transfer_id)
            assert u.queued_s <= engine.queue.max_wait_s + 1e-9
            path = engine.inflight.transfers[u.transfer_id].path
            if u.expired or path is None:
                continue
            for h in engine.queue.held.values():
                if h.ports == (path.up, path.down):
                    assert h.key > self.keys[u.transfer_id], engine.queue.policy

    def check(self) -> None:
        """The queue is what was held, none past max_wait, none on a free path."""
        engine = self.engine
        self.running &= set(engine.inflight.transfers)  # timed out
        self.held &= set(engine.inflight.transfers)
        assert set(engine.queue.held) == self.held
        for h in engine.queue.held.values():
            assert self.f.now < h.latest
            assert h.start_at <= h.latest
            assert engine.inflight.transfers[h.transfer_id].began is None
            assert any(engine.fluid.count(p) for p in h.ports)

    def drain(self) -> None:
        """Every transfer gets a start: at the last release due, nothing is held."""
        for _ in range(1000):
            due = self.engine.next_release()
            if due is None:
                break
            self.f.now = due
            self.apply(self.f.tick())
            self.check()
        assert not self.engine.queue.held
        assert not self.held


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from([Policy.FIFO, Policy.SRPT, Policy.EDF]),
    max_wait=st.sampled_from([0.01, 0.05, 0.2]),
    steps=st.lists(ops, min_size=20, max_size=80),
)
def test_scheduling_invariants(policy: Policy, max_wait: float, steps: list[Op]) -> None:
    run = Scheduling(policy, max_wait)
    for op in steps:
        run.step(op)
    run.drain()
