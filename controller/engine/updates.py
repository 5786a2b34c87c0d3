"""What the engine asks the world to do: plain data that the I/O shell applies.

    Update = TransferMoved | InstallFlowPin | RemoveFlowPin | SetMode
             | LinkStatusChanged | CapacityChanged | Alert | LogRecord | Released

A transfer needs no write of its own: its tag's source port is in the range of the
spine the engine chose, and the leaves' static ``kv_range`` entries send that range up
that spine (p4/README.md, Spine ranges). So a decision returns no update for it.

- :class:`TransferMoved`: a transfer in flight now goes another way (``spine``, or
  ECMP when None) because its range's entry changed: a cable under it broke or came
  back, or the data-plane mode turned the ranges off or on. The shell writes nothing
  for it (:class:`LinkStatusChanged` and :class:`SetMode` carry the writes); it tells a
  model of the data plane (the simulator) when a flow moves.
- :class:`~controller.engine.flow_pins.InstallFlowPin` and ``RemoveFlowPin``: write
  or delete the ``flow_pin`` entry of a flow pin (:mod:`flow_pins`).
- :class:`SetMode`: switch the data plane's placement mode (spine ranges on, ECMP
  only, flowlet ECMP).
- :class:`LinkStatusChanged`: the audit found a cable down, miswired or back; the
  shell takes it out of (or back into) the ECMP groups, points the ranges of the
  spines it cuts off at live ones (or back), and reports it.
- :class:`CapacityChanged`: a port's capacity in the model changed, because its switch
  reports another speed (:mod:`~controller.engine.ports`); the shell scales what
  reads its counters with it.
- :class:`Alert`: an alert started (``firing``) or stopped; the shell logs it and sets
  its metric.
- :class:`LogRecord`: one JSON-ready line of the transfer log.
- :class:`Released`: a held transfer may start now (:mod:`schedule`); the shell
  answers its sender's ``GET /v1/transfers/{id}/start``.

The :class:`Decision` answers the coordinator; ``tag`` says exactly which header
values its sender must set. A transfer split over several spines has one
:class:`Slice` per spine, each with its own tag and bytes: one tagged connection each
(``tag`` and ``path`` are then its first, largest slice's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.config import Mode
from controller.engine.flow_pins import InstallFlowPin, RemoveFlowPin
from controller.topology import LinkId, LinkStatus, PortRef, SpinePath


@dataclass(frozen=True, slots=True)
class Marking:
    """The header values that mark a KV transfer: IP DSCP and L4 source port (a
    decision's ``tag``)."""

    dscp: int
    src_port: int


@dataclass(frozen=True, slots=True)
class Slice:
    """One part of a transfer split over spines: its path, its tag and its bytes."""

    path: SpinePath
    tag: Marking
    bytes: int


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a transfer goes.

    ``path`` is the pinned spine path, or None when the transfer is left to ECMP (or
    stays inside one rack: ``local``). ``best`` is the path with the lowest expected
    completion time at decision time (it differs from ``path`` under hysteresis and
    rate limiting). ``fallbacks`` says why a transfer was not pinned, or which paths
    were left out. ``tag`` is None when the transfer must stay off the spine ranges (a
    kv-aware fallback to ECMP) or every tag port it could take is in use.

    ``held``: the transfer must not start before a :class:`Released` (its pin, its
    port's spine range, is in force already); ``start_at`` is the expected start
    (engine clock) then, and ``expected_s`` its duration once started.

    ``slices``: a pinned transfer's parts, one per spine, largest first (the first is
    ``path`` and ``tag``); one slice when it is not split, none when it is not pinned.
    """

    transfer_id: int
    trace_id: str
    src: str
    dst: str
    bytes: int
    mode: Mode
    path: SpinePath | None
    best: SpinePath | None
    tag: Marking | None
    reason: str
    expected_s: float | None = None
    local: bool = False
    fallbacks: tuple[str, ...] = ()
    held: bool = False
    start_at: float | None = None
    slices: tuple[Slice, ...] = ()

    @property
    def tags(self) -> tuple[Marking, ...]:
        """Every tag the transfer holds: one per slice, or its one tag (or none)."""
        if self.slices:
            return tuple(s.tag for s in self.slices)
        return (self.tag,) if self.tag is not None else ()


@dataclass(frozen=True, slots=True)
class TransferMoved:
    """Transfer ``transfer_id`` (its slice number ``part``) now goes through ``spine``
    (None: ECMP)."""

    transfer_id: int
    spine: str | None
    part: int = 0


@dataclass(frozen=True, slots=True)
class SetMode:
    """Put the data plane in ``mode``; ``reason`` says who or what asked."""

    mode: Mode
    reason: str


@dataclass(frozen=True, slots=True)
class LinkStatusChanged:
    """The audit's verdict on a cable changed."""

    link: LinkId
    status: LinkStatus
    detail: str


@dataclass(frozen=True, slots=True)
class CapacityChanged:
    """Egress port ``port`` runs at ``capacity_bps`` from now on (it ran at ``was_bps``)."""

    port: PortRef
    capacity_bps: int
    was_bps: int


@dataclass(frozen=True, slots=True)
class Alert:
    """An alert ``name`` for ``subject`` started (``firing``) or stopped."""

    name: str
    subject: str
    firing: bool
    message: str
    severity: str = "warning"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One line of the JSON-lines log: ``event`` and JSON-ready ``fields``."""

    event: str
    fields: Mapping[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The record as one JSON object."""
        return {"event": self.event, **self.fields}


@dataclass(frozen=True, slots=True)
class Released:
    """A held transfer may start: released at ``at`` after ``queued_s`` held.

    ``expired`` when it was released because it had been held ``max_wait``, not
    because its path freed.
    """

    transfer_id: int
    at: float
    queued_s: float
    expired: bool = False


Update = (
    TransferMoved
    | InstallFlowPin
    | RemoveFlowPin
    | SetMode
    | LinkStatusChanged
    | CapacityChanged
    | Alert
    | LogRecord
    | Released
)
