"""What the engine shows: the transfer log record, counters, and the fabric view.

Everything here is JSON-ready (str, int, float, bool, None, lists and dicts), so the
I/O shell writes log records as JSON lines and serves :func:`fabric_view` as
``GET /v1/fabric`` without knowing the engine's types.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.engine.inflight import InFlight
from controller.engine.telemetry_math import percentile
from controller.engine.updates import LogRecord
from controller.topology import Tier

if TYPE_CHECKING:
    from controller.engine.core import Engine


@dataclass(slots=True)
class Counts:
    """Running totals since the engine started (the Prometheus counters)."""

    decisions: int = 0
    pinned: int = 0
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


def transfer_record(
    t: InFlight,
    now: float,
    *,
    duration_s: float | None,
    baseline_s: float | None,
    slow: bool,
    rerouted: bool,
    late: bool = False,
    cancelled: bool = False,
) -> LogRecord:
    """The log line of a finished (``duration_s``) or timed-out (None) transfer.

    ``late``: a completion reported after the transfer had timed out (its timeout
    has its own record, earlier, with ``timed_out``). ``cancelled``: a held transfer
    given up before its release.

    The times of a transfer: ``requested_at`` (the decision), ``granted_start_at``
    (the start its answer gave: the request time unless it was held),
    ``started_at`` (its release; None when it never was), ``completed_at``;
    ``queue_s`` is the time from the request to the release.

    ``utilisation`` is the decision-time snapshot, one list per figure with one entry
    per candidate spine (columns keep a 64-spine record compact).
    """
    d = t.decision
    pl = t.choice
    path = "local" if d.local else (str(d.path) if d.path is not None else "ecmp")
    snap = pl.snapshot
    utilisation = {
        "spine": [c.path.spine for c in pl.candidates],
        "up_util": list(snap[0::4]),
        "down_util": list(snap[1::4]),
        "up_inflight_bytes": [int(b) for b in snap[2::4]],
        "down_inflight_bytes": [int(b) for b in snap[3::4]],
        "expected_s": list(pl.costs),
        "load": list(pl.loads),
    }
    fields: dict[str, object] = {
        "time": now,
        "trace_id": d.trace_id,
        "transfer_id": d.transfer_id,
        "src": d.src,
        "dst": d.dst,
        "pair": f"{t.pair[0]}>{t.pair[1]}",
        "bytes": d.bytes,
        "requested_at": t.requested,
        "granted_start_at": t.granted,
        "started_at": t.began,
        "completed_at": now if duration_s is not None else None,
        "duration_s": duration_s,
        "held": d.held,
        "queue_s": t.began - t.requested if t.began is not None else None,
        "timed_out": duration_s is None and not cancelled,
        "cancelled": cancelled,
        "late": late,
        "mode": str(d.mode),
        "path": path,
        "best": str(d.best) if d.best is not None else None,
        "reason": d.reason,
        "expected_s": d.expected_s,
        "baseline_s": baseline_s,
        "shared_bytes": pl.shared_bytes,
        "slow": slow,
        "rerouted": rerouted,
        "fallbacks": list(d.fallbacks),
        "tag": {"dscp": d.tag.dscp, "src_port": d.tag.src_port} if d.tag is not None else None,
        "moved": list(t.moved),
        "utilisation": utilisation,
    }
    return LogRecord("transfer", fields)


@dataclass(frozen=True, slots=True)
class TierNow:
    """Current mean and p95 of a tier's smoothed port utilisations."""

    mean: float
    p95: float
    ports: int


def tier_utilisation(engine: Engine) -> dict[Tier, TierNow]:
    """Per tier, the mean and p95 of its ports' smoothed utilisation (sampled ports only)."""
    by_tier: dict[Tier, list[float]] = {t: [] for t in Tier}
    table = engine.table
    for i, port in enumerate(table.ports):
        state = table.state[i]
        if state is not None and state.sampled:
            by_tier[port.tier].append(state.util)
    return {
        tier: TierNow(sum(u) / len(u), percentile(u, 95), len(u))
        for tier, u in by_tier.items()
        if u
    }


def fabric_view(engine: Engine, now: float) -> dict[str, object]:
    """The whole picture, JSON-ready: mode, ports, links, pins, flow pins, tiers, safety,
    totals."""
    table = engine.table
    topo = engine.topology
    ports = []
    for i, port in enumerate(table.ports):
        state = table.state[i]
        ports.append(
            {
                "port": str(port.ref),
                "peer": port.peer,
                "tier": str(port.tier),
                "capacity_bps": port.capacity_bps,
                "util": state.util if state is not None else None,
                "bg_util": state.bg_util if state is not None else None,
                "queue_delay_s": state.queue_delay_s if state is not None else None,
                "inflight_bytes": table.inflight[i],
            }
        )
    staleness = {
        sw.name: (now - table.sampled_at[sw.name]) if sw.name in table.sampled_at else None
        for sw in topo.config.switches
    }
    pins = [
        {
            "transfer_id": t.id,
            "trace_id": t.decision.trace_id,
            "src": t.decision.src,
            "dst": t.decision.dst,
            "bytes": t.decision.bytes,
            "path": str(t.path.path) if t.path is not None else None,
            "tag": t.decision.tag.src_port if t.decision.tag is not None else None,
            "started": t.requested,
            "held": t.began is None,
        }
        for t in engine.inflight.transfers.values()
    ]
    c = engine.counts
    eff = engine.efficiency
    return {
        "fabric": topo.config.name,
        "time": now,
        "mode": str(engine.mode),
        "effective_mode": str(engine.effective_mode),
        "fallback_active": engine.guard.tripped,
        "reroutes_in_window": engine.guard.count(now),
        "links": [
            {"link": str(link), "status": str(topo.link_status(link))} for link in topo.links
        ],
        "ports": ports,
        "staleness_s": staleness,
        "transfers": pins,
        "static_pins": [p.as_dict() for p in engine.flow_pins.by_id.values()],
        "tiers": {
            str(t): {"mean": s.mean, "p95": s.p95, "ports": s.ports}
            for t, s in tier_utilisation(engine).items()
        },
        "efficiency": {
            "evaluated": eff.total_evaluated,
            "efficient": eff.total_efficient,
            "last_window": eff.last.ratio if eff.last is not None else None,
        },
        "alerts": [
            {"name": a.name, "subject": a.subject, "message": a.message, "severity": a.severity}
            for a in engine.book.active.values()
        ],
        "counts": {
            "decisions": c.decisions,
            "pinned": c.pinned,
            "ecmp": c.ecmp,
            "local": c.local,
            "completed": c.completed,
            "timeouts": c.timeouts,
            "reroutes": c.reroutes,
            "fallback_trips": c.trips,
            "moved": c.moved,
            "probes_missed": c.probes_missed,
            "fallbacks": dict(c.fallbacks),
        },
    }
