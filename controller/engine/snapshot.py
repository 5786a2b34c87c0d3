"""The engine at one instant, read-only: what the shell shows of it.

The metrics (at each scrape), ``GET /v1/fabric``, the live page and the weekly tiers
record read the engine through :meth:`Engine.snapshot
<controller.engine.core.Engine.snapshot>`, a frozen :class:`Snapshot` of plain values,
instead of reaching into its tables: the engine's attributes stay its own, and what
the shell may read is typed here once. A snapshot is built on demand, O(ports +
transfers + flow pins), and never on a decision's path; the reads that are (when a
switch was last sampled, for the 503s) and the per-transfer reads of the service (a
transfer's record for the ledger and its trace) are small accessors of the engine.

:class:`Counts` are the engine's running totals (the Prometheus counters); a snapshot
holds a copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from controller.config import Mode
from controller.engine.events import PortStatus
from controller.engine.flow_pins import FlowPin
from controller.engine.telemetry_math import percentile
from controller.engine.updates import Alert, Decision
from controller.topology import PortRef, SpinePath, Tier, Topology


@dataclass(slots=True)
class Counts:
    """Running totals since the engine started (the Prometheus counters)."""

    decisions: int = 0
    pinned: int = 0
    split: int = 0
    ecmp: int = 0
    local: int = 0
    completed: int = 0
    timeouts: int = 0
    late: int = 0
    held: int = 0
    cancelled: int = 0
    reroutes: int = 0
    trips: int = 0
    moved: int = 0
    unjudged: int = 0
    probes_missed: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)

    def fallback(self, reason: str) -> None:
        """Count one fallback to ECMP for ``reason`` (a short metric label)."""
        self.fallbacks[reason] += 1

    def copy(self) -> Counts:
        """The totals now, apart from the engine's."""
        return replace(self, fallbacks=Counter(self.fallbacks))


@dataclass(frozen=True, slots=True)
class PortNow:
    """One egress port: what it is, and its smoothed load (None before a first read).

    ``capacity_bps`` is the capacity in force, ``file_capacity_bps`` the fabric file's;
    ``reported`` what its switch last reported of it (None: nothing yet)."""

    ref: PortRef
    peer: str
    tier: Tier
    capacity_bps: int
    sampled: bool
    util: float | None
    bg_util: float | None
    queue_delay_s: float | None
    inflight_bytes: int
    file_capacity_bps: int = 0
    reported: PortStatus | None = None


@dataclass(frozen=True, slots=True)
class TransferNow:
    """A transfer in flight: its decision, and where it runs now."""

    decision: Decision
    pair: tuple[str, str]
    requested: float
    deadline: float
    path: SpinePath | None
    """The path it is pinned on now (None: ECMP, or one rack)."""
    held: bool
    """Not released yet (a held transfer's sender waits)."""
    slices: tuple[SpinePath | None, ...] = ()
    """The path each of its slices runs on now (None: that slice's range is off)."""

    @property
    def id(self) -> int:
        """The engine's id of the transfer."""
        return self.decision.transfer_id


@dataclass(frozen=True, slots=True)
class TierNow:
    """Current mean and p95 of a tier's smoothed port utilisations."""

    mean: float
    p95: float
    ports: int


@dataclass(frozen=True, slots=True)
class EfficiencyNow:
    """Transfers judged offline so far, those placed on the best path, and the ratio of
    the last closed window (None before one closes)."""

    evaluated: int
    efficient: int
    last_window: float | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The engine at ``time`` (see the module docstring)."""

    time: float
    topology: Topology
    """The fabric model with the cables' audited status (itself immutable)."""
    mode: Mode
    effective_mode: Mode
    fallback_active: bool
    reroutes_in_window: int
    counts: Counts
    efficiency: EfficiencyNow
    ports: tuple[PortNow, ...]
    sampled_at: Mapping[str, float]
    """When each switch was last sampled (switches never sampled are absent)."""
    transfers: tuple[TransferNow, ...]
    flow_pins: tuple[FlowPin, ...]
    alerts: tuple[Alert, ...]
    """The alerts firing now."""
    held: Mapping[str, int]
    """Held transfers by path (``leaf>spine>leaf``)."""
    unmodelled: tuple[tuple[PortRef, PortStatus], ...] = ()
    """Ports the fabric file does not know that their switch reports up."""

    def staleness(self, switches: Iterable[str]) -> dict[str, float | None]:
        """Seconds since each of ``switches`` was sampled (None: never)."""
        sampled = self.sampled_at
        return {sw: self.time - sampled[sw] if sw in sampled else None for sw in switches}

    def tiers(self) -> dict[Tier, TierNow]:
        """Per tier, the mean and p95 of its ports' smoothed utilisation (sampled ports
        only; a tier without one is absent)."""
        by_tier: dict[Tier, list[float]] = {t: [] for t in Tier}
        for port in self.ports:
            if port.sampled and port.util is not None:
                by_tier[port.tier].append(port.util)
        return {
            tier: TierNow(sum(u) / len(u), percentile(u, 95), len(u))
            for tier, u in by_tier.items()
            if u
        }
