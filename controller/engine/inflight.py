"""Transfers in flight: their records, their deadlines and the tag ports they hold.

Every transfer the engine answered is in flight (an :class:`InFlight`, kept by id in
the :class:`InFlightTable`) until its completion arrives or its deadline passes. Its
:class:`Choice` keeps what the log and the offline recomputation need (the candidates
and their figures at decision time) and its *contributions*: the
(port index, bytes) it added to the load table, which are removed, exactly, when it
ends. A pinned transfer contributes its bytes to its two ports; a transfer left to
ECMP spreads them evenly over the uplinks and downlinks ECMP could hash it onto.

A pinned transfer also counts the *shared* bytes of the engine's other transfers that
ran beside it on a port of its path: those in flight there when it was placed, and
those placed there later while it ran. They explain a slowdown the engine caused
itself (two transfers on one port take about twice as long), which the safety checks
must not mistake for a bad path. Pinned transfers are indexed by port for that, and
the bytes placed later are counted without visiting the transfers they share with:
every port (and every path) keeps the running total of the bytes that began on it, and a
transfer notes the totals of its path when it begins, so that what began beside it since
is a difference of totals (the up port's, plus the down port's, less its whole path's,
which both counted; a leaf's uplink is never a spine's downlink). O(1) a decision, where
adding its bytes to every transfer beside it was O(transfers on its ports): with 256 in
flight on a 2 x 2 fabric a decision took 24-26 us on average instead of 31-32. The
figure is written into the transfer's :class:`Choice` when it ends or moves.

Deadlines sit in a heap, so expiring is O(log n) per transfer; tag ports come from
per (source host, spine) pools, so handing one out or taking it back is O(1).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from controller.engine.selection import PathIndex
from controller.engine.updates import Decision


@dataclass(frozen=True, slots=True)
class Part:
    """One flow of a transfer in the engine's fluid picture (:mod:`fluid`): the ports it
    crosses and its bytes. A pinned transfer is one part on its path; one left to ECMP
    is a part per path ECMP may hash it onto, each with its share of the bytes."""

    ports: tuple[int, ...]
    bytes: int


@dataclass(slots=True)
class Choice:
    """The figures behind a transfer's choice: its pin (if any), what it adds to the
    load table, and the candidates it was chosen among.

    ``candidates``, ``costs``, ``loads``, ``chosen`` and ``best`` are those of the
    decision (indexes into ``candidates``); ``seen`` holds, four numbers per
    candidate, the smoothed utilisation of its two ports and their in-flight bytes
    at that time. ``shared_bytes``: see the module docstring.
    """

    contributions: tuple[tuple[int, int], ...] = ()
    path: PathIndex | None = None
    parts: tuple[Part, ...] = ()
    slices: tuple[PathIndex | None, ...] = ()
    candidates: tuple[PathIndex, ...] = ()
    costs: tuple[float, ...] = ()
    loads: tuple[float, ...] = ()
    chosen: int = -1
    best: int = -1
    seen: tuple[float, ...] = ()
    shared_bytes: int = 0


@dataclass(slots=True)
class InFlight:
    """A transfer in flight: the decision answered, the :class:`Choice` behind it, its
    deadline; ``moved`` lists the pins a link failure forced on it.

    ``requested`` is when it was decided, ``granted`` the start its answer gave (the
    request time unless it was held), ``began`` when it was released to start (None
    while held).
    """

    decision: Decision
    pair: tuple[str, str]
    requested: float
    deadline: float
    choice: Choice
    moved: list[str] = field(default_factory=list)
    granted: float | None = None
    began: float | None = None

    def __post_init__(self) -> None:
        if self.granted is None:
            self.granted = self.requested
        if self.began is None and not self.decision.held:
            self.began = self.requested

    @property
    def id(self) -> int:
        """The transfer id."""
        return self.decision.transfer_id

    @property
    def path(self) -> PathIndex | None:
        """The path the transfer is pinned on now, if any."""
        return self.choice.path


class _Pool:
    """The ports of one spine's range for one source host: fresh ones first, in order,
    then the ones given back, oldest first (to keep reuse far apart)."""

    __slots__ = ("first", "fresh", "held", "returned", "size")

    def __init__(self, first: int, size: int) -> None:
        self.first = first
        self.size = size
        self.fresh = 0
        self.held: set[int] = set()
        self.returned: deque[int] = deque()

    def take(self) -> int | None:
        while self.fresh < self.size:
            port = self.first + self.fresh
            self.fresh += 1
            if port not in self.held:
                self.held.add(port)
                return port
        while self.returned:
            port = self.returned.popleft()
            if port not in self.held:
                self.held.add(port)
                return port
        return None

    def give(self, port: int) -> None:
        if port in self.held:
            self.held.discard(port)
            self.returned.append(port)

    def reserve(self, port: int) -> bool:
        if port in self.held:
            return False
        self.held.add(port)
        return True


class TagPool:
    """The L4 source ports the engine hands out as tags, per source host and spine.

    Each spine owns a range of the tag ports (:meth:`KvClassSettings.spine_ranges
    <controller.config.KvClassSettings.spine_ranges>`), and a transfer pinned on a
    spine gets a port of that spine's range: the leaves' static entries do the
    pinning. A port is held by one transfer in flight *per source host* (the
    flow's identity is its source address and port), so a host has at most
    :attr:`size` transfers in flight per spine. Pools are made on a host's first
    transfer; taking or giving back a port is O(1).
    """

    def __init__(self, first: int, size: int, spines: tuple[str, ...]) -> None:
        self.first = first
        self.size = size
        self.spines = spines
        self._index = {s: k for k, s in enumerate(spines)}
        self._pools: dict[tuple[str, int], _Pool] = {}
        self._full: dict[str, int] = {}
        """Per host, how many of its pools have no port free (usually none)."""

    def any_full(self, host: str) -> bool:
        """True when some spine's range has no port free for ``host``."""
        return self._full.get(host, 0) > 0

    def _track(self, host: str, pool: _Pool, was_full: bool) -> None:
        full = len(pool.held) >= pool.size
        if full != was_full:
            self._full[host] = self._full.get(host, 0) + (1 if full else -1)

    def _pool(self, host: str, k: int) -> _Pool:
        pool = self._pools.get((host, k))
        if pool is None:
            pool = self._pools[host, k] = _Pool(self.first + k * self.size, self.size)
        return pool

    def spine_of(self, port: int) -> str | None:
        """The spine whose range holds ``port`` (None: outside every range)."""
        k, _ = divmod(port - self.first, self.size) if self.size else (-1, 0)
        return self.spines[k] if 0 <= k < len(self.spines) and port >= self.first else None

    def take(self, host: str, spine: str) -> int | None:
        """A free port of ``spine``'s range for ``host``, or None when all are in use."""
        pool = self._pool(host, self._index[spine])
        was_full = len(pool.held) >= pool.size
        port = pool.take()
        self._track(host, pool, was_full)
        return port

    def take_any(self, host: str) -> int | None:
        """A free port of the range with the most free ports for ``host`` (a transfer
        the ranges do not steer: outside kv-aware mode, or inside one rack)."""
        if not self.spines:
            return None
        best = max(range(len(self.spines)), key=lambda k: -len(self._pool(host, k).held))
        return self.take(host, self.spines[best])

    def free(self, host: str, spine: str) -> int:
        """How many ports of ``spine``'s range ``host`` has free."""
        pool = self._pools.get((host, self._index[spine]))
        return self.size if pool is None else self.size - len(pool.held)

    @property
    def in_use(self) -> int:
        """How many (host, port) tags are held, over every pool."""
        return sum(len(pool.held) for pool in self._pools.values())

    def give(self, host: str, port: int) -> None:
        """Return ``host``'s ``port``; it is handed out again last."""
        spine = self.spine_of(port)
        if spine is not None:
            pool = self._pool(host, self._index[spine])
            was_full = len(pool.held) >= pool.size
            pool.give(port)
            self._track(host, pool, was_full)

    def reserve(self, host: str, port: int) -> bool:
        """Withhold ``port`` from ``host``'s pool (False: already held or not a tag port)."""
        spine = self.spine_of(port)
        if spine is None:
            return False
        pool = self._pool(host, self._index[spine])
        was_full = len(pool.held) >= pool.size
        reserved = pool.reserve(port)
        self._track(host, pool, was_full)
        return reserved


@dataclass(frozen=True, slots=True)
class Adoption:
    """A transfer placed by another controller, counted by this engine until released:
    its bytes on its two ports, and its source host's tag port withheld from the pool
    if it was free."""

    contributions: tuple[tuple[int, int], ...]
    host: str
    tag_port: int
    tag_reserved: bool
    key: int = 0
    """Its flow's key in the fluid picture (negative; 0: it has none)."""


class InFlightTable:
    """The transfers in flight by id, with a heap of deadlines and the pinned ones by
    port."""

    def __init__(self) -> None:
        self.transfers: dict[int, InFlight] = {}
        self._deadlines: list[tuple[float, int]] = []
        self._on_port: dict[int, set[int]] = {}
        self._began_on: dict[int, int] = {}
        """Port -> the bytes of every pinned transfer that began on it so far."""
        self._began_along: dict[tuple[int, int], int] = {}
        """(up, down) -> the same on the whole path."""
        self._marks: dict[int, tuple[int, int, int]] = {}
        """Transfer id -> the totals of its path (up, down, both) when it began there."""

    def __len__(self) -> int:
        return len(self.transfers)

    def add(self, transfer: InFlight) -> None:
        """Track a new transfer; the pinned ones already on its ports share with it. A
        held transfer (``began`` None) runs nowhere until :meth:`start`."""
        self.transfers[transfer.id] = transfer
        heapq.heappush(self._deadlines, (transfer.deadline, transfer.id))
        if transfer.began is not None:
            self._run(transfer)

    def start(self, transfer: InFlight, now: float) -> None:
        """A held transfer is released: it runs on its path from ``now``."""
        transfer.began = now
        path = transfer.path
        if path is not None:
            running = self.transfers
            transfer.choice.shared_bytes = sum(
                running[tid].decision.bytes for tid in self._beside(path)
            )
        self._run(transfer)

    def _run(self, transfer: InFlight) -> None:
        path = transfer.path
        if path is not None:
            size, up, down = transfer.decision.bytes, path.up, path.down
            on, along = self._began_on, self._began_along
            on[up] = on.get(up, 0) + size
            on[down] = on.get(down, 0) + size
            along[up, down] = along.get((up, down), 0) + size
            self._mark(transfer)
        self._index(transfer)

    def _mark(self, t: InFlight) -> None:
        """Note the totals of ``t``'s path: what begins there from now on shares with it."""
        path = t.path
        if path is not None and t.began is not None:
            up, down = path.up, path.down
            on = self._began_on
            both = self._began_along.get((up, down), 0)
            self._marks[t.id] = (on.get(up, 0), on.get(down, 0), both)

    def _settle(self, t: InFlight) -> None:
        """Add to ``t``'s shared bytes what began beside it since :meth:`_mark`."""
        mark = self._marks.pop(t.id, None)
        path = t.path
        if mark is None or path is None:
            return
        up, down = path.up, path.down
        on = self._began_on
        both = self._began_along.get((up, down), 0) - mark[2]
        t.choice.shared_bytes += on.get(up, 0) - mark[0] + on.get(down, 0) - mark[1] - both

    def running_on(self, port: int) -> set[int]:
        """The ids of the pinned transfers running on ``port`` (held ones are not)."""
        return self._on_port.get(port, set())

    def pop(self, transfer_id: int) -> InFlight | None:
        """Stop tracking a transfer; None if it is not in flight."""
        t = self.transfers.pop(transfer_id, None)
        if t is not None:
            self._settle(t)
            self._unindex(t)
        return t

    def repin(self, transfer: InFlight, path: PathIndex | None) -> None:
        """Move an in-flight transfer's pin to ``path`` (None: left to ECMP)."""
        self._settle(transfer)
        self._unindex(transfer)
        transfer.choice.path = path
        self._index(transfer)
        self._mark(transfer)

    def _beside(self, path: PathIndex) -> set[int]:
        return self._on_port.get(path.up, set()) | self._on_port.get(path.down, set())

    def _index(self, t: InFlight) -> None:
        if t.path is not None and t.began is not None:
            for port in (t.path.up, t.path.down):
                self._on_port.setdefault(port, set()).add(t.id)

    def _unindex(self, t: InFlight) -> None:
        if t.path is not None and t.began is not None:
            for port in (t.path.up, t.path.down):
                ids = self._on_port.get(port)
                if ids is not None:
                    ids.discard(t.id)
                    if not ids:
                        del self._on_port[port]

    def expired(self, now: float) -> list[InFlight]:
        """Remove and return every transfer whose deadline is at or before ``now``."""
        out: list[InFlight] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, tid = heapq.heappop(heap)
            t = self.pop(tid)
            if t is not None:
                out.append(t)
        return out
