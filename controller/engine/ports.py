"""What the switches say of their ports, against the fabric file.

Each switch reports every port it has, with its speed and whether its oper-status is
UP (gNMI's OpenConfig leaves, read by :mod:`controller.service.southbound.ports`; the
simulator builds the same reading). For a port of the model:

- a known *speed* that differs from the capacity in force becomes the capacity (a cable
  re-provisioned at 400G, a port renegotiated at 10G): the engine rescales the port's
  figures (:meth:`LoadTable.set_capacity
  <controller.engine.loads.LoadTable.set_capacity>`). The fabric file's figure stays
  the reference: while the capacity in force differs from it, ``capacity_mismatch``
  fires. A speed the switch does not know changes nothing;
- an oper-status that is not UP is a *carrier down*: the port carries nothing. A cable
  with a carrier down at either end is down at once, with no hold time (a lost probe
  may be a full queue; a port that says its link is down is not), and the audit's
  verdicts count it (:meth:`PortBook.carrier_down`); when both ends are up again the
  cable is as the probes last found it. ``port_down`` fires for the port;
- a port the switch does not report at all: ``port_unreported`` (the file wires a port
  the switch lacks). It is no evidence about the cable: the probes judge it.

A port the model does not know, reported up, is a cable or a switch (a new spine) the
fabric file lacks: ``port_unknown`` fires, and nothing is routed onto it, since the
model has no path through it, until the file names it.

:class:`PortBook` keeps the last report of every port and turns a reading into
:class:`PortChanges`: the capacities and carriers the engine applies, the alerts it
judges, and one ``port`` log record per port whose report changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from controller.config.units import format_capacity
from controller.engine.events import PortStates, PortStatus
from controller.topology import PortRef, Topology

Judgement = tuple[str, str, bool, str, str]
"""An alert to judge: (name, subject, firing, message, severity)."""


@dataclass(slots=True)
class PortChanges:
    """What one reading changes (see the module docstring)."""

    capacities: list[tuple[PortRef, int]] = field(default_factory=list)
    """Ports whose capacity in force becomes the reported speed."""
    carriers: list[tuple[PortRef, bool]] = field(default_factory=list)
    """Ports whose carrier changed (True: up again, or no longer reported)."""
    alerts: list[Judgement] = field(default_factory=list)
    records: list[dict[str, object]] = field(default_factory=list)
    """The fields of one ``port`` log record per port whose report changed."""


def _rate(bps: float | None) -> str:
    return format_capacity(bps) if bps is not None else "an unknown speed"


class PortBook:
    """The last report of every port, and the fabric file's capacities to judge it by."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.file: dict[PortRef, int] = {r: e.capacity_bps for r, e in topology.egress.items()}
        """Each modelled egress port's capacity in the fabric file."""
        self.modelled: dict[str, set[int]] = {}
        for ref in self.file:
            self.modelled.setdefault(ref.switch, set()).add(ref.port)
        self.reported: dict[PortRef, PortStatus] = {}
        """The last report of each modelled port."""
        self.unknown: dict[PortRef, PortStatus] = {}
        """Ports the model does not know that were last reported up."""

    def carrier_down(self, ref: PortRef) -> bool:
        """True when ``ref`` was last reported with its oper-status not UP."""
        status = self.reported.get(ref)
        return status is not None and not status.up

    def status(self, ref: PortRef) -> PortStatus | None:
        """The last report of a modelled port (None: none yet)."""
        return self.reported.get(ref)

    def fold(self, reading: PortStates, capacity: Callable[[PortRef], float]) -> PortChanges:
        """Compare one reading with the model; ``capacity`` gives a port's capacity in
        force. Records the reading; the caller applies the changes."""
        out = PortChanges()
        switch = reading.switch
        modelled = self.modelled.get(switch, set())
        for number, status in sorted(reading.ports.items()):
            ref = PortRef(switch, number)
            if number in modelled:
                self._modelled(ref, status, capacity(ref), out)
            else:
                self._unknown(ref, status, out)
        for number in sorted(modelled - set(reading.ports)):
            ref = PortRef(switch, number)
            before = self.reported.pop(ref, None)
            if before is not None and not before.up:
                out.carriers.append((ref, True))
            egress = self.topology.egress[ref]
            out.alerts.append((
                "port_unreported", str(ref), True,
                f"the fabric file wires {ref} (to {egress.peer}), but {switch} reports no "
                "such port", "warning",
            ))  # fmt: skip
            out.alerts.append(("port_down", str(ref), False, f"{ref} is not reported", "warning"))
        for ref in [r for r in self.unknown if r.switch == switch and r.port not in reading.ports]:
            del self.unknown[ref]
            out.alerts.append(("port_unknown", str(ref), False, f"{ref} is gone", "warning"))
        return out

    def _modelled(self, ref: PortRef, status: PortStatus, cap: float, out: PortChanges) -> None:
        before = self.reported.get(ref)
        self.reported[ref] = status
        speed = status.speed_bps
        in_force = speed if speed is not None else cap
        if speed is not None and speed != cap:
            out.capacities.append((ref, speed))
        if (before is None or before.up) != status.up:
            out.carriers.append((ref, status.up))
        file_bps = self.file[ref]
        egress = self.topology.egress[ref]
        towards = f"cable {egress.link}" if egress.link is not None else f"host {egress.peer}"
        name = f" ({status.name})" if status.name else ""
        out.alerts += [
            ("port_unreported", str(ref), False, f"{ref} is reported", "warning"),
            (
                "capacity_mismatch", str(ref), in_force != file_bps,
                f"{ref}{name} runs at {_rate(in_force)}; the fabric file says "
                f"{_rate(file_bps)}: the model uses the switch's figure"
                if in_force != file_bps
                else f"{ref} runs at {_rate(in_force)}, as the fabric file says",
                "warning",
            ),
            (
                "port_down", str(ref), not status.up,
                f"{ref}{name} reports its link down ({towards})"
                if not status.up
                else f"{ref}{name} reports its link up ({towards})",
                "warning",
            ),
        ]  # fmt: skip
        if before != status:
            out.records.append(_record(ref, status, known=True, capacity=in_force, file=file_bps))

    def _unknown(self, ref: PortRef, status: PortStatus, out: PortChanges) -> None:
        before = self.unknown.get(ref)
        name = f" ({status.name})" if status.name else ""
        if status.up:
            self.unknown[ref] = status
            out.alerts.append((
                "port_unknown", str(ref), True,
                f"{ref}{name} is up at {_rate(status.speed_bps)}, but the fabric file wires "
                "nothing to it: a cable or switch the model does not know; no path uses it",
                "warning",
            ))  # fmt: skip
        elif before is not None:
            del self.unknown[ref]
            out.alerts.append(("port_unknown", str(ref), False, f"{ref}{name} is down", "warning"))
        if status != before and (status.up or before is not None):
            out.records.append(_record(ref, status, known=False))


def _record(
    ref: PortRef,
    status: PortStatus,
    *,
    known: bool,
    capacity: float | None = None,
    file: int | None = None,
) -> dict[str, object]:
    """The fields of a ``port`` log record."""
    return {
        "port": str(ref),
        "name": status.name,
        "up": status.up,
        "speed_bps": status.speed_bps,
        "known": known,
        "capacity_bps": capacity,
        "file_capacity_bps": file,
    }
