"""Temporal scheduling: when a transfer may start, as well as where it goes.

Two transfers that share a path both finish late: equal ones sent together end at
``2T`` each, sent one after the other at ``T`` and ``2T``, so the mean falls by a
quarter and the last is no later. When every candidate path of a new transfer
already carries transfers the engine placed, the engine compares two options by
expected completion:

- *now, shared*: the path selection's choice and its fair-share cost
  (:func:`~controller.engine.selection.evaluate`), which counts every byte in flight
  on the path, held ones included;
- *held*: on each candidate path, the start its queue would give it (below), plus
  its cost on the path alone.

It takes whichever completes earlier (a tie holds: sending now would also slow the
transfers already there). A start more than ``max_wait`` away is no option, and
nothing is held while a candidate path has no transfer running on either port (the
release below would let it go at once).

The queue. Held transfers are ordered by the policy's key:

- ``fifo``: the request time;
- ``srpt``: the request time plus the expected duration alone, so shorter goes
  first, aged: a transfer that has waited as long as another's advantage goes first;
- ``edf``: the deadline (``deadline_ms`` of the request), a transfer without one
  taking the latest completion the engine allows: request + ``max_wait`` + duration.

Their expected starts are a list schedule in that order: each port is busy until
the expected end of what runs on it (the fluid picture's time to drain what runs
there, never before now), and a held transfer starts when every port of its path (of
all its slices' paths, when it is split) is free, then keeps them for its duration
alone. That estimate is what the answer
says (``start_at``); the *release* itself follows events, not estimates: a held
transfer is released, in key order, as soon as no transfer runs on any port of
its path (one completed early, timed out or was cancelled), or when it has been
held ``max_wait``, whatever runs. So none waits past ``max_wait`` (no starvation
under any key), and none waits on a path that is free.

Everything here is pure: ports are load-table indexes, times the engine's clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controller.config import Policy

CLOCK_SLACK_S = 1e-9
"""A held transfer whose ``latest`` is this close is due (float times of one clock)."""

REASON_HELD = "held"
"""A decision's reason when the transfer is held behind others on its path."""


@dataclass(slots=True)
class Held:
    """A transfer held behind others on the ``ports`` of its path (of every path its
    slices take, when it is split: :mod:`slicing`).

    ``latest`` is when it is released whatever runs (request + ``max_wait``);
    ``start_at`` the current estimate of its start.
    """

    transfer_id: int
    ports: tuple[int, ...]
    requested: float
    latest: float
    alone_s: float
    key: tuple[float, float, int]
    start_at: float


def order_key(
    policy: Policy,
    *,
    transfer_id: int,
    requested: float,
    alone_s: float,
    deadline: float | None,
    max_wait_s: float,
) -> tuple[float, float, int]:
    """The queue key of a transfer under ``policy`` (smaller goes first; see above)."""
    if policy is Policy.SRPT:
        first = requested + alone_s
    elif policy is Policy.EDF:
        first = deadline if deadline is not None else requested + max_wait_s + alone_s
    else:
        first = requested
    return (first, requested, transfer_id)


class Queue:
    """The held transfers of one engine, in policy order."""

    def __init__(self, policy: Policy, max_wait_s: float) -> None:
        self.policy = policy
        self.max_wait_s = max_wait_s
        self.held: dict[int, Held] = {}

    @property
    def active(self) -> bool:
        """True when the policy may hold transfers (anything but ``none``)."""
        return self.policy is not Policy.NONE

    def __len__(self) -> int:
        return len(self.held)

    def __contains__(self, transfer_id: int) -> bool:
        return transfer_id in self.held

    def ordered(self) -> list[Held]:
        """The held transfers, first to go first."""
        return sorted(self.held.values(), key=lambda h: h.key)

    def candidate(
        self,
        transfer_id: int,
        ports: tuple[int, ...],
        requested: float,
        alone_s: float,
        deadline: float | None,
        *,
        max_wait_s: float | None = None,
    ) -> Held:
        """A new transfer as it would be held on ``ports`` (not added), at most
        ``max_wait_s`` (default: the queue's; a batch's members: ``batch_max_wait``)."""
        wait = self.max_wait_s if max_wait_s is None else max_wait_s
        key = order_key(
            self.policy,
            transfer_id=transfer_id,
            requested=requested,
            alone_s=alone_s,
            deadline=deadline,
            max_wait_s=wait,
        )
        latest = requested + wait
        return Held(transfer_id, ports, requested, latest, alone_s, key, requested)

    def add(self, held: Held) -> None:
        """Hold a transfer."""
        self.held[held.transfer_id] = held

    def drop(self, transfer_id: int) -> Held | None:
        """Stop holding a transfer (released, cancelled, completed or timed out)."""
        return self.held.pop(transfer_id, None)

    def plan(self, busy_until: Callable[[int], float], now: float) -> dict[int, float]:
        """The expected start of every held transfer, by id (a newcomer's alone:
        :meth:`start_of`).

        ``busy_until(port)`` is when the transfers running on a port are expected to
        end (see the module docstring). A start may lie past the transfer's
        ``latest``: the queue would not have freed its path by then.
        """
        free: dict[int, float] = {}
        return {h.transfer_id: _book(h, free, busy_until, now) for h in self.ordered()}

    def start_of(self, busy_until: Callable[[int], float], now: float, extra: Held) -> float:
        """:meth:`plan`'s start for ``extra`` alone: the same greedy pass, stopped at
        ``extra`` (what goes after it in the order never moves its start)."""
        free: dict[int, float] = {}
        for h in self.ordered():
            if h.key > extra.key:
                break
            _book(h, free, busy_until, now)
        return _book(extra, free, busy_until, now)

    def replan(self, busy_until: Callable[[int], float], now: float) -> None:
        """Refresh every held transfer's ``start_at`` (never past its ``latest``)."""
        for tid, start in self.plan(busy_until, now).items():
            h = self.held[tid]
            h.start_at = min(start, max(h.latest, now))

    def due(self, running: Callable[[int], bool], now: float) -> list[Held]:
        """Remove and return, in order, the held transfers that may start now: all their
        ports free of running transfers (and of those released before them in this
        pass), or held ``max_wait`` already."""
        taken: set[int] = set()
        out: list[Held] = []
        for h in self.ordered():
            ports = h.ports
            free = not any(running(p) or p in taken for p in ports)
            if free or now >= h.latest - CLOCK_SLACK_S:
                out.append(h)
                taken.update(ports)
                del self.held[h.transfer_id]
        return out

    def next_due(self) -> float | None:
        """The earliest time a held transfer is released whatever runs (None: none held)."""
        return min((h.latest for h in self.held.values()), default=None)


def _book(h: Held, free: dict[int, float], busy_until: Callable[[int], float], now: float) -> float:
    """One step of the greedy plan: ``h`` starts when all its ports are free (``free``,
    filled from ``busy_until`` on first sight), and holds them for its time alone.
    Returns its start."""
    ports = h.ports
    start = now
    for port in ports:
        f = free.get(port)
        if f is None:
            b = busy_until(port)
            f = free[port] = b if b > now else now
        start = max(start, f)
    end = start + h.alone_s
    for port in ports:
        free[port] = max(free[port], end)
    return start
