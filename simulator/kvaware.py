"""kv-aware: the controller's own decision engine, driven by the simulated fabric.

The driver does what the controller service does around :class:`controller.engine.Engine`,
with the simulated clock as the engine's injected clock, and nothing else:

- every polling period (``telemetry.poll_interval`` of the controller settings) it
  reads every switch's fabric-facing egress counters from the simulated links
  (cumulative bytes, KV-class bytes, packets at 1,500 bytes) and, ``telemetry_delay``
  later, hands each reading to ``Engine.telemetry`` stamped with the time it was read,
  then calls ``Engine.tick``, as the service's telemetry loop does. Host ports are not
  read: placement never looks at them, and at the design's scale (1,536 host ports
  against 192 fabric ports) folding them in was most of a run's time, so the
  intra-rack tier's alerts are not evaluated here;
- a transfer's arrival is ``Engine.decide``; a decision writes nothing (the leaves'
  static spine ranges pin the tag's source port), so a pinned transfer starts at once
  on its spine, one flow per slice when the engine split it over several spines
  (each slice its own tag, spine and bytes; the transfer ends with its last slice),
  and a transfer the engine leaves to ECMP starts at once too, hashed from its tag's
  source port. Between pods the engine's path names the spine *and* the superspine
  (the two ports it counts, :mod:`controller.topology`); the superspine's ECMP hash
  of the tagged flow picks the destination pod's spine;
- a transfer the engine *holds* (``Decision.held``, a scheduling policy: the
  ``scheduled`` mode) waits, pinned, until an update of the engine releases it
  (``Released``, from any entry point); the driver calls ``Engine.tick`` at
  ``Engine.next_release()``, as the service's release timer does, so that none waits
  past ``max_wait``. It starts at its release; its completion time still runs from its
  arrival;
- its end is ``Engine.complete`` with the time from its request (from its release,
  when it was held); a transfer that failed is left to the engine's own time-out;
- when the scenario has cable events, a round of link probes every
  ``audit_interval`` goes to ``Engine.audit`` (a probe crosses a cable that is up and
  is lost on one that is down), and the slices the engine moves (``TransferMoved``:
  their range's entry is rewritten to a live spine, or removed) move ``write_latency``
  later. With each round, the switches whose ports changed since the last one report
  them to ``Engine.port_states``, as their gNMI stream does to the controller: each
  port's provisioned speed (a cable re-provisioned by a ``capacity`` event) and its
  oper-status (down at both ends of a cable that is down). So the engine learns a new
  capacity, and a dead cable's carrier, one audit round after the event at most.

The settings are the controller's own (the fabric's ``controller`` section, or the
scenario's ``simulation.controller`` with the same keys), so a figure from here is
the figure of the controller as configured; ``kv-aware`` runs with scheduling off
(policy ``none``), ``scheduled`` with the scenario's ``scheduling`` section.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.config import ControllerSettings, Mode
from controller.engine import (
    AuditRound,
    Decision,
    Demand,
    Engine,
    PortStates,
    PortStatus,
    ProbeSeen,
    Released,
    SwitchReading,
    TransferMoved,
    Update,
    fabric_view,
)
from controller.engine.telemetry_math import PortCounters
from controller.topology import PortRef, SpinePath
from experiment.scenario import PhaseKind
from experiment.scenario_sched import with_scheduling
from simulator.modes import Driver, Live

PACKET_BYTES = 1500


@dataclass(slots=True)
class SliceRun:
    """One flow of a kv-aware transfer: its tag's source port, its bytes, where its pin
    sends it (a spine, or a route between pods; None: ECMP hashes it from ``sport``),
    and its flow once started."""

    sport: int
    nbytes: float
    route: str | None
    flow: int | None = None


class KvAware(Driver):
    """Placement by :class:`controller.engine.Engine` (see the module docstring)."""

    mode = "kv-aware"
    tagged = True

    def engine_settings(self) -> ControllerSettings:
        """The controller's settings with scheduling off (kv-aware sends at once)."""
        return with_scheduling(self.controller, None)

    def prepare(self) -> None:
        """Start the engine at time 0 and its telemetry polls (and audits)."""
        self.controller = self.engine_settings()
        self.ctl = Engine(self.net.topology, self.engine.now, self.controller)
        self.ctl.set_mode(Mode.KV_AWARE, self.engine.now)
        self.tid: dict[int, int] = {}  # transfer index -> engine transfer id
        self.by_tid: dict[int, Live] = {}
        self.runs: dict[int, list[SliceRun]] = {}  # transfer index -> its slices' flows
        self.flow_run: dict[int, SliceRun] = {}  # flow -> the slice it carries
        self.held: dict[int, tuple[Live, float]] = {}  # engine id -> (held, earliest start)
        self.asked: dict[int, float] = {}  # transfer index -> when it asked (or was released)
        self._release_timer: float | None = None
        self._batch: list[Live] = []  # a burst's requests waiting to go as one
        self._burst_phases = {
            i for i, plan in enumerate(self.schedule.phases) if plan.phase.kind is PhaseKind.BURST
        }
        self.switch_ports: dict[str, list[tuple[int, int]]] = {}
        for ref, link in self.net.port_link.items():
            if self.net.links[link].tier != "intra-rack":
                self.switch_ports.setdefault(ref.switch, []).append((ref.port, link))
        self._rounds: dict[frozenset[tuple[str, str]], AuditRound] = {}
        self._poll()
        if self.scenario.events:
            self._prepare_ports()
            self._audit()

    # -- telemetry ------------------------------------------------------------------

    def _poll(self) -> None:
        now = self.engine.now
        sent, kv = self.engine.sent_bytes, self.engine.kv_bytes
        readings = []
        for switch, ports in self.switch_ports.items():
            counters = {
                port: PortCounters(
                    bytes=int(sent[link]),
                    packets=int(sent[link]) // PACKET_BYTES,
                    kv_bytes=int(kv[link]),
                    queue_depth=0,
                )
                for port, link in ports
            }
            readings.append(SwitchReading(switch, counters))
        delay = self.settings.telemetry_delay_s

        def deliver() -> None:
            updates: list[Update] = []
            for reading in readings:
                updates += self.ctl.telemetry(reading, now)
            updates += self.ctl.tick(self.engine.now)
            self._apply(updates)

        self.engine.at(now + delay, deliver, daemon=True)
        self.engine.at(now + self.controller.telemetry.poll_interval_s, self._poll, daemon=True)

    def _audit(self) -> None:
        down = frozenset(self.down)
        round_ = self._rounds.get(down)
        if round_ is None:  # a probe crosses a cable that is up and is lost on one that is down
            sent: list[PortRef] = []
            seen: list[ProbeSeen] = []
            for link in self.net.topology.links:
                leaf_end, spine_end = (
                    (link.a, link.b) if link.a.switch in self.net.leaves else (link.b, link.a)
                )
                for origin, at in ((leaf_end, spine_end), (spine_end, leaf_end)):
                    sent.append(origin)
                    if (leaf_end.switch, spine_end.switch) not in down:
                        seen.append(ProbeSeen(origin, at))
            round_ = self._rounds[down] = AuditRound(tuple(sent), tuple(seen))
        self._apply(self.ctl.audit(round_, self.engine.now))
        self._report_ports()
        self.engine.at(self.engine.now + self.controller.audit_interval_s, self._audit, daemon=True)

    # -- the switches' ports --------------------------------------------------------

    def _prepare_ports(self) -> None:
        """Every switch's ports, the cable of each fabric port, and what was reported."""
        self.ports_of: dict[str, list[tuple[int, int]]] = {}
        self.switch_of: dict[int, str] = {}
        for ref, link in self.net.port_link.items():
            self.ports_of.setdefault(ref.switch, []).append((ref.port, link))
            self.switch_of[link] = ref.switch
        self.cable_of: dict[int, tuple[str, str]] = {}
        for (leaf, spine), link in self.net.up.items():
            self.cable_of[link] = (leaf, spine)
        for (spine, leaf), link in self.net.down.items():
            self.cable_of[link] = (leaf, spine)
        self._reported = self.provisioned.copy()
        self._reported_down: frozenset[tuple[str, str]] = frozenset()

    def _report_ports(self) -> None:
        """The switches whose ports changed since the last round report all of them."""
        down = frozenset(self.down)
        changed = {int(link) for link in np.flatnonzero(self.provisioned != self._reported)}
        for cable in down ^ self._reported_down:
            changed.update(self.net.cable_links(*cable))
        switches = {self.switch_of[link] for link in changed if link in self.switch_of}
        if not switches:
            return
        self._reported = self.provisioned.copy()
        self._reported_down = down
        now = self.engine.now
        updates: list[Update] = []
        for switch in sorted(switches):
            ports = {
                port: PortStatus(int(self.provisioned[link]), self.cable_of.get(link) not in down)
                for port, link in self.ports_of[switch]
            }
            updates += self.ctl.port_states(PortStates(switch, ports), now)
        self._apply(updates)

    # -- transfers ------------------------------------------------------------------

    def place(self, live: Live) -> None:
        """Ask the engine (a burst's request waits up to ``batch_window`` for the others
        of its batch); start now (unless held), each slice pinned on its spine, or the
        whole transfer on ECMP."""
        window = self.settings.batch_window_s
        if window > 0 and live.arrival.phase in self._burst_phases:
            if not self._batch:
                self.engine.at(self.engine.now + window, self._send_batch)
            self._batch.append(live)
            return
        decision, updates = self.ctl.decide(self._demand(live), self.engine.now)
        self._answered(live, decision)
        self._apply(updates)

    def _send_batch(self) -> None:
        """The batch's requests go to the engine as one (``Engine.decide_batch``)."""
        batch, self._batch = self._batch, []
        batch = [live for live in batch if live.arrival.index in self.live]
        if not batch:
            return
        answers, updates = self.ctl.decide_batch([self._demand(v) for v in batch], self.engine.now)
        for live, decision in zip(batch, answers, strict=True):
            assert isinstance(decision, Decision), decision  # the workload's requests are valid
            self._answered(live, decision)
        self._apply(updates)

    @staticmethod
    def _demand(live: Live) -> Demand:
        a = live.arrival
        return Demand(a.src, a.dst, a.nbytes, f"t{a.index}", deadline_s=a.deadline_s)

    def _answered(self, live: Live, decision: Decision) -> None:
        """Start (or hold) a transfer as the engine decided."""
        a = live.arrival
        now = self.engine.now
        self.tid[a.index] = decision.transfer_id
        self.by_tid[decision.transfer_id] = live
        self.asked[a.index] = now
        if decision.slices:
            runs = [
                SliceRun(s.tag.src_port, s.bytes, self._route(live, s.path, s.tag.src_port))
                for s in decision.slices
            ]
            live.spine = runs[0].route if len(runs) == 1 else "split"
            live.decision_s = 0.0  # nothing to write: its ranges are in force
            self.runs[a.index] = runs
            if decision.held:
                self.held[decision.transfer_id] = (live, now)
            else:
                self._go(live)
        else:
            sport = decision.tag.src_port if decision.tag is not None else a.ecmp_port
            self.runs[a.index] = [SliceRun(sport, a.nbytes, None)]
            live.spine = self.ecmp_spine(a.src, a.dst, sport)
            self._go(live)

    def _go(self, live: Live) -> None:
        """Start a transfer's flows now (each slice on its pinned spine, or hashed from
        its tag)."""
        a = live.arrival
        if a.index not in self.live:
            return
        # the wait beyond the controller's answer: a hold, a stagger
        live.held_s = max(0.0, self.engine.now - live.started - (live.decision_s or 0.0))
        for run in self.runs.get(a.index, ()):
            where = run.route if run.route is not None else self.ecmp_spine(a.src, a.dst, run.sport)
            run.flow = self.start(live, where, run.nbytes, run.sport)
            self.flow_run[run.flow] = run

    def _route(self, live: Live, path: SpinePath, sport: int) -> str:
        """Where a pin on ``path`` sends the transfer: its spine, or between pods the
        route through its spine and superspine that the superspine's hash completes."""
        if path.superspine is None:
            return path.spine
        a = live.arrival
        return self.route_via(a.src, a.dst, (sport, 0), path.spine, path.superspine)

    def hash_key(self, flow: int, live: Live) -> tuple[int, int]:
        """Tagged flows are hashed from their tag's source port."""
        run = self.flow_run.get(flow)
        return (run.sport if run is not None else live.arrival.ecmp_port), 0

    def rehash_flow(self, live: Live, flow: int, spine: str | None) -> None:
        """A pinned flow ignores the ECMP groups."""
        run = self.flow_run.get(flow)
        if run is None or run.route is None:
            super().rehash_flow(live, flow, spine)

    def completed(self, live: Live, fct: float, now: float) -> None:
        """Tell the engine the time from its request (or its release, if held), from
        which it learns the pair's baseline."""
        index = live.arrival.index
        ran = now - self.asked.get(index, live.started)
        tid = self.tid.pop(index, None)
        self._forget(live)
        if tid is not None:
            self.by_tid.pop(tid, None)
            self._apply(self.ctl.complete(tid, ran, now))

    def failed(self, live: Live, now: float) -> None:
        """The engine times the transfer out on its own (a held one is cancelled)."""
        tid = self.tid.pop(live.arrival.index, None)
        if tid is not None:
            self.by_tid.pop(tid, None)
            if self.held.pop(tid, None) is not None:
                self._apply(self.ctl.cancel(tid, now))
        self._forget(live)

    def _forget(self, live: Live) -> None:
        index = live.arrival.index
        self.asked.pop(index, None)
        for run in self.runs.pop(index, ()):
            if run.flow is not None:
                self.flow_run.pop(run.flow, None)

    def finish(self) -> None:
        """The scheduling efficiency the engine measured."""
        view = fabric_view(self.ctl, self.engine.now)
        eff = view.get("efficiency")
        if isinstance(eff, dict):
            efficient, evaluated = eff.get("efficient"), eff.get("evaluated")
            if isinstance(efficient, int) and isinstance(evaluated, int):
                self.run_record.efficiency = (efficient, evaluated)

    # -- the engine's updates -------------------------------------------------------

    def _apply(self, updates: list[Update]) -> None:
        for u in updates:
            if isinstance(u, TransferMoved):
                t = self.ctl.inflight.transfers.get(u.transfer_id)
                slots = t.choice.slices if t is not None else ()
                slot = slots[u.part] if u.part < len(slots) else None
                self._later(u.transfer_id, u.part, slot.path if slot is not None else None)
            elif isinstance(u, Released):
                self._released(u.transfer_id)
        self._tick_at_release()

    def _released(self, tid: int) -> None:
        """A held transfer may start: now (its range was in force all along)."""
        entry = self.held.pop(tid, None)
        if entry is None:
            return
        live, earliest = entry
        self.asked[live.arrival.index] = self.engine.now
        self.engine.at(max(self.engine.now, earliest), lambda: self._go(live))

    def _tick_at_release(self) -> None:
        """Tick the engine when its next held transfer is due whatever runs (max_wait)."""
        due = self.ctl.next_release()
        if due is None or (self._release_timer is not None and self._release_timer <= due):
            return
        self._release_timer = due

        def tick() -> None:
            if self._release_timer == due:
                self._release_timer = None
            self._apply(self.ctl.tick(self.engine.now))

        self.engine.at(max(due, self.engine.now), tick, daemon=True)

    def _later(self, tid: int, part: int, path: SpinePath | None) -> None:
        """A range entry rewritten (or removed) ``write_latency`` from now moves slice
        ``part``'s flow."""
        live = self.by_tid.get(tid)
        if live is None:
            return

        def move() -> None:
            a = live.arrival
            runs = self.runs.get(a.index)
            if a.index not in self.live or runs is None or part >= len(runs):
                return
            run = runs[part]
            run.route = self._route(live, path, run.sport) if path is not None else None
            target = (
                run.route if run.route is not None else self.ecmp_spine(a.src, a.dst, run.sport)
            )
            flow = run.flow  # a flow's slot is reused once it ends: only if it is still ours
            if flow is not None and self.flow_owner.get(flow) == a.index:
                self.engine.reroute(flow, self.net.path(a.src, a.dst, target))
                live.flows[flow] = target
            if len(runs) == 1:
                live.spine = target

        self.engine.at(self.engine.now + self.settings.write_latency_s, move)


class Scheduled(KvAware):
    """kv-aware with the scenario's scheduling policy: the engine may hold transfers."""

    mode = "scheduled"

    def engine_settings(self) -> ControllerSettings:
        """The controller's settings with the scenario's policy (and ``max_wait``)."""
        return with_scheduling(self.controller, self.scenario.scheduling)
