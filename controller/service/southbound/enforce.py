"""Enforcement: apply the engine's updates to the switches, the log and the metrics.

The engine returns plain data; :class:`Enforcer` is the only place that turns it
into P4Runtime writes:

- ``TransferMoved`` -> nothing to write: a transfer goes where its tag port's spine
  range sends it, and the writes that move it are the range entries of
  ``LinkStatusChanged`` or the mode of ``SetMode`` (the engine counts the moves);
- ``InstallFlowPin``/``RemoveFlowPin`` -> a flow pin's ``flow_pin`` entry written or
  deleted on its source leaf (:mod:`flow_pins`);
- ``SetMode`` -> the ``switch_config`` default action on every leaf;
- ``LinkStatusChanged`` -> every leaf's ECMP groups and spine ranges recomputed and
  written (only what changed: a range whose path broke points at a live spine, and
  back when it is repaired), and, in flowlet mode, a new flowlet generation so no
  flowlet keeps sending into a port that left its group;
- ``CapacityChanged`` -> a log line, the metric, and each of ``on_capacity`` (the
  telemetry poller turns queueing delays into depths at the port's capacity);
- ``Alert`` -> a log line (warning or error) and the alert metrics;
- ``LogRecord`` -> a line of the transfer log;
- ``Released`` -> each of ``on_released`` (the service wakes the sender's long poll,
  :mod:`~controller.service.starts`).

A failed write is logged and counted and does not stop the updates after it; a leaf
that missed one is brought in line when it reconnects (reconciliation).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.config import Mode
from controller.engine import (
    Alert,
    CapacityChanged,
    InstallFlowPin,
    LinkStatusChanged,
    LogRecord,
    Released,
    RemoveFlowPin,
    SetMode,
    TransferMoved,
    Update,
)
from controller.errors import SwitchError
from controller.service.metrics import Metrics
from controller.service.southbound import intent, ledger
from controller.service.southbound.flow_pins import FlowPinWriter
from controller.service.southbound.ledger import RangeKey
from controller.service.southbound.provision import refresh_links
from controller.service.southbound.switches import SwitchLink
from controller.service.translog import TransferLog
from controller.topology import Topology

log = logging.getLogger("kvfabric.controller")
_WRITES = (InstallFlowPin, RemoveFlowPin, SetMode, LinkStatusChanged)
"""The updates :meth:`Enforcer.apply` awaits: they write switches."""


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
        self.ledgers: dict[str, dict[RangeKey, bytes]] = {}
        """The ledger each leaf holds in its range entries' metadata (:mod:`ledger`)."""
        self.flows = FlowPinWriter(links, metrics, wall)
        self.generation = 0
        self.mode = Mode.KV_AWARE
        self.on_released: list[Callable[[Released], None]] = []
        self.on_capacity: list[Callable[[CapacityChanged], None]] = []

    async def apply(self, updates: Iterable[Update]) -> None:
        """Apply ``updates`` in order."""
        for u in updates:
            if isinstance(u, InstallFlowPin):
                await self.flows.write(u.pin)
            elif isinstance(u, RemoveFlowPin):
                await self.flows.remove(u.pin)
            elif isinstance(u, SetMode):
                await self.set_mode(u.mode, u.reason)
            elif isinstance(u, LinkStatusChanged):
                await self.link_changed(u)
            else:
                self._apply_now(u)

    def apply_now(self, updates: list[Update]) -> list[Update]:
        """Apply ``updates`` in order up to the first that writes a switch; return that
        one and those after it, for :meth:`apply` (a decision's and a completion's
        updates are log records and releases, applied here without waiting)."""
        for k, u in enumerate(updates):
            if isinstance(u, _WRITES):
                return updates[k:]
            self._apply_now(u)
        return []

    def _apply_now(self, u: Update) -> None:
        if isinstance(u, TransferMoved):
            log.debug("transfer %d follows its range to %s", u.transfer_id, u.spine or "ECMP")
        elif isinstance(u, Alert):
            self.alert(u)
        elif isinstance(u, LogRecord):
            self.translog.write(u.event, u.fields)
        elif isinstance(u, Released):
            for listener in self.on_released:
                listener(u)
        elif isinstance(u, CapacityChanged):
            log.info("%s: capacity %s bit/s (was %s): its switch reports it", u.port,
                     f"{u.capacity_bps:,}", f"{u.was_bps:,}")  # fmt: skip
            self.metrics.capacity_changes.labels(str(u.port)).inc()
            for on_capacity in self.on_capacity:
                on_capacity(u)

    # -- the ledger ----------------------------------------------------------------------

    async def write_ledger(self, link: SwitchLink, new: Mapping[RangeKey, bytes]) -> bool:
        """Modify the range entries of ``link``'s leaf whose ledger changed; True when the
        leaf holds ``new``. A failed write is logged and counted (False: try again)."""
        old = self.ledgers.get(link.name, {})
        keys = ledger.changed(old, new)
        if not keys:
            return True
        topology = self.topology()
        entries = [
            e
            for gid, spine in sorted(keys)
            if (e := intent.range_entry(
                topology, link.name, topology.leaves[gid - 1], spine, new.get((gid, spine), b"")
            )) is not None
        ]  # fmt: skip
        try:
            if entries:
                await link.write("modify", entries)
        except SwitchError as exc:
            self.metrics.write_errors.labels(link.name, "ledger").inc()
            log.warning("%s: ledger not written: %s", link.name, exc)
            return False
        self.ledgers[link.name] = dict(new)
        self.metrics.ledger_writes.inc(len(entries))
        return True

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
        """Rewrite every leaf's ECMP groups and spine ranges from the current link status;
        returns the writes."""
        topology = self.topology()
        changed = 0
        for leaf in topology.leaves:
            link = self.links[leaf]
            if not link.primary:
                continue
            try:
                ledger = self.ledgers.get(leaf, {})
                changed += await refresh_links(link, topology, self.metrics, ledger)
            except SwitchError as exc:
                self.metrics.write_errors.labels(leaf, "groups").inc()
                log.warning("ECMP groups and spine ranges not rewritten: %s", exc)
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
