"""The controller service: the engine wrapped by everything that talks to the world.

:class:`Service` owns one :class:`~controller.engine.Engine` and feeds it events
stamped with one monotonic clock; whatever the engine returns goes to the
:class:`~controller.service.southbound.enforce.Enforcer`. It wires the southbound
side's keepers and keeps two jobs for itself, the API's operations and the loops:

- the switches' lifecycle is :class:`~controller.service.southbound.lifecycle.Switches`'
  (one finsy channel per switch, reconnected within 250 ms of the switch listening
  again; each switch's state, the overall role, readiness and which requests to
  refuse with 503) and its :class:`~controller.service.southbound.lifecycle.Provisioner`'s
  (on every channel that comes up as primary: reconcile, adopt the ledger, resume the
  mode, sync the flow pins);
- the leaves' ledgers are the
  :class:`~controller.service.southbound.ledger_keeper.LedgerKeeper`'s: written every
  poll interval, read back and adopted on a reconciliation, flushed on a clean stop;
- the API's operations, which :mod:`controller.service.http.api` calls:
  :meth:`decide` (a decision: no switch is written, the tag's port is in the
  chosen spine's range), :meth:`start`, :meth:`cancel`, :meth:`complete`,
  :meth:`pin_flow`, :meth:`unpin_flow`, :meth:`set_mode`, :meth:`modes`,
  :meth:`fabric`, :meth:`health`, and :meth:`scrape` for the metrics;
- the telemetry loop (:mod:`~controller.service.southbound.telemetry`): every poll
  interval, every connected switch at once, then ``engine.tick``, the offline
  judgement a slice at a time, the adopted transfers' deadlines, then the ledgers;
- the audit loop (:mod:`~controller.service.southbound.prober`), as primary: a probe
  round every audit interval, and one PacketIn reader per switch feeding the prober;
- the ports loop (:mod:`~controller.service.southbound.ports`), primary or backup: one
  gNMI stream per switch keeps its ports' speeds and oper-status, and every audit
  interval the switches whose ports changed go to ``engine.port_states``;
- the release timer of held transfers and their senders' long polls (:mod:`starts`).

Flow pins (``POST /v1/pins``) are the engine's (:mod:`controller.engine.flow_pins`);
their entries are written by the enforcer
(:mod:`~controller.service.southbound.flow_pins`) and synced, adopted or deleted when a
leaf (re)connects. Their ids are ``<instance>-pin<n>``; adopted ones keep the id they
were given.

A transfer's API id is ``<instance>-<engine id>``
(:func:`~controller.service.southbound.pins.api_id`): the instance tag is random per
process, so ids never collide across restarts or between a primary and its backup,
and ids of adopted transfers are recognised as such.

Backup: an instance started with ``backup=True`` bids a lower election id. While
backup it connects, polls (reads only) and serves ``GET`` requests, but refuses
with 503 the transfers that need a switch it is the backup of. When the primary
dies each switch promotes it, finsy's cookie check skips the pipeline, and the
provisioner reconciles: the switch already holds the intent (an empty plan), the ECMP
groups are kept as found until this instance's first audit round, and the transfers
of the leaves' ledgers are adopted (those decided within the last poll interval are
not in a ledger yet: see :mod:`~controller.service.southbound.ledger`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from controller.config import FabricConfig, Mode, TlsSettings
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
    PinNotWrittenError,
    ServiceError,
    SwitchError,
)
from controller.service.http import schema
from controller.service.metrics import Metrics, PortFigures, Scrape
from controller.service.southbound import ledger
from controller.service.southbound.adopt import Adoptions
from controller.service.southbound.enforce import Enforcer
from controller.service.southbound.ledger_keeper import LedgerKeeper
from controller.service.southbound.lifecycle import Provisioner, Switches
from controller.service.southbound.pins import Pin, api_id, instance_of
from controller.service.southbound.ports import PortReader
from controller.service.southbound.prober import ETHERTYPE, Prober, Verdict
from controller.service.southbound.readiness import SwitchState, overall_role
from controller.service.southbound.reads import ThreadReads
from controller.service.southbound.switches import Pipeline, SwitchLink
from controller.service.southbound.telemetry import Poller
from controller.service.starts import Starts
from controller.service.tracing import Timing, TransferTracer
from controller.service.translog import TransferLog
from controller.topology import Topology

log = logging.getLogger("kvfabric.controller")

TIERS_LOG_S = 10.0
"""How often the transfer log gets a ``tiers`` record (per-tier utilisation)."""
JUDGE_SLICE = 8
"""Finished transfers judged offline between two turns of the event loop."""


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
        self.reads = ThreadReads(options.tls or s.p4runtime_tls, options.switch_timeout_s)
        self.poller = Poller(self.engine.topology, self.reads)
        self.switches = Switches(
            config,
            options.pipeline,
            self.engine,
            self.metrics,
            backup=options.backup,
            tls=options.tls or s.p4runtime_tls,
            timeout_s=options.switch_timeout_s,
            polled=frozenset(self.poller.capacity),
            clock=clock,
        )
        self.enforcer = Enforcer(
            self.switches.links,
            lambda: self.engine.topology,
            self.metrics,
            self.translog,
            clock=clock,
            flowlet_timeout_s=s.flowlet_timeout_s,
            wall=wall,
        )
        self.enforcer.mode = self.engine.effective_mode
        self.enforcer.on_capacity.append(self.poller.set_capacity)
        self.port_reader = PortReader(self.switches.links, s.audit_interval_s, self.metrics)
        self.starts = Starts(self.engine, self.metrics, clock)
        self.enforcer.on_released.append(self.starts.on_released)
        self.adoptions = Adoptions(self.engine)
        self.ledgers = LedgerKeeper(
            self.engine,
            self.enforcer,
            self.adoptions,
            self.metrics,
            self.translog,
            instance=self.instance,
            enabled=options.ledger,
            clock=clock,
            wall=wall,
        )
        self.provisioner = Provisioner(
            self.switches,
            self.engine,
            self.enforcer,
            self.ledgers,
            self.metrics,
            kv_dscp=s.kv_class.dscp,
            clock=clock,
        )
        audit_window = min(0.5 * s.audit_interval_s, 0.5)
        self.prober = Prober(self.engine.topology, audit_window, clock)
        self._traces = 0
        self._flow_pins = 0
        self._tiers_logged: float | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    def health(self) -> schema.HealthAnswer:
        """The answer of ``GET /healthz``: the role and readiness, overall and per switch."""
        states = self.switches.states()
        return schema.HealthAnswer(
            ok=True,
            role=overall_role(states),
            ready=all(s is SwitchState.PRIMARY for s in states.values()),
            instance=self.instance,
            switches={
                name: schema.SwitchHealth(str(state), self.switches.links[name].config.p4runtime)
                for name, state in states.items()
            },
        )

    def api_id(self, transfer_id: int) -> str:
        """The API id of one of this instance's engine transfers."""
        return api_id(self.instance, transfer_id)

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
            staleness_s=s.staleness(self.switches.links),
            alerts=[(a.name, a.subject, a.severity) for a in s.alerts],
            links=[(str(link), str(topo.link_status(link))) for link in topo.links],
            pins=sum(1 for t in s.transfers if t.path is not None),
            flow_pins=_placements(p.path is not None for p in s.flow_pins),
            in_flight=len(s.transfers) + len(self.adoptions),
            modes=[str(m) for m in Mode],
            held=s.held,
            ports=[
                PortFigures(
                    str(p.ref),
                    p.capacity_bps,
                    p.file_capacity_bps,
                    p.reported.speed_bps if p.reported is not None else None,
                    p.reported.up if p.reported is not None else None,
                )
                for p in s.ports
            ],
            unmodelled=[str(ref) for ref, _ in s.unmodelled],
        )

    # -- the API's operations ---------------------------------------------------------

    def decide(self, ask: schema.TransferRequest) -> tuple[schema.TransferAnswer, list[Update]]:
        """Decide a transfer: the answer of ``POST /v1/transfers`` and the updates left to
        apply before it is given (``Enforcer.apply_now``: none but a mode change or a flow
        pin that a timed-out transfer's reroute brought). Nothing is written: the leaves'
        static spine ranges pin the tag's port (a held transfer's too: only its start
        waits, :mod:`starts`)."""
        request = self._demand(ask)
        t0, wall0 = self.clock(), self.wall()
        decision, updates = self.engine.decide(request, t0)
        t1 = self.clock()
        rest = self.enforcer.apply_now(updates)  # the log records of transfers timed out
        t2 = self.clock()
        self.metrics.decision_seconds.observe(t2 - t0)
        return self._answered(decision, Timing(wall0, wall0 + t1 - t0, wall0 + t2 - t0, 0.0),
                              t0), rest  # fmt: skip

    def decide_batch(
        self, asks: Sequence[schema.TransferRequest]
    ) -> tuple[list[schema.TransferAnswer | Exception], list[Update]]:
        """Decide many transfers as one (``POST /v1/transfers/batch``,
        ``Engine.decide_batch``): each one's answer, or the error that refused it (the
        others are still decided), in order; and the updates left to apply."""
        out: list[schema.TransferAnswer | Exception] = []
        demands: list[Demand] = []
        where: list[int] = []
        for ask in asks:
            try:
                demands.append(self._demand(ask))
            except (ServiceError, EngineError) as exc:
                out.append(exc)
                continue
            where.append(len(out))
            out.append(EngineError("not decided"))  # replaced below
        t0, wall0 = self.clock(), self.wall()
        decisions, updates = self.engine.decide_batch(demands, t0) if demands else ([], [])
        t1 = self.clock()
        rest = self.enforcer.apply_now(updates)
        t2 = self.clock()
        timing = Timing(wall0, wall0 + t1 - t0, wall0 + t2 - t0, 0.0)
        for i, decision in zip(where, decisions, strict=True):
            if isinstance(decision, EngineError):
                out[i] = decision
                continue
            self.metrics.decision_seconds.observe(t2 - t0)
            out[i] = self._answered(decision, timing, t0)
        return out, rest

    def _demand(self, ask: schema.TransferRequest) -> Demand:
        """The engine's request for ``ask``, once its switches are ready and a forced
        spine is on its path (NotReadyError, ForcedSpineError)."""
        src, dst, trace_id, spine = ask.src, ask.dst, ask.trace_id, ask.spine
        self.switches.refuse(*self.switches.needed(src, dst))
        if trace_id is None:
            self._traces += 1
            trace_id = f"kv-{self.instance}-{self._traces}"
        if spine is not None:
            self._check_spine(src, dst, spine)
        deadline_s = ask.deadline_ms / 1e3 if ask.deadline_ms is not None else None
        return Demand(src, dst, ask.bytes, trace_id, spine=spine, deadline_s=deadline_s)

    def _answered(self, decision: Decision, timing: Timing, t0: float) -> schema.TransferAnswer:
        """The answer to a decided transfer (its start's waiters told, its span opened)."""
        self.starts.decided(decision.transfer_id, decision.held)
        answer = self._answer(decision)
        if self.tracer.enabled:
            self._trace(
                decision, answer, replace(timing, answered=timing.requested + self.clock() - t0)
            )
        return answer

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
        leaf = self.switches.links[self.engine.topology.hosts[d.src].leaf]
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
            slices=[
                schema.SliceAnswer(
                    sl.path.spine, str(sl.path), sl.bytes,
                    schema.Tag(sl.tag.dscp, sl.tag.dscp << 2, sl.tag.src_port),
                )
                for sl in d.slices
            ],
        )  # fmt: skip

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
        self.switches.refuse()
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
        self.switches.refuse(*self.switches.needed(flow.src, flow.dst))
        self._flow_pins += 1
        pin_id = f"{self.instance}-pin{self._flow_pins}"
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
        self.switches.refuse()
        pin = self.engine.flow_pin(pin_id)
        updates = self.engine.unpin_flow(pin_id, self.clock())
        await self.enforcer.apply(updates)
        assert pin is not None  # unpin_flow raised UnknownPinError otherwise
        return _pin_answer(pin, removed=True)

    def complete(
        self, transfer_id: str, duration_s: float
    ) -> tuple[schema.CompleteAnswer, list[Update]]:
        """Record a transfer's completion (``POST /v1/transfers/{id}/complete``): the
        answer and the updates left to apply (see :meth:`decide`)."""
        self.switches.refuse()
        now = self.clock()
        if not duration_s > 0:
            raise EngineError(f"a duration must be positive, got {duration_s}")
        adopted = self.adoptions.finish(transfer_id, now)
        if adopted is not None:
            self.metrics.transfer_seconds.observe(duration_s)
            self._log_adopted_end(adopted.pin, now, duration_s, size=adopted.size)
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
        number = transfer_id.rpartition("-")[2]
        if instance_of(transfer_id) != self.instance or not number.isdigit():
            raise UnknownTransferError(f"no transfer {transfer_id!r} in flight")
        return int(number)

    async def set_mode(self, mode: Mode) -> schema.ModeAnswer:
        """The operator sets the mode (``POST /v1/mode``); kv-aware also ends a fallback."""
        self.switches.refuse()
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
        sw = self.switches
        states = sw.states()
        view["controller"] = {
            "instance": self.instance,
            "role": overall_role(states),
            "ready": all(s is SwitchState.PRIMARY for s in states.values()),
            "audited": sw.audited,
            "switches": {
                name: {
                    "address": link.config.p4runtime,
                    "up": link.up,
                    "primary": link.primary,
                    "provisioned": name in sw.provisioned,
                    "state": str(states[name]),
                }
                for name, link in sw.links.items()
            },
            "ledgers": {
                leaf: sum(len(ledger.decode(m) or ()) for m in held.values())
                for leaf, held in self.enforcer.ledgers.items()
            },
            "adopted": sorted(self.adoptions.by_id),
        }
        return view

    def _log_adopted_end(
        self,
        pin: Pin,
        now: float,
        duration_s: float | None,
        *,
        late: bool = False,
        size: int | None = None,
    ) -> None:
        """The transfer record of an adopted transfer that ended (``size``: the bytes of
        all its slices, when it had several pins)."""
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
                "bytes": size if size is not None else m.size,
                "requested_at_wall": m.requested_wall,
                "completed_at": now if duration_s is not None else None,
                "duration_s": duration_s,
                "timed_out": duration_s is None,
                "late": late,
                "path": f"{pin.key.leaf}>{m.spine}",
                "adopted": True,
            },
        )

    async def flush(self, timeout_s: float = 1.0) -> None:
        """On a clean stop: bring the leaves' ledgers up to date one last time (the
        completions since the last poll), within ``timeout_s``; best effort."""
        sw = self.switches
        await self.ledgers.flush(sw.links, sw.provisioned, timeout_s)

    # -- loops ----------------------------------------------------------------------------

    async def apply(self, updates: list[Update]) -> None:
        """Apply the engine's updates (those an answer given at once left: see
        :meth:`decide`)."""
        await self.enforcer.apply(updates)

    async def _telemetry_loop(self) -> None:
        interval = self.settings.telemetry.poll_interval_s
        deadline = self.clock()
        while True:
            deadline += interval
            links = [link for link in self.switches.links.values() if link.up]
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
            await self.ledgers.write(self.switches.links, self.switches.provisioned)
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
            self._log_adopted_end(adopted.pin, now, None, size=adopted.size)

    async def _audit_loop(self) -> None:
        interval = self.settings.audit_interval_s
        while True:
            started = self.clock()
            sw = self.switches
            if any(link.primary for link in sw.links.values()):
                round_, errors = await self.prober.round(sw.links, sw.provisioned)
                for error in errors:
                    log.debug("probe not sent: %s", error)
                self.metrics.audit_rounds.inc()
                updates = self.engine.audit(round_, self.clock())
                await self.enforcer.apply(updates)
                if not sw.audited and sw.ready:
                    sw.audited = True
                    await self.enforcer.refresh_all_groups()
            await asyncio.sleep(max(0.0, started + interval - self.clock()))

    async def _ports_loop(self) -> None:
        """Every audit interval, the switches whose ports changed go to the engine."""
        interval = self.settings.audit_interval_s
        while True:
            started = self.clock()
            for reading in self.port_reader.take():
                updates = self.engine.port_states(reading, self.clock())
                await self.enforcer.apply(updates)
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
        tasks: list[asyncio.Task[Any]] = []
        tasks += self.switches.start(self.provisioner.provision)
        tasks.append(asyncio.create_task(self._telemetry_loop(), name="telemetry"))
        if self.options.audit:
            tasks.append(asyncio.create_task(self._audit_loop(), name="audit"))
        tasks.append(asyncio.create_task(self.starts.run(self.apply), name="releases"))
        tasks.append(asyncio.create_task(self._ports_loop(), name="ports"))
        for link in self.switches.links.values():
            tasks.append(asyncio.create_task(self._packets(link), name=f"packets-{link.name}"))
            follow = self.port_reader.follow(link)
            tasks.append(asyncio.create_task(follow, name=f"ports-{link.name}"))
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
