"""What the world tells the engine: demands for transfers, counter reads, audit rounds,
and what the switches report of their ports.

These are plain data built by the I/O shell (the HTTP API, the telemetry poller, the
prober) and handed to :class:`controller.engine.Engine` with the time they happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from controller.engine.telemetry_math import PortCounters
from controller.topology import PortRef


@dataclass(frozen=True, slots=True)
class Demand:
    """A coordinator asks where to send ``bytes`` of KV cache from ``src`` to ``dst``:
    the request the engine decides (the API's wire request, ``TransferRequest`` in
    :mod:`controller.service.http.schema`, becomes one).

    ``spine`` forces the path through that spine (the lab's ``isolated`` reference):
    the engine pins it whatever it would choose, and counts it there.
    ``deadline_s``: the time from the request by which it should be complete (the
    ``edf`` policy's key).
    """

    src: str
    dst: str
    bytes: int
    trace_id: str | None = None
    spine: str | None = None
    deadline_s: float | None = None


@dataclass(frozen=True, slots=True)
class SwitchReading:
    """One poll of a switch: the counters of its egress ports, by port number."""

    switch: str
    ports: Mapping[int, PortCounters] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PortStatus:
    """What a switch reports of one of its ports (gNMI's OpenConfig leaves): its speed in
    bit/s (None: unknown), whether its oper-status is UP, and its interface's name."""

    speed_bps: int | None
    up: bool
    name: str = ""


@dataclass(frozen=True, slots=True)
class PortStates:
    """One reading of a switch's ports, by port number: every port the switch has."""

    switch: str
    ports: Mapping[int, PortStatus] = field(default_factory=dict)


class ProbeSeen(NamedTuple):
    """A link probe sent out of ``origin`` came back as a PacketIn from port ``at``."""

    origin: PortRef
    at: PortRef


@dataclass(frozen=True, slots=True)
class AuditRound:
    """One round of link probes: the ports probes left from, and where they arrived."""

    sent: tuple[PortRef, ...]
    seen: tuple[ProbeSeen, ...] = ()
