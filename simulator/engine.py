"""The interface between a simulator engine and the drivers of the modes.

An engine simulates a fabric (a :class:`~simulator.network.Network`) carrying flows on
paths that the drivers choose. It knows nothing of modes, the controller or
scenarios; a driver (:mod:`simulator.modes`, :mod:`simulator.kvaware`) knows nothing
of how the engine computes rates. The contract:

- ``now``: the simulated time in seconds;
- ``at(t, fn, daemon=False)`` / ``cancel(timer)``: timers;
- ``start_flow(links, nbytes, on_done, kv=, cap_bps=)``: a flow over a path of link
  indexes; ``on_done(flow, now)`` when its last byte arrives;
- ``start_background(links, bps, elastic=)``: background between two hosts, never
  ending: TCP (elastic, capped at ``bps``) or UDP (constant-rate: it does not back off,
  and a link it overloads drops the excess);
- ``reroute(flow, links)`` (a transfer or a background flow), ``stop_flow(flow)``,
  ``is_active(flow)``, ``path_of(flow)``;
- ``set_capacity(link, bps)`` (a failure is 0);
- ``sent_bytes`` / ``kv_bytes``: every link's cumulative counters, as a switch's
  egress counters read them; ``utilisation()``: every link's load now;
- ``run(until=inf)``.

What comes out of a run is therefore the drivers' business: each records the
completion time of its transfers and samples ``utilisation()`` on a timer. Two
engines implement :class:`FabricEngine`: the flow-level model
(:class:`simulator.flow.FlowEngine`) and ns-3 (:class:`simulator.packet.PacketEngine`).
They share the timers (:class:`TimerQueue`) and ``start_flow``'s checks.
"""

from __future__ import annotations

import heapq
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from simulator.maxmin import FloatArray
from simulator.network import Network


class RatePolicy(StrEnum):
    """How an engine shares links between flows (the packet engine: TCP's own way)."""

    MAX_MIN = "max-min"  # max-min fair, as long-lived TCP flows converge to
    SRPT = "srpt"  # greedy by fewest remaining bytes: the bound reference's ideal


DoneCallback = Callable[[int, float], None]
"""Called with (flow, now) when a flow's last byte arrives."""


@dataclass(slots=True, eq=False)
class Timer:
    """A scheduled call; ``cancelled`` and ``fired`` say what became of it."""

    time: float
    fn: Callable[[], None] = field(repr=False)
    daemon: bool = False
    cancelled: bool = False
    fired: bool = False


class TimerQueue:
    """The timers every engine keeps: a heap by time; ``daemon`` timers (periodic polls
    and samples) keep nothing alive, ``pending`` counts the others."""

    now: float

    def __init__(self) -> None:
        self.now = 0.0
        self.events = 0
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._pending = 0

    def at(self, t: float, fn: Callable[[], None], *, daemon: bool = False) -> Timer:
        """Call ``fn`` at time ``t`` (not before now); ``daemon`` timers keep nothing alive."""
        timer = Timer(max(t, self.now), fn, daemon)
        heapq.heappush(self._heap, (timer.time, next(self._seq), timer))
        if not daemon:
            self._pending += 1
        return timer

    def cancel(self, timer: Timer) -> None:
        """Forget ``timer`` if it has not fired."""
        if not timer.cancelled and not timer.fired:
            timer.cancelled = True
            if not timer.daemon:
                self._pending -= 1

    def next_timer(self) -> float:
        """When the next timer is due (inf: none)."""
        return self._heap[0][0] if self._heap else math.inf

    def fire_due(self, t: float) -> None:
        """Fire every timer due at or before ``t``, in order."""
        while self._heap and self._heap[0][0] <= t:
            _, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            timer.fired = True
            if not timer.daemon:
                self._pending -= 1
            self.events += 1
            timer.fn()


class FabricEngine(TimerQueue, ABC):
    """What every simulator engine offers (see the module docstring): the timers and
    ``start_flow``'s checks are shared, the rest is each engine's."""

    network: Network
    now: float
    sent_bytes: FloatArray
    kv_bytes: FloatArray

    def start_flow(
        self,
        links: Sequence[int],
        nbytes: float,
        on_done: DoneCallback | None = None,
        *,
        kv: bool = True,
        cap_bps: float = math.inf,
    ) -> int:
        """Start a flow of ``nbytes`` over ``links`` now; ``on_done(flow, now)`` at its end.

        ``nbytes`` may be ``inf`` (a background flow that never ends). ``cap_bps`` caps
        its rate (a TCP flow sending at a target rate). ``kv``: the switches count its
        bytes as the KV class.
        """
        if nbytes <= 0:
            raise ValueError(f"a flow needs a positive size, got {nbytes}")
        return self._start(links, nbytes, on_done, kv, cap_bps)

    def packet_count(self) -> int | None:
        """Packet transmissions so far, every hop counted (None: no packets modelled)."""
        return None

    @abstractmethod
    def _start(self, links: Sequence[int], nbytes: float, on_done: DoneCallback | None,
               kv: bool, cap_bps: float) -> int:  # fmt: skip
        """Start the flow (its size is positive)."""

    @abstractmethod
    def reroute(self, flow: int, links: Sequence[int]) -> None:
        """Move a flow now."""

    @abstractmethod
    def stop_flow(self, flow: int) -> float:
        """Drop a flow now; the bytes it had left."""

    @abstractmethod
    def is_active(self, flow: int) -> bool:
        """True while the flow has bytes left."""

    @abstractmethod
    def path_of(self, flow: int) -> tuple[int, ...]:
        """The flow's links now."""

    @abstractmethod
    def set_capacity(self, link: int, bps: float) -> None:
        """A link's capacity from now on."""

    @abstractmethod
    def start_background(self, links: Sequence[int], bps: float, *, elastic: bool) -> int:
        """Background over ``links`` from now on, until stopped: TCP capped at ``bps``
        (``elastic``) or UDP at a constant ``bps``."""

    @abstractmethod
    def utilisation(self) -> FloatArray:
        """Every link's load over its nominal capacity, now."""

    @abstractmethod
    def run(self, until: float = math.inf) -> None:
        """Simulate until nothing is left to do."""
