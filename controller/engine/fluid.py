"""The engine's fluid picture of its own transfers: bytes left and rates, per port.

A transfer the engine placed is not a fixed load until it completes: it drains. The
engine keeps, for every flow of its own (a transfer's slice, an ECMP transfer's share
of each path, a transfer adopted from another controller), the bytes it has left and
the rate it is expected to run at, and advances them, lazily, to whatever instant it
is asked about. Rates come from the measured background: a port's *available*
bandwidth ``A`` is its capacity less the smoothed non-KV load (the load table's
``avail_bps``; the switches count KV-class bytes apart, so the engine's own bytes are
never counted twice, once as background and once here). Each port shares ``A``
equally among the flows on it, and a flow runs at the lower share of its ports:

    rate(f) = min over its ports p of A_p / n_p

A rate changes only when a port's flow count or availability changes, so adding or
removing a flow settles (advances to now, at the old rate) and re-rates only the flows
on that flow's own ports: O(flows on them), never O(flows in flight). A telemetry
poll re-rates the flows on the ports it updated.

A candidate path's expected completion for ``S`` new bytes is the processor-sharing
time on each of its ports, the worse of them:

    T_p = 8 * (S + sum over flows f on p of min(left_f, S)) / A_p

(every flow with fewer bytes left than ``S`` finishes first and takes its bytes; each
other one takes ``S`` while the new flow is served). It is what the old estimate,
``8 * (F + S) / A`` with ``F`` the *whole* size of every transfer on the port until it
completed, meant to be: with tens of transfers in flight that one counted transfers,
not bytes left, and a transfer nearly done weighed as much as one just begun.

A transfer the scheduler holds (:mod:`schedule`) is not running, but it is committed
to the port before anything that comes after it: its bytes *wait* on its ports
(:meth:`Fluid.wait`) and count in a candidate's time, whole, as the queue ahead of
it, without a rate until the release runs it (:meth:`Fluid.add` then).

``busy_until(p)`` is when the running flows on ``p`` are expected to be done (all of
their bytes left at ``A_p``), which the scheduler's holds plan with. ``expected_end(f)``
is when the picture has flow ``f`` done, with everything that ran beside it since it
began (what the engine placed later included): the safety checks judge a completion
against it (:mod:`safety`).

With ``counting`` off (``selection.inflight_accounting: false``, for studies of
herding) the flows are still recorded (the scheduler's holds need to know what runs
where) but every port looks empty to :meth:`Fluid.completion` and
:meth:`Fluid.share`: the costs see only the polls.

Flows on the same ports always have the same rate, so the picture keeps them as one
*group* per tuple of ports: the group has a service clock (the bytes each member has
been served since the group began, advanced at the group's rate) and each member only
its *mark*, the clock's value at which its bytes run out (``left = mark - clock``).
Settling and re-rating visit the groups on a port, not its flows: a burst of a hundred
transfers on the same two ports costs each new decision one group's update, where it
cost a hundred flows'. The bytes a candidate would queue behind read every member's
mark, from the group's marks as one numpy array once a group is large.

Pure and on the caller's clock, like the rest of the engine.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

FlowKey = int
"""A flow's key: ``transfer id * MAX_PARTS + part`` for the engine's transfers, negative
for adopted ones (:func:`part_key`)."""

MAX_PARTS = 4096
"""Parts one transfer may have in the picture (its slices, or ECMP's paths: at most
slices x spines)."""

VECTOR_MEMBERS = 16
"""Members from which a group's queued bytes are summed over a numpy array of marks."""


def part_key(transfer_id: int, part: int) -> FlowKey:
    """The key of part ``part`` of transfer ``transfer_id``."""
    return transfer_id * MAX_PARTS + part


class _Group:
    """The flows on one tuple of ports: their service clock and each one's mark."""

    __slots__ = ("_array", "at", "clock", "heap", "marks", "ports", "rate")

    def __init__(self, ports: tuple[int, ...], now: float) -> None:
        self.ports = ports
        self.clock = 0.0
        """Bytes each member has been served since the group began, at ``at``."""
        self.at = now
        self.rate = 0.0
        """Bits per second each member runs at (all alike: they share every port)."""
        self.marks: dict[FlowKey, float] = {}
        """Each member's clock value when its bytes run out."""
        self.heap: list[tuple[float, FlowKey]] = []
        """The marks in order, for the members that run out (lazily cleaned)."""
        self._array: npt.NDArray[np.float64] | None = None

    def clock_at(self, now: float) -> float:
        return self.clock + self.rate * (now - self.at) / 8.0

    def array(self) -> npt.NDArray[np.float64]:
        """The members' marks as an array (rebuilt after a change)."""
        if self._array is None:
            self._array = np.fromiter(self.marks.values(), dtype=np.float64, count=len(self.marks))
        return self._array

    def changed(self) -> None:
        self._array = None


class Fluid:
    """Bytes left and expected rates of the engine's own flows (see the module
    docstring). ``avail`` is the load table's list of available bandwidth per port, read
    live (bit/s)."""

    __slots__ = (
        "_done",
        "_group_of",
        "_groups",
        "_on_port",
        "_waiting",
        "_waiting_on",
        "avail",
        "counting",
        "counts",
        "waiting",
    )

    def __init__(self, avail: list[float], *, counting: bool = True) -> None:
        self.avail = avail
        self.counting = counting
        self.counts: npt.NDArray[np.float64] = np.zeros(len(avail))
        """Flows running on each port (numpy, for the vectorised path selection)."""
        self.waiting: npt.NDArray[np.float64] = np.zeros(len(avail))
        """Bytes waiting (held) on each port."""
        self._groups: dict[tuple[int, ...], _Group] = {}
        self._group_of: dict[FlowKey, _Group] = {}
        self._on_port: dict[int, set[_Group]] = {}
        self._done: dict[FlowKey, float] = {}
        self._waiting: dict[FlowKey, tuple[tuple[int, ...], float]] = {}
        self._waiting_on: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self._group_of)

    def __contains__(self, key: object) -> bool:
        return key in self._group_of

    # -- the flows --------------------------------------------------------------------

    def add(self, key: FlowKey, ports: Sequence[int], nbytes: float, now: float) -> None:
        """A flow of ``nbytes`` starts on ``ports`` at ``now`` (a waiting one: its wait
        is over)."""
        if key in self._group_of or key in self._waiting:
            self.remove(key, now)
        ports = tuple(ports)
        groups = self._settle_on(ports, now)
        g = self._groups.get(ports)
        if g is None:
            g = self._groups[ports] = _Group(ports, now)
            for p in ports:
                self._on_port.setdefault(p, set()).add(g)
            groups.add(g)
        mark = g.clock + float(nbytes)
        g.marks[key] = mark
        heapq.heappush(g.heap, (mark, key))
        g.changed()
        self._group_of[key] = g
        counts = self.counts
        for p in ports:
            counts[p] += 1
        self._rerate(groups)

    def wait(self, key: FlowKey, ports: Sequence[int], nbytes: float) -> None:
        """A held flow of ``nbytes`` waits on ``ports`` (see the module docstring)."""
        if key in self._waiting:
            self._unwait(key)
        ports = tuple(ports)
        self._waiting[key] = (ports, float(nbytes))
        on = self._waiting_on
        for p in ports:
            on[p] = on.get(p, 0.0) + nbytes
            self.waiting[p] = on[p]

    def _unwait(self, key: FlowKey) -> float:
        ports, nbytes = self._waiting.pop(key)
        on = self._waiting_on
        for p in ports:
            left = on.get(p, 0.0) - nbytes
            if left > 0.5:
                on[p] = left
            else:
                on.pop(p, None)
                left = 0.0
            self.waiting[p] = left
        return nbytes

    def remove(self, key: FlowKey, now: float) -> float:
        """The flow ended (or moved away) at ``now``: the bytes it had left by then
        (a waiting one: all of them)."""
        if key in self._waiting:
            return self._unwait(key)
        g = self._group_of.pop(key, None)
        if g is None:
            return 0.0
        groups = self._settle_on(g.ports, now)
        left = g.marks.pop(key) - g.clock
        g.changed()
        counts = self.counts
        for p in g.ports:
            counts[p] -= 1
        self._done.pop(key, None)
        if not g.marks:
            del self._groups[g.ports]
            for p in g.ports:
                on = self._on_port[p]
                on.discard(g)
                if not on:
                    del self._on_port[p]
            groups.discard(g)
        self._rerate(groups)
        return left if left > 0.0 else 0.0

    def move(self, key: FlowKey, ports: Sequence[int], now: float) -> None:
        """The flow moves onto ``ports`` at ``now`` with the bytes it has left."""
        if key in self._waiting:
            self.wait(key, ports, self._unwait(key))
        elif key in self._group_of:
            self.add(key, ports, self.remove(key, now), now)

    def refresh(self, ports: Iterable[int], now: float) -> None:
        """The availability of ``ports`` changed (a poll): re-rate the flows on them."""
        touched = tuple(p for p in ports if p in self._on_port)
        if touched:
            self._rerate(self._settle_on(touched, now))

    # -- what the decisions read --------------------------------------------------------

    def count(self, port: int) -> int:
        """Flows on ``port`` now."""
        return int(self.counts[port])

    def left(self, key: FlowKey, now: float) -> float:
        """Bytes the flow has left at ``now`` (0 when it is not in the picture)."""
        g = self._group_of.get(key)
        if g is None:
            return 0.0
        left = g.marks[key] - g.clock_at(now)
        return left if left > 0.0 else 0.0

    def rate(self, key: FlowKey) -> float:
        """The flow's expected rate now (bit/s; 0 when it is not in the picture)."""
        g = self._group_of.get(key)
        return g.rate if g is not None else 0.0

    def left_on(self, port: int, now: float) -> float:
        """Bytes the flows on ``port`` have left at ``now``."""
        on = self._on_port.get(port)
        return _queued_on(on, float("inf"), now) if on else 0.0

    def share(self, port: int) -> float:
        """The rate a new flow would get on ``port`` alone (bit/s)."""
        n = self.count(port) if self.counting else 0
        return self.avail[port] / (n + 1)

    def completion(self, ports: Sequence[int], nbytes: float, now: float) -> float:
        """Expected seconds for ``nbytes`` new bytes on ``ports`` (the processor-sharing
        time of the worse port, the bytes waiting there ahead of it included; see the
        module docstring)."""
        worst = 0.0
        avail, counting = self.avail, self.counting
        for p in ports:
            queued = self._waiting_on.get(p, 0.0) if counting else 0.0
            if counting:
                queued += self.queued(p, nbytes, now)
            t = 8.0 * (nbytes + queued) / avail[p]
            worst = max(worst, t)
        return worst

    def candidate(
        self, up: int, down: int, nbytes: float, now: float
    ) -> tuple[float, float, float]:
        """A two-port path's figures for ``nbytes`` new bytes at ``now``, at once (what
        path selection asks of every candidate): its :meth:`completion` and the
        :meth:`share` of each port."""
        avail, waiting = self.avail, self._waiting_on
        a_up, a_down = avail[up], avail[down]
        if not self.counting:
            return 8.0 * nbytes / (a_up if a_up < a_down else a_down), a_up, a_down
        q_up = waiting.get(up, 0.0) + self.queued(up, nbytes, now)
        q_down = waiting.get(down, 0.0) + self.queued(down, nbytes, now)
        t_up, t_down = (nbytes + q_up) / a_up, (nbytes + q_down) / a_down
        counts = self.counts
        return (
            8.0 * (t_up if t_up > t_down else t_down),
            a_up / (counts[up] + 1.0),
            a_down / (counts[down] + 1.0),
        )

    def queued(self, port: int, nbytes: float, now: float) -> float:
        """What a new flow of ``nbytes`` on ``port`` waits for there under processor
        sharing: each flow's bytes left, at most ``nbytes``; 0 when nothing runs on it."""
        on = self._on_port.get(port)
        if not on:
            return 0.0
        return _queued_on(on, nbytes, now)

    def queued_on(self, ports: list[int], nbytes: float, now: float) -> list[float]:
        """:meth:`queued` of each of ``ports`` (the ports a decision's candidates carry
        flows on), in one call."""
        on_port = self._on_port
        return [_queued_on(on_port.get(p, ()), nbytes, now) for p in ports]

    def drain(self, ports: Sequence[int], nbytes: float, now: float) -> float:
        """Seconds until ``nbytes`` more bytes on ``ports`` would be through, every byte
        ahead of them first (left or waiting, whole): the worse port. What sending now
        costs the path as a whole, the transfers already there included; the scheduler
        holds a transfer when its own turn would end no later (:mod:`schedule`)."""
        worst = 0.0
        for p in ports:
            ahead = self._waiting_on.get(p, 0.0) + self.left_on(p, now)
            worst = max(worst, 8.0 * (nbytes + ahead) / self.avail[p])
        return worst

    def expected_end(self, key: FlowKey, now: float) -> float | None:
        """When the picture has the flow done: the instant its bytes ran out, or, with
        bytes left at ``now``, when they would at its rate (None: not in the picture)."""
        g = self._group_of.get(key)
        if g is None:
            return None
        done = self._done.get(key)
        if done is not None:
            return done
        left = g.marks[key] - g.clock_at(now)
        if left <= 0.0:  # ran out since the group was last settled
            return g.at + 8.0 * (g.marks[key] - g.clock) / g.rate if g.rate > 0 else now
        return now + 8.0 * left / g.rate if g.rate > 0 else float("inf")

    def busy_until(self, port: int, now: float) -> float:
        """When the flows on ``port`` are expected to be done (0.0: none runs there)."""
        if port not in self._on_port:
            return 0.0
        return now + 8.0 * self.left_on(port, now) / self.avail[port]

    # -- inside ----------------------------------------------------------------------

    def _settle_on(self, ports: Iterable[int], now: float) -> set[_Group]:
        """Advance every group on ``ports`` to ``now`` at its current rate, noting when
        each member that ran out did; the groups, for :meth:`_rerate` once their ports'
        counts have changed."""
        groups: set[_Group] = set()
        on_port, done = self._on_port, self._done
        for p in ports:
            on = on_port.get(p)
            if on:
                groups.update(on)
        for g in groups:
            if g.at == now:
                continue
            before, rate = g.clock, g.rate
            clock = before + rate * (now - g.at) / 8.0
            heap, marks = g.heap, g.marks
            while heap and heap[0][0] <= clock:
                mark, k = heapq.heappop(heap)
                if marks.get(k) != mark or k in done:
                    continue  # left, or moved: a stale entry
                ran_out = g.at + 8.0 * (mark - before) / rate if rate > 0 else now
                done[k] = min(now, ran_out)
            g.clock, g.at = clock, now
        return groups

    def _rerate(self, groups: Iterable[_Group]) -> None:
        """Recompute the rate of each of ``groups`` (settled first) from its ports'
        availability and counts now."""
        avail, counts = self.avail, self.counts
        for g in groups:
            rate = float("inf")
            for q in g.ports:
                r = avail[q] / counts[q]
                rate = min(rate, r)
            g.rate = float(rate)


def _queued_on(groups: Iterable[_Group], nbytes: float, now: float) -> float:
    """The bytes of the members of ``groups`` a new flow of ``nbytes`` waits for under
    processor sharing: each one's bytes left, at most ``nbytes``."""
    queued = 0.0
    for g in groups:
        clock = g.clock + g.rate * (now - g.at) / 8.0
        marks = g.marks
        if len(marks) >= VECTOR_MEMBERS:
            left = g.array() - clock
            queued += float(np.clip(left, 0.0, nbytes, out=left).sum())
            continue
        for mark in marks.values():
            b = mark - clock
            if b > 0.0:
                queued += b if b < nbytes else nbytes
    return queued
