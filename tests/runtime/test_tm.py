"""Traffic manager: tail drop, rate limit, queueing metadata as simple_switch fills it."""

from __future__ import annotations

import pytest

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.tm import TrafficManager

MS = 1_000_000  # ns


def test_unlimited_rate_leaves_at_once() -> None:
    tm = TrafficManager()
    t = tm.transit(1, 5 * MS, "pkt")
    assert t is not None
    assert (t.enq_timestamp, t.enq_qdepth, t.deq_timedelta, t.deq_qdepth) == (5000, 0, 0, 0)
    assert t.item == "pkt" and tm.qdepth(1) == 0


def test_tail_drop_at_depth() -> None:
    tm = TrafficManager()
    tm.set_queue_depth(2, port=1)
    tm.set_queue_rate(1, port=1)  # one packet per second: nothing leaves
    assert tm.enqueue(1, 0) is not None
    assert tm.enqueue(1, 0) is not None
    assert tm.enqueue(1, 0) is None
    assert tm.enqueue(2, 0) is not None  # other ports keep the default depth
    assert tm.qdepth(1) == 2


def test_rate_spaces_departures_and_fills_depths() -> None:
    tm = TrafficManager()
    tm.set_queue_rate(1000, port=3)  # 1 ms apart
    tickets = [tm.enqueue(3, 0, i) for i in range(3)]
    assert [t.enq_qdepth for t in tickets if t] == [0, 1, 2]
    assert [t.departure_ns for t in tickets if t] == [1 * MS, 2 * MS, 3 * MS]
    assert tm.next_departure_ns() == 1 * MS
    assert tm.dequeue(MS - 1) == []
    [first] = tm.dequeue(1 * MS)
    assert (first.item, first.deq_timedelta, first.deq_qdepth) == (0, 1000, 2)
    rest = tm.dequeue(10 * MS)
    assert [(t.item, t.deq_qdepth) for t in rest] == [(1, 1), (2, 0)]
    assert tm.next_departure_ns() is None


def test_priority_zero_leaves_first() -> None:
    tm = TrafficManager()
    tm.enqueue(1, 0, "low", priority=1)
    tm.enqueue(1, 0, "high", priority=0)
    assert [t.item for t in tm.dequeue(0)] == ["high", "low"]


def test_transit_waits_for_the_rate() -> None:
    tm = TrafficManager()
    tm.set_queue_rate(1000)  # default for every port
    a = tm.transit(2, 0)
    b = tm.transit(2, 0)
    assert a is not None and b is not None
    assert (a.deq_timedelta, b.deq_timedelta) == (1000, 2000)


def test_config_errors() -> None:
    tm = TrafficManager()
    with pytest.raises(RuntimeConfigError):
        tm.set_queue_depth(-1)
    with pytest.raises(RuntimeConfigError):
        tm.set_queue_rate(-5, port=1)
    with pytest.raises(RuntimeConfigError):
        tm.enqueue(1, 0, priority=8)


def test_queues_per_port_are_1_to_8() -> None:
    tm = TrafficManager()
    assert tm.queue_for(0) == 0 and tm.queue_for(1) is None
    tm.set_queues_per_port(8)
    assert [tm.queue_for(p) for p in range(8)] == [7, 6, 5, 4, 3, 2, 1, 0]
    for bad in (0, 9):
        with pytest.raises(RuntimeConfigError) as exc:
            tm.set_queues_per_port(bad)
        assert exc.value.code == "OUT_OF_RANGE"
    assert tm.queues_per_port == 8
