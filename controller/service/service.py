"""The controller service: the engine wrapped by everything that talks to the world.

:class:`Service` owns one :class:`~controller.engine.Engine` and feeds it events
stamped with one monotonic clock; whatever the engine returns goes to the
:class:`~controller.service.southbound.enforce.Enforcer`. Its tasks:

- one finsy channel per switch, kept open (reconnected within 250 ms of the switch
  listening again) by
  :meth:`SwitchLink.run <controller.service.southbound.switches.SwitchLink.run>`;
  on every channel that comes up as primary, :meth:`_on_ready` reconciles the switch
  (:mod:`provision`: its routes, groups and static spine ranges), adopts the transfers
  in flight its ledger holds that this controller does not know (:mod:`adopt`,
  :mod:`ledger`), resumes its data-plane mode, and syncs its flow pins;
- each switch's state, the overall role, readiness and which requests to refuse
  (503) are :mod:`readiness`'s: ready means provisioned *and* sampled since;
- the telemetry loop (:mod:`telemetry`): every poll interval, every connected
  switch at once, then ``engine.tick``, then the ledgers of the leaves whose
  transfers in flight changed (:mod:`ledger`: one Write per leaf);
- the audit loop (:mod:`prober`), as primary: a probe round every audit interval;
- one PacketIn reader per switch, feeding the prober;
- the HTTP API (:mod:`api`), which calls :meth:`transfer_now` (a decision: no switch is
  written, the tag's port is in the chosen spine's range), :meth:`start`,
  :meth:`cancel`, :meth:`complete_now`, :meth:`pin_flow`, :meth:`unpin_flow`,
  :meth:`set_mode` and :meth:`fabric`;
- the release timer of held transfers and their senders' long polls (:mod:`starts`).

Flow pins (``POST /v1/pins``) are the engine's (:mod:`controller.engine.flow_pins`);
their entries are written by the enforcer (:mod:`flow_pins`) and synced, adopted or
deleted when a leaf (re)connects. Their ids are
``<instance>-pin<n>``; adopted ones keep the id they were given.

A transfer's API id is ``<instance>-<engine id>``: the instance tag is random per
process, so ids never collide across restarts or between a primary and its backup,
and ids of adopted transfers are recognised as such.

Backup: an instance started with ``backup=True`` bids a lower election id. While
backup it connects, polls (reads only) and serves ``GET`` requests, but refuses
with 503 the transfers that need a switch it is the backup of. When the primary
dies each switch promotes it, finsy's cookie check skips the pipeline, and
:meth:`_on_ready` reconciles: the switch already holds the intent (an empty plan),
the ECMP groups are kept as found until this instance's first audit round, and the
transfers of the leaves' ledgers are adopted (those decided within the last poll
interval are not in a ledger yet: see :mod:`ledger`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy

from controller.config import FabricConfig, Mode, Role, TlsSettings
from controller.engine import (
    Decision,
    Demand,
    Engine,
    EngineError,
    FlowPin,
    FlowTuple,
    TransferStartedError,
    UnknownTransferError,
    Update,
    fabric_view,
)
from controller.errors import (
    ForcedSpineError,
    NotReadyError,
    PinNotWrittenError,
    SwitchError,
)
from controller.service.http import schema
from controller.service.metrics import Metrics, Scrape
from controller.service.southbound import intent, ledger
from controller.service.southbound.adopt import Adoptions
from controller.service.southbound.enforce import Enforcer
from controller.service.southbound.flow_pins import sync_flow_pins
from controller.service.southbound.pins import Pin, PinKey, PinMeta
from controller.service.southbound.prober import ETHERTYPE, Prober, Verdict
from controller.service.southbound.provision import ReadBack, reconcile
from controller.service.southbound.readiness import SwitchState, overall_role, refusal, switch_state
from controller.service.southbound.reads import ThreadReads
from controller.service.southbound.switches import Pipeline, SwitchLink
from controller.service.southbound.telemetry import Poller
from controller.service.starts import Starts
from controller.service.tracing import Timing, TransferTracer
from controller.service.translog import TransferLog
from controller.topology import Topology

log = logging.getLogger("kvfabric.controller")

RETRY_S = 1.0
"""Wait between two attempts at reconciling a switch."""

TIERS_LOG_S = 10.0
"""How often the transfer log gets a ``tiers`` record (per-tier utilisation)."""
JUDGE_SLICE = 8
"""Finished transfers judged offline between two turns of the event loop."""
LEDGER_SLICE = 8
"""Ledger records built between two turns of the event loop (about 15 us each)."""

SAMPLE_GRACE = 2.0
"""A provisioned switch waits this many staleness limits at most for its first sample."""


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """How to run a controller; everything else comes from the fabric file."""

    config: FabricConfig
    pipeline: Pipeline
    log_path: Path | None = None
    backup: bool = False
    audit: bool = True
    ledger: bool = True
    tls: TlsSettings | None = None
    instance: str | None = None
    switch_timeout_s: float = 3.0
    otlp_endpoint: str | None = None


class Service:
    """The running controller (see the module docstring)."""

    def __init__(
        self,
        options: ServiceOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.options = options
        self.clock = clock
        self.wall = wall
        self.instance = options.instance or secrets.token_hex(3)
        config = options.config
        self.settings = s = config.controller
        now = clock()
        self.engine = Engine(Topology(config), now)
        self.metrics = Metrics(self.scrape)
        self.translog = TransferLog(options.log_path, wall() - now)
        self.tracer = TransferTracer(options.otlp_endpoint, self.instance)
        self.translog.listeners.append(self.tracer.on_record)
        self.links: dict[str, SwitchLink] = {
            sw.name: SwitchLink(
                sw,
                options.pipeline,
                backup=options.backup,
                tls=options.tls or s.p4runtime_tls,
                on_ready=self._on_ready,
                timeout_s=options.switch_timeout_s,
            )
            for sw in config.switches
        }
        self.enforcer = Enforcer(
            self.links,
            lambda: self.engine.topology,
            self.metrics,
            self.translog,
            clock=clock,
            flowlet_timeout_s=s.flowlet_timeout_s,
            wall=wall,
        )
        self.enforcer.mode = self.engine.effective_mode
        self.starts = Starts(self.engine, self.metrics, clock)
        self.enforcer.on_released.append(self.starts.on_released)
        self.adoptions = Adoptions(self.engine)
        self.reads = ThreadReads(options.tls or s.p4runtime_tls, options.switch_timeout_s)
        self.poller = Poller(self.engine.topology, self.reads)
        audit_window = min(0.5 * s.audit_interval_s, 0.5)
        self.prober = Prober(self.engine.topology, audit_window, clock)
        self.provisioned: dict[str, float] = {}
        """Switches provisioned by this controller as primary, and when (clock)."""
        self.audited = False
        self._mode_adopted = False
        self._traces = 0
        self._tiers_logged: float | None = None
        self._static = 0
        self._ledger_stamp: tuple[object, ...] = ()
        self._ledger_book = ledger.Book[int | str]()
        self._tasks: list[asyncio.Task[Any]] = []
        for link in self.links.values():
            link.switch.ee.on(fy.SwitchEvent.CHANNEL_DOWN, self._on_down)
            link.switch.ee.on(fy.SwitchEvent.BECOME_BACKUP, self._on_down)

    # -- state ------------------------------------------------------------------------

    def states(self) -> dict[str, SwitchState]:
        """Every switch's state for this controller (:mod:`readiness`)."""
        sampled = self.engine.sampled_at
        now = self.clock()
        grace = SAMPLE_GRACE * self.settings.telemetry.staleness_limit_s
        return {
            name: switch_state(
                up=link.up,
                primary=link.primary,
                tried=link.tried,
                provisioned_at=self.provisioned.get(name),
                sampled_at=sampled.get(name),
                now=now,
                grace_s=grace,
                polled=name in self.poller.capacity,
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

    def health(self) -> schema.HealthAnswer:
        """The answer of ``GET /healthz``: the role and readiness, overall and per switch."""
        states = self.states()
        return schema.HealthAnswer(
            ok=True,
            role=overall_role(states),
            ready=all(s is SwitchState.PRIMARY for s in states.values()),
            instance=self.instance,
            switches={
                name: schema.SwitchHealth(str(state), self.links[name].config.p4runtime)
                for name, state in states.items()
            },
        )

    def api_id(self, transfer_id: int) -> str:
        """The API id of one of this instance's engine transfers."""
        return f"{self.instance}-{transfer_id}"

    def scrape(self) -> Scrape:
        """What a scrape of the metrics reads: the engine's snapshot, and the adopted
        transfers among those in flight."""
        s = self.engine.snapshot(self.clock())
        topo = s.topology
        return Scrape(
            counts=s.counts,
            mode=str(s.mode),
            effective_mode=str(s.effective_mode),
            fallback_active=s.fallback_active,
            efficiency_evaluated=s.efficiency.evaluated,
            efficiency_efficient=s.efficiency.efficient,
            efficiency_last=s.efficiency.last_window,
            tiers={str(t): (v.mean, v.p95) for t, v in s.tiers().items()},
            staleness_s=s.staleness(self.links),
            alerts=[(a.name, a.subject, a.severity) for a in s.alerts],
            links=[(str(link), str(topo.link_status(link))) for link in topo.links],
            pins=sum(1 for t in s.transfers if t.path is not None),
            static_pins=_placements(p.path is not None for p in s.flow_pins),
            in_flight=len(s.transfers) + len(self.adoptions),
            modes=[str(m) for m in Mode],
            held=s.held,
        )

    # -- the API's operations ---------------------------------------------------------

    def transfer_now(
        self, ask: schema.TransferRequest
    ) -> tuple[schema.TransferAnswer, list[Update]]:
        """Decide a transfer: the answer of ``POST /v1/transfers`` and the updates left to
        apply before it is given (``Enforcer.apply_now``: none but a mode change or a flow
        pin that a timed-out transfer's reroute brought). Nothing is written: the leaves'
        static spine ranges pin the tag's port (a held transfer's too: only its start
        waits, :mod:`starts`)."""
        src, dst, trace_id, spine = ask.src, ask.dst, ask.trace_id, ask.spine
        self._writable(*self._needed(src, dst))
        t0, wall0 = self.clock(), self.wall()
        if trace_id is None:
            self._traces += 1
            trace_id = f"kv-{self.instance}-{self._traces}"
        if spine is not None:
            self._check_spine(src, dst, spine)
        deadline_s = ask.deadline_ms / 1e3 if ask.deadline_ms is not None else None
        request = Demand(src, dst, ask.bytes, trace_id, spine=spine, deadline_s=deadline_s)
        decision, updates = self.engine.decide(request, t0)
        self.starts.decided(decision.transfer_id, decision.held)
        t1 = self.clock()
        rest = self.enforcer.apply_now(updates)  # the log records of transfers timed out
        t2 = self.clock()
        self.metrics.decision_seconds.observe(t2 - t0)
        answer = self._answer(decision)
        if self.tracer.enabled:
            self._trace(decision, answer, Timing(wall0, wall0 + t1 - t0, wall0 + t2 - t0,
                                                 wall0 + self.clock() - t0))  # fmt: skip
        return answer, rest

    def _trace(self, d: Decision, answer: schema.TransferAnswer, timing: Timing) -> None:
        """Open the transfer's span (:mod:`tracing`) with what the engine saw."""
        hosts = self.engine.topology.hosts
        pair = f"{hosts[d.src].leaf}>{hosts[d.dst].leaf}"
        self.tracer.answered(
            api_id=self.api_id(d.transfer_id),
            spine=answer.spine,
            placement_name=answer.placement,
            decision=d,
            choice=self.engine.choice(d.transfer_id),
            pair=pair,
            timing=timing,
        )

    def _answer(self, d: Decision) -> schema.TransferAnswer:
        path = str(d.path) if d.path is not None else None
        spine = d.path.spine if d.path is not None else None
        placement = "local" if d.local else ("pinned" if d.path is not None else "ecmp")
        fallbacks = list(d.fallbacks)
        leaf = self.links[self.engine.topology.hosts[d.src].leaf]
        if not d.local and not leaf.up:
            fallbacks.append(
                f"{leaf.name} is unreachable (no P4Runtime channel to {leaf.config.p4runtime}): "
                + ("the spine ranges it was provisioned with pin the transfer, unaudited"
                   if d.path is not None else "the transfer takes ECMP")
            )  # fmt: skip
        tag = None
        if d.tag is not None:
            tag = schema.Tag(d.tag.dscp, d.tag.dscp << 2, d.tag.src_port)
        start_at = wait_ms = None
        if d.start_at is not None:
            now = self.clock()
            start_at = d.start_at - now + self.wall()
            wait_ms = max(0.0, d.start_at - now) * 1e3
        return schema.TransferAnswer(
            id=self.api_id(d.transfer_id),
            trace_id=d.trace_id,
            src=d.src,
            dst=d.dst,
            bytes=d.bytes,
            path=path,
            spine=spine,
            placement=placement,
            best=str(d.best) if d.best is not None else None,
            mode=str(d.mode),
            reason=d.reason,
            expected_s=d.expected_s,
            fallbacks=fallbacks,
            tag=tag,
            held=d.held,
            wait_ms=wait_ms or 0.0,
            start_at=start_at,
        )

    async def start(self, transfer_id: str, timeout_s: float) -> schema.StartAnswer:
        """Wait up to ``timeout_s`` for a held transfer's release (the long poll of
        ``GET /v1/transfers/{id}/start``); a transfer not held is released at once."""
        if transfer_id in self.adoptions.by_id:
            return schema.StartAnswer(transfer_id, released=True, wait_ms=0.0)
        left = await self.starts.wait(self._engine_id(transfer_id), transfer_id, timeout_s)
        if left is None:
            return schema.StartAnswer(transfer_id, released=True, wait_ms=0.0)
        return schema.StartAnswer(transfer_id, released=False, wait_ms=left * 1e3)

    async def cancel(self, transfer_id: str) -> schema.CancelAnswer:
        """Give up a held transfer (``DELETE /v1/transfers/{id}``): its pin, tag and bytes
        go back, the transfers behind it move forward, its waiters get a 404."""
        self._writable()
        if transfer_id in self.adoptions.by_id:
            raise TransferStartedError(
                f"transfer {transfer_id!r} is running (adopted): report its completion instead"
            )
        engine_id = self._engine_id(transfer_id)
        updates = self.engine.cancel(engine_id, self.clock())
        self.starts.cancelled(engine_id)
        await self.enforcer.apply(updates)
        return schema.CancelAnswer(transfer_id, cancelled=True)

    def _check_spine(self, src: str, dst: str, spine: str) -> None:
        topo = self.engine.topology
        if src not in topo.hosts or dst not in topo.hosts:
            return  # the engine names the unknown host
        paths = topo.spine_paths(topo.hosts[src].leaf, topo.hosts[dst].leaf)
        if not any(p.spine == spine for p in paths):
            names = ", ".join(p.spine for p in paths) or "none (same rack)"
            raise ForcedSpineError(f"spine {spine!r} is not on a path from {src} to {dst}: {names}")

    async def pin_flow(self, flow: FlowTuple, spine: str) -> schema.PinAnswer:
        """Hold ``flow`` on ``spine`` in every mode (``POST /v1/pins``): the pin's view."""
        self._writable(*self._needed(flow.src, flow.dst))
        self._static += 1
        pin_id = f"{self.instance}-pin{self._static}"
        pin, updates = self.engine.pin_flow(pin_id, flow, spine, self.clock())
        await self.enforcer.apply(updates)
        if pin_id not in self.enforcer.flows.written:
            self.engine.unpin_flow(pin_id, self.clock())  # nothing on the leaf to delete
            raise PinNotWrittenError(
                f"the pin of {flow} could not be written on {pin.leaf}; nothing was pinned"
            )
        return _pin_answer(pin)

    async def unpin_flow(self, pin_id: str) -> schema.PinAnswer:
        """Release a flow pin (``DELETE /v1/pins/{id}``); its flow takes ECMP."""
        self._writable()
        pin = self.engine.flow_pin(pin_id)
        updates = self.engine.unpin_flow(pin_id, self.clock())
        await self.enforcer.apply(updates)
        assert pin is not None  # unpin_flow raised UnknownPinError otherwise
        return _pin_answer(pin, removed=True)

    def complete_now(
        self, transfer_id: str, duration_s: float
    ) -> tuple[schema.CompleteAnswer, list[Update]]:
        """Record a transfer's completion (``POST /v1/transfers/{id}/complete``): the
        answer and the updates left to apply (see :meth:`transfer_now`)."""
        self._writable()
        now = self.clock()
        if not duration_s > 0:
            raise EngineError(f"a duration must be positive, got {duration_s}")
        adopted = self.adoptions.finish(transfer_id, now)
        if adopted is not None:
            self.metrics.transfer_seconds.observe(duration_s)
            self._log_adopted_end(adopted.pin, now, duration_s)
            return schema.CompleteAnswer(transfer_id, completed=True, adopted=True), []
        timed_out = self.adoptions.late(transfer_id)
        if timed_out is not None:  # its port and load went back at the timeout
            self.metrics.transfer_seconds.observe(duration_s)
            self.engine.count_late_adopted()
            self._log_adopted_end(timed_out, now, duration_s, late=True)
            answer = schema.CompleteAnswer(transfer_id, completed=True, adopted=True, late=True)
            return answer, []
        engine_id = self._engine_id(transfer_id)
        late = self.engine.timed_out(engine_id)
        updates = self.engine.complete(engine_id, duration_s, now)
        self.metrics.transfer_seconds.observe(duration_s)
        rest = self.enforcer.apply_now(updates)
        return schema.CompleteAnswer(transfer_id, completed=True, adopted=False, late=late), rest

    def _engine_id(self, transfer_id: str) -> int:
        prefix, _, number = transfer_id.rpartition("-")
        if prefix != self.instance or not number.isdigit():
            raise UnknownTransferError(f"no transfer {transfer_id!r} in flight")
        return int(number)

    async def set_mode(self, mode: Mode) -> schema.ModeAnswer:
        """The operator sets the mode (``POST /v1/mode``); kv-aware also ends a fallback."""
        self._writable()
        updates = self.engine.set_mode(mode, self.clock(), reason="operator")
        await self.enforcer.apply(updates)
        if self.enforcer.mode is not self.engine.effective_mode:
            await self.enforcer.set_mode(self.engine.effective_mode, "operator")
        return self.modes()

    def modes(self) -> schema.ModeAnswer:
        """The mode set and the mode in force (``GET /v1/mode``)."""
        e = self.engine
        return schema.ModeAnswer(str(e.mode), str(e.effective_mode))

    def fabric(self) -> dict[str, object]:
        """The answer of ``GET /v1/fabric``: the engine's view and the controller's state."""
        view = fabric_view(self.engine, self.clock())
        states = self.states()
        view["controller"] = {
            "instance": self.instance,
            "role": overall_role(states),
            "ready": all(s is SwitchState.PRIMARY for s in states.values()),
            "audited": self.audited,
            "switches": {
                name: {
                    "address": link.config.p4runtime,
                    "up": link.up,
                    "primary": link.primary,
                    "provisioned": name in self.provisioned,
                    "state": str(states[name]),
                }
                for name, link in self.links.items()
            },
            "ledgers": {
                leaf: sum(len(ledger.decode(m) or ()) for m in held.values())
                for leaf, held in self.enforcer.ledgers.items()
            },
            "adopted": sorted(self.adoptions.by_id),
        }
        return view

    def _writable(self, *needed: str) -> None:
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

    def _steady(self) -> bool:
        """True when every switch is this controller's provisioned primary with a sample
        taken since (each is ``primary`` in :meth:`states`): nothing is refused, and
        :meth:`_writable` need not work out every state per request."""
        sampled = self.engine.sampled_at
        provisioned = self.provisioned
        for name, link in self.links.items():
            at = provisioned.get(name)
            if at is None or not link.primary:
                return False
            taken = sampled.get(name)
            if (taken is None or taken < at) and name in self.poller.capacity:
                return False
        return True

    def _needed(self, src: str, dst: str) -> tuple[str, ...]:
        """The switches a transfer between two hosts needs: both leaves and the spines
        between them (unknown hosts need none: the engine names them)."""
        topo = self.engine.topology
        if src not in topo.hosts or dst not in topo.hosts:
            return ()
        a, b = topo.hosts[src].leaf, topo.hosts[dst].leaf
        return (a, b, *(p.spine for p in topo.spine_paths(a, b)))

    # -- switches coming and going ------------------------------------------------------

    def _on_down(self, switch: Any) -> None:
        self.provisioned.pop(switch.name, None)
        self.metrics.switch_primary.labels(switch.name).set(0)
        self.metrics.switch_up.labels(switch.name).set(1 if switch.is_up else 0)

    async def _on_ready(self, link: SwitchLink) -> None:
        """A channel is ready: reconcile as primary, or just note the backup role."""
        self.metrics.switch_up.labels(link.name).set(1)
        self.metrics.switch_primary.labels(link.name).set(1 if link.primary else 0)
        if not link.primary:
            self.provisioned.pop(link.name, None)
            log.info("%s: connected as backup", link.name)
            return
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

    async def _provision(self, link: SwitchLink) -> None:
        t0 = self.clock()
        topology = self.engine.topology
        held: dict[ledger.RangeKey, bytes] = {}

        def adopt(back: ReadBack) -> dict[ledger.RangeKey, bytes]:
            self._adopt_ledger(link, back.ranges)
            if self.options.ledger:
                held.update(self._ledgers_now().get(link.name, {}))
            return held

        leaf = link.config.role is Role.LEAF
        back = await reconcile(
            link,
            topology,
            self.settings.kv_class.dscp,
            self.metrics,
            keep_groups=not self.audited,
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
            len(self.adoptions),
        )

    async def _sync_mode(self, link: SwitchLink, back: ReadBack) -> None:
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

    def _adopt_ledger(self, link: SwitchLink, ranges: Iterable[Any]) -> None:
        """Adopt the transfers of a leaf's ledger (its range entries' metadata) that this
        controller does not know: not its own, not adopted or ended already. Those past
        their deadline are remembered for a late completion only."""
        now, wall = self.clock(), self.wall()
        topo = self.engine.topology
        for entry in ranges:
            port = int(entry.action.args["port"]) if entry.action is not None else 0
            for record in ledger.decode(bytes(entry.metadata)) or ():
                meta = record.meta
                if self._known(meta.id) or meta.src not in topo.hosts or meta.dst not in topo.hosts:
                    continue
                src, dst = topo.hosts[meta.src], topo.hosts[meta.dst]
                pin = Pin(PinKey(link.name, src.ipv4, dst.ipv4, record.port), port, meta)
                if meta.deadline_wall <= wall:
                    self.adoptions.remember_timed_out(pin)
                    self.metrics.pins_removed_stale.labels(link.name).inc()
                    continue
                self.adoptions.adopt(pin, now, wall)
                self.metrics.pins_adopted.labels(link.name).inc()
                self.translog.write(
                    "adopted",
                    {"time": now, "id": meta.id, "trace_id": meta.trace_id, "pin": str(pin.key),
                     "spine": meta.spine, "deadline_s": meta.deadline_wall - wall},
                )  # fmt: skip

    def _known(self, api_id: str) -> bool:
        """True for a transfer this controller decided, adopted, or saw end."""
        return (
            api_id.rpartition("-")[0] == self.instance
            or api_id in self.adoptions.by_id
            or api_id in self.adoptions.ended
            or api_id in self.adoptions.timed_out
        )

    async def _ledgers(self) -> dict[str, dict[ledger.RangeKey, bytes]]:
        """What every leaf's ledger must hold now: the engine's transfers in flight (by
        engine id; a move changes the record's spine) and the adopted ones (by API id),
        by source leaf and range entry. Only the records of transfers new since the last
        call, or moved, are built (:class:`ledger.Book`), :data:`LEDGER_SLICE` at a time
        with the requests that came meanwhile answered in between; a transfer decided
        meanwhile is filed at the next call, one that ended meanwhile is left out."""
        book, (versions, build) = self._ledger_book, self._ledger_versions()
        changes = book.changes(versions)
        for k in range(0, len(changes), LEDGER_SLICE):
            if k:
                await asyncio.sleep(0)
            book.file(changes[k : k + LEDGER_SLICE], build)
        return book.ledgers()

    def _ledgers_now(self) -> dict[str, dict[ledger.RangeKey, bytes]]:
        """:meth:`_ledgers` at once (for a reconciliation, which cannot wait)."""
        return self._ledger_book.sync(*self._ledger_versions())

    def _ledger_versions(
        self,
    ) -> tuple[dict[int | str, object], Callable[[int | str], ledger.Placed | None]]:
        """The ledger's keys with their versions, and the function building a record."""
        versions: dict[int | str, object] = {}
        versions.update(self.engine.in_flight_paths())
        versions.update({aid: a.pin for aid, a in self.adoptions.by_id.items()})
        offset = self.wall() - self.clock()
        return versions, lambda key: self._ledger_record(key, offset)

    def _ledger_record(self, key: int | str, offset: float) -> ledger.Placed | None:
        """The ledger record of an engine transfer (int key) or an adopted one (str key),
        with its source leaf and range entry; None when it holds no tag of a spine."""
        e = self.engine
        topo = e.topology
        if isinstance(key, str):
            a = self.adoptions.by_id.get(key)
            if a is None:  # it ended while the ledger was being built
                return None
            spine = e.spine_of(a.pin.key.src_port)
            dst = topo.hosts.get(a.pin.meta.dst)
            if spine is None or dst is None:
                return None
            entry = (intent.group_id(topo, dst.leaf), spine)
            return a.pin.key.leaf, entry, ledger.Record(a.pin.meta, a.pin.key.src_port)
        t = e.transfer(key)
        if t is None:  # it ended while the ledger was being built
            return None
        d = t.decision
        spine = e.spine_of(d.tag.src_port) if d.tag is not None and not d.local else None
        if spine is None or d.tag is None:
            return None
        meta = PinMeta(self.api_id(d.transfer_id), d.trace_id, d.src, d.dst, d.bytes,
                       t.requested + offset, t.deadline + offset,
                       t.path.spine if t.path is not None else spine)  # fmt: skip
        entry = (intent.group_id(topo, t.pair[1]), spine)
        return t.pair[0], entry, ledger.Record(meta, d.tag.src_port)

    async def flush(self, timeout_s: float = 1.0) -> None:
        """On a clean stop: bring the leaves' ledgers up to date one last time (the
        completions since the last poll), within ``timeout_s``; best effort."""
        with contextlib.suppress(SwitchError, TimeoutError):
            await asyncio.wait_for(self._write_ledgers(), timeout_s)

    async def _write_ledgers(self) -> None:
        """Bring every provisioned leaf's ledger up to date (when anything changed)."""
        if not self.options.ledger:
            return
        e = self.engine
        stamp = (e.counts.decisions, e.counts.completed, e.counts.timeouts, e.counts.moved,
                 len(self.adoptions), tuple(sorted(self.provisioned)))  # fmt: skip
        if stamp == self._ledger_stamp:
            return
        ledgers = await self._ledgers()
        links = [self.links[leaf] for leaf in e.topology.leaves if leaf in self.provisioned]
        written = await asyncio.gather(*(
            self.enforcer.write_ledger(link, ledgers.get(link.name, {}))
            for link in links if link.primary
        ))  # fmt: skip
        # a leaf skipped because it is not (yet) primary is written at the next poll
        if len(written) == len(links) and all(written):
            self._ledger_stamp = stamp

    def _log_adopted_end(
        self, pin: Pin, now: float, duration_s: float | None, *, late: bool = False
    ) -> None:
        m = pin.meta
        dst = self.engine.topology.hosts.get(m.dst)
        self.translog.write(
            "transfer",
            {
                "time": now,
                "trace_id": m.trace_id,
                "transfer_id": m.id,
                "src": m.src,
                "dst": m.dst,
                "pair": f"{pin.key.leaf}>{dst.leaf}" if dst is not None else None,
                "bytes": m.size,
                "requested_at_wall": m.requested_wall,
                "completed_at": now if duration_s is not None else None,
                "duration_s": duration_s,
                "timed_out": duration_s is None,
                "late": late,
                "path": f"{pin.key.leaf}>{m.spine}",
                "adopted": True,
            },
        )

    # -- loops ----------------------------------------------------------------------------

    async def _apply(self, updates: list[Any]) -> None:
        await self.enforcer.apply(updates)

    async def _telemetry_loop(self) -> None:
        interval = self.settings.telemetry.poll_interval_s
        deadline = self.clock()
        while True:
            deadline += interval
            links = [link for link in self.links.values() if link.up]
            t0 = self.clock()
            results = await asyncio.gather(*(self._poll(link) for link in links))
            self.metrics.poll_seconds.observe(self.clock() - t0)
            updates: list[Any] = []
            for result in results:
                if result is not None:
                    reading, at = result
                    updates += self.engine.telemetry(reading, at)
                    await asyncio.sleep(0)  # a switch at a time: requests answered between
            now = self.clock()
            updates += self.engine.tick(now, judge=False)
            await self.enforcer.apply(updates)
            await asyncio.sleep(0)
            await self._judge(now)
            self._log_tiers(now)
            await self._expire(now)
            await asyncio.sleep(0)  # the engine half and the ledger half block the loop apart
            await self._write_ledgers()
            deadline = max(deadline, self.clock())
            await asyncio.sleep(deadline - self.clock())

    async def _judge(self, now: float) -> None:
        """The engine's offline judgement of finished transfers, :data:`JUDGE_SLICE` at a
        time with the requests that came meanwhile answered in between (up to 200 a
        second are judged, about 40 us each: all at once would hold the loop for ms)."""
        more = True
        while more:
            updates, more = self.engine.judge(now, JUDGE_SLICE)
            await self.enforcer.apply(updates)
            if more:
                await asyncio.sleep(0)

    def _log_tiers(self, now: float) -> None:
        """Every :data:`TIERS_LOG_S`, a ``tiers`` record: each tier's mean and p95
        utilisation now (what the weekly report plots per tier)."""
        if self._tiers_logged is not None and now - self._tiers_logged < TIERS_LOG_S:
            return
        tiers = self.engine.snapshot(now).tiers()
        if not tiers:
            return
        self._tiers_logged = now
        self.translog.write(
            "tiers",
            {"time": now, "tiers": {str(t): {"mean": v.mean, "p95": v.p95, "ports": v.ports}
                                    for t, v in tiers.items()}},
        )  # fmt: skip

    async def _poll(self, link: SwitchLink) -> tuple[Any, float] | None:
        """One switch's reading, stamped halfway through the read (when the switch took it,
        give or take half the round trip: the link audit compares switches' counters)."""
        t0 = self.clock()
        try:
            reading = await self.poller.poll(link)
        except SwitchError as exc:
            self.metrics.polls.labels(link.name, "error").inc()
            log.debug("poll failed: %s", exc)
            return None
        self.metrics.polls.labels(link.name, "ok").inc()
        return reading, (t0 + self.clock()) / 2

    async def _expire(self, now: float) -> None:
        for adopted in self.adoptions.expired(now):
            self.adoptions.time_out(adopted.pin.meta.id, now)
            self._log_adopted_end(adopted.pin, now, None)

    async def _audit_loop(self) -> None:
        interval = self.settings.audit_interval_s
        while True:
            started = self.clock()
            if any(link.primary for link in self.links.values()):
                round_, errors = await self.prober.round(self.links, self.provisioned)
                for error in errors:
                    log.debug("probe not sent: %s", error)
                self.metrics.audit_rounds.inc()
                updates = self.engine.audit(round_, self.clock())
                await self.enforcer.apply(updates)
                if not self.audited and self.ready:
                    self.audited = True
                    await self.enforcer.refresh_all_groups()
            await asyncio.sleep(max(0.0, started + interval - self.clock()))

    async def _packets(self, link: SwitchLink) -> None:
        async for packet in link.switch.read_packets(eth_types=[ETHERTYPE]):
            port = int(packet["ingress_port"])
            verdict = self.prober.on_packet(link.name, bytes(packet.payload), port)
            if verdict is Verdict.SEEN:
                self.metrics.probes_seen.inc()
                if self.prober.last_delay_s is not None:
                    self.metrics.probe_seconds.observe(self.prober.last_delay_s)
            elif verdict is not Verdict.NOT_PROBE:
                self.metrics.probes_rejected.labels(str(verdict)).inc()

    async def run(self, started: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        """Run until cancelled: switches, loops, and ``started`` once everything runs."""
        tasks = [asyncio.create_task(link.run(), name=f"p4rt-{name}")
                 for name, link in self.links.items()]  # fmt: skip
        tasks.append(asyncio.create_task(self._telemetry_loop(), name="telemetry"))
        if self.options.audit:
            tasks.append(asyncio.create_task(self._audit_loop(), name="audit"))
        tasks.append(asyncio.create_task(self.starts.run(self._apply), name="releases"))
        for link in self.links.values():
            tasks.append(asyncio.create_task(self._packets(link), name=f"packets-{link.name}"))
        self._tasks = tasks
        try:
            if started is not None:
                await started()
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self.translog.close()
            self.tracer.close()
            self.reads.close()


def _placements(pinned: Iterable[bool]) -> dict[str, int]:
    """Flow pins by placement: on their spine (``pinned``) or on ECMP (``ecmp``)."""
    flags = list(pinned)
    return {"pinned": sum(flags), "ecmp": len(flags) - sum(flags)}


def _pin_answer(pin: FlowPin, *, removed: bool = False) -> schema.PinAnswer:
    """A flow pin as the API shows it."""
    f = pin.flow
    return schema.PinAnswer(
        id=pin.pin_id,
        src=f.src,
        dst=f.dst,
        protocol=f.protocol,
        src_port=f.src_port,
        dst_port=f.dst_port,
        leaf=pin.leaf,
        requested_spine=pin.requested,
        spine=pin.spine,
        path=str(pin.path) if pin.path is not None else None,
        port=pin.egress_port,
        placement="pinned" if pin.path is not None else "ecmp",
        moved=list(pin.moved),
        removed=removed,
    )
