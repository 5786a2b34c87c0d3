"""The topology audit: compare the wiring that probes found with the model.

The prober sends a probe out of switch ports (PacketOut); the neighbour punts it to
the controller with its ingress port (PacketIn). One round gives, for every probed
port, where its probes arrived. Against the model, each direction of a leaf-spine
cable is:

- *up* when a probe from one end arrived at the other end;
- *miswired* when it arrived somewhere else (that is a cable plugged into the
  wrong port: traffic pinned onto it goes astray);
- *down* when it arrived nowhere.

A cable is as bad as its worse probed direction (miswired, then down). Cables with
no probe in the round keep their status. Probes on host ports are not audited
(hosts do not punt them). Probes that arrive from, or at, ports the model does not
wire are *unexpected*: a cable or a switch the model does not know about.

This module gives a round's raw outcome per direction; :mod:`liveness` decides when
a missing probe means a dead link rather than a full queue.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from controller.engine.events import AuditRound
from controller.topology import LinkId, LinkStatus, PortRef, Topology

_SEVERITY = {LinkStatus.UP: 0, LinkStatus.DOWN: 1, LinkStatus.MISWIRED: 2}


@dataclass(frozen=True, slots=True)
class LinkVerdict:
    """The audit's verdict on one cable, with the evidence in words."""

    status: LinkStatus
    detail: str


@dataclass(frozen=True, slots=True)
class AuditFindings:
    """Verdicts for the cables probed in a round, and the unexpected sightings."""

    links: dict[LinkId, LinkVerdict]
    unexpected: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProbeOutcomes:
    """One round's raw outcome per probed direction (by the port probes left from)."""

    directions: dict[PortRef, tuple[LinkId, LinkVerdict]]
    unexpected: tuple[str, ...] = ()


def probe_outcomes(topology: Topology, round_: AuditRound) -> ProbeOutcomes:
    """What one round found for every direction it probed, before any hold time."""
    arrivals: dict[PortRef, set[PortRef]] = defaultdict(set)
    for seen in round_.seen:
        arrivals[seen.origin].add(seen.at)
    directions: dict[PortRef, tuple[LinkId, LinkVerdict]] = {}
    unexpected: list[str] = []
    sent = set(round_.sent)
    for origin in round_.sent:
        port = topology.egress.get(origin)
        if port is None:
            for at in sorted(arrivals.get(origin, ())):
                unexpected.append(f"{origin} reaches {at}, which the model does not wire to it")
            continue
        if port.link is None or port.peer_port is None:
            continue
        expected = port.peer_port
        got = arrivals.get(origin, set())
        if expected in got:
            verdict = LinkVerdict(LinkStatus.UP, f"{origin} reaches {expected}")
        elif got:
            where = ", ".join(str(p) for p in sorted(got))
            verdict = LinkVerdict(
                LinkStatus.MISWIRED, f"{origin} reaches {where}; the model says {expected}"
            )
        else:
            verdict = LinkVerdict(LinkStatus.DOWN, f"no probe from {origin} reached {expected}")
        directions[origin] = (port.link, verdict)
    for origin, ats in arrivals.items():
        if origin not in sent:
            for at in sorted(ats):
                unexpected.append(f"a probe from {origin} that was not sent arrived at {at}")
    return ProbeOutcomes(directions, tuple(unexpected))


def worst(verdicts: dict[LinkId, LinkVerdict], link: LinkId, verdict: LinkVerdict) -> None:
    """Keep in ``verdicts`` the worse of ``link``'s verdict so far and ``verdict``."""
    known = verdicts.get(link)
    if known is None or _SEVERITY[verdict.status] > _SEVERITY[known.status]:
        verdicts[link] = verdict


def compare_wiring(topology: Topology, round_: AuditRound) -> AuditFindings:
    """The verdict of one probe round on every cable it probed (no hold time)."""
    outcomes = probe_outcomes(topology, round_)
    verdicts: dict[LinkId, LinkVerdict] = {}
    for link, verdict in outcomes.directions.values():
        worst(verdicts, link, verdict)
    return AuditFindings(verdicts, outcomes.unexpected)
