"""What the engine shows as JSON: the transfer log record and the fabric view.

Everything here is JSON-ready (str, int, float, bool, None, lists and dicts), so the
I/O shell writes log records as JSON lines and serves :func:`fabric_view` as
``GET /v1/fabric`` without knowing the engine's types. The fabric view is drawn from
the engine's :class:`~controller.engine.snapshot.Snapshot`, never from its tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.engine.events import PortStatus
from controller.engine.inflight import InFlight
from controller.engine.updates import LogRecord

if TYPE_CHECKING:
    from controller.engine.core import Engine


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

    ``utilisation`` is what the decision saw, one list per figure with one entry
    per candidate spine (columns keep a 64-spine record compact). ``slices`` lists a
    split transfer's parts (spine, bytes, tag port), the first being ``path``; a
    transfer not split has one, one not pinned none.
    """
    d = t.decision
    ch = t.choice
    path = "local" if d.local else (str(d.path) if d.path is not None else "ecmp")
    seen = ch.seen
    utilisation = {
        "spine": [c.path.spine for c in ch.candidates],
        "up_util": list(seen[0::4]),
        "down_util": list(seen[1::4]),
        "up_inflight_bytes": [int(b) for b in seen[2::4]],
        "down_inflight_bytes": [int(b) for b in seen[3::4]],
        "expected_s": list(ch.costs),
        "load": list(ch.loads),
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
        "shared_bytes": ch.shared_bytes,
        "slow": slow,
        "rerouted": rerouted,
        "fallbacks": list(d.fallbacks),
        "tag": {"dscp": d.tag.dscp, "src_port": d.tag.src_port} if d.tag is not None else None,
        "slices": [
            {"spine": s.path.spine, "bytes": s.bytes, "src_port": s.tag.src_port} for s in d.slices
        ],
        "moved": list(t.moved),
        "utilisation": utilisation,
    }
    return LogRecord("transfer", fields)


def _oper(reported: PortStatus | None) -> str | None:
    """A port's last reported oper-status: ``up``, ``down``, or None before a report."""
    if reported is None:
        return None
    return "up" if reported.up else "down"


def fabric_view(engine: Engine, now: float) -> dict[str, object]:
    """The whole picture, JSON-ready: mode, ports, links, transfers, flow pins, tiers,
    safety, totals (``GET /v1/fabric``; the service adds its own part).

    Each port shows its capacity in force and the fabric file's, and the speed and
    oper-status its switch last reported (None before a report); ``unmodelled_ports``
    lists the ports the switches report up that the fabric file does not know.

    ``static_pins`` repeats ``flow_pins`` under its old name, deprecated: it goes in the
    next release."""
    s = engine.snapshot(now)
    topo = s.topology
    ports = [
        {
            "port": str(p.ref),
            "peer": p.peer,
            "tier": str(p.tier),
            "capacity_bps": p.capacity_bps,
            "file_capacity_bps": p.file_capacity_bps,
            "speed_bps": p.reported.speed_bps if p.reported is not None else None,
            "oper_status": _oper(p.reported),
            "util": p.util,
            "bg_util": p.bg_util,
            "queue_delay_s": p.queue_delay_s,
            "inflight_bytes": p.inflight_bytes,
        }
        for p in s.ports
    ]
    transfers = [
        {
            "transfer_id": t.id,
            "trace_id": t.decision.trace_id,
            "src": t.decision.src,
            "dst": t.decision.dst,
            "bytes": t.decision.bytes,
            "path": str(t.path) if t.path is not None else None,
            "tag": t.decision.tag.src_port if t.decision.tag is not None else None,
            "slices": [
                {"spine": sl.path.spine, "bytes": sl.bytes, "src_port": sl.tag.src_port}
                for sl in t.decision.slices
            ],
            "started": t.requested,
            "held": t.held,
        }
        for t in s.transfers
    ]
    c = s.counts
    flow_pins = [p.as_dict() for p in s.flow_pins]
    return {
        "fabric": topo.config.name,
        "time": now,
        "mode": str(s.mode),
        "effective_mode": str(s.effective_mode),
        "fallback_active": s.fallback_active,
        "reroutes_in_window": s.reroutes_in_window,
        "links": [
            {"link": str(link), "status": str(topo.link_status(link))} for link in topo.links
        ],
        "ports": ports,
        "unmodelled_ports": [
            {"port": str(ref), "name": st.name, "speed_bps": st.speed_bps, "oper_status": "up"}
            for ref, st in s.unmodelled
        ],
        "staleness_s": s.staleness(sw.name for sw in topo.config.switches),
        "transfers": transfers,
        "flow_pins": flow_pins,
        "static_pins": flow_pins,  # deprecated: the old name of flow_pins, for one release
        "tiers": {
            str(t): {"mean": v.mean, "p95": v.p95, "ports": v.ports} for t, v in s.tiers().items()
        },
        "efficiency": {
            "evaluated": s.efficiency.evaluated,
            "efficient": s.efficiency.efficient,
            "last_window": s.efficiency.last_window,
        },
        "alerts": [
            {"name": a.name, "subject": a.subject, "message": a.message, "severity": a.severity}
            for a in s.alerts
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
