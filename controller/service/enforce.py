"""Enforcement: apply the engine's updates to the switches, the log and the metrics.

The engine returns plain data; :class:`Enforcer` is the only place that turns it
into P4Runtime writes:

- ``InstallPin`` -> a ``kv_pin`` entry on the source leaf (insert, or modify when the
  book says the key is already there; the other one when the leaf says ALREADY_EXISTS
  or NOT_FOUND), with the transfer's metadata (:mod:`pins`);
- ``RemovePin`` -> delete it (a pin already gone is fine);
- ``InstallFlowPin``/``RemoveFlowPin`` -> a flow pin's ``flow_pin`` entry written or
  deleted on its source leaf (:mod:`flow_pins`);
- ``SetMode`` -> the ``switch_config`` default action on every leaf;
- ``LinkStatusChanged`` -> every leaf's ECMP groups recomputed and written (only
  the groups that changed), and, in flowlet mode, a new flowlet generation so no
  flowlet keeps sending into a port that left its group;
- ``Alert`` -> a log line (warning or error) and the alert metrics;
- ``LogRecord`` -> a line of the transfer log;
- ``Released`` -> each of ``on_released`` (the service wakes the sender's long poll,
  :mod:`starts`).

A failed write is logged and counted and does not stop the updates after it: a
pin that could not be written leaves its transfer on ECMP, which is safe.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.config import Mode
from controller.engine import (
    Alert,
    InstallFlowPin,
    InstallPin,
    LinkStatusChanged,
    LogRecord,
    Released,
    RemoveFlowPin,
    RemovePin,
    SetMode,
    Update,
)
from controller.errors import ServiceError, SwitchError, SwitchUnavailable
from controller.service import intent
from controller.service.flow_pins import FlowPinWriter
from controller.service.metrics import Metrics
from controller.service.pins import Pin, PinBook, PinKey, PinMeta
from controller.service.provision import refresh_groups
from controller.service.switches import SwitchLink
from controller.service.translog import TransferLog
from controller.topology import Topology

log = logging.getLogger("kvfabric.controller")

_FALLBACK = {"insert": ("modify", "ALREADY_EXISTS"), "modify": ("insert", "NOT_FOUND")}
"""A pin write the leaf refuses with this status is retried with the other operation."""

MetaFor = Callable[[InstallPin], PinMeta]
"""Builds the metadata of a pin being installed (the service knows the transfer)."""


class Enforcer:
    """Applies updates (see the module docstring)."""

    def __init__(
        self,
        links: Mapping[str, SwitchLink],
        topology: Callable[[], Topology],
        metrics: Metrics,
        translog: TransferLog,
        *,
        clock: Callable[[], float],
        flowlet_timeout_s: float,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.links = links
        self.clock = clock
        self.topology = topology
        self.metrics = metrics
        self.translog = translog
        self.flowlet_timeout_s = flowlet_timeout_s
        self.pins = PinBook()
        self.flows = FlowPinWriter(links, metrics, wall)
        self.removed: deque[str] = deque(maxlen=10_000)
        self.generation = 0
        self.mode = Mode.KV_AWARE
        self.on_released: list[Callable[[Released], None]] = []

    async def apply(self, updates: Iterable[Update], meta_for: MetaFor) -> dict[int, bool]:
        """Apply ``updates`` in order; for each InstallPin, whether its pin was written."""
        written: dict[int, bool] = {}
        for u in updates:
            if isinstance(u, InstallPin):
                try:
                    meta = meta_for(u)
                except ServiceError as exc:
                    log.warning("pin of transfer %d not written: %s", u.transfer_id, exc)
                    written[u.transfer_id] = False
                    continue
                written[u.transfer_id] = await self.install(u, meta)
            elif isinstance(u, RemovePin):
                await self.remove(PinKey(u.leaf, u.src_ipv4, u.dst_ipv4, u.tag.src_port))
            elif isinstance(u, InstallFlowPin):
                await self.flows.write(u.pin)
            elif isinstance(u, RemoveFlowPin):
                await self.flows.remove(u.pin)
            elif isinstance(u, SetMode):
                await self.set_mode(u.mode, u.reason)
            elif isinstance(u, LinkStatusChanged):
                await self.link_changed(u)
            elif isinstance(u, Alert):
                self.alert(u)
            elif isinstance(u, LogRecord):
                self.translog.write(u.event, u.fields)
            elif isinstance(u, Released):
                for listener in self.on_released:
                    listener(u)
        return written

    # -- pins -----------------------------------------------------------------------------

    async def install(self, u: InstallPin, meta: PinMeta) -> bool:
        """Write a transfer's pin; False (logged, counted) if the leaf refused."""
        key = PinKey(u.leaf, u.src_ipv4, u.dst_ipv4, u.tag.src_port)
        return await self.write_pin(Pin(key, u.egress_port, meta))

    async def write_pin(self, pin: Pin, op: str | None = None) -> bool:
        """Write ``pin`` on its leaf and book it; False (logged, counted) if it is not there.

        ``op`` is the operation to try first: by default ``modify`` for a key the book
        holds, else ``insert``. The leaf has the last word: an insert it finds already
        there becomes a modify, and a modify of an entry it lost (it restarted) becomes
        an insert. A pin that could not be written because the leaf is not connected
        is still booked when it replaces a booked one (a move): the book holds what the
        leaf must hold, and :meth:`Service._sync_pins` writes it when the leaf is back.
        """
        key = pin.key
        link = self.links[key.leaf]
        entry = intent.pin_entry(key.src, key.dst, key.src_port, pin.egress_port, pin.meta.encode())
        if op is None:
            op = "modify" if key in self.pins.by_key else "insert"
        try:
            try:
                await link.write(op, [entry])
            except SwitchError as exc:
                other = _FALLBACK.get(op)
                if other is None or other[1] not in exc.codes:
                    raise
                op = other[0]
                await link.write(op, [entry])
        except SwitchError as exc:
            self.metrics.pin_writes.labels(op, "error").inc()
            self.metrics.write_errors.labels(key.leaf, "pin").inc()
            log.warning("pin %s for transfer %s not written: %s", key, pin.meta.id, exc)
            self.translog.write(
                "pin_error",
                {"time": self.clock(), "id": pin.meta.id, "pin": str(key), "error": str(exc)},
            )
            unreachable = isinstance(exc, SwitchUnavailable) or "UNAVAILABLE" in exc.codes
            if unreachable and key in self.pins.by_key:
                self.pins.put(pin)
            return False
        self.metrics.pin_writes.labels(op, "ok").inc()
        self.pins.put(pin)
        return True

    async def remove(self, key: PinKey) -> None:
        """Delete the pin at ``key``; it leaves the book even if the leaf is unreachable.

        Its transfer id is remembered, so that a pin the leaf still holds when it
        comes back is deleted rather than adopted.
        """
        pin = self.pins.drop(key)
        if pin is not None:
            self.removed.append(pin.meta.id)
        link = self.links[key.leaf]
        entry = intent.pin_entry(key.src, key.dst, key.src_port, 0, b"")
        try:
            await link.write("delete", [entry])
        except SwitchError as exc:
            self.metrics.pin_writes.labels("delete", "error").inc()
            self.metrics.write_errors.labels(key.leaf, "pin").inc()
            log.warning("pin %s not removed: %s", key, exc)
            return
        self.metrics.pin_writes.labels("delete", "ok").inc()

    # -- modes and links ------------------------------------------------------------------

    async def set_mode(self, mode: Mode, reason: str) -> None:
        """Put every leaf in ``mode`` (a new flowlet generation when entering flowlet)."""
        if mode is Mode.FLOWLET and self.mode is not Mode.FLOWLET:
            self.generation += 1
        self.mode = mode
        self.metrics.mode_changes.labels(str(mode)).inc()
        log.info("data-plane mode %s (%s)", mode, reason)
        await self.write_mode_everywhere()

    def mode_entry(self) -> Any:
        """The ``switch_config`` default entry of the mode in force."""
        return intent.mode_action(self.mode, self.flowlet_timeout_s, self.generation)

    async def write_mode(self, link: SwitchLink) -> None:
        """Write the mode entry to one leaf."""
        try:
            await link.write("modify", [self.mode_entry()])
        except SwitchError as exc:
            self.metrics.write_errors.labels(link.name, "mode").inc()
            log.warning("mode not written: %s", exc)

    async def write_mode_everywhere(self) -> None:
        """Write the mode entry to every leaf this controller is primary of."""
        for leaf in self.topology().leaves:
            link = self.links[leaf]
            if link.primary:
                await self.write_mode(link)

    async def link_changed(self, u: LinkStatusChanged) -> None:
        """Report a cable's new status and rewrite the ECMP groups that depend on it."""
        self.metrics.link_changes.labels(str(u.status)).inc()
        level = logging.INFO if str(u.status) == "up" else logging.ERROR
        log.log(level, "link %s is %s: %s", u.link, u.status, u.detail)
        await self.refresh_all_groups()

    async def refresh_all_groups(self) -> int:
        """Rewrite every leaf's ECMP groups from the current link status; returns writes."""
        topology = self.topology()
        changed = 0
        for leaf in topology.leaves:
            link = self.links[leaf]
            if not link.primary:
                continue
            try:
                changed += await refresh_groups(link, topology, self.metrics)
            except SwitchError as exc:
                self.metrics.write_errors.labels(leaf, "groups").inc()
                log.warning("ECMP groups not rewritten: %s", exc)
        if changed and self.mode is Mode.FLOWLET:
            self.generation += 1
            await self.write_mode_everywhere()
        return changed

    # -- alerts ---------------------------------------------------------------------------

    def alert(self, a: Alert) -> None:
        """Log an alert's start or end and count its firing."""
        state = "FIRING" if a.firing else "resolved"
        level = logging.ERROR if a.firing and a.severity == "critical" else logging.WARNING
        log.log(level, "ALERT %s %s [%s] %s: %s", state, a.name, a.severity, a.subject, a.message)
        if a.firing:
            self.metrics.alerts.labels(a.name, a.severity).inc()
        self.translog.write(
            "alert",
            {
                "time": self.clock(),
                "name": a.name,
                "subject": a.subject,
                "firing": a.firing,
                "severity": a.severity,
                "message": a.message,
            },
        )
