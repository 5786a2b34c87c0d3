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

Pure and on the caller's clock, like the rest of the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

FlowKey = int
"""A flow's key: ``transfer id * MAX_PARTS + part`` for the engine's transfers, negative
for adopted ones (:func:`part_key`)."""

MAX_PARTS = 4096
"""Parts one transfer may have in the picture (its slices, or ECMP's paths: at most
slices x spines)."""


def part_key(transfer_id: int, part: int) -> FlowKey:
    """The key of part ``part`` of transfer ``transfer_id``."""
    return transfer_id * MAX_PARTS + part


class Fluid:
    """Bytes left and expected rates of the engine's own flows (see the module
    docstring). ``avail`` is the load table's list of available bandwidth per port, read
    live (bit/s)."""

    __slots__ = (
        "_at",
        "_done",
        "_left",
        "_left_memo",
        "_members",
        "_memo_at",
        "_ports",
        "_rate",
        "_waiting",
        "_waiting_on",
        "avail",
        "counting",
        "counts",
        "version",
        "waiting",
    )

    def __init__(self, avail: list[float], *, counting: bool = True) -> None:
        self.avail = avail
        self.counting = counting
        self.counts: npt.NDArray[np.float64] = np.zeros(len(avail))
        """Flows running on each port (numpy, for the vectorised path selection)."""
        self.waiting: npt.NDArray[np.float64] = np.zeros(len(avail))
        """Bytes waiting (held) on each port."""
        self._members: dict[int, set[FlowKey]] = {}
        self._ports: dict[FlowKey, tuple[int, ...]] = {}
        self._left: dict[FlowKey, float] = {}
        self._rate: dict[FlowKey, float] = {}
        self._at: dict[FlowKey, float] = {}
        self._done: dict[FlowKey, float] = {}
        self._waiting: dict[FlowKey, tuple[tuple[int, ...], float]] = {}
        self._waiting_on: dict[int, float] = {}
        self.version = 0
        """Grows whenever a flow starts, ends or is re-rated: what :meth:`left_on` keeps
        for one instant holds until then."""
        self._left_memo: dict[int, float] = {}
        self._memo_at: tuple[float, int] = (float("nan"), -1)

    def __len__(self) -> int:
        return len(self._ports)

    def __contains__(self, key: object) -> bool:
        return key in self._ports

    # -- the flows --------------------------------------------------------------------

    def add(self, key: FlowKey, ports: Sequence[int], nbytes: float, now: float) -> None:
        """A flow of ``nbytes`` starts on ``ports`` at ``now`` (a waiting one: its wait
        is over)."""
        if key in self._ports or key in self._waiting:
            self.remove(key, now)
        ports = tuple(ports)
        flows = self._settle_on(ports, now)
        flows.append(key)
        self._ports[key] = ports
        self._left[key] = float(nbytes)
        self._at[key] = now
        members, counts = self._members, self.counts
        for p in ports:
            on = members.setdefault(p, set())
            on.add(key)
            counts[p] = len(on)
        self._rerate(flows)

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
        ports = self._ports.pop(key, None)
        if ports is None:
            return 0.0
        left = self._left_at(key, now)
        flows = self._settle_on(ports, now)
        counts = self.counts
        for p in ports:
            on = self._members.get(p)
            if on is not None:
                on.discard(key)
                counts[p] = len(on)
                if not on:
                    del self._members[p]
        del self._left[key], self._rate[key], self._at[key]
        self._done.pop(key, None)
        self._rerate(flows)
        return left

    def move(self, key: FlowKey, ports: Sequence[int], now: float) -> None:
        """The flow moves onto ``ports`` at ``now`` with the bytes it has left."""
        if key in self._waiting:
            self.wait(key, ports, self._unwait(key))
        elif key in self._ports:
            self.add(key, ports, self.remove(key, now), now)

    def refresh(self, ports: Iterable[int], now: float) -> None:
        """The availability of ``ports`` changed (a poll): re-rate the flows on them."""
        touched = tuple(p for p in ports if p in self._members)
        if touched:
            self._rerate(self._settle_on(touched, now))

    # -- what the decisions read --------------------------------------------------------

    def count(self, port: int) -> int:
        """Flows on ``port`` now."""
        on = self._members.get(port)
        return len(on) if on is not None else 0

    def left(self, key: FlowKey, now: float) -> float:
        """Bytes the flow has left at ``now`` (0 when it is not in the picture)."""
        return self._left_at(key, now) if key in self._ports else 0.0

    def rate(self, key: FlowKey) -> float:
        """The flow's expected rate now (bit/s; 0 when it is not in the picture)."""
        return self._rate.get(key, 0.0)

    def left_on(self, port: int, now: float) -> float:
        """Bytes the flows on ``port`` have left at ``now`` (kept for ``now`` until the
        picture changes: the scheduler's plans ask for the same ports at one instant
        again and again)."""
        on = self._members.get(port)
        if not on:
            return 0.0
        memo = self._left_memo
        if self._memo_at != (now, self.version):
            memo.clear()
            self._memo_at = (now, self.version)
        else:
            hit = memo.get(port)
            if hit is not None:
                return hit
        left, rate, at = self._left, self._rate, self._at
        total = 0.0
        for k in on:
            b = left[k] - rate[k] * (now - at[k]) / 8.0
            if b > 0.0:
                total += b
        memo[port] = total
        return total

    def share(self, port: int) -> float:
        """The rate a new flow would get on ``port`` alone (bit/s)."""
        n = self.count(port) if self.counting else 0
        return self.avail[port] / (n + 1)

    def completion(self, ports: Sequence[int], nbytes: float, now: float) -> float:
        """Expected seconds for ``nbytes`` new bytes on ``ports`` (the processor-sharing
        time of the worse port, the bytes waiting there ahead of it included; see the
        module docstring)."""
        worst = 0.0
        members, avail = self._members, self.avail
        counting = self.counting
        for p in ports:
            queued = self._waiting_on.get(p, 0.0) if counting else 0.0
            on = members.get(p)
            if on and counting:
                for k in on:
                    left = self._left_at(k, now)
                    queued += left if left < nbytes else nbytes
            t = 8.0 * (nbytes + queued) / avail[p]
            worst = max(worst, t)
        return worst

    def candidate(
        self, up: int, down: int, nbytes: float, now: float
    ) -> tuple[float, float, float]:
        """A two-port path's figures for ``nbytes`` new bytes at ``now``, at once (what
        path selection asks of every candidate): its :meth:`completion` and the
        :meth:`share` of each port."""
        avail, members, waiting = self.avail, self._members, self._waiting_on
        a_up, a_down = avail[up], avail[down]
        if not self.counting:
            return 8.0 * nbytes / (a_up if a_up < a_down else a_down), a_up, a_down
        on_up, on_down = members.get(up), members.get(down)
        q_up = waiting.get(up, 0.0) + (self._queued(on_up, nbytes, now) if on_up else 0.0)
        q_down = waiting.get(down, 0.0) + (self._queued(on_down, nbytes, now) if on_down else 0.0)
        t_up, t_down = (nbytes + q_up) / a_up, (nbytes + q_down) / a_down
        n_up = len(on_up) + 1 if on_up else 1
        n_down = len(on_down) + 1 if on_down else 1
        return 8.0 * (t_up if t_up > t_down else t_down), a_up / n_up, a_down / n_down

    def queued(self, port: int, nbytes: float, now: float) -> float:
        """What a new flow of ``nbytes`` on ``port`` waits for there (see
        :meth:`_queued`); 0 when nothing runs on it."""
        on = self._members.get(port)
        return self._queued(on, nbytes, now) if on else 0.0

    def queued_on(self, ports: list[int], nbytes: float, now: float) -> list[float]:
        """:meth:`queued` of each of ``ports`` (the ports a decision's candidates carry
        flows on), in one call."""
        members, left, rate, at = self._members, self._left, self._rate, self._at
        out: list[float] = []
        for p in ports:
            queued = 0.0
            on = members.get(p)
            if on:
                for k in on:
                    b = left[k] - rate[k] * (now - at[k]) / 8.0
                    if b > 0.0:
                        queued += b if b < nbytes else nbytes
            out.append(queued)
        return out

    def _queued(self, on: set[FlowKey], nbytes: float, now: float) -> float:
        """The bytes of the flows ``on`` a port that a new flow of ``nbytes`` waits for
        under processor sharing: each one's bytes left, at most ``nbytes``."""
        left, rate, at = self._left, self._rate, self._at
        queued = 0.0
        for k in on:
            b = left[k] - rate[k] * (now - at[k]) / 8.0
            if b > 0.0:
                queued += b if b < nbytes else nbytes
        return queued

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
        if key not in self._ports:
            return None
        done = self._done.get(key)
        if done is not None:
            return done
        left, rate = self._left_at(key, now), self._rate[key]
        if left <= 0.0:
            return self._at[key] + 8.0 * self._left[key] / rate if rate > 0 else now
        return now + 8.0 * left / rate if rate > 0 else float("inf")

    def busy_until(self, port: int, now: float) -> float:
        """When the flows on ``port`` are expected to be done (0.0: none runs there)."""
        on = self._members.get(port)
        if not on:
            return 0.0
        return now + 8.0 * self.left_on(port, now) / self.avail[port]

    # -- inside ----------------------------------------------------------------------

    def _left_at(self, key: FlowKey, now: float) -> float:
        left = self._left[key] - self._rate[key] * (now - self._at[key]) / 8.0
        return left if left > 0.0 else 0.0

    def _settle_on(self, ports: Iterable[int], now: float) -> list[FlowKey]:
        """Advance every flow on ``ports`` to ``now`` at its current rate; the flows
        (each once), for :meth:`_rerate` once their ports' counts have changed."""
        members, left_of, rate_of, at_of, done = (
            self._members,
            self._left,
            self._rate,
            self._at,
            self._done,
        )
        flows: list[FlowKey] = []
        seen: set[FlowKey] = set()
        for p in ports:
            on = members.get(p)
            if not on:
                continue
            for k in on:
                if k in seen:
                    continue
                seen.add(k)
                flows.append(k)
                rate = rate_of[k]
                left = left_of[k] - rate * (now - at_of[k]) / 8.0
                if left <= 0.0:
                    if k not in done:
                        ran_out = at_of[k] + 8.0 * left_of[k] / rate if rate > 0 else now
                        done[k] = min(now, ran_out)
                    left = 0.0
                left_of[k] = left
                at_of[k] = now
        return flows

    def _rerate(self, flows: Iterable[FlowKey]) -> None:
        """Recompute the rate of each of ``flows`` (settled first) from its ports'
        availability and counts now."""
        self.version += 1
        members, avail, ports_of, rate_of = self._members, self.avail, self._ports, self._rate
        for k in flows:
            ports = ports_of.get(k)
            if ports is None:  # removed meanwhile
                continue
            rate = float("inf")
            for q in ports:
                r = avail[q] / len(members[q])
                rate = min(rate, r)
            rate_of[k] = rate
