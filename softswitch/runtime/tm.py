"""Traffic manager: the egress queues between ingress and egress, as BMv2 models them.

BMv2's simple_switch keeps one queue per egress port (optionally several
priority queues per port), each with a capacity in packets (64 by default,
``set_queue_depth``) and a rate in packets per second (unlimited by default,
``set_queue_rate``; 0 means unlimited).  A packet arriving at a full queue
is dropped (tail drop).  A packet that enters is given a departure time
``max(now, departure of the previous packet of that queue + 1/rate)`` and
may leave once that time has come; higher priorities (lower numbers) leave
first among packets of the port that may leave.  A packet may leave later
than its departure time: the switch takes a port's packets only while the
port's interface accepts frames (backpressure), so a slow link fills the
queue as it fills BMv2's.

Each queue is a FIFO (departure times of one queue never decrease), so a
port's next packet is the head of its first ready queue.

Time is an integer count of nanoseconds, passed by the caller.  The queueing
metadata is filled as simple_switch fills it: ``enq_timestamp`` is the
arrival time in microseconds, ``enq_qdepth`` the number of packets of the
port already queued, ``deq_timedelta`` the time spent queued in
microseconds, ``deq_qdepth`` the number of packets of the port still queued
after this one left.

    tm.enqueue(port, now_ns, item) -> QueueTicket | None   # None: dropped
    tm.pop(port, now_ns) -> QueueTicket | None             # the port's next packet, if due
    tm.dequeue(now_ns) -> list[QueueTicket]                # every packet whose time has come
    tm.next_departure_ns(skip) -> int | None               # when to look again
    tm.transit(port, now_ns, item) -> QueueTicket | None   # enqueue, then leave at once
                                                           # or when the rate allows
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
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
    last_departure_ns: int = 0
    packets: deque[QueueTicket] = field(default_factory=deque)


class TrafficManager:
    """Per-port, per-priority egress queues with tail drop and rate limits."""

    def __init__(self, default_depth: int = DEFAULT_QUEUE_DEPTH, default_rate_pps: int = 0) -> None:
        self.default_depth = default_depth
        self.default_rate_pps = default_rate_pps
        self._queues: dict[tuple[int, int], _Queue] = {}
        self._port_sizes: dict[int, int] = {}
        # each port's queues in the order they are served (priority 0 first)
        self._port_queues: dict[int, list[_Queue]] = {}
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
            order = sorted(pri for p, pri in self._queues if p == port)
            self._port_queues[port] = [self._queues[(port, pri)] for pri in order]
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

    def _set_queues(
        self, attr: str, what: str, value: int, port: int | None, priority: int | None
    ) -> None:
        """Set ``attr`` (``depth`` or ``rate_pps``) of one port's queues at ``priority``,
        or at every priority when None; when ``port`` is None, of every port's queues
        and of the queues yet to be made (``default_<attr>``)."""
        if value < 0:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"negative queue {what} {value}")
        if port is None:
            setattr(self, f"default_{attr}", value)
        for q in self._ports_priorities(port, priority):
            setattr(q, attr, value)

    def set_queue_depth(
        self, depth: int, port: int | None = None, priority: int | None = None
    ) -> None:
        """Capacity in packets of one port's queues (all ports, and the default, when None)."""
        self._set_queues("depth", "depth", depth, port, priority)

    def set_queue_rate(
        self, rate_pps: int, port: int | None = None, priority: int | None = None
    ) -> None:
        """Rate in packets per second (0: unlimited) of one port's queues, or of all."""
        self._set_queues("rate_pps", "rate", rate_pps, port, priority)

    def qdepth(self, port: int) -> int:
        """Packets of ``port`` queued now, all priorities together."""
        return self._port_sizes.get(port, 0)

    def ports(self) -> list[int]:
        """The ports that have packets queued."""
        return [port for port, size in self._port_sizes.items() if size]

    def enqueue(
        self, port: int, now_ns: int, item: Any = None, priority: int = 0
    ) -> QueueTicket | None:
        """Queue a packet for ``port``; None if its queue is full (tail drop)."""
        q = self._queues.get((port, priority))
        if q is None:
            q = self._queue(port, self._check_pri(priority), now_ns)
        if len(q.packets) >= q.depth:
            return None
        departure = now_ns
        if q.rate_pps:
            departure = max(now_ns, q.last_departure_ns + 1_000_000_000 // q.rate_pps)
        q.last_departure_ns = departure
        size = self._port_sizes.get(port, 0)
        ticket = QueueTicket(port, priority, item, now_ns // 1000, size, departure)
        self._seq += 1
        ticket.seq = self._seq
        q.packets.append(ticket)
        self._port_sizes[port] = size + 1
        return ticket

    def pass_through(
        self, port: int, now_ns: int, item: Any = None, priority: int = 0
    ) -> QueueTicket | None:
        """The ticket of a packet that may leave at once (nothing of its port queued, its
        queue's rate allows it now): :meth:`enqueue` and :meth:`pop` in one step, for
        the common case. None when the packet must be enqueued instead."""
        if self._port_sizes.get(port):
            return None
        q = self._queues.get((port, priority))
        if q is None:
            q = self._queue(port, self._check_pri(priority), now_ns)
        if not q.depth:
            return None
        if q.rate_pps:
            departure = q.last_departure_ns + 1_000_000_000 // q.rate_pps
            if departure > now_ns:
                return None
        q.last_departure_ns = now_ns
        self._seq += 1
        return QueueTicket(port, priority, item, now_ns // 1000, 0, now_ns, 0, 0, self._seq)

    def pop(self, port: int, now_ns: int) -> QueueTicket | None:
        """The next packet of ``port`` whose departure time has come, taken out; else None."""
        if not self._port_sizes.get(port):
            return None
        for q in self._port_queues[port]:
            packets = q.packets
            if packets and packets[0].departure_ns <= now_ns:
                ticket = packets.popleft()
                size = self._port_sizes[port] - 1
                self._port_sizes[port] = size
                ticket.deq_timedelta = now_ns // 1000 - ticket.enq_timestamp
                ticket.deq_qdepth = size
                return ticket
        return None

    def next_departure_ns(self, skip: Collection[int] = ()) -> int | None:
        """The earliest time a packet may leave, ports in ``skip`` aside; None if none."""
        times = [
            q.packets[0].departure_ns
            for port, size in self._port_sizes.items()
            if size and port not in skip
            for q in self._port_queues[port]
            if q.packets
        ]
        return min(times) if times else None

    def dequeue(self, now_ns: int) -> list[QueueTicket]:
        """Every packet whose departure time has come, port by port."""
        out: list[QueueTicket] = []
        for port in self.ports():
            while (ticket := self.pop(port, now_ns)) is not None:
                out.append(ticket)
        return out

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
        self._port_sizes.clear()
        for q in self._queues.values():
            q.packets.clear()
            q.last_departure_ns = 0
