"""The switches' lifecycle: their channels, their provisioning, and their state for us.

:class:`Switches` owns one :class:`SwitchLink` per switch of the fabric file and
follows each through its life: connecting, up as backup or as primary, provisioned,
down. Every channel that comes up as primary is provisioned (again: a channel that
went down forgets its provisioning), retried every :data:`RETRY_S` while the switch
stays primary; what provisioning does is the :class:`Provisioner`'s:

1. reconcile the switch with its intent (:mod:`provision`: routes, ECMP groups and
   static spine ranges; the groups found are kept as they are until this instance's
   first audit round, see :attr:`Switches.audited`);
2. on a leaf, adopt the transfers in flight its ledger holds that this controller does
   not know (:class:`~controller.service.southbound.ledger_keeper.LedgerKeeper`), and
   write its range entries with the ledger this controller keeps;
3. resume the leaf's data-plane mode (a flowlet leaf found after a restart is adopted
   once), and sync its flow pins (:mod:`flow_pins`).

From the channels, the provisioning times and the engine's sampling times,
:class:`Switches` derives each switch's state (:mod:`readiness`), the overall role,
and which requests to refuse: :meth:`Switches.refuse` raises :class:`NotReadyError`
(a 503) for a request that needs a switch that is not this controller's to serve now.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import finsy as fy

from controller.config import FabricConfig, Mode, Role, TlsSettings
from controller.engine import Engine
from controller.errors import NotReadyError, SwitchError
from controller.service.metrics import Metrics
from controller.service.southbound.enforce import Enforcer
from controller.service.southbound.flow_pins import sync_flow_pins
from controller.service.southbound.ledger import RangeKey
from controller.service.southbound.ledger_keeper import LedgerKeeper
from controller.service.southbound.provision import ReadBack, reconcile
from controller.service.southbound.readiness import (
    SwitchState,
    overall_role,
    refusal,
    switch_state,
)
from controller.service.southbound.switches import Pipeline, SwitchLink

log = logging.getLogger("kvfabric.controller")

RETRY_S = 1.0
"""Wait between two attempts at provisioning a switch."""

SAMPLE_GRACE = 2.0
"""A provisioned switch waits this many staleness limits at most for its first sample."""

Provision = Callable[[SwitchLink], Awaitable[None]]
"""What is done to a switch whose channel came up as primary (:meth:`Provisioner.provision`)."""


class Switches:
    """Every switch's channel and its state for this controller (see the module docstring)."""

    def __init__(
        self,
        config: FabricConfig,
        pipeline: Pipeline,
        engine: Engine,
        metrics: Metrics,
        *,
        backup: bool,
        tls: TlsSettings | None,
        timeout_s: float,
        polled: Collection[str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Links to every switch of ``config`` (none is connected before :meth:`start`);
        ``polled`` names the switches whose telemetry is read (the others have no sample
        to wait for)."""
        self.engine = engine
        self.metrics = metrics
        self.clock = clock
        self.polled = polled
        self.grace_s = SAMPLE_GRACE * config.controller.telemetry.staleness_limit_s
        self.links: dict[str, SwitchLink] = {
            sw.name: SwitchLink(
                sw, pipeline, backup=backup, tls=tls, on_ready=self._on_ready, timeout_s=timeout_s
            )
            for sw in config.switches
        }
        self.provisioned: dict[str, float] = {}
        """Switches provisioned by this controller as primary, and when (clock)."""
        self.audited = False
        """True once this instance, primary of every switch, ran an audit round: until then
        provisioning keeps the ECMP groups it finds (a predecessor's, which leave out the
        cables it found dead)."""
        self._provision: Provision | None = None
        for link in self.links.values():
            link.switch.ee.on(fy.SwitchEvent.CHANNEL_DOWN, self._on_down)
            link.switch.ee.on(fy.SwitchEvent.BECOME_BACKUP, self._on_down)

    def start(self, provision: Provision) -> list[asyncio.Task[None]]:
        """Connect to every switch, one task each (``p4rt-<name>``, running until
        cancelled), provisioning with ``provision`` each channel that comes up as primary."""
        self._provision = provision
        return [
            asyncio.create_task(link.run(), name=f"p4rt-{name}")
            for name, link in self.links.items()
        ]

    # -- state ----------------------------------------------------------------------------

    def states(self) -> dict[str, SwitchState]:
        """Every switch's state for this controller (:mod:`readiness`)."""
        sampled = self.engine.sampled_at
        now = self.clock()
        return {
            name: switch_state(
                up=link.up,
                primary=link.primary,
                tried=link.tried,
                provisioned_at=self.provisioned.get(name),
                sampled_at=sampled.get(name),
                now=now,
                grace_s=self.grace_s,
                polled=name in self.polled,
            )
            for name, link in self.links.items()
        }

    @property
    def ready(self) -> bool:
        """True when this controller is the primary of every switch, each provisioned and
        sampled since (so no transfer would take ECMP for stale telemetry)."""
        return all(s is SwitchState.PRIMARY for s in self.states().values())

    @property
    def role(self) -> str:
        """``primary``, ``backup``, ``mixed`` or ``disconnected`` (:func:`overall_role`)."""
        return overall_role(self.states())

    def refuse(self, *needed: str) -> None:
        """Refuse (NotReadyError, a 503) a request that needs switches ``needed`` now.

        With no switch named, the request needs this controller to be the primary of
        some switch (a completion, a mode): only a controller that is nobody's primary,
        or is still connecting to all, refuses it.
        """
        if self._steady():
            return
        states = self.states()
        if not needed and overall_role(states) == "backup":
            needed = tuple(states)
        why = refusal(states, list(needed))
        if why is not None:
            raise NotReadyError(why)

    def needed(self, src: str, dst: str) -> tuple[str, ...]:
        """The switches a transfer between two hosts needs: both leaves and the spines
        between them (unknown hosts need none: the engine names them)."""
        topo = self.engine.topology
        if src not in topo.hosts or dst not in topo.hosts:
            return ()
        a, b = topo.hosts[src].leaf, topo.hosts[dst].leaf
        return (a, b, *(p.spine for p in topo.spine_paths(a, b)))

    def _steady(self) -> bool:
        """True when every switch is this controller's provisioned primary with a sample
        taken since (each is ``primary`` in :meth:`states`): nothing is refused, and
        :meth:`refuse` need not work out every state per request."""
        sampled = self.engine.sampled_at
        provisioned = self.provisioned
        for name, link in self.links.items():
            at = provisioned.get(name)
            if at is None or not link.primary:
                return False
            taken = sampled.get(name)
            if (taken is None or taken < at) and name in self.polled:
                return False
        return True

    # -- coming and going -----------------------------------------------------------------

    def _on_down(self, switch: Any) -> None:
        self.provisioned.pop(switch.name, None)
        self.metrics.switch_primary.labels(switch.name).set(0)
        self.metrics.switch_up.labels(switch.name).set(1 if switch.is_up else 0)

    async def _on_ready(self, link: SwitchLink) -> None:
        """A channel is ready: provision as primary, or just note the backup role."""
        self.metrics.switch_up.labels(link.name).set(1)
        self.metrics.switch_primary.labels(link.name).set(1 if link.primary else 0)
        if not link.primary:
            self.provisioned.pop(link.name, None)
            log.info("%s: connected as backup", link.name)
            return
        assert self._provision is not None, "a channel came up before start()"
        while link.primary:
            try:
                await self._provision(link)
            except SwitchError as exc:
                self.metrics.write_errors.labels(link.name, "reconcile").inc()
                log.warning("%s: reconciliation failed, retrying: %s", link.name, exc)
                await asyncio.sleep(RETRY_S)
                continue
            self.provisioned[link.name] = self.clock()
            return


class Provisioner:
    """What a switch that came up as primary gets (see the module docstring, steps 1-3)."""

    def __init__(
        self,
        switches: Switches,
        engine: Engine,
        enforcer: Enforcer,
        ledgers: LedgerKeeper,
        metrics: Metrics,
        *,
        kv_dscp: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.switches = switches
        self.engine = engine
        self.enforcer = enforcer
        self.ledgers = ledgers
        self.metrics = metrics
        self.kv_dscp = kv_dscp
        self.clock = clock
        self._mode_adopted = False

    async def provision(self, link: SwitchLink) -> None:
        """Reconcile ``link``'s switch; on a leaf, adopt its ledger, resume its mode and
        sync its flow pins. A failed write raises :class:`SwitchError` (the caller retries)."""
        t0 = self.clock()
        held: dict[RangeKey, bytes] = {}

        def adopt(back: ReadBack) -> dict[RangeKey, bytes]:
            self.ledgers.adopt(link, back.ranges)
            if self.ledgers.enabled:
                held.update(self.ledgers.of(link.name))
            return held

        leaf = link.config.role is Role.LEAF
        back = await reconcile(
            link,
            self.engine.topology,
            self.kv_dscp,
            self.metrics,
            keep_groups=not self.switches.audited,
            ledger=adopt if leaf else None,
        )
        if leaf:
            self.enforcer.ledgers[link.name] = held
            await self._sync_mode(link, back)
            updates, adopted = await sync_flow_pins(
                link, back.flow_pins, self.enforcer.flows, self.engine, self.clock()
            )
            self.metrics.pins_adopted.labels(link.name).inc(adopted)
            await self.enforcer.apply(updates)
        log.info(
            "%s: provisioned as primary in %.0f ms (%d writes, %d adopted in all)",
            link.name,
            (self.clock() - t0) * 1e3,
            back.writes,
            len(self.ledgers.adoptions),
        )

    async def _sync_mode(self, link: SwitchLink, back: ReadBack) -> None:
        """Resume the leaf's data-plane mode: the first flowlet leaf found puts the engine
        in flowlet mode (a restart keeps the operator's choice); then the leaf gets the
        mode in force if it holds another."""
        if back.mode_action == "flowlet_mode":
            generation = back.mode_args.get("generation", 0)
            self.enforcer.generation = max(self.enforcer.generation, generation)
            if not self._mode_adopted and self.engine.mode is not Mode.FLOWLET:
                log.info("%s is in flowlet mode: adopting it", link.name)
                updates = self.engine.set_mode(Mode.FLOWLET, self.clock(), reason="adopted")
                self.enforcer.mode = Mode.FLOWLET
                await self.enforcer.apply(updates)
        self._mode_adopted = True
        self.enforcer.mode = self.engine.effective_mode
        want: Any = self.enforcer.mode_entry()
        wanted_args = {k: int(v) for k, v in want.action.args.items()}
        if back.mode_action != want.action.name or dict(back.mode_args) != wanted_args:
            await self.enforcer.write_mode(link)
