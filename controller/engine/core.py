"""The decision engine: a state machine driven by events and an injected clock.

Every entry point takes an event and ``now`` (seconds on the caller's clock) and
*returns* the updates to apply; none reads a clock, touches a socket or logs. The I/O
shell feeds it and applies what comes back, so everything here runs in unit tests
with a fake clock:

    decide(request, now)          -> (Decision, [LogRecord* of timeouts, Released*]):
                                     nothing to write for the transfer itself
    decide_batch(requests, now)   -> ([Decision | EngineError, ...], the same updates):
                                     a burst decided as one (:mod:`batch`)
    complete(id, duration, now)   -> [LogRecord, SetMode?, TransferMoved*, Alert?,
                                      Released*]
                                     (late, after a timeout: [LogRecord(late), Alert?])
    cancel(id, now)               -> [LogRecord, Released*]  (a held transfer)
    releases(now)                 -> [Released*, timeouts]   (at next_release())
    telemetry(reading, now)       -> [Alert?]                    (a switch's counters)
    audit(round, now)             -> [LinkStatusChanged, TransferMoved*, Alert, ...]
    port_states(reading, now)     -> [CapacityChanged*, LinkStatusChanged*, Alert*,
                                      LogRecord*, TransferMoved*]  (a switch's ports)
    tick(now)                     -> timeouts, staleness alerts, the quiet period,
                                     offline recomputation, alert windows, releases
    set_mode(mode, now)           -> [SetMode?, Released*]       (the operator)
    pin_flow(id, flow, spine, now) -> (FlowPin, [InstallFlowPin, LogRecord])
    unpin_flow(id, now)           -> [RemoveFlowPin?, LogRecord]
    adopt_flow_pin(...)           -> a flow pin found on a leaf, moved if need be

The shell calls ``tick`` once per poll interval, puts the data plane in
``effective_mode`` at start-up, and reads the engine only through :meth:`snapshot` (a
frozen :class:`~controller.engine.snapshot.Snapshot`, for its metrics, fabric view and
live page) and a few small accessors (``totals``, ``sampled_at``, ``transfer``, ``choice``,
``in_flight_paths``, ``is_held``, ``spine_of``, ``flow_pin``, ``flow_pins_on``).

A decision (``decide``):

1. a transfer inside one rack never crosses a spine: ``local``, nothing to pin;
2. outside kv-aware mode, or while the safety fallback holds, the transfer is left to
   the data plane's ECMP (or flowlet ECMP);
3. if the telemetry of the source or destination leaf is older than the staleness
   limit, the transfer falls back to ECMP; spines with stale telemetry are left out
   of the candidates, as are paths through cables the audit found down or miswired;
4. otherwise :mod:`selection` picks the path among the spines that have a free tag
   port for the source host, and the engine pins it by handing out one of them.

Each spine owns a range of the tag ports, and the leaves send a tagged transfer up
the spine of its source port's range (static entries, p4/README.md, Spine ranges): a
pinned transfer's tag is a free port of its spine's range for its source host, and
the decision asks for no write. Outside kv-aware mode (the data plane's ranges are
off) and inside one rack, the port comes from any range; a kv-aware fallback to ECMP
gets no tag, since any tag port would pin it. A transfer's bytes are counted on the
ports it will cross until it completes or times out. When a cable breaks or comes
back, or the mode turns the ranges off or on, every transfer in flight follows its
range (:meth:`Topology.range_path <controller.topology.Topology.range_path>`): one
``TransferMoved`` per transfer that moves, and its load moves with it. Completions
feed the pair's baseline; a slow one marks the pair for reroute, and too many
reroutes trip the fallback (:mod:`safety`).

Flow pins (:mod:`flow_pins`) hold one flow each on a spine in every mode; the
audit moves them off a broken cable as it moves transfers.

With a scheduling policy (:mod:`schedule`), a transfer whose candidate paths all
carry transfers may be *held*: placed and pinned, but told to start later, when a
:class:`Released` update says so (a completion, a timeout or a cancel freed its
path, or it waited ``max_wait``). ``waiting(id, now)`` says how long a held transfer
is still expected to wait; ``next_release()`` when the next one is released
whatever happens, so the shell can tick then.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import deepcopy
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from controller.config import ControllerSettings, HostConfig, Mode
from controller.engine import view
from controller.engine.alerts import AlertBook, EfficiencyWindows, LatencyWindows, TierWindows
from controller.engine.audit import LinkVerdict, probe_outcomes, worst
from controller.engine.batch import batch_measure, batch_order
from controller.engine.efficiency import offline_verdict
from controller.engine.events import AuditRound, Demand, PortStates, SwitchReading
from controller.engine.flow_pins import (
    FlowPin,
    FlowPins,
    FlowTuple,
    InstallFlowPin,
    RemoveFlowPin,
    evacuate,
    restore,
)
from controller.engine.fluid import Fluid, part_key
from controller.engine.inflight import Adoption, Choice, InFlight, InFlightTable, Part, TagPool
from controller.engine.liveness import SPAN_POLLS, Liveness, counter_evidence
from controller.engine.loads import LoadTable
from controller.engine.ports import PortBook
from controller.engine.safety import PairMemory, RerouteGuard, baseline_of, remember
from controller.engine.schedule import CLOCK_SLACK_S, REASON_HELD, Queue
from controller.engine.selection import REASON_REROUTE_YIELDS, PathIndex, choose, evaluate
from controller.engine.slicing import auto_slices, split, split_alone
from controller.engine.snapshot import Counts, EfficiencyNow, PortNow, Snapshot, TransferNow
from controller.engine.updates import (
    CapacityChanged,
    Decision,
    LinkStatusChanged,
    LogRecord,
    Marking,
    Released,
    SetMode,
    Slice,
    TransferMoved,
    Update,
)
from controller.errors import (
    EngineError,
    PathDownError,
    TopologyError,
    TransferStartedError,
    UnknownHostError,
    UnknownTransferError,
)
from controller.topology import LinkId, LinkStatus, PortRef, SpinePath, Topology


class _Saved(NamedTuple):
    """The engine's state that a decision changes (:meth:`Engine._saved`)."""

    state: tuple[Counts, TagPool, InFlightTable, Fluid, Queue, dict[tuple[str, str], PairMemory]]
    inflight: list[int]
    mirror: npt.NDArray[np.float64]
    next_id: int


Pair = tuple[str, str]
_Ident = tuple[int, str, str, str, int, Mode]
_FreshEntry = tuple[int, float, tuple[PathIndex, ...], tuple[str, ...]]


class Engine:
    """The pure decision core of the controller (see the module docstring)."""

    def __init__(
        self,
        topology: Topology,
        now: float,
        settings: ControllerSettings | None = None,
        *,
        judge_rate: float = 200.0,
    ) -> None:
        """An engine for ``topology`` starting at ``now``.

        ``settings`` default to the topology's configuration. The spine paths of
        every pair of leaves are indexed here, once, so that the first transfer of a
        pair decides as fast as the next (64 spines x 32 leaves: about 63,000 paths).
        ``judge_rate`` caps how many finished transfers per second get the offline
        recomputation (it costs about as much as a decision); beyond it, transfers
        are sampled evenly.
        """
        self.topology = topology
        self.settings = s = settings or topology.config.controller
        history_s = s.safety.transfer_timeout_max_s + 4 * s.telemetry.staleness_limit_s
        self.table = LoadTable(
            topology.egress.values(),
            history_s,
            s.telemetry.staleness_limit_s,
            count_placements=s.selection.inflight_accounting,
        )
        self.inflight = InFlightTable()
        self.fluid = Fluid(self.table.avail_bps, counting=s.selection.inflight_accounting)
        self._adoptions = 0
        self._auto_slices: dict[str, int] = {}
        kv = s.kv_class
        self.tags = TagPool(kv.tag_port_first, kv.range_size(len(topology.spines)), topology.spines)
        self.pairs: dict[Pair, PairMemory] = {}
        self.guard = RerouteGuard(s.safety)
        self.mode = s.mode
        self.started = now
        self.book = AlertBook()
        self.latency = LatencyWindows(s.alerts, now)
        self.efficiency = EfficiencyWindows(s.alerts, now)
        self.tiers = TierWindows(s.alerts, now)
        self.counts = Counts()
        self._pending: deque[tuple[InFlight, float, float]] = deque()
        self._judge_rate = judge_rate
        self._judge_tokens = judge_rate
        self._judge_last = now
        self._paths: dict[Pair, tuple[PathIndex, ...]] = {}
        self._usable: dict[Pair, tuple[PathIndex, ...]] = {}
        self._fresh: dict[Pair, _FreshEntry] = {}
        self._stale: set[str] = set()
        self._unexpected: set[str] = set()
        self.liveness = Liveness(s.audit_misses, s.audit_hold_s)
        self.ports = PortBook(topology)
        self.flow_pins = FlowPins()
        self.queue = Queue(s.scheduling.policy, s.scheduling.max_wait_s)
        self._timed_out: dict[int, InFlight] = {}
        self._next_id = 1
        for src in topology.leaves:
            for dst in topology.leaves:
                if src != dst:
                    self._all_paths((src, dst))

    # -- modes ------------------------------------------------------------------------

    @property
    def effective_mode(self) -> Mode:
        """The mode in force: the operator's, unless the fallback disabled kv-aware."""
        if self.mode is Mode.KV_AWARE and self.guard.tripped:
            return Mode.ECMP
        return self.mode

    def set_mode(self, mode: Mode, now: float, reason: str = "operator") -> list[Update]:
        """The operator sets the mode; setting kv-aware also lifts a safety fallback."""
        before = self.effective_mode
        self.mode = mode
        updates: list[Update] = []
        if mode is Mode.KV_AWARE and self.guard.tripped:
            self.guard.reset()
            updates += self.book.judge(
                "scheduler_fallback", "fabric", False, f"kv-aware placement re-enabled by {reason}"
            )
        if self.effective_mode is not before:
            updates.append(SetMode(self.effective_mode, reason))
            updates.append(_log("mode", now, mode=str(self.effective_mode), reason=reason))
            updates += self._follow_ranges(now)
        updates += self._release(now)  # outside kv-aware nothing is held
        return updates

    # -- what the shell reads -----------------------------------------------------------

    def snapshot(self, now: float) -> Snapshot:
        """The engine at ``now``, read-only (:mod:`~controller.engine.snapshot`): for the
        metrics, the fabric view and the live page, never on a decision's path."""
        table, book = self.table, self.ports
        ports = tuple(
            PortNow(
                p.ref,
                p.peer,
                p.tier,
                p.capacity_bps,
                state is not None and state.sampled,
                state.util if state is not None else None,
                state.bg_util if state is not None else None,
                state.queue_delay_s if state is not None else None,
                table.inflight[i],
                file_capacity_bps=book.file[p.ref],
                reported=book.status(p.ref),
            )
            for i, (p, state) in enumerate(zip(table.ports, table.state, strict=True))
        )
        eff = self.efficiency
        return Snapshot(
            time=now,
            topology=self.topology,
            mode=self.mode,
            effective_mode=self.effective_mode,
            fallback_active=self.guard.tripped,
            reroutes_in_window=self.guard.count(now),
            counts=self.totals(),
            efficiency=EfficiencyNow(
                eff.total_evaluated,
                eff.total_efficient,
                eff.last.ratio if eff.last is not None else None,
            ),
            ports=ports,
            sampled_at=dict(table.sampled_at),
            transfers=tuple(_now(t) for t in self.inflight.transfers.values()),
            flow_pins=tuple(self.flow_pins.by_id.values()),
            alerts=tuple(self.book.active.values()),
            held=self.held_by_path(),
            unmodelled=tuple(sorted(book.unknown.items())),
        )

    def totals(self) -> Counts:
        """The running totals now (a copy)."""
        return self.counts.copy()

    @property
    def sampled_at(self) -> Mapping[str, float]:
        """When each switch was last sampled: the engine's own, live (the service reads it
        on every request it may refuse), never to be modified."""
        return self.table.sampled_at

    def transfer(self, transfer_id: int) -> TransferNow | None:
        """A transfer in flight (None: it is not)."""
        t = self.inflight.transfers.get(transfer_id)
        return _now(t) if t is not None else None

    def choice(self, transfer_id: int) -> Choice | None:
        """The figures behind a transfer's choice (None: it is not in flight), as decided
        and updated by its moves; the engine's own record, never to be modified."""
        t = self.inflight.transfers.get(transfer_id)
        return t.choice if t is not None else None

    def in_flight_paths(self) -> Iterator[tuple[tuple[int, int], PathIndex | None]]:
        """Every tag a transfer in flight holds, as (transfer id, slice number), with the
        path that slice is pinned on now (None: ECMP or one rack): the path changes
        exactly when the slice moves."""
        for tid, t in self.inflight.transfers.items():
            slots = t.choice.slices
            for k in range(max(1, len(t.decision.tags))):
                yield (tid, k), slots[k] if k < len(slots) else None

    def is_held(self, transfer_id: int) -> bool:
        """True while ``transfer_id`` is held (not released yet)."""
        return transfer_id in self.queue

    def spine_of(self, tag_port: int) -> str | None:
        """The spine whose range holds ``tag_port`` (None: outside every range)."""
        return self.tags.spine_of(tag_port)

    def flow_pin(self, pin_id: str) -> FlowPin | None:
        """The flow pin ``pin_id`` (None: there is none)."""
        return self.flow_pins.by_id.get(pin_id)

    def flow_pins_on(self, leaf: str) -> list[FlowPin]:
        """The flow pins whose entry lives on ``leaf`` (on a spine; not those on ECMP)."""
        return [p for p in self.flow_pins.by_id.values() if p.leaf == leaf and p.path is not None]

    def count_late_adopted(self) -> None:
        """Count a late completion of an adopted transfer, which this engine never decided
        (its port and load went back at its timeout)."""
        self.counts.late += 1

    # -- decisions --------------------------------------------------------------------

    def decide(self, request: Demand, now: float) -> tuple[Decision, list[Update]]:
        """Answer a transfer request (see the module docstring for the steps)."""
        forced = self._check(request)
        updates = self._expire(now)
        updates += self._release(now)
        return self._decide(request, forced, now, self.queue.max_wait_s), updates

    def decide_batch(
        self, requests: Sequence[Demand], now: float
    ) -> tuple[list[Decision | EngineError], list[Update]]:
        """Answer many requests at once (:mod:`batch`): each one's decision, or the
        error that refused it (the others are still decided), in the requests' order.

        They are placed in the policy's order (SRPT, or EDF when they carry deadlines:
        :func:`~controller.engine.batch.batch_order`), each seeing the bytes of those
        before it, and with a scheduling policy those that would share a path are held
        one behind another, each at most ``batch_max_wait``."""
        updates = self._expire(now)
        updates += self._release(now)
        out: list[Decision | EngineError] = []
        forced: dict[int, int | None] = {}
        for i, request in enumerate(requests):
            try:
                forced[i] = self._check(request)
            except EngineError as exc:
                out.append(exc)
                continue
            out.append(EngineError("not decided"))  # replaced below
        wait = self.settings.scheduling.batch_wait_s
        order = batch_order(
            [(i, requests[i]) for i in forced], self.queue.policy,
            lambda r: self.topology.hosts[r.src].capacity_bps, now=now, max_wait_s=wait,
        )  # fmt: skip
        # the same order and the same longest hold as one by one: the same plan, nothing
        # to compare (a batch of equal transfers without a policy, say)
        same = order == list(forced) and wait == self.queue.max_wait_s
        before = self._saved(copy=True) if len(order) > 1 and not same else None
        for i in order:
            out[i] = self._decide(requests[i], forced[i], now, wait)
        if before is not None:
            # never worse, by the engine's own picture, than one request at a time in
            # the requests' order: try that too, from the same state, and keep the better
            joint = self._saved(copy=False)
            joint_measure = self.batch_measure(out, requests, now)
            self._restore(before)
            alone: list[Decision | EngineError] = list(out)
            for i, path in forced.items():
                alone[i] = self._decide(requests[i], path, now, self.queue.max_wait_s)
            if joint_measure <= self.batch_measure(alone, requests, now) * (1 + 1e-9) + 1e-12:
                self._restore(joint)
            else:
                out = alone
        return out, updates

    def batch_measure(
        self, out: Sequence[Decision | EngineError], requests: Sequence[Demand], now: float
    ) -> float:
        """What :func:`~controller.engine.batch.batch_measure` says of the decided
        members, by the engine's picture now (the held starts planned again first: a
        member sent at once after others were held pushes their starts back)."""
        self.queue.replan(self._busy_until(now), now)
        ends: list[tuple[float, Demand]] = []
        for d, r in zip(out, requests, strict=True):
            if isinstance(d, Decision):
                end = self.expected_end(d.transfer_id, now)
                ends.append((now if end is None else end, r))
        return batch_measure(self.queue.policy, ends, now)

    def _saved(self, *, copy: bool) -> _Saved:
        """What a decision changes, to try another plan from it (``copy``: a deep copy,
        sharing only what no decision changes: the records of the transfers already in
        flight and the candidates' paths)."""
        table = self.table
        state = (self.counts, self.tags, self.inflight, self.fluid, self.queue, self.pairs)
        if copy:
            memo: dict[int, object] = {id(table.avail_bps): table.avail_bps}
            for t in self.inflight.transfers.values():
                memo[id(t)] = t
            for paths in self._paths.values():
                memo[id(paths)] = paths
                for c in paths:
                    memo[id(c)] = c
            state = deepcopy(state, memo)
        return _Saved(state, list(table.inflight), table.arrays.inflight.copy(), self._next_id)

    def _restore(self, saved: _Saved) -> None:
        (self.counts, self.tags, self.inflight, self.fluid, self.queue, self.pairs) = saved.state
        self.table.inflight[:] = saved.inflight
        self.table.arrays.inflight[:] = saved.mirror
        self._next_id = saved.next_id

    def _check(self, request: Demand) -> int | None:
        """Refuse a request the engine cannot decide (EngineError); the index of its
        forced path, if it names a spine."""
        src, dst = self._host(request.src, "src"), self._host(request.dst, "dst")
        if request.bytes <= 0:
            raise EngineError(f"a transfer needs a positive size, got {request.bytes} bytes")
        if src.name == dst.name:
            raise EngineError(f"source and destination are both {src.name!r}")
        pair = (src.leaf, dst.leaf)
        forced = self._forced_path(pair, request.spine) if request.spine is not None else None
        if request.deadline_s is not None and not request.deadline_s > 0:
            raise EngineError(f"a deadline must be positive, got {request.deadline_s} s")
        return forced

    def _decide(self, request: Demand, forced: int | None, now: float, wait: float) -> Decision:
        """Decide a checked request; a hold lasts at most ``wait``."""
        src, dst = self.topology.hosts[request.src], self.topology.hosts[request.dst]
        pair = (src.leaf, dst.leaf)
        due = now + request.deadline_s if request.deadline_s is not None else None
        tid = self._next_id
        self._next_id += 1
        trace = request.trace_id or f"kv-{tid:08x}"
        ident = (tid, trace, src.name, dst.name, request.bytes, self.effective_mode)
        if src.leaf == dst.leaf:
            tag = self._tag(self.tags.take_any(src.name))
            decision = Decision(*ident, None, None, tag, "same rack", local=True)
            choice = Choice()
            self.counts.local += 1
        elif (
            forced is not None
            and self.effective_mode is Mode.KV_AWARE
            and self.tags.free(src.name, request.spine or "")
        ):
            decision, choice = self._force(ident, pair, forced, now)
        else:
            decision, choice = self._place(
                ident, pair, now, due, forced=forced is not None, wait=wait
            )
        deadline = now + self.timeout_s(decision.expected_s)
        if decision.held:
            deadline += wait
        self.table.add(choice.contributions)
        transfer = InFlight(decision, pair, now, deadline, choice, granted=decision.start_at)
        self.inflight.add(transfer)
        if decision.held:
            self._wait_parts(transfer)
            self._hold(transfer, now, due, wait)
        else:
            self._run_parts(transfer, now)
        self.counts.decisions += 1
        return decision

    def timeout_s(self, expected_s: float | None) -> float:
        """How long a transfer expected to take ``expected_s`` may run before it times out.

        ``timeout_factor`` times the expectation, within [``transfer_timeout``,
        ``transfer_timeout_max``]; a transfer with no expectation (ECMP, one rack) gets
        ``transfer_timeout``. A transfer placed on a loaded path is not given up on
        while it is still within what its own estimate said it would take.
        """
        s = self.settings.safety
        if expected_s is None:
            return s.transfer_timeout_s
        return min(
            s.transfer_timeout_max_s, max(s.transfer_timeout_s, s.timeout_factor * expected_s)
        )

    def _tag(self, port: int | None) -> Marking | None:
        return Marking(self.settings.kv_class.dscp, port) if port is not None else None

    def _place(
        self,
        ident: _Ident,
        pair: Pair,
        now: float,
        due: float | None = None,
        *,
        forced: bool = False,
        wait: float,
    ) -> tuple[Decision, Choice]:
        """Place a transfer between two racks: a pin, or ECMP and the reasons why (a
        hold lasts at most ``wait``)."""
        host, size = ident[2], ident[4]
        mode = self.effective_mode
        usable = self._usable_paths(pair)
        fallbacks: list[str] = []
        candidates: tuple[PathIndex, ...] = ()
        tag: Marking | None = None
        if mode is not Mode.KV_AWARE:
            tag = self._tag(self.tags.take_any(host))  # the ranges are off: any port
            if forced:
                fallbacks.append(f"a forced spine needs kv-aware mode (the leaves are in {mode})")
            if self.guard.tripped:
                fallbacks.append("kv-aware placement disabled by the reroute limit")
                self.counts.fallback("disabled")
        elif forced:
            fallbacks.append(f"every tag port of the forced spine is in use for {host}")
            self.counts.fallback("no-tag")
        elif not usable:
            fallbacks.append("no spine path with both links up")
            self.counts.fallback("no-path")
        else:
            stale = self._staleness(pair[0], now) or self._staleness(pair[1], now)
            if stale is not None:
                fallbacks.append(stale)
                self.counts.fallback("stale")
            else:
                candidates, left = self._fresh_candidates(pair, usable, now)
                if left:
                    fallbacks.append(f"stale telemetry: left out {', '.join(left)}")
                    if not candidates:
                        self.counts.fallback("stale")
                candidates = self._with_ports(host, candidates, fallbacks)
        if not candidates:
            self.counts.ecmp += 1
            reason = f"mode {mode}" if mode is not Mode.KV_AWARE else "fallback"
            decision = Decision(*ident, None, None, tag, reason, fallbacks=tuple(fallbacks))
            return decision, Choice(
                contributions=_spread(usable, size), parts=_spread_parts(usable, size)
            )
        memory = self.pairs.setdefault(pair, PairMemory())
        seen: list[float] = []
        alone: list[float] = []
        costs, loads = evaluate(
            candidates, self.table, self.fluid, size, now, seen=seen, alone=alone
        )
        latency_high = (
            memory.last_ratio is not None
            and memory.last_ratio > self.settings.selection.latency_factor
        )
        selected = choose(
            candidates,
            costs,
            loads,
            self.settings.selection,
            last_spine=memory.last_spine,
            avoid_spine=memory.avoiding(now),
            latency_high=latency_high,
            alone=alone,
        )
        if selected.reason == REASON_REROUTE_YIELDS:
            memory.avoid_spine = None  # the spine it avoided is now clearly best
        k, reason, expected = selected.chosen, selected.reason, selected.costs[selected.chosen]
        plan, split_s = self._slices(ident, candidates, k, selected.costs, now)
        hold = None
        if self.queue.active and self.effective_mode is Mode.KV_AWARE:
            hold = self._hold_option(
                ident, candidates, alone, now_end=now + self._drain(candidates, plan, now),
                now=now, due=due, wait=wait,
            )  # fmt: skip
        start_at = None
        if hold is not None:
            plan, start_at, expected = hold
            k, reason = plan[0][0], REASON_HELD
        elif len(plan) > 1:
            expected = split_s
        chosen = candidates[k]
        slices = tuple(
            Slice(candidates[i].path, self._slice_tag(host, candidates[i]), nbytes)
            for i, nbytes in plan
        )
        tag = slices[0].tag
        memory.last_spine = chosen.path.spine
        self.counts.pinned += 1
        if len(slices) > 1:
            self.counts.split += 1
        choice = Choice(
            contributions=_contributions(candidates, plan),
            path=chosen,
            parts=tuple(Part((candidates[i].up, candidates[i].down), b) for i, b in plan),
            slices=tuple(candidates[i] for i, _ in plan),
            candidates=candidates,
            costs=selected.costs,
            loads=selected.loads,
            chosen=k,
            best=selected.best,
            seen=tuple(seen),
            shared_bytes=max(self.table.inflight[chosen.up], self.table.inflight[chosen.down]),
        )
        decision = Decision(
            *ident,
            chosen.path,
            candidates[selected.best].path,
            tag,
            reason,
            expected_s=expected,
            fallbacks=tuple(fallbacks),
            held=start_at is not None,
            start_at=start_at,
            slices=slices,
        )
        return decision, choice

    def _slices(
        self,
        ident: _Ident,
        candidates: tuple[PathIndex, ...],
        chosen: int,
        costs: tuple[float, ...],
        now: float,
    ) -> tuple[list[tuple[int, int]], float]:
        """How a transfer is split over the candidates (:mod:`slicing`): one slice on
        ``chosen`` unless more cut its expected completion."""
        host, size = self.topology.hosts[ident[2]], ident[4]
        most = self._max_slices(ident, candidates)
        if most <= 1 or len(candidates) < 2:
            return [(chosen, size)], costs[chosen]
        order = [chosen, *sorted((i for i in range(len(candidates)) if i != chosen),
                                 key=costs.__getitem__)]  # fmt: skip
        return split(
            candidates, order, size, now,
            fluid=self.fluid, table=self.table, max_slices=most, nic_bps=host.capacity_bps,
        )  # fmt: skip

    def _max_slices(self, ident: _Ident, candidates: tuple[PathIndex, ...]) -> int:
        """``selection.max_slices``, or enough for the source NIC over one uplink (its
        leaf's slowest: one cable re-provisioned at 400G beside three at 100G must not
        stop the rack's transfers from filling their NIC over four paths; a slice more
        than the paths need is never used, :func:`split` keeps only those that help),
        worked out once per host, and again when a capacity changes."""
        most = self.settings.selection.max_slices
        if most is not None:
            return most
        host = ident[2]
        auto = self._auto_slices.get(host)
        if auto is None:
            uplink = min(self.table.capacity[c.up] for c in candidates)
            auto = self._auto_slices[host] = auto_slices(
                self.topology.hosts[host].capacity_bps, uplink
            )
        return auto

    def _slice_tag(self, host: str, c: PathIndex) -> Marking:
        """A tag port of ``c``'s spine's range for ``host`` (the candidates all have one)."""
        tag = self._tag(self.tags.take(host, c.path.spine))
        assert tag is not None, f"{c.path.spine} had no free tag port for {host}"
        return tag

    # -- holding ------------------------------------------------------------------------

    def _drain(
        self, candidates: tuple[PathIndex, ...], plan: list[tuple[int, int]], now: float
    ) -> float:
        """Seconds until the paths of ``plan``'s slices have drained all their work, each
        slice's bytes last (:meth:`Fluid.drain`), with their queueing delays: what sending
        a transfer now costs the paths it goes on."""
        qdelay, worst = self.table.qdelay_s, 0.0
        for i, nbytes in plan:
            c = candidates[i]
            t = self.fluid.drain((c.up, c.down), nbytes, now) + qdelay[c.up] + qdelay[c.down]
            worst = max(worst, t)
        return worst

    def _hold_option(
        self,
        ident: _Ident,
        candidates: tuple[PathIndex, ...],
        alone: list[float],
        *,
        now_end: float,
        now: float,
        due: float | None,
        wait: float,
    ) -> tuple[list[tuple[int, int]], float, float] | None:
        """How to hold a new transfer (its slices, by candidate index and bytes), its
        expected start and its duration alone, when that completes no later than
        ``now_end``, when sending it now (its slices on their paths) would complete the
        paths' work, its own bytes last (:mod:`schedule`). The options: each candidate
        alone, and the transfer split over the candidates as they are alone
        (:func:`~controller.engine.slicing.split_alone`)."""
        queue, running = self.queue, self.fluid.count
        if not queue.active or self.effective_mode is not Mode.KV_AWARE:
            return None
        if any(not running(c.up) and not running(c.down) for c in candidates):
            return None  # a path where nothing runs: go now (as the release would)
        tid, size = ident[0], ident[4]
        options: list[tuple[list[tuple[int, int]], float]] = [
            ([(k, size)], alone[k]) for k in range(len(candidates))
        ]
        most = self._max_slices(ident, candidates)
        if most > 1 and len(candidates) > 1:
            order = sorted(range(len(candidates)), key=alone.__getitem__)
            nic = self.topology.hosts[ident[2]].capacity_bps
            split, split_s = split_alone(
                candidates, order, size, table=self.table, max_slices=most, nic_bps=nic
            )
            if len(split) > 1:
                options.append((split, split_s))
        best: tuple[list[tuple[int, int]], float, float] | None = None
        best_end = now_end + _TIE_S
        busy = self._busy_until(now)
        for plan, duration in options:
            ports = tuple(p for i, _ in plan for p in (candidates[i].up, candidates[i].down))
            h = queue.candidate(tid, ports, now, duration, due, max_wait_s=wait)
            start = queue.start_of(busy, now, h)
            end = start + duration
            if now < start <= h.latest and end <= best_end:
                best, best_end = (plan, start, duration), end - _TIE_S
        return best

    def _busy_until(self, now: float) -> Callable[[int], float]:
        """When the flows running on a port are expected to be done, by the fluid picture
        at ``now`` (0.0: none runs there); each port worked out once (the picture does
        not change while a plan reads it, and one decision plans several times)."""
        fluid, known = self.fluid, dict[int, float]()

        def busy(port: int) -> float:
            b = known.get(port)
            if b is None:
                b = known[port] = fluid.busy_until(port, now)
            return b

        return busy

    def _hold(self, t: InFlight, now: float, due: float | None, wait: float) -> None:
        """Queue a transfer the decision held (``due``: its deadline, if any; ``wait``:
        the longest it may be held)."""
        d = t.decision
        assert t.path is not None and d.expected_s is not None and d.start_at is not None
        ports = tuple(p for part in t.choice.parts for p in part.ports)
        h = self.queue.candidate(d.transfer_id, ports, now, d.expected_s, due, max_wait_s=wait)
        self.queue.add(h)
        self.queue.replan(self._busy_until(now), now)  # those it overtook start later
        self.counts.held += 1

    def _release(self, now: float) -> list[Update]:
        """Release the held transfers that may start now; refresh the others' starts.

        Outside kv-aware placement nothing is held: every held transfer goes.
        """
        queue = self.queue
        if not queue.held:
            return []
        running = self.fluid.count
        if self.effective_mode is Mode.KV_AWARE:
            due = queue.due(lambda p: running(p) > 0, now)
        else:
            due = queue.ordered()
            queue.held.clear()
        updates: list[Update] = []
        for h in due:
            t = self.inflight.transfers[h.transfer_id]
            self.inflight.start(t, now)
            self._run_parts(t, now)
            expired = now >= h.latest - CLOCK_SLACK_S
            updates.append(Released(t.id, now, now - t.requested, expired=expired))
        queue.replan(self._busy_until(now), now)
        return updates

    def waiting(self, transfer_id: int, now: float) -> float:
        """Seconds a transfer is still expected to be held; 0.0 when it may start.

        UnknownTransferError when it is not in flight (completed, timed out, cancelled
        or never decided).
        """
        if transfer_id not in self.inflight.transfers:
            raise UnknownTransferError(f"no transfer {transfer_id} is held or in flight")
        h = self.queue.held.get(transfer_id)
        return 0.0 if h is None else max(0.0, h.start_at - now)

    def releases(self, now: float) -> list[Update]:
        """Timeouts and the releases due at ``now`` (what ``tick`` does for held
        transfers, alone: the shell calls it at :meth:`next_release`)."""
        return self._expire(now) + self._release(now)

    def next_release(self) -> float | None:
        """When the next held transfer is released whatever runs (None: none is held)."""
        return self.queue.next_due()

    def held_by_path(self) -> dict[str, int]:
        """How many transfers are held on each path (``leaf>spine>leaf``)."""
        out: dict[str, int] = {}
        for tid in self.queue.held:
            path = self.inflight.transfers[tid].path
            if path is not None:
                key = str(path.path)
                out[key] = out.get(key, 0) + 1
        return out

    def cancel(self, transfer_id: int, now: float) -> list[Update]:
        """Give up a held transfer before its release: its pin, tag and bytes go back and
        the transfers behind it move forward. TransferStartedError once released (report
        its completion instead), UnknownTransferError when not in flight."""
        t = self.inflight.transfers.get(transfer_id)
        if t is None:
            raise UnknownTransferError(f"no transfer {transfer_id} is held or in flight")
        if t.began is not None:
            raise TransferStartedError(
                f"transfer {transfer_id} is not held (released at {t.began:.3f}): it may have "
                "started; report its completion instead"
            )
        self.queue.drop(transfer_id)
        self.inflight.pop(transfer_id)
        updates = self._free(t, now)
        self.counts.cancelled += 1
        updates.append(
            view.transfer_record(
                t, now, duration_s=None, baseline_s=None, slow=False, rerouted=False,
                cancelled=True,
            )
        )  # fmt: skip
        updates += self._release(now)
        return updates

    def _with_ports(
        self, host: str, candidates: tuple[PathIndex, ...], fallbacks: list[str]
    ) -> tuple[PathIndex, ...]:
        """The candidates whose spine has a free tag port for ``host``."""
        if not self.tags.any_full(host):
            return candidates
        full = [c.path.spine for c in candidates if not self.tags.free(host, c.path.spine)]
        if not full:
            return candidates
        fallbacks.append(f"every tag port of {', '.join(full)} is in use for {host}")
        kept = tuple(c for c in candidates if c.path.spine not in full)
        if not kept:
            self.counts.fallback("no-tag")
        return kept

    def _forced_path(self, pair: Pair, spine: str) -> int:
        """The index among the pair's paths of the one through ``spine``."""
        if pair[0] == pair[1]:
            raise EngineError(f"{pair[0]} is both ends: a transfer in one rack crosses no spine")
        candidates = self._all_paths(pair)
        for k, c in enumerate(candidates):
            if c.path.spine == spine:
                bad = self.topology.unusable_links().intersection(c.path.links)
                if bad:
                    cables = ", ".join(sorted(str(link) for link in bad))
                    raise PathDownError(
                        f"spine {spine!r} cannot carry {pair[0]} -> {pair[1]}: {cables} "
                        f"{'is' if len(bad) == 1 else 'are'} not up"
                    )
                return k
        names = ", ".join(c.path.spine for c in candidates)
        raise EngineError(f"spine {spine!r} is not on a path from {pair[0]} to {pair[1]}: {names}")

    def _force(self, ident: _Ident, pair: Pair, chosen: int, now: float) -> tuple[Decision, Choice]:
        """Pin a transfer on the pair's path number ``chosen`` whatever the engine prefers."""
        size = ident[4]
        candidates = self._all_paths(pair)
        tag = self._tag(self.tags.take(ident[2], candidates[chosen].path.spine))
        seen: list[float] = []
        costs, loads = evaluate(candidates, self.table, self.fluid, size, now, seen=seen)
        best = min(range(len(costs)), key=costs.__getitem__)
        path = candidates[chosen]
        self.counts.pinned += 1
        choice = Choice(
            contributions=((path.up, size), (path.down, size)),
            path=path,
            parts=(Part((path.up, path.down), size),),
            slices=(path,),
            candidates=candidates,
            costs=tuple(costs),
            loads=tuple(loads),
            chosen=chosen,
            best=best,
            seen=tuple(seen),
            shared_bytes=max(self.table.inflight[path.up], self.table.inflight[path.down]),
        )
        slices = (Slice(path.path, tag, size),) if tag is not None else ()
        decision = Decision(
            *ident, path.path, candidates[best].path, tag, "forced", expected_s=costs[chosen],
            slices=slices,
        )  # fmt: skip
        return decision, choice

    # -- completions and timeouts -------------------------------------------------------

    def complete(self, transfer_id: int, duration_s: float, now: float) -> list[Update]:
        """A transfer finished after ``duration_s`` seconds (as its sender measured)."""
        if not duration_s > 0:
            raise EngineError(f"a duration must be positive, got {duration_s}")
        t = self.inflight.pop(transfer_id)
        if t is None:
            late = self._timed_out.pop(transfer_id, None)
            if late is None:
                raise UnknownTransferError(f"no transfer {transfer_id} in flight")
            updates = self._late(late, duration_s, now)
        else:
            if t.began is None:  # its sender did not wait for the release
                self.queue.drop(t.id)
                t.began = max(t.requested, now - duration_s)
            updates = self._finish(t, duration_s, now)
        updates += self._expire(now)
        updates += self._release(now)
        updates += self._roll(now)
        return updates

    def _run_parts(self, t: InFlight, now: float) -> None:
        """Put ``t``'s flows in the fluid picture: it runs from ``now``."""
        for k, part in enumerate(t.choice.parts):
            self.fluid.add(part_key(t.id, k), part.ports, part.bytes, now)

    def _wait_parts(self, t: InFlight) -> None:
        """Put a held transfer's flows in the fluid picture as waiting on their ports."""
        for k, part in enumerate(t.choice.parts):
            self.fluid.wait(part_key(t.id, k), part.ports, part.bytes)

    def _stop_parts(self, t: InFlight, now: float) -> None:
        """Take ``t``'s flows out of the fluid picture (it ended, or it moves)."""
        for k in range(len(t.choice.parts)):
            self.fluid.remove(part_key(t.id, k), now)

    def _free(self, t: InFlight, now: float) -> list[Update]:
        """Give back what a transfer held: its bytes on the load table and its tag port
        (its pin is its port's range: nothing to remove)."""
        d = t.decision
        self.table.remove(t.choice.contributions)
        self._stop_parts(t, now)
        for tag in d.tags:
            self.tags.give(d.src, tag.src_port)
        return []

    def _finish(self, t: InFlight, duration_s: float | None, now: float) -> list[Update]:
        """Release a transfer that completed (``duration_s``) or timed out (None)."""
        d = t.decision
        self.queue.drop(t.id)
        expectation = self._expected_run(t, now)
        updates = self._free(t, now)
        memory = self.pairs.setdefault(t.pair, PairMemory())
        safety = self.settings.safety
        baseline = baseline_of(memory, d.bytes, expectation, safety)
        slow = duration_s is None or (
            baseline is not None and duration_s > safety.slow_factor * baseline
        )
        if duration_s is not None:
            memory.last_ratio = duration_s / baseline if baseline is not None else None
            remember(memory, d.bytes, expectation, duration_s, safety)
            self.counts.completed += 1
            for window in self.latency.add(now, duration_s):
                updates += self.latency.alerts(window, self.book)
        else:
            self.counts.timeouts += 1
        rerouted = False
        # between pods the engine places the first two hops only (its spine and
        # superspine); the far side is the superspine's ECMP, so a slow completion there
        # is no evidence against the spine it chose (a timeout still is)
        attributable = duration_s is None or t.path is None or t.path.path.superspine is None
        if (
            slow
            and attributable
            and t.path is not None
            and not d.local
            and self.effective_mode is Mode.KV_AWARE
        ):
            spine = t.path.path.spine
            if memory.avoiding(now) != spine:
                memory.avoid_spine = spine
                memory.avoid_until = now + safety.reroute_window_s
                rerouted = True
                self.counts.reroutes += 1
                if self.guard.reroute(now):
                    updates += self._trip(now)
                    updates += self._follow_ranges(now)
        updates.append(
            view.transfer_record(
                t, now, duration_s=duration_s, baseline_s=baseline, slow=slow, rerouted=rerouted
            )
        )
        if t.path is not None and not t.moved and self._judge_token(now):
            self._pending.append((t, t.began if t.began is not None else t.requested, now))
        return updates

    def expected_end(self, transfer_id: int, now: float) -> float | None:
        """When the engine's picture at ``now`` has a transfer done: a held one at its
        planned start plus its time alone, a running one when its slowest slice ends at
        the rates it has now (None: not in flight, or not pinned)."""
        t = self.inflight.transfers.get(transfer_id)
        if t is None:
            return None
        h = self.queue.held.get(transfer_id)
        if h is not None:
            return h.start_at + h.alone_s
        run = self._expected_run(t, now)
        return None if run is None or t.began is None else t.began + run

    def _expected_run(self, t: InFlight, now: float) -> float | None:
        """How long a pinned transfer should have run by the fluid picture, with all that
        ran beside it (its slowest slice's end, from its start); None when it was not
        pinned or never ran."""
        if t.path is None or t.began is None:
            return None
        ends = [self.fluid.expected_end(part_key(t.id, k), now) for k in range(len(t.choice.parts))]
        known = [e for e in ends if e is not None]
        if not known:
            return t.decision.expected_s
        return max(max(known) - t.began, 1e-9)

    def timed_out(self, transfer_id: int) -> bool:
        """True when ``transfer_id`` timed out and its completion may still come late."""
        return transfer_id in self._timed_out

    def _late(self, t: InFlight, duration_s: float, now: float) -> list[Update]:
        """A completion that came after its transfer timed out: logged (``late``), counted,
        and fed to the pair's baseline and the latency windows like any other.

        The timeout already released the transfer (pin, tag, bytes) and marked its pair.
        """
        d = t.decision
        memory = self.pairs.setdefault(t.pair, PairMemory())
        safety = self.settings.safety
        expectation = d.expected_s if t.path is not None else None
        baseline = baseline_of(memory, d.bytes, expectation, safety)
        remember(memory, d.bytes, expectation, duration_s, safety)
        self.counts.late += 1
        updates: list[Update] = []
        for window in self.latency.add(now, duration_s):
            updates += self.latency.alerts(window, self.book)
        updates.append(
            view.transfer_record(
                t, now, duration_s=duration_s, baseline_s=baseline, slow=True, rerouted=False,
                late=True,
            )
        )  # fmt: skip
        return updates

    def _judge_token(self, now: float) -> bool:
        """A token bucket (one second of burst) that samples transfers to judge."""
        elapsed = max(0.0, now - self._judge_last)
        self._judge_last = max(self._judge_last, now)
        self._judge_tokens = min(self._judge_rate, self._judge_tokens + elapsed * self._judge_rate)
        if self._judge_tokens >= 1.0:
            self._judge_tokens -= 1.0
            return True
        self.counts.unjudged += 1
        return False

    def _expire(self, now: float) -> list[Update]:
        updates: list[Update] = []
        for t in self.inflight.expired(now):
            updates += self._finish(t, None, now)
            self._timed_out[t.id] = t
        if len(self._timed_out) > _LATE_KEPT:
            for tid in list(self._timed_out)[: len(self._timed_out) - _LATE_KEPT]:
                del self._timed_out[tid]
        return updates

    def _trip(self, now: float) -> list[Update]:
        s = self.settings.safety
        count = self.guard.count(now)
        message = (
            f"{count} reroutes within {s.reroute_window_s:g}s (limit {s.reroute_limit}): "
            f"kv-aware placement disabled, ECMP until re-enabled or "
            f"{s.quiet_period_s:g}s pass"
        )
        self.counts.trips += 1
        return [
            SetMode(Mode.ECMP, "reroute limit exceeded"),
            *self.book.judge("scheduler_fallback", "fabric", True, message, "critical"),
            _log("mode", now, mode=str(Mode.ECMP), reason=message),
        ]

    # -- telemetry -----------------------------------------------------------------------

    def telemetry(self, reading: SwitchReading, now: float) -> list[Update]:
        """Fold in one poll of a switch's counters."""
        tau = self.settings.telemetry.smoothing_s
        updated = self.table.ingest(reading.switch, reading.ports, now, tau)
        self.fluid.refresh(updated, now)
        ports = self.table.ports
        for i in updated:
            state = self.table.state[i]
            assert state is not None
            self.tiers.add(ports[i].tier, state.raw_util)
        updates: list[Update] = []
        if updated and reading.switch in self._stale:
            self._stale.discard(reading.switch)
            updates += self.book.judge(
                "telemetry_stale", reading.switch, False, f"{reading.switch}: telemetry is back"
            )
        return updates

    def _staleness(self, switch: str, now: float) -> str | None:
        """None when ``switch``'s telemetry is fresh, else why it is not."""
        last = self.table.sampled_at.get(switch)
        if last is None:
            return f"stale telemetry: no sample from {switch} yet"
        age = now - last
        if age > self.settings.telemetry.staleness_limit_s:
            return f"stale telemetry: {switch} last sampled {age * 1e3:.0f} ms ago"
        return None

    # -- audit -----------------------------------------------------------------------------

    def audit(self, round_: AuditRound, now: float) -> list[Update]:
        """Apply one round of link probes: cables found down or miswired leave selection.

        A direction whose probe is missing is judged with its hold time and its
        counters (:mod:`liveness`); a cable is as bad as its worse direction, and down
        while a port at either end reports its link down (:mod:`ports`).
        """
        outcomes = probe_outcomes(self.topology, round_)
        verdicts: dict[LinkId, LinkVerdict] = {}
        updates: list[Update] = []
        span = SPAN_POLLS * self.settings.telemetry.poll_interval_s
        max_age = self.settings.telemetry.staleness_limit_s
        for origin, (link, probed) in outcomes.directions.items():
            counters = None
            if probed.status is LinkStatus.DOWN:
                self.counts.probes_missed += 1
                counters = counter_evidence(
                    self.table, self.topology, origin, span, now=now, max_age_s=max_age
                )
            judged = self.liveness.judge(origin, probed, now, counters)
            detail = judged.detail or f"{origin}: {judged.status}, probes missing within the hold"
            worst(verdicts, link, LinkVerdict(judged.status, detail))
            if judged.probes_lost is not None:
                updates += self.book.judge("probes_lost", str(origin), True, judged.probes_lost)
            elif probed.status is not LinkStatus.DOWN:
                updates += self.book.judge("probes_lost", str(origin), False, probed.detail)
        for link in list(verdicts):
            for end in link:
                if end not in outcomes.directions:
                    status = self.liveness.status(end)
                    worst(verdicts, link, LinkVerdict(status, f"{end}: {status} when last probed"))
                if self.ports.carrier_down(end):
                    worst(verdicts, link, LinkVerdict(LinkStatus.DOWN, _carrier_text(end)))
        updates += self._apply_verdicts(verdicts, now)
        seen = set(outcomes.unexpected)
        for text in sorted(seen | self._unexpected):
            updates += self.book.judge("unexpected_wiring", text, text in seen, text)
        self._unexpected = seen
        return updates

    def _apply_verdicts(self, verdicts: Mapping[LinkId, LinkVerdict], now: float) -> list[Update]:
        """Give each cable its verdict: those that change leave (or rejoin) selection,
        the transfers and flow pins on them follow, and the alerts say so."""
        updates: list[Update] = []
        broken: set[LinkId] = set()
        repaired = False
        for link, verdict in verdicts.items():
            if self.topology.link_status(link) is verdict.status:
                continue
            self.topology = self.topology.with_link_status(link, verdict.status)
            updates.append(LinkStatusChanged(link, verdict.status, verdict.detail))
            updates.append(
                _log("link", now, link=str(link), status=str(verdict.status), detail=verdict.detail)
            )
            for status in (LinkStatus.DOWN, LinkStatus.MISWIRED):
                updates += self.book.judge(
                    f"link_{status}",
                    str(link),
                    verdict.status is status,
                    f"link {link}: {verdict.detail}",
                    "critical",
                )
            if verdict.status is not LinkStatus.UP:
                broken.add(link)
            else:
                repaired = True
        if not (broken or repaired):
            return updates
        self._usable.clear()
        self._fresh.clear()
        updates += self._follow_ranges(now)
        if broken:
            updates += evacuate(self.flow_pins, broken, self._usable_between, self.table, now)
        if repaired:
            updates += restore(
                self.flow_pins, self._flow_pin_pair, self._usable_between, self.table, now
            )
        return updates

    # -- the switches' ports ---------------------------------------------------------------

    def port_states(self, reading: PortStates, now: float) -> list[Update]:
        """Fold in what a switch reports of its ports (:mod:`ports`): a speed that differs
        from the capacity in force becomes it; a carrier down takes its cable down at
        once, and a carrier back up gives the cable back to the probes' verdict; ports
        the fabric file and the switch disagree on raise alerts."""
        table = self.table
        found = self.ports.fold(reading, lambda ref: table.capacity[table.index[ref]])
        updates: list[Update] = []
        for ref, bps in found.capacities:
            updates += self._set_capacity(ref, bps, now)
        for name, subject, firing, message, severity in found.alerts:
            updates += self.book.judge(name, subject, firing, message, severity)
        for fields in found.records:
            updates.append(_log("port", now, **fields))
        links = {
            link
            for ref, _up in found.carriers
            if (link := self.topology.egress[ref].link) is not None
        }
        verdicts = {link: self._carrier_verdict(link) for link in sorted(links)}
        return updates + self._apply_verdicts(verdicts, now)

    def _set_capacity(self, ref: PortRef, bps: int, now: float) -> list[Update]:
        """Egress port ``ref`` runs at ``bps``: the model, the load table and the fluid
        picture's rates follow."""
        i = self.table.index[ref]
        was = int(self.table.capacity[i])
        self.table.set_capacity(i, bps)
        self.fluid.refresh((i,), now)
        self.topology = self.topology.with_capacity(ref, bps)
        self._auto_slices.clear()
        file_bps = self.ports.file[ref]
        return [
            CapacityChanged(ref, bps, was),
            _log("capacity", now, port=str(ref), capacity_bps=bps, was_bps=was,
                 file_capacity_bps=file_bps),
        ]  # fmt: skip

    def _carrier_verdict(self, link: LinkId) -> LinkVerdict:
        """A cable's status by its ends' carriers: down when either is, else what the
        probes last found of its two directions."""
        for end in link:
            if self.ports.carrier_down(end):
                return LinkVerdict(LinkStatus.DOWN, _carrier_text(end))
        verdicts: dict[LinkId, LinkVerdict] = {}
        worst(verdicts, link, LinkVerdict(LinkStatus.UP, "its ports report their links up"))
        for end in link:
            status = self.liveness.status(end)
            if status is not LinkStatus.UP:
                worst(verdicts, link, LinkVerdict(status, f"{end}: {status} when last probed"))
        return verdicts[link]

    def _follow_ranges(self, now: float) -> list[Update]:
        """Move every tagged transfer in flight (each of its slices, by its own tag) to
        where its range now sends it: the path :meth:`Topology.range_path` gives in
        kv-aware mode, ECMP outside it (the ranges are off). Its load moves with it; one
        ``TransferMoved`` per slice that moves."""
        on = self.effective_mode is Mode.KV_AWARE
        bad = self.topology.unusable_links()
        updates: list[Update] = []
        for t in list(self.inflight.transfers.values()):
            d = t.decision
            if d.local:
                continue
            slots = t.choice.slices or (None,) * len(d.tags)
            for j, tag in enumerate(d.tags):
                spine = self.tags.spine_of(tag.src_port)
                if spine is None:
                    continue
                target = self.topology.range_path(*t.pair, spine) if on else None
                slot = slots[j] if j < len(slots) else None
                current = slot.path if slot is not None else None
                if target is None and current is None:
                    continue
                if (
                    target is not None
                    and current is not None
                    and target.spine == current.spine
                    and not bad.intersection(current.links)
                ):
                    continue  # still on its range's spine (between pods: any live route)
                updates.append(self._move(t, j, target, now))
                slots = t.choice.slices
        return updates

    def _move(self, t: InFlight, slot: int, target: SpinePath | None, now: float) -> Update:
        """Put slice ``slot`` of ``t`` on ``target`` (None: spread as ECMP spreads it);
        the transfer's load and its flows in the fluid picture follow."""
        ch, d = t.choice, t.decision
        sizes = [s.bytes for s in d.slices] or [d.bytes] * len(d.tags) or [d.bytes]
        paths = list(ch.slices) or [None] * len(sizes)
        running = t.began is not None
        left = float(d.bytes)
        if running:
            left = sum(self.fluid.left(part_key(t.id, k), now) for k in range(len(ch.parts)))
        self._stop_parts(t, now)
        self.table.remove(ch.contributions)
        before = paths[slot]
        paths[slot] = (
            next(c for c in self._all_paths(t.pair) if c.path == target)
            if target is not None
            else None
        )
        if slot == 0:
            self.inflight.repin(t, paths[0])
        usable = self._usable_paths(t.pair)
        contributions: list[tuple[int, int]] = []
        parts: list[Part] = []
        total = sum(sizes[: len(paths)]) or d.bytes
        for path, nbytes in zip(paths, sizes, strict=False):
            remaining = round(left * nbytes / total)
            if path is None:
                contributions += _spread(usable, nbytes)
                parts += _spread_parts(usable, remaining)
            else:
                contributions += ((path.up, nbytes), (path.down, nbytes))
                if remaining > 0:
                    parts.append(Part((path.up, path.down), remaining))
        ch.contributions, ch.parts, ch.slices = tuple(contributions), tuple(parts), tuple(paths)
        self.table.add(ch.contributions)
        if running:
            self._run_parts(t, now)
        else:
            self._wait_parts(t)
        old = before.path if before is not None else "ecmp"
        t.moved.append(f"{old} -> {target or 'ecmp'} at {now:.3f}")
        self.counts.moved += 1
        return TransferMoved(t.id, target.spine if target is not None else None, part=slot)

    # -- flow pins -----------------------------------------------------------------------

    def pin_flow(
        self, pin_id: str, flow: FlowTuple, spine: str, now: float
    ) -> tuple[FlowPin, list[Update]]:
        """Hold ``flow`` on ``spine`` in every mode; refused like a forced transfer."""
        pin = self._new_flow_pin(pin_id, flow, spine)
        self.flow_pins.put(pin)
        return pin, [InstallFlowPin(pin), _log("flow_pin", now, action="pin", **pin.as_dict())]

    def unpin_flow(self, pin_id: str, now: float) -> list[Update]:
        """Release a flow pin (UnknownPinError if there is none): its flow takes ECMP."""
        pin = self.flow_pins.pop(pin_id)
        updates: list[Update] = [RemoveFlowPin(pin)] if pin.path is not None else []
        updates.append(_log("flow_pin", now, action="unpin", **pin.as_dict()))
        return updates

    def adopt_flow_pin(
        self, pin_id: str, flow: FlowTuple, requested: str, spine: str, now: float
    ) -> tuple[FlowPin, list[Update]]:
        """Take over a flow pin found on a leaf (a restart, a takeover) on ``spine``.

        Refused (EngineError) when its hosts, spine or id make no sense here or its
        5-tuple is pinned already; moved at once when its path has a cable down.
        """
        src, dst = self._host(flow.src, "src"), self._host(flow.dst, "dst")
        self.flow_pins.check_new(pin_id, flow)
        path = next(
            (c.path for c in self._all_paths((src.leaf, dst.leaf)) if c.path.spine == spine), None
        )
        if path is None:
            raise EngineError(f"spine {spine!r} is not on a path from {flow.src} to {flow.dst}")
        pin = FlowPin(pin_id, flow, src.leaf, src.ipv4, dst.ipv4, requested, path)
        self.flow_pins.put(pin)
        updates: list[Update] = [_log("flow_pin", now, action="adopt", **pin.as_dict())]
        bad = self.topology.unusable_links().intersection(path.links)
        if bad:
            updates += evacuate(self.flow_pins, set(bad), self._usable_between, self.table, now)
        return self.flow_pins.by_id[pin_id], updates

    def adopt(
        self, src: str, dst: str, spine: str, size: int, *, tag_port: int, now: float
    ) -> tuple[Adoption, list[Update]]:
        """Count a transfer in flight that another controller placed (its pin was found
        on a leaf after a restart or a takeover) until :meth:`release`: its ``size``
        bytes load the two ports of its path, so new transfers do not herd onto its
        spine, and its tag port is withheld from the pool. Unknown hosts or a spine off
        their paths count nothing (the pin is still tracked by the caller)."""
        contributions: tuple[tuple[int, int], ...] = ()
        src_host, dst_host = self.topology.hosts.get(src), self.topology.hosts.get(dst)
        if src_host is not None and dst_host is not None:
            for path in self.topology.spine_paths(src_host.leaf, dst_host.leaf):
                if path.spine == spine:
                    index = self.table.index
                    contributions = ((index[path.up], size), (index[path.down], size))
        self.table.add(contributions)
        key = 0
        if contributions:
            self._adoptions += 1
            key = -self._adoptions
            self.fluid.add(key, tuple(port for port, _ in contributions), size, now)
        reserved = self.tags.reserve(src, tag_port)
        adoption = Adoption(contributions, src, tag_port, reserved, key)
        return adoption, []

    def release(self, adoption: Adoption, now: float) -> list[Update]:
        """The adopted transfer ended (completed or timed out): its load and port go back."""
        self.table.remove(adoption.contributions)
        if adoption.key:
            self.fluid.remove(adoption.key, now)
        if adoption.tag_reserved:
            self.tags.give(adoption.host, adoption.tag_port)
        return []

    def _new_flow_pin(self, pin_id: str, flow: FlowTuple, spine: str) -> FlowPin:
        src, dst = self._host(flow.src, "src"), self._host(flow.dst, "dst")
        if src.name == dst.name:
            raise EngineError(f"source and destination are both {src.name!r}")
        if not 0 <= flow.protocol <= 255:
            raise EngineError(f"protocol must be 0-255, got {flow.protocol}")
        for name, port in (("src_port", flow.src_port), ("dst_port", flow.dst_port)):
            if not 0 <= port <= 65535:
                raise EngineError(f"{name} must be 0-65535, got {port}")
        pair = (src.leaf, dst.leaf)
        k = self._forced_path(pair, spine)
        self.flow_pins.check_new(pin_id, flow)
        path = self._all_paths(pair)[k].path
        return FlowPin(pin_id, flow, src.leaf, src.ipv4, dst.ipv4, spine, path)

    def _usable_between(self, src_leaf: str, dst_leaf: str) -> tuple[PathIndex, ...]:
        return self._usable_paths((src_leaf, dst_leaf))

    def _flow_pin_pair(self, pin: FlowPin) -> Pair:
        return pin.leaf, self.topology.hosts[pin.flow.dst].leaf

    # -- time ------------------------------------------------------------------------------

    def tick(self, now: float, *, judge: bool = True) -> list[Update]:
        """Periodic work: timeouts, staleness alerts, the quiet period, alert windows, and
        (``judge``) the offline judgement of finished transfers; a service that answers
        requests meanwhile leaves that to :meth:`judge`, a slice at a time."""
        updates = self._expire(now)
        updates += self._release(now)
        limit = self.settings.telemetry.staleness_limit_s
        if now - self.started > limit:
            for sw in self.topology.config.switches:
                if sw.name not in self._stale and self._staleness(sw.name, now) is not None:
                    self._stale.add(sw.name)
                    reason = self._staleness(sw.name, now)
                    updates += self.book.judge("telemetry_stale", sw.name, True, f"{reason}")
        if self.guard.quiet_over(now):
            self.guard.reset()
            updates += self.book.judge(
                "scheduler_fallback",
                "fabric",
                False,
                "kv-aware placement resumed after quiet period",
            )
            if self.mode is Mode.KV_AWARE:
                updates.append(SetMode(Mode.KV_AWARE, "quiet period over"))
                updates.append(_log("mode", now, mode=str(Mode.KV_AWARE), reason="quiet period"))
                updates += self._follow_ranges(now)
        if judge and self._pending:
            updates += self._judge_pending(now)[0]
        updates += self._roll(now)
        return updates

    def judge(self, now: float, limit: int) -> tuple[list[Update], bool]:
        """Judge at most ``limit`` finished transfers whose covering polls have arrived
        (what :meth:`tick` does when asked to); True when more are ready now."""
        return self._judge_pending(now, limit)

    def _roll(self, now: float) -> list[Update]:
        updates: list[Update] = []
        for window in self.latency.roll(now):
            updates += self.latency.alerts(window, self.book)
        for eff in self.efficiency.roll(now):
            updates += self.efficiency.alerts(eff, self.book)
        stats = self.tiers.roll(now)
        if stats is not None:
            updates += self.tiers.alerts(stats, self.book)
        return updates

    def _judge_pending(self, now: float, limit: int | None = None) -> tuple[list[Update], bool]:
        """Recompute offline the finished transfers whose covering polls have arrived (at
        most ``limit``); True when it stopped at the limit with more pending."""
        updates: list[Update] = []
        grace = 4 * self.settings.telemetry.staleness_limit_s
        tolerance = self.settings.alerts.efficiency_tolerance
        done = 0
        while self._pending:
            if limit is not None and done >= limit:
                return updates, True
            done += 1
            t, start, end = self._pending[0]
            ch = t.choice
            verdict = offline_verdict(
                self.table,
                ch.candidates,
                ch.chosen,
                size=t.decision.bytes,
                start=start,
                end=end,
                tolerance=tolerance,
                shared=ch.shared_bytes,
            )
            if verdict is None:
                if now - end <= grace:
                    break
                self._pending.popleft()
                self.counts.unjudged += 1
                continue
            self._pending.popleft()
            for window in self.efficiency.add(now, verdict.efficient):
                updates += self.efficiency.alerts(window, self.book)
            updates.append(
                _log(
                    "efficiency",
                    now,
                    trace_id=t.decision.trace_id,
                    transfer_id=t.id,
                    chosen=str(ch.candidates[verdict.chosen].path),
                    offline_best=str(ch.candidates[verdict.best].path),
                    efficient=verdict.efficient,
                    chosen_cost_s=verdict.costs[verdict.chosen],
                    best_cost_s=verdict.costs[verdict.best],
                )
            )
        return updates, False

    # -- helpers ---------------------------------------------------------------------------

    def _host(self, name: str, role: str) -> HostConfig:
        try:
            return self.topology.host(name)
        except TopologyError as exc:
            raise UnknownHostError(f"{role}: {exc}") from None

    def _all_paths(self, pair: Pair) -> tuple[PathIndex, ...]:
        paths = self._paths.get(pair)
        if paths is None:
            index = self.table.index
            paths = tuple(
                PathIndex(p, index[p.up], index[p.down]) for p in self.topology.spine_paths(*pair)
            )
            self._paths[pair] = paths
        return paths

    def _usable_paths(self, pair: Pair) -> tuple[PathIndex, ...]:
        usable = self._usable.get(pair)
        if usable is None:
            bad = self.topology.unusable_links()
            usable = tuple(c for c in self._all_paths(pair) if not bad.intersection(c.path.links))
            self._usable[pair] = usable
        return usable

    def _fresh_candidates(
        self, pair: Pair, usable: tuple[PathIndex, ...], now: float
    ) -> tuple[tuple[PathIndex, ...], tuple[str, ...]]:
        """The usable paths whose spine has fresh telemetry, and the spines left out.

        Cached per pair until the earliest included spine could turn stale, or until
        some switch turns fresh again (``fresh_epoch``) or a cable changes status.
        """
        table = self.table
        entry = self._fresh.get(pair)
        if entry is not None and entry[0] == table.fresh_epoch and now <= entry[1]:
            return entry[2], entry[3]
        limit = table.staleness_s
        sampled = table.sampled_at
        fresh: list[PathIndex] = []
        left: list[str] = []
        valid_until = float("inf")
        for c in usable:
            t = sampled.get(c.path.spine)
            if t is not None and now - t <= limit:
                fresh.append(c)
                valid_until = min(valid_until, t + limit)
            else:
                left.append(c.path.spine)
        # all fresh: the same tuple as before, so that what is cached by its identity
        # (the candidates' port arrays, :func:`selection._ports`) stays cached
        result = (usable if not left else tuple(fresh), tuple(left))
        self._fresh[pair] = (table.fresh_epoch, valid_until, *result)
        return result


def _carrier_text(end: PortRef) -> str:
    return f"{end} reports its link down (oper-status)"


_TIE_S = 1e-9
"""Completions this close are equal: a tie holds (sending now would slow the others)."""

_LATE_KEPT = 4096
"""Timed-out transfers remembered for a late completion (the oldest are forgotten)."""


def _spread(paths: tuple[PathIndex, ...], size: int) -> tuple[tuple[int, int], ...]:
    """Contributions of a transfer ECMP may hash onto any of ``paths``: equal shares."""
    n = len(paths)
    if n == 0:
        return ()
    share, extra = divmod(size, n)
    out: list[tuple[int, int]] = []
    for k, c in enumerate(paths):
        b = share + (1 if k < extra else 0)
        if b:
            out.append((c.up, b))
            out.append((c.down, b))
    return tuple(out)


def _contributions(
    candidates: tuple[PathIndex, ...], plan: list[tuple[int, int]]
) -> tuple[tuple[int, int], ...]:
    """The load-table contributions of slices: (port, bytes) on both ports of each."""
    out: list[tuple[int, int]] = []
    for i, nbytes in plan:
        c = candidates[i]
        out += ((c.up, nbytes), (c.down, nbytes))
    return tuple(out)


def _spread_parts(paths: tuple[PathIndex, ...], size: int) -> tuple[Part, ...]:
    """The flows of a transfer ECMP may hash onto any of ``paths``: one per path, each
    with an equal share of the bytes (what ECMP puts on each, on average)."""
    n = len(paths)
    if n == 0 or size <= 0:
        return ()
    share, extra = divmod(size, n)
    return tuple(
        Part((c.up, c.down), share + (1 if k < extra else 0))
        for k, c in enumerate(paths)
        if share + (1 if k < extra else 0)
    )


def _now(t: InFlight) -> TransferNow:
    """A transfer in flight as the shell reads it."""
    path = t.path.path if t.path is not None else None
    slices = tuple(c.path if c is not None else None for c in t.choice.slices)
    return TransferNow(
        t.decision, t.pair, t.requested, t.deadline, path, held=t.began is None, slices=slices
    )


def _log(event: str, now: float, **fields: object) -> LogRecord:
    return LogRecord(event, {"time": now, **fields})
