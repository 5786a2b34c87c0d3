"""The modes' drivers: who sends what, when, and on which path.

A :class:`Driver` runs one mode over one schedule on an engine. What all modes share
lives here:

- phases run one after the other, as in the lab: a phase starts when the previous
  one's transfers have all ended; a *sequential* phase starts each transfer its gap
  after the previous one ended, the other kinds at their offsets;
- transfers start after the scenario's warm-up (the background and, in kv-aware, the
  telemetry polls run from time 0), and one that has not finished after the
  scenario's ``transfer_timeout`` times out: a censored result (it took at least
  that long), as in the lab;
- a transfer's completion time runs from its arrival (its request) to its last byte,
  as in the lab: a staggered burst's hold (``Arrival.hold_s``: the transfer is placed
  that much later) and a controller's hold (``scheduled``) count;
- the scenario's cable events (relative to the end of the warm-up) change link
  capacities; a cable that goes down leaves the ECMP groups after the audit would
  find it (``audit_misses`` rounds of ``audit_interval``), as the controller then
  rewrites the groups; flows hashed onto it stall until then and are hashed again
  over the remaining members. As the controller does, a leaf keeps one group per
  destination leaf: a spine is out of it when the cable from the source leaf *or* the
  one to the destination leaf is down (:meth:`Driver.group`);
- the background (:class:`BackgroundRun`) runs in every mode from time 0, each flow
  of the plan (:mod:`experiment.background`, the lab's 5-tuples) on the spine the
  source leaf's group hashes it to: UDP at a constant rate (a link it overloads drops
  the excess), TCP elastic and capped at its rate. When the groups are rewritten it is
  hashed again, as the data plane hashes it, whatever the mode: placement modes
  steer the KV transfers, not the other traffic. A capacity change moves nothing
  (the groups are unweighted), but what the background gets follows it at once;
- ``utilisation()`` is sampled on a timer, per tier.

ECMP is the data plane's own choice (:mod:`experiment.ecmp`): the CRC-16/ARC hash of
(source IP, destination IP, protocol, source port, destination port, flowlet salt)
that ``kv_fabric.p4``'s action selector computes, member ``hash % n`` of the source
leaf's group in uplink-port order. Between pods (:mod:`simulator.pods`) the spine and
then the superspine hash the flow again over their own groups (the spine's uplinks in
port order; the superspine's ports towards the destination leaf's spines), over the
same 15 bytes (5-tuple and flowlet salt) with another algorithm per tier: CRC-32 at
the spine, CRC-16/CCITT at the superspine (:func:`tier_hash`). That is an assumption,
and a necessary one: ``kv_fabric.p4`` deployed unchanged at every tier would compute
the *same* hash at each, so a flow's choices would be the same member index at every
tier (ECMP polarisation). A per-switch seed does not help a CRC, which is affine in
its input: a seed only XORs a constant into the hash, so the tiers' choices stay
correlated (of a pod's 16 spine-superspine routes, seeded CRC-16s reach 2). A
different polynomial per tier, as operators configure against polarisation, spreads a
flow's choices independently. The modes:

- ``ecmp``: one TCP connection per transfer, from the schedule's ECMP source port;
- ``ecmp-k``: ``k`` connections of ``1/k`` of the bytes each, every one hashed on its
  own (Mooncake and NIXL move a KV cache over several connections or QPs); the
  transfer ends with its last connection;
- ``flowlet``: LetFlow. A flow's flowlets start at (discretely) exponential intervals
  of mean ``flowlet_period`` (a fluid model has no packet gaps, so the gaps are a
  parameter); each new flowlet takes the next salt, as the data plane's flowlet table
  does, and is hashed again. The background sends without gaps longer than the
  flowlet timeout (the lab's UDP datagrams are tens of milliseconds apart at most),
  so each of its flows keeps its first flowlet's salt, with its own source ports
  (:func:`experiment.background.for_flowlet`, as in the lab); a rewrite of the groups
  starts a new flowlet generation, and every background flow re-hashes with the next
  salt;
- ``isolated``: every transfer alone (one after the other, as the lab runs them) on
  the spine with the most capacity left by the background: the bound no placement
  beats.

``kv-aware`` is :mod:`simulator.kvaware`; the references ``spray`` and ``bound`` are
:mod:`simulator.reference`.
"""

from __future__ import annotations

import binascii
import math
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from experiment.arrivals import Arrival, Schedule
from experiment.background import BackgroundFlow, for_flowlet
from experiment.ecmp import FLOWLET_STEP, PROTOCOLS, crc16_arc, pack, selector_hash, uplink_order
from experiment.flows import ECMP_PORTS, RECEIVER_PORT
from experiment.results import ModeRun, TransferResult
from experiment.scenario import LinkEvent
from simulator.engine import FabricEngine, RatePolicy, Timer
from simulator.maxmin import FloatArray
from simulator.workload import Workload

TCP = 6
SPINE_TIER = 1
SUPERSPINE_TIER = 2


def tier_hash(tier: int, data: bytes) -> int:
    """The hash of a flow's 15 bytes at the spine (CRC-32) or the superspine (CRC-16/CCITT);
    the leaf's is ``kv_fabric.p4``'s CRC-16/ARC (:meth:`Driver.ecmp_spine`)."""
    return zlib.crc32(data) if tier == SPINE_TIER else binascii.crc_hqx(data, 0)


TierSeries = dict[str, list[tuple[float, float]]]
"""Per tier: (time, mean utilisation) samples, for the utilisation-over-time plot."""


@dataclass(slots=True)
class Live:
    """A transfer in progress: its flows (id -> spine) and when it arrived."""

    arrival: Arrival
    started: float
    flows: dict[int, str | None] = field(default_factory=dict)
    timeout: Timer | None = None
    spine: str | None = None
    decision_s: float | None = None
    held_s: float = 0.0  # from the arrival to its first flow's start


@dataclass(slots=True)
class BackgroundRun:
    """A background flow in a run: its plan, its engine flow, where its hash puts it now
    and the salt it is hashed with."""

    plan: BackgroundFlow
    flow: int
    spine: str
    salt: int


class Driver:
    """One mode's run of one schedule (see the module docstring)."""

    mode = "ecmp"
    rate_policy = RatePolicy.MAX_MIN
    """How the engine must share links for this mode."""

    def __init__(
        self,
        engine: FabricEngine,
        workload: Workload,
        schedule: Schedule,
        *,
        repeat: int = 1,
        on_transfer: Callable[[], None] | None = None,
    ) -> None:
        self.engine = engine
        self.work = workload
        self.net = workload.network
        self.schedule = schedule
        self.scenario = workload.scenario
        self.settings = self.scenario.simulation
        self.controller = self.settings.controller or workload.fabric.controller
        self.run_record = ModeRun(self.mode, repeat)
        self.series: TierSeries = {tier: [] for tier in self.net.tiers}
        tiers = list(self.net.tiers.values())
        sizes = np.array([t.size for t in tiers], dtype=np.int64)
        self._tier_links = np.concatenate(tiers) if tiers else np.zeros(0, dtype=np.int64)
        self._tier_of = np.repeat(np.arange(len(tiers)), sizes)  # per sampled link
        self._tier_sizes = np.maximum(sizes, 1)
        hist = np.zeros((len(tiers), HIST_BINS + 1), dtype=np.int64)
        self._hist_all = hist.reshape(-1)  # every tier's histogram, one after the other
        self._hist = dict(zip(self.net.tiers, hist, strict=True))
        self._on_transfer = on_transfer
        self.t0 = self.scenario.run.warmup_s
        self.ip = {h.name: h.ipv4 for h in workload.fabric.hosts}
        self.groups = {leaf: uplink_order(workload.fabric, leaf) for leaf in self.net.leaves}
        """Each leaf's uplinks in member order (every member, up or down)."""
        self.down: set[tuple[str, str]] = set()
        self.grouped_down: frozenset[tuple[str, str]] = frozenset()
        """The cables down when the controller last rewrote the groups."""
        self._live: dict[tuple[str, str], list[str]] = {}  # (src, dst leaf) -> live group
        self.repeat = repeat
        self.background: list[BackgroundRun] = []
        self._bg_load: FloatArray | None = None
        self.live: dict[int, Live] = {}
        self.flow_owner: dict[int, int] = {}
        self._phase = 0
        self._left_in_phase = 0
        self._rng = random.Random(f"kvfabric-simulate:{self.mode}:{schedule.seed}")
        self.interval = self.settings.sample_interval_s or _sample_interval(workload)
        self.provisioned = self.net.capacity.copy()
        """Each link's capacity while it is up."""
        self.flow_port: dict[int, int] = {}
        self.flow_salt: dict[int, int] = {}
        self._then: dict[int, Callable[[], None] | None] = {}
        self._prefix: dict[tuple[str, str, int], int] = {}  # CRC of a 5-tuple, before the salt

    # -- the run --------------------------------------------------------------------

    def run(self) -> ModeRun:
        """Simulate the whole schedule; the mode's record, as the lab makes it."""
        for plan in self.background_plan():
            spine = self.background_spine(plan, self.background_salt)
            flow = self.engine.start_background(
                self.background_path(plan, spine), plan.rate_bps, elastic=plan.elastic
            )
            self.background.append(BackgroundRun(plan, flow, spine, self.background_salt))
        for e in self.scenario.events:
            self.engine.at(self.t0 + e.at_s, partial(self._cable_event, e))
        self.prepare()
        self.engine.at(self.t0, self._sample, daemon=True)
        self.engine.at(self.t0, self._next_phase)
        self.engine.run()
        for live in list(self.live.values()):
            self._fail(live, "did not finish: its path stayed down")
        self.run_record.tier_samples = {
            tier: _quantiles(hist) for tier, hist in self._hist.items() if hist.sum()
        }
        self.finish()
        return self.run_record

    background_salt = 0
    """The salt the background is hashed with (flowlet mode: a slot's first flowlet's)."""

    def background_plan(self) -> Sequence[BackgroundFlow]:
        """The background flows of this mode's run (the ECMP plan)."""
        return self.work.background

    def background_path(self, plan: BackgroundFlow, spine: str) -> tuple[int, ...]:
        """The links a background flow crosses through ``spine``."""
        return self.net.path(plan.key.src, plan.key.dst, spine)

    def background_spine(
        self, plan: BackgroundFlow, salt: int, down: frozenset[tuple[str, str]] | None = None
    ) -> str:
        """The spine the groups (those of the ``down`` cables; default: today's) hash a
        background flow to: ``kv_fabric.p4``'s hash of its 5-tuple and ``salt``."""
        group = self.group(plan.src_leaf, plan.dst_leaf, down)
        k = plan.key
        h = selector_hash(self.ip[k.src], self.ip[k.dst], PROTOCOLS[k.protocol], k.src_port,
                          k.dst_port, salt=salt)  # fmt: skip
        return group[h % len(group)]

    def background_load(self) -> FloatArray:
        """Each link's background as planned (UDP's rate, TCP's cap) where it runs now."""
        if self._bg_load is None:
            load = np.zeros(self.net.nlinks)
            for bg in self.background:
                for link in self.engine.path_of(bg.flow):
                    load[link] += bg.plan.rate_bps
            self._bg_load = load
        return self._bg_load

    def prepare(self) -> None:
        """Set up before the first transfer (kv-aware starts its polls here)."""

    def finish(self) -> None:
        """Complete the record after the run (kv-aware adds its efficiency)."""

    # -- phases and arrivals --------------------------------------------------------

    def _next_phase(self) -> None:
        while self._phase < len(self.schedule.phases):
            plan = self.schedule.phases[self._phase]
            self._phase += 1
            if not plan.arrivals:
                continue
            self._left_in_phase = len(plan.arrivals)
            if self.sequential(plan.sequential):
                self._chain(plan.arrivals, 0, gaps=plan.sequential)
            else:
                now = self.engine.now
                for a in plan.arrivals:
                    self.engine.at(now + a.at_s, partial(self._arrive, a))
            return

    def sequential(self, phase_is_sequential: bool) -> bool:
        """Whether a phase's transfers go one at a time (isolated: always)."""
        return phase_is_sequential

    def _chain(self, arrivals: Sequence[Arrival], k: int, *, gaps: bool) -> None:
        a = arrivals[k]
        at = self.engine.now + (a.at_s if gaps and k else 0.0)

        def go() -> None:
            self._arrive(a, then=(lambda: self._chain(arrivals, k + 1, gaps=gaps)))

        if k + 1 < len(arrivals):
            self.engine.at(at, go)
        else:
            self.engine.at(at, lambda: self._arrive(a))

    def _arrive(self, a: Arrival, then: Callable[[], None] | None = None) -> None:
        live = Live(a, self.engine.now)
        self.live[a.index] = live
        timeout = self.scenario.run.transfer_timeout_s
        live.timeout = self.engine.at(
            self.engine.now + timeout,
            lambda: self._fail(live, f"timed out after {timeout:g}s", censored_s=timeout),
        )
        self._then[a.index] = then
        if a.hold_s > 0:
            live.held_s = a.hold_s
            self.engine.at(self.engine.now + a.hold_s, partial(self._placed, live))
        else:
            self.place(live)

    def _placed(self, live: Live) -> None:
        """Place a held-back transfer, unless it already failed (timed out)."""
        if live.arrival.index in self.live:
            self.place(live)

    def place(self, live: Live) -> None:
        """Start the transfer's flows (ECMP: one, hashed)."""
        a = live.arrival
        spine = self.ecmp_spine(a.src, a.dst, a.ecmp_port)
        live.spine = spine
        self.start(live, spine, a.nbytes, a.ecmp_port)

    def start(self, live: Live, spine: str | None, nbytes: float, sport: int) -> int:
        """Start one flow of ``live`` now on ``spine``."""
        a = live.arrival
        flow = self.engine.start_flow(self.path(a, spine), nbytes, self._flow_done, kv=self.tagged)
        live.flows[flow] = spine
        self.flow_owner[flow] = a.index
        self.flow_started(flow, live, sport)
        return flow

    def path(self, a: Arrival, spine: str | None) -> tuple[int, ...]:
        """The links a flow of ``a`` crosses through ``spine`` (or route)."""
        return self.net.path(a.src, a.dst, spine)

    tagged = False
    """Whether this mode's transfers carry the KV tag (counted as KV by the switches)."""

    def flow_started(self, flow: int, live: Live, sport: int) -> None:
        """A flow of ``live`` started (flowlet schedules its flowlets here)."""

    def _flow_done(self, flow: int, now: float) -> None:
        index = self.flow_owner.pop(flow, None)
        if index is None:
            return
        live = self.live.get(index)
        if live is None:
            return
        live.flows.pop(flow, None)
        if not live.flows:
            self._complete(live, now)

    def _complete(self, live: Live, now: float) -> None:
        a = live.arrival
        del self.live[a.index]
        if live.timeout is not None:
            self.engine.cancel(live.timeout)
        fct = now - live.started
        self.record(live, fct, None)
        self.completed(live, fct, now)
        self._ended(a.index)

    def completed(self, live: Live, fct: float, now: float) -> None:
        """A transfer ended (kv-aware tells the controller here)."""

    def _fail(self, live: Live, why: str, *, censored_s: float | None = None) -> None:
        """End a transfer without its last byte: timed out (``censored_s``: it took at least
        that long, a censored result as in the lab) or failed."""
        a = live.arrival
        if a.index not in self.live:
            return
        del self.live[a.index]
        for flow in list(live.flows):
            self.flow_owner.pop(flow, None)
            if self.engine.is_active(flow):
                self.engine.stop_flow(flow)
        self.record(live, None, why, censored_s=censored_s)
        self.failed(live, self.engine.now)
        self._ended(a.index)

    def failed(self, live: Live, now: float) -> None:
        """A transfer failed (kv-aware lets the controller time it out)."""

    def record(
        self, live: Live, fct: float | None, error: str | None, *, censored_s: float | None = None
    ) -> None:
        """Add the transfer's result to the record."""
        a = live.arrival
        self.run_record.transfers.append(
            TransferResult(
                a.index, a.src, a.dst, a.nbytes, fct, live.spine, error, live.decision_s,
                held_s=live.held_s, deadline_s=a.deadline_s, phase=a.phase,
                phase_kind=str(self.schedule.phases[a.phase].phase.kind),
                floor_s=self.floor(a), censored_s=censored_s,
            )
        )  # fmt: skip
        if self._on_transfer is not None:
            self._on_transfer()

    def floor(self, a: Arrival) -> float | None:
        """The least time ``a`` can take in any mode (the bound reference's; None here)."""
        return None

    def _ended(self, index: int) -> None:
        then = self._then.pop(index, None)
        self._left_in_phase -= 1
        if then is not None:
            then()
        elif self._left_in_phase <= 0:
            self._next_phase()

    # -- ECMP and the cables --------------------------------------------------------

    def ecmp_spine(self, src: str, dst: str, sport: int, salt: int = 0) -> str | None:
        """The spine the source leaf's ECMP group hashes a flow to (None: same leaf); between
        pods, the route the leaf's, the spine's and the superspine's hashes give."""
        a, b = self.net.leaf_of[src], self.net.leaf_of[dst]
        if a == b:
            return None
        group = self.group(a, b)
        key = (src, dst, sport)
        prefix = self._prefix.get(key)
        if prefix is None:  # the 13 bytes before the salt; the salt's 2 continue the CRC
            prefix = self._prefix[key] = crc16_arc(self._tuple(src, dst, sport))
        spine = group[crc16_arc(salt.to_bytes(2, "big"), prefix) % len(group)]
        if not self.net.superspines or (spine, b) in self.net.down:
            return spine
        above = self.net.superspines_of(spine)
        data = self._tuple(src, dst, sport) + salt.to_bytes(2, "big")
        superspine = above[tier_hash(SPINE_TIER, data) % len(above)]
        return self.route_via(src, dst, (sport, salt), spine, superspine)

    def route_via(
        self, src: str, dst: str, flow: tuple[int, int], spine: str, superspine: str
    ) -> str:
        """The route between pods through ``spine`` and ``superspine``: the superspine's
        hash of the flow (source port, salt) picks the destination pod's spine, among those
        whose cable to the destination leaf is up."""
        leaf = self.net.leaf_of[dst]
        wired = self.net.spines_below(superspine, leaf)
        below = [t for t in wired if (leaf, t) not in self.down] or wired
        data = self._tuple(src, dst, flow[0]) + flow[1].to_bytes(2, "big")
        far = below[tier_hash(SUPERSPINE_TIER, data) % len(below)]
        return self.net.route(spine, superspine, far)

    def _tuple(self, src: str, dst: str, sport: int) -> bytes:
        """The 13 bytes of a KV flow's 5-tuple, as ``kv_fabric.p4`` packs them."""
        fields = [(int(self.ip[src]), 32), (int(self.ip[dst]), 32), (TCP, 8)]
        return pack([*fields, (sport, 16), (RECEIVER_PORT, 16)])

    def _cable_event(self, e: LinkEvent) -> None:
        links = self.net.cable_links(e.leaf, e.spine)
        if e.capacity_bps is not None:
            for link in links:
                self.provisioned[link] = float(e.capacity_bps)
                if (e.leaf, e.spine) not in self.down:
                    self.engine.set_capacity(link, float(e.capacity_bps))
            return
        for link in links:
            self.engine.set_capacity(link, self.provisioned[link] if e.up else 0.0)
        if e.up:
            self.down.discard((e.leaf, e.spine))
        else:
            self.down.add((e.leaf, e.spine))
        delay = self.controller.audit_misses * self.controller.audit_interval_s
        self.engine.at(self.engine.now + delay, self._regroup)
        self.cable_changed(e)

    def cable_changed(self, e: LinkEvent) -> None:
        """A cable went down or up (kv-aware's audit notices it on its own)."""

    def group(
        self, src_leaf: str, dst_leaf: str, down: frozenset[tuple[str, str]] | None = None
    ) -> list[str]:
        """The members of ``src_leaf``'s group towards ``dst_leaf``, in member order: its
        uplinks but those whose cable, or whose spine's cable to ``dst_leaf``, was down
        when the groups were written (``down``: those cables instead); every uplink when
        none would be left."""
        if down is not None and down != self.grouped_down:
            return self._members(src_leaf, dst_leaf, down)
        key = (src_leaf, dst_leaf)
        group = self._live.get(key)
        if group is None:
            group = self._live[key] = self._members(src_leaf, dst_leaf, self.grouped_down)
        return group

    def _members(self, a: str, b: str, down: frozenset[tuple[str, str]]) -> list[str]:
        full = self.groups[a]
        return [s for s in full if (a, s) not in down and (b, s) not in down] or full

    def _regroup(self) -> None:
        """The controller rewrote the ECMP groups: dead uplinks out, live ones in."""
        self.grouped_down = frozenset(self.down)
        self._live.clear()
        self.rehash()
        self.rehash_background()

    def rehash_background(self) -> None:
        """Hash every background flow again over the new groups (with the salt of the
        flowlet generation the rewrite starts)."""
        for bg in self.background:
            bg.salt = self.regroup_salt(bg.salt)
            spine = self.background_spine(bg.plan, bg.salt)
            if spine != bg.spine:
                self.engine.reroute(bg.flow, self.background_path(bg.plan, spine))
                bg.spine = spine
                self._bg_load = None

    def regroup_salt(self, salt: int) -> int:
        """A background flow's salt after the groups are rewritten (ECMP: unchanged)."""
        return salt

    def rehash(self) -> None:
        """Hash the flows left to ECMP again over the new groups."""
        for live in self.live.values():
            for flow, spine in list(live.flows.items()):
                self.rehash_flow(live, flow, spine)

    def rehash_flow(self, live: Live, flow: int, spine: str | None) -> None:
        """Move one ECMP flow to where the new group hashes it."""
        sport, salt = self.hash_key(flow, live)
        a = live.arrival
        new = self.ecmp_spine(a.src, a.dst, sport, salt)
        if new != spine and self.engine.is_active(flow):
            self.engine.reroute(flow, self.path(a, new))
            live.flows[flow] = new

    def hash_key(self, flow: int, live: Live) -> tuple[int, int]:
        """The source port and salt a flow is hashed with."""
        return live.arrival.ecmp_port, 0

    # -- samples --------------------------------------------------------------------

    def _sample(self) -> None:
        u = self.engine.utilisation()[self._tier_links]
        now = self.engine.now
        bins = np.minimum((u * HIST_BINS).astype(np.int64), HIST_BINS)
        self._hist_all += np.bincount(
            bins + self._tier_of * (HIST_BINS + 1), minlength=self._hist_all.size
        )
        means = np.bincount(self._tier_of, u, minlength=self._tier_sizes.size) / self._tier_sizes
        for tier, mean in zip(self.net.tiers, means, strict=True):
            self.series[tier].append((now - self.t0, float(mean)))
        self.engine.at(now + self.interval, self._sample, daemon=True)


def _sample_interval(work: Workload) -> float:
    """The poll interval, or a quarter of a transfer alone on the fastest cable if shorter
    (at 400 Gb/s a transfer lasts 27 ms, and a 100 ms sample would miss whole bursts)."""
    poll = (work.scenario.simulation.controller or work.fabric.controller).telemetry
    fastest = max((link.capacity_bps for link in work.fabric.links), default=0)
    alone = work.nbytes * 8 / fastest if fastest > 0 else poll.poll_interval_s
    return min(poll.poll_interval_s, alone / 4)


HIST_BINS = 1000
"""Utilisation samples are kept as a histogram of 0.1% bins per tier (a tier of the
design's cluster has 1,536 links, sampled thousands of times)."""


def _quantiles(hist: np.ndarray, keep: int = 2000) -> list[float]:
    """``keep`` evenly spaced quantiles of the samples a histogram counted."""
    cum = np.cumsum(hist)
    ranks = np.linspace(0, cum[-1] - 1, keep)
    return [float(x) for x in np.searchsorted(cum, ranks, side="right") / HIST_BINS]


class EcmpK(Driver):
    """``k`` connections per transfer, each hashed on its own."""

    mode = "ecmp-k"

    def place(self, live: Live) -> None:
        """Start ``k`` flows of ``1/k`` of the bytes, from ``k`` source ports."""
        a = live.arrival
        k = self.settings.ecmp_k
        rng = random.Random(f"ecmp-k:{self.schedule.seed}:{a.index}")
        ports = [a.ecmp_port, *rng.sample(ECMP_PORTS, k - 1)]
        spines = set()
        for port in ports:
            spine = self.ecmp_spine(a.src, a.dst, port)
            spines.add(spine)
            flow = self.start(live, spine, a.nbytes / k, port)
            self.flow_port[flow] = port
        live.spine = spines.pop() if len(spines) == 1 else "split"

    def hash_key(self, flow: int, live: Live) -> tuple[int, int]:
        """Each sub-flow has its own source port."""
        return self.flow_port.get(flow, live.arrival.ecmp_port), 0


class Flowlet(Driver):
    """LetFlow: each new flowlet is hashed again with the next salt.

    Flowlet boundaries fall on a tick of a quarter of ``flowlet_period``: a flow starts
    a new flowlet at each tick with probability ``1 - exp(-tick/period)``, so that its
    gaps are (discretely) exponential with mean ``flowlet_period``. Each flow draws how
    many ticks its flowlet lasts (geometric), so a tick touches only the flows whose
    flowlet ends then, and the flows that move at one tick cost one rate computation.
    """

    mode = "flowlet"
    background_salt = FLOWLET_STEP

    def background_plan(self) -> Sequence[BackgroundFlow]:
        """Flowlet mode's own source ports, fresh for each run, as in the lab."""
        plan = self.work.background
        return for_flowlet(plan, self.work.fabric, self.repeat, self.scenario.failed_cables)

    def regroup_salt(self, salt: int) -> int:
        """A new flowlet generation: the background's next packet starts a new flowlet."""
        return (salt + FLOWLET_STEP) & 0xFFFF

    def prepare(self) -> None:
        """Start the flowlet tick."""
        period = self.settings.flowlet_period_s
        self.tick = period / 4
        self.p_new = 1.0 - math.exp(-self.tick / period)
        self.ticks = 0
        self.due: dict[int, list[tuple[Live, int]]] = {}
        self.engine.at(self.t0 + self.tick, self._flowlets, daemon=True)

    def flow_started(self, flow: int, live: Live, sport: int) -> None:
        """A new flow starts with salt 0; its first flowlet's end is drawn."""
        self.flow_salt[flow] = 0
        self._schedule(live, flow)

    def _schedule(self, live: Live, flow: int) -> None:
        u = 1.0 - self._rng.random()  # (0, 1]
        lasts = 1 + int(math.log(u) / math.log(1.0 - self.p_new))
        self.due.setdefault(self.ticks + lasts, []).append((live, flow))

    def _flowlets(self) -> None:
        self.ticks += 1
        for live, flow in self.due.pop(self.ticks, ()):
            if flow in live.flows and self.flow_owner.get(flow) == live.arrival.index:
                self.flow_salt[flow] = (self.flow_salt.get(flow, 0) + FLOWLET_STEP) & 0xFFFF
                self.rehash_flow(live, flow, live.flows[flow])
                self._schedule(live, flow)
        self.engine.at(self.engine.now + self.tick, self._flowlets, daemon=True)

    def hash_key(self, flow: int, live: Live) -> tuple[int, int]:
        """The transfer's port and the flowlet's salt."""
        return live.arrival.ecmp_port, self.flow_salt.get(flow, 0)


class Isolated(Driver):
    """Each transfer alone, on the spine the background leaves the most of."""

    mode = "isolated"

    def sequential(self, phase_is_sequential: bool) -> bool:
        """One at a time, whatever the phase."""
        return True

    def place(self, live: Live) -> None:
        """The best spine by capacity left, among the cables that are up."""
        a = live.arrival
        src, dst = self.net.leaf_of[a.src], self.net.leaf_of[a.dst]
        best = None
        if src != dst:
            left = self.provisioned - self.background_load()
            scored = [
                (min(left[link] for link in self.net.path(a.src, a.dst, r)[1:-1]), -i, r)
                for i, r in enumerate(self.net.routes(src, dst))
                if self._up(src, dst, r)
            ]
            fallback = self.ecmp_spine(a.src, a.dst, a.ecmp_port)
            best = max(scored)[2] if scored else fallback
        live.spine = best
        self.start(live, best, a.nbytes, a.ecmp_port)

    def _up(self, src: str, dst: str, route: str) -> bool:
        """Whether the leaf-spine cables of ``route`` are up."""
        first, last = self.net.end_spines(route)
        return (src, first) not in self.down and (dst, last) not in self.down

    def rehash(self) -> None:
        """An isolated transfer keeps its spine unless that cable is down."""
        for live in self.live.values():
            a = live.arrival
            src, dst = self.net.leaf_of[a.src], self.net.leaf_of[a.dst]
            if live.spine is not None and not self._up(src, dst, live.spine):
                super().rehash()
                return


DRIVERS: dict[str, type[Driver]] = {
    "ecmp": Driver,
    "ecmp-k": EcmpK,
    "flowlet": Flowlet,
    "isolated": Isolated,
}
"""The drivers of the modes, but kv-aware (:mod:`simulator.kvaware`)."""
