"""Traffic manager: the egress queues between ingress and egress, as BMv2 models them.

BMv2's simple_switch keeps one queue per egress port (optionally several
priority queues per port), each with a capacity in packets (64 by default,
``set_queue_depth``) and a rate in packets per second (unlimited by default,
``set_queue_rate``; 0 means unlimited).  A packet arriving at a full queue
is dropped (tail drop).  A packet that enters is given a departure time
``max(now, departure of the previous packet of that queue + 1/rate)`` and
leaves once that time has come; higher priorities (lower numbers) leave
first among packets that may leave.

Time is an integer count of nanoseconds since the switch started, passed by
the caller.  The queueing metadata is filled as simple_switch fills it:
``enq_timestamp`` is the arrival time in microseconds, ``enq_qdepth`` the
number of packets of the port already queued, ``deq_timedelta`` the time
spent queued in microseconds, ``deq_qdepth`` the number of packets of the
port still queued after this one left.

    tm.enqueue(port, now_ns, item) -> QueueTicket | None   # None: dropped
    tm.dequeue(now_ns) -> list[QueueTicket]                # those whose time has come
    tm.next_departure_ns() -> int | None                    # when to call dequeue next
    tm.transit(port, now_ns, item) -> QueueTicket | None   # enqueue, then leave at once
                                                           # or when the rate allows
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from softswitch.errors import RuntimeConfigError

DEFAULT_QUEUE_DEPTH = 64
PRIORITY_QUEUES = 8


@dataclass(slots=True)
class QueueTicket:
    """A queued packet (``item``) and its queueing metadata."""

    port: int
    priority: int
    item: Any
    enq_timestamp: int  # microseconds
    enq_qdepth: int
    departure_ns: int
    deq_timedelta: int = 0  # microseconds, set on dequeue
    deq_qdepth: int = 0  # set on dequeue
    seq: int = field(default=0, repr=False)


@dataclass(slots=True)
class _Queue:
    depth: int
    rate_pps: int
    size: int = 0
    last_departure_ns: int = 0


class TrafficManager:
    """Per-port, per-priority egress queues with tail drop and rate limits."""

    def __init__(self, default_depth: int = DEFAULT_QUEUE_DEPTH, default_rate_pps: int = 0) -> None:
        self.default_depth = default_depth
        self.default_rate_pps = default_rate_pps
        self._queues: dict[tuple[int, int], _Queue] = {}
        self._port_sizes: dict[int, int] = {}
        self._heaps: list[list[tuple[int, int, QueueTicket]]] = [[] for _ in range(PRIORITY_QUEUES)]
        self._seq = 0
        self.queues_per_port = 1

    def set_queues_per_port(self, count: int) -> None:
        """How many priority queues each port has (simple_switch's ``--priority-queues``)."""
        if not 1 <= count <= PRIORITY_QUEUES:
            raise RuntimeConfigError(
                "OUT_OF_RANGE", f"{count} priority queues is not in [1, {PRIORITY_QUEUES}]"
            )
        self.queues_per_port = count

    def queue_for(self, packet_priority: int) -> int | None:
        """The queue of a packet whose ``standard_metadata.priority`` is ``packet_priority``,
        as simple_switch picks it: priority p goes to queue ``count - 1 - p`` (queue 0 leaves
        first, so a larger p is served first); None when p names no queue (simple_switch
        logs "Priority out of range" and drops the packet)."""
        if packet_priority >= self.queues_per_port:
            return None
        return self.queues_per_port - 1 - packet_priority

    def _queue(self, port: int, priority: int, now_ns: int = 0) -> _Queue:
        q = self._queues.get((port, priority))
        if q is None:
            # As in BMv2, a queue counts its last departure from its creation.
            q = _Queue(self.default_depth, self.default_rate_pps, last_departure_ns=now_ns)
            self._queues[(port, priority)] = q
        return q

    def _ports_priorities(self, port: int | None, priority: int | None) -> list[_Queue]:
        priorities = range(PRIORITY_QUEUES) if priority is None else [self._check_pri(priority)]
        if port is None:
            ports = {p for p, _ in self._queues}
            return [self._queue(p, pri) for p in ports for pri in priorities]
        return [self._queue(port, pri) for pri in priorities]

    @staticmethod
    def _check_pri(priority: int) -> int:
        if not 0 <= priority < PRIORITY_QUEUES:
            raise RuntimeConfigError(
                "OUT_OF_RANGE", f"queue priority {priority} is not in [0, {PRIORITY_QUEUES})"
            )
        return priority

    def set_queue_depth(
        self, depth: int, port: int | None = None, priority: int | None = None
    ) -> None:
        """Capacity in packets of one port's queues (all ports, and the default, when None)."""
        if depth < 0:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"negative queue depth {depth}")
        if port is None:
            self.default_depth = depth
        for q in self._ports_priorities(port, priority):
            q.depth = depth

    def set_queue_rate(
        self, rate_pps: int, port: int | None = None, priority: int | None = None
    ) -> None:
        """Rate in packets per second (0: unlimited) of one port's queues, or of all."""
        if rate_pps < 0:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"negative queue rate {rate_pps}")
        if port is None:
            self.default_rate_pps = rate_pps
        for q in self._ports_priorities(port, priority):
            q.rate_pps = rate_pps

    def qdepth(self, port: int) -> int:
        """Packets of ``port`` queued now, all priorities together."""
        return self._port_sizes.get(port, 0)

    def enqueue(
        self, port: int, now_ns: int, item: Any = None, priority: int = 0
    ) -> QueueTicket | None:
        """Queue a packet for ``port``; None if its queue is full (tail drop)."""
        q = self._queue(port, self._check_pri(priority), now_ns)
        if q.size >= q.depth:
            return None
        delay = 0 if q.rate_pps == 0 else int(1e9 / q.rate_pps)
        departure = max(now_ns, q.last_departure_ns + delay)
        q.last_departure_ns = departure
        ticket = QueueTicket(port, priority, item, now_ns // 1000, self.qdepth(port), departure)
        self._seq += 1
        ticket.seq = self._seq
        heapq.heappush(self._heaps[priority], (departure, self._seq, ticket))
        q.size += 1
        self._port_sizes[port] = self._port_sizes.get(port, 0) + 1
        return ticket

    def next_departure_ns(self) -> int | None:
        """The earliest time a queued packet may leave, or None if all queues are empty."""
        times = [h[0][0] for h in self._heaps if h]
        return min(times) if times else None

    def dequeue(self, now_ns: int) -> list[QueueTicket]:
        """Every packet whose departure time has come, in the order they leave."""
        out: list[QueueTicket] = []
        while True:
            ticket = self._pop_one(now_ns)
            if ticket is None:
                return out
            out.append(ticket)

    def _pop_one(self, now_ns: int) -> QueueTicket | None:
        for heap in self._heaps:
            if heap and heap[0][0] <= now_ns:
                _, _, ticket = heapq.heappop(heap)
                self._queue(ticket.port, ticket.priority).size -= 1
                self._port_sizes[ticket.port] -= 1
                leave_ns = max(now_ns, ticket.departure_ns)
                ticket.deq_timedelta = leave_ns // 1000 - ticket.enq_timestamp
                ticket.deq_qdepth = self._port_sizes[ticket.port]
                return ticket
        return None

    def transit(
        self, port: int, now_ns: int, item: Any = None, priority: int = 0
    ) -> QueueTicket | None:
        """Queue a packet in virtual time, for a caller that processes one packet at a time.

        Packets that left before ``now_ns`` are taken out first; the new packet
        joins behind those still queued (including any that arrived at the same
        instant), so ``enq_qdepth`` counts the real backlog and ``deq_timedelta``
        is the time it waits behind it. A packet stays queued until its departure
        time, so later packets see it. ``deq_qdepth`` is 0: the packets that will
        arrive while it waits are not known yet.
        """
        self.dequeue(now_ns - 1)
        ticket = self.enqueue(port, now_ns, item, priority)
        if ticket is None:
            return None
        ticket.deq_timedelta = ticket.departure_ns // 1000 - ticket.enq_timestamp
        self.dequeue(now_ns)
        ticket.deq_qdepth = 0
        return ticket

    def reset(self) -> None:
        """Empty every queue (settings are kept)."""
        self._heaps = [[] for _ in range(PRIORITY_QUEUES)]
        self._port_sizes.clear()
        for q in self._queues.values():
            q.size = 0
            q.last_departure_ns = 0
