"""The experiment: every mode on identical traffic, on the emulated fabric.

``run_experiment`` does, in order:

1. **plan** (no root, no processes; :func:`plan_experiment`): the fabric the lab
   runs (lab rates, the scenario's slow cables, free ports; written to
   ``OUT/fabric.yaml`` for the controller), the host roles, the background flows
   with their 5-tuples, and the scaling of a real KV transfer to lab bytes;
2. **lab**: Mininet with one switch process per switch, then the controller
   process, which provisions the switches; a KV receiver in every receiving host.
   The controller runs with temporal scheduling off (``OUT/fabric.yaml``); for the
   ``scheduled`` mode it is restarted on ``OUT/fabric-scheduled.yaml``, the same
   fabric with the scenario's scheduling policy, and back for the other modes (a
   restarted controller adopts the switches' pins; the lab waits until it is ready);
3. **modes**, for each repeat ``r`` (arrival seed ``seed + r``) and each mode in
   turn: set the controller's mode, start the background (and pin it, when ECMP
   cannot be steered), let it settle, then run the schedule's transfers while the
   monitor samples CPU and counters and the scenario's link events fire; then stop
   the background and judge the run's validity. Every mode of a repeat gets the
   same schedule: same transfers, same arrival offsets, same ECMP source ports.
   ``isolated`` runs each transfer alone, forced onto the spine with the most
   spare capacity *measured* (leaf uplink and spine downlink counters over
   :data:`ISOLATED_MEASURE_S`) just before it, among those whose cables are up: the
   planned background is not where it runs once a failure has re-hashed ECMP.
   A transfer that times out is a censored result of its mode; the monitor's samples
   say which spines had room while it was stuck (:mod:`lab.room`, for the goals);
4. **results**, after every mode (so Ctrl-C leaves what was measured):
   ``results.json``, ``results.md`` and ``cdf.png`` in ``OUT``.

Ctrl-C cancels the running mode: its finished transfers are kept and marked
partial, every process and interface of the lab is removed (a second Ctrl-C during
teardown is ignored), the results are written, and KeyboardInterrupt propagates.
``asyncio.run`` turns the first SIGINT into a cancellation of the session's task, so
every wait with a time limit on the session's way (the controller's API, a sender's
transfer, the client's requests) uses ``asyncio.timeout``, never ``asyncio.wait_for``:
Python 3.11's ``wait_for`` drops a cancellation that lands as the call it guards
finishes (CPython #86296), and the run then went on as if Ctrl-C had not been pressed
(tests/lab/test_interrupt.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config import FabricConfig
from experiment.arrivals import Arrival, PhasePlan, Schedule, generate
from experiment.ecmp import FLOWLET_STEP, EcmpOracle
from experiment.fabric import lab_fabric, write_fabric
from experiment.flows import RECEIVER_PORT, FlowKey
from experiment.goals import ROOM_UTILISATION
from experiment.kvsize import Scaling, Setting, scale_to_lab
from experiment.plots import plot_cdf
from experiment.progress import Progress
from experiment.results import ModeRun, TransferResult, build_results, write_results
from experiment.roles import Roles, resolve_roles
from experiment.scenario import ASKING_MODES, UNSCHEDULED_MODES, ModeName, Scenario
from experiment.scenario_sched import ScenarioScheduling, with_scheduling
from kvfabric.client import AsyncClient
from lab.control import (
    ControllerProcess,
    FabricControl,
    HttpControl,
    PathService,
)
from lab.errors import LabError
from lab.kvtransfer import Receiver, TransferJob, send
from lab.monitor import Monitor, Observed, tx_bytes
from lab.net import Lab
from lab.netns import factory_in, socket_in
from lab.nodes import P4Switch
from lab.room import Cable, CableIntfs, down_during, roomiest_spine, spines_with_room
from lab.timescale import check_poll_floor, check_scaled, scale_controller, settle_s
from lab.topo import MAX_LAB_BPS, FabricTopo, socket_queue_limit
from lab.traffic import (
    BG_CLIENT_PORTS,
    Background,
    BackgroundFlow,
    PathOracle,
    misplaced,
    plan_background,
    planned_uplinks,
    resteer,
)
from lab.validity import Limits, health, judge

NOMINAL_LAB_RTT_S = 2e-3
"""Round trip through two Python switches, until the run measures it with ping."""
ISOLATED_MEASURE_S = 0.5
"""Before each isolated transfer: how long the spine links' counters are measured."""
READY_TIMEOUT_S = 60.0
VERDICT_WAIT_POLLS = 3
"""Polls to wait after a mode's last transfer, for the controller's efficiency verdicts."""


@dataclass(frozen=True, slots=True)
class Experiment:
    """What to run: a scenario on a fabric, in some modes, repeated, into ``out``."""

    scenario: Scenario
    fabric: FabricConfig
    out: Path
    modes: tuple[str, ...] = tuple(str(m) for m in UNSCHEDULED_MODES)
    repeat: int = 1
    seed: int = 1
    lab_link_bps: int = 20_000_000
    switch_cls: type[P4Switch] = P4Switch
    program: str | None = None
    controller_argv: Sequence[str] | None = None
    pipeline_files: tuple[Path, Path] | None = None
    """Prebuilt P4Info and device config the controller pushes (BMv2: p4c-bm2-ss's)."""
    start_controller: bool = True
    control_factory: Callable[[FabricConfig], FabricControl] = HttpControl.for_fabric
    oracle: PathOracle | None = None
    pin_background: bool = False
    limits: Limits = field(default_factory=Limits)
    scale_controller_time: bool = False
    """Multiply the controller's time constants by the run's time scale (:mod:`lab.timescale`)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything decided before the lab starts.

    ``background`` is steered for ECMP (salt 0: the ``ecmp``, ``kv-aware`` and
    ``isolated`` modes); :meth:`background_for` gives flowlet mode its own 5-tuples,
    steered for a slot's first flowlet, so every mode sees the same load per spine.
    """

    fabric: FabricConfig
    roles: Roles
    background: tuple[BackgroundFlow, ...]
    scaling: Scaling
    topo_queue: int
    oracle_steered: bool = True
    failed: frozenset[tuple[str, str]] = frozenset()
    """The scenario's failure (cables), for which the background's moves are planned."""
    warmup_s: float = 3.0
    """From a mode's background start to its first transfer."""
    controller_time_scale: float | None = None
    """The factor the controller's time constants were multiplied by (None: not scaled)."""
    poll_seconds: float | None = None
    """One telemetry poll of every switch, as the controller measured it once ready."""

    def background_for(self, mode: str, repeat: int) -> tuple[BackgroundFlow, ...]:
        """The background flows of ``mode``'s run number ``repeat``."""
        if mode != ModeName.FLOWLET or not self.oracle_steered or not self.background:
            return self.background
        # Flowlet slots remember their salt between runs: each flowlet run gets fresh ports.
        oracle = EcmpOracle(self.fabric, salts=(FLOWLET_STEP,))
        after = (
            EcmpOracle(self.fabric, salts=(FLOWLET_STEP,), down=self.failed)
            if self.failed
            else None
        )
        return tuple(resteer(self.background, oracle, _port_block(1 + repeat % 6), after))


def _port_block(k: int) -> tuple[int, ...]:
    """The k-th of seven disjoint sets of background source ports (each spans 15 bits)."""
    return BG_CLIENT_PORTS[k::7]


def plan_experiment(exp: Experiment) -> Plan:
    """The lab's fabric, roles, background and scaling (see step 1 of the module docstring)."""
    fastest = max((link.capacity_bps for link in exp.fabric.links), default=0)
    scale_to = exp.lab_link_bps if fastest > MAX_LAB_BPS else None
    fabric = lab_fabric(exp.fabric, link_bps=scale_to, link_rates=exp.scenario.shaping.links)
    scaling = scaling_for(exp.scenario, fabric)
    warmup_s = exp.scenario.run.warmup_s
    factor = None
    if exp.scale_controller_time:
        factor = scaling.time_scale
        settings = scale_controller(
            fabric.controller, factor, exp.scenario.transfer.real_poll_interval_s
        )
        fabric = dataclasses.replace(fabric, controller=settings)
        check_scaled(fabric, factor)
        scaling = scaling_for(exp.scenario, fabric)
        warmup_s = settle_s(settings, warmup_s)
    roles = resolve_roles(exp.scenario, fabric)
    oracle = exp.oracle or (None if exp.pin_background else EcmpOracle(fabric, salts=(0,)))
    failed = exp.scenario.failed_cables
    steered = exp.oracle is None and not exp.pin_background
    after = EcmpOracle(fabric, salts=(0,), down=failed) if failed and steered else None
    flows = plan_background(
        exp.scenario.background,
        fabric,
        roles,
        oracle=oracle,
        after=after,
        failed=failed,
        source=exp.scenario.source,
        ports=_port_block(0),
    )
    return Plan(
        fabric,
        roles,
        tuple(flows),
        scaling,
        exp.scenario.shaping.queue_packets,
        oracle_steered=steered,
        failed=failed,
        warmup_s=warmup_s,
        controller_time_scale=factor,
    )


def scaling_for(
    scenario: Scenario, fabric: FabricConfig, rtt_s: float = NOMINAL_LAB_RTT_S
) -> Scaling:
    """How the scenario's real transfer maps to this fabric's lab rate."""
    t = scenario.transfer
    rates = Counter(link.capacity_bps for link in fabric.links)
    lab_bps = rates.most_common(1)[0][0]
    return scale_to_lab(
        t.real_bytes,
        Setting(t.real_link_bps, t.real_poll_interval_s, t.real_rtt_s),
        Setting(lab_bps, fabric.controller.telemetry.poll_interval_s, rtt_s),
        concurrency=scenario.max_concurrency,
        spines=len(fabric.spines),
        time_scale=t.time_scale,
        lab_bytes=t.lab_bytes,
    )


@dataclass(slots=True)
class Collector:
    """The runs so far, and where to write them."""

    exp: Experiment
    plan: Plan
    runs: list[ModeRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)

    def results(self) -> dict[str, Any]:
        """The results document of the runs so far."""
        extra = {
            "seed": self.exp.seed,
            "repeat": self.exp.repeat,
            "fabric": self.plan.fabric.name,
            "scenario_file": self.exp.scenario.source,
            "lab": {
                "queue_packets": self.plan.topo_queue,
                "socket_queue_limit": socket_queue_limit(),
                "link_rates_bps": sorted({link.capacity_bps for link in self.plan.fabric.links}),
                "netem": False,
                "note": "this kernel has no netem: link delay and loss are not emulated",
            },
            "background": [
                {
                    "src": f.key.src,
                    "dst": f.key.dst,
                    "protocol": f.key.protocol,
                    "rate_bps": f.rate_bps,
                    "spine": f.spine,
                    "after_failure": f.after_failure,
                    "pinned": f.pinned,
                }
                for f in self.plan.background
            ],
            "scaling": self.plan.scaling.as_dict(),
            "controller_time": controller_time(self.plan),
            "notes": self.notes,
            "started_at": self.started,
            "finished_at": time.time(),
        }
        return build_results(self.exp.scenario.name, self.runs, modes=self.exp.modes, extra=extra)

    def write(self) -> dict[str, Any]:
        """Write results.json, results.md and cdf.png; return the document."""
        doc = self.results()
        write_results(self.exp.out, doc)
        plot_cdf(doc, self.exp.out / "cdf.png")
        return doc


def controller_time(plan: Plan) -> dict[str, object]:
    """What results.json says of the controller's clock: scaled or not, and its figures."""
    c = plan.fabric.controller
    return {
        "scaled_by": plan.controller_time_scale,
        "poll_interval_s": c.telemetry.poll_interval_s,
        "staleness_limit_s": c.telemetry.staleness_limit_s,
        "smoothing_s": c.telemetry.smoothing_s,
        "audit_interval_s": c.audit_interval_s,
        "audit_hold_s": c.audit_hold_s,
        "warmup_s": plan.warmup_s,
        "measured_poll_s": plan.poll_seconds,
    }


def run_experiment(exp: Experiment, progress: Progress | None = None) -> dict[str, Any]:
    """Run every mode (see the module docstring); return the results document."""
    plan = plan_experiment(exp)
    exp.out.mkdir(parents=True, exist_ok=True)
    fabric_file = write_fabric(_with_policy(plan.fabric, None), exp.out / "fabric.yaml")
    files = {False: (fabric_file, exp.out / "logs" / "controller.log")}
    if ModeName.SCHEDULED in exp.modes:
        scheduled = _with_policy(plan.fabric, exp.scenario.scheduling)
        files[True] = (
            write_fabric(scheduled, exp.out / "fabric-scheduled.yaml"),
            exp.out / "logs" / "controller-scheduled.log",
        )
    collector = Collector(exp, plan)
    if plan.topo_queue > socket_queue_limit():
        collector.notes.append(
            f"the queue of {plan.topo_queue} packets exceeds the ~{socket_queue_limit()} jumbo "
            "frames a switch's packet socket can hold: drops beyond that happen inside the "
            "switch, uncounted, and make modes with full queues invalid"
        )
    total = exp.scenario.transfers * exp.repeat * len(exp.modes)
    progress = progress or Progress(total)
    lab = Lab(
        FabricTopo(plan.fabric, queue_packets=plan.topo_queue),
        switch_cls=exp.switch_cls,
        switch_opts={"program": exp.program} if exp.program else None,
        log_dir=exp.out / "logs",
    )
    interrupted = False
    try:
        progress.set_stage("starting the fabric")
        lab.start()
        _write_footprint(lab, exp.out / "lab.json")
        controller = ControllerProcess(
            fabric_file,
            exp.out / "logs" / "controller.log",
            lab.processes,
            exp.controller_argv,
            transfer_log=exp.out / "logs" / "transfers.jsonl",
            options=_pipeline_options(exp.pipeline_files),
        )
        if exp.start_controller:
            controller.start()
        asyncio.run(Session(exp, lab, controller, collector, progress, files).run())
    except KeyboardInterrupt:
        interrupted = True
        collector.notes.append("interrupted by the user (Ctrl-C)")
    finally:
        progress.close()
        with _sigint_ignored():
            try:
                lab.stop(check=True)
            except LabError as exc:
                collector.notes.append(str(exc))
                raise
            finally:
                doc = collector.write()
    if interrupted:
        raise KeyboardInterrupt
    return doc


def _with_policy(fabric: FabricConfig, scheduling: ScenarioScheduling | None) -> FabricConfig:
    """``fabric`` with the controller's scheduling off (None) or the scenario's policy."""
    return dataclasses.replace(fabric, controller=with_scheduling(fabric.controller, scheduling))


def _pipeline_options(files: tuple[Path, Path] | None) -> list[str]:
    """The controller's ``--p4info``/``--p4blob`` for prebuilt pipeline files."""
    if files is None:
        return []
    return ["--p4info", str(files[0].resolve()), "--p4blob", str(files[1].resolve())]


def _write_footprint(lab: Lab, path: Path) -> None:
    """What the lab created (pids, namespaces, interfaces): for cleanup checks and debugging."""
    fp = lab.current_footprint()
    doc = {
        "pids": sorted(fp.pids),
        "netns": sorted(fp.netns),
        "interfaces": sorted(fp.interfaces),
        "switch_pids": lab.switch_pids,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore Ctrl-C while tearing down (only in the main thread, where handlers live)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass(slots=True)
class Session:
    """One experiment's running parts: the lab, the controller and what was measured."""

    exp: Experiment
    lab: Lab
    controller: ControllerProcess
    collector: Collector
    progress: Progress
    files: Mapping[bool, tuple[Path, Path]] = field(default_factory=dict)
    """The controller's fabric file and log, with temporal scheduling off and on."""
    control: FabricControl | None = None
    down: set[tuple[str, str]] = field(default_factory=set)
    """Cables ``(leaf, spine)`` the scenario's events have set down (isolated avoids them)."""
    cable_log: list[tuple[float, Cable, bool]] = field(default_factory=list)
    """``(monotonic time, cable, up)`` of every cable event of the current mode."""

    @property
    def plan(self) -> Plan:
        """The plan (with the measured RTT once known)."""
        return self.collector.plan

    async def run(self) -> None:
        """Provision, then every repeat of every mode."""
        exp = self.exp
        self.control = control = exp.control_factory(self.plan.fabric)
        self.progress.set_stage("waiting for the controller to provision the fabric")
        await control.ready(READY_TIMEOUT_S)
        measured = await control.poll_seconds()
        self.collector.plan = dataclasses.replace(self.plan, poll_seconds=measured)
        if self.plan.controller_time_scale is not None:
            check_poll_floor(self.plan.fabric.controller.telemetry.poll_interval_s, measured)
        rtt = measure_rtt(self.lab, self.plan)
        if rtt is not None:
            scaling = scaling_for(exp.scenario, self.plan.fabric, rtt)
            self.collector.plan = dataclasses.replace(self.plan, scaling=scaling)
        receivers = await _start_receivers(self.lab, self.plan)
        try:
            for r in range(exp.repeat):
                schedule = generate(
                    exp.scenario.phases,
                    self.plan.roles,
                    self.plan.scaling.lab_bytes,
                    exp.seed + r,
                    exp.scenario.scheduling.deadline_s,
                )
                for mode in exp.modes:
                    self.progress.set_stage(f"{mode}, repeat {r + 1}/{exp.repeat}")
                    self.controller.check()
                    run = ModeRun(mode, r)
                    self.collector.runs.append(run)
                    try:
                        await self.run_mode(control, schedule, run)
                    except BaseException:
                        run.complete = False
                        raise
                    self.collector.write()
                    await asyncio.sleep(exp.scenario.run.settle_s)
        finally:
            for receiver in receivers:
                await receiver.close()

    async def run_mode(self, control: FabricControl, schedule: Schedule, run: ModeRun) -> None:
        """One mode: background, warm-up, transfers under the monitor, then the verdict."""
        exp, lab, plan = self.exp, self.lab, self.plan
        await self.use_scheduling(control, run.mode == ModeName.SCHEDULED)
        await control.set_mode("kv-aware" if run.mode in ASKING_MODES else run.mode)
        flows = plan.background_for(run.mode, run.repeat)
        bg = Background.start(lab, flows, exp.out / "logs" / f"{run.mode}-r{run.repeat}")
        monitor: Monitor | None = None
        events: asyncio.Task[None] | None = None
        placement_errors: list[str] = []
        try:
            for f in flows:
                if f.pinned:
                    await control.pin_flow(f.key, f.spine)
            await asyncio.sleep(plan.warmup_s)
            placement_errors = await _check_background(lab, flows) if flows else []
            before = _efficiency(await control.fabric())
            monitor = Monitor(lab.topo, lab.switch_pids)
            monitor.start()
            self.cable_log.clear()
            events = asyncio.get_running_loop().create_task(
                _link_events(exp.scenario, lab, self.down, self.cable_log)
            )
            await self.transfers(control, schedule, run)
            # the controller judges a transfer once the poll after its end has arrived
            await asyncio.sleep(
                VERDICT_WAIT_POLLS * plan.fabric.controller.telemetry.poll_interval_s
            )
            after = _efficiency(await control.fabric())
            if before is not None and after is not None:
                run.efficiency = (after[0] - before[0], after[1] - before[1])
        finally:
            if events is not None:
                events.cancel()
                await asyncio.gather(events, return_exceptions=True)
            for e in exp.scenario.events:
                with contextlib.suppress(LabError, subprocess.SubprocessError):
                    lab.set_cable(e.leaf, e.spine, up=True)
                    self.down.discard((e.leaf, e.spine))
            observed = await monitor.stop() if monitor is not None else None
            failures = bg.failures()
            bg.stop(lab)
            for f in flows:
                if f.pinned:
                    with contextlib.suppress(LabError):
                        await control.unpin_flow(f.key)
            if observed is not None:
                self._judge_timeouts(run, observed)
                run.tier_samples = observed.tier_samples
                run.invalid_reasons = judge(observed, exp.limits, [*failures, *placement_errors])
                run.health = health(observed, exp.limits)

    async def use_scheduling(self, control: FabricControl, on: bool) -> None:
        """Restart the controller on the fabric file with scheduling ``on`` (or off),
        unless it runs that one already (or the experiment does not start it)."""
        if not self.exp.start_controller or on not in self.files:
            return
        fabric_file, log = self.files[on]
        if self.controller.fabric_file == fabric_file:
            return
        self.progress.set_stage(
            f"restarting the controller with scheduling {'on' if on else 'off'}"
        )
        self.controller.restart_with(fabric_file, log)
        await control.ready(READY_TIMEOUT_S)

    def _judge_timeouts(self, run: ModeRun, observed: Observed) -> None:
        """Record, for each transfer that timed out, which spines had room meanwhile."""
        leaf_of = self.plan.roles.leaf_of
        cables = _cable_intfs(self.lab)
        for k, t in enumerate(run.transfers):
            if not t.timed_out or t.started_s is None or t.censored_s is None:
                continue
            window = (t.started_s, t.started_s + t.censored_s)
            room = spines_with_room(
                observed.rate_samples,
                observed.interval_s,
                cables,
                leaf_of[t.src],
                leaf_of[t.dst],
                window=window,
                down=down_during(self.cable_log, window),
                threshold=ROOM_UTILISATION,
            )
            run.transfers[k] = dataclasses.replace(t, room=room)

    async def transfers(self, control: FabricControl, schedule: Schedule, run: ModeRun) -> None:
        """The schedule's transfers, phase after phase, as the mode wants them."""
        mode, plan = run.mode, self.plan
        paths: PathService | AsyncClient | None = None
        if mode in ASKING_MODES:  # the controller's client
            paths = control.client if isinstance(control, HttpControl) else control
        timeout = self.exp.scenario.run.transfer_timeout_s
        cables = _cable_intfs(self.lab)

        async def one(a: Arrival) -> None:
            spine = None
            if mode == ModeName.ISOLATED:
                src, dst = plan.roles.leaf_of[a.src], plan.roles.leaf_of[a.dst]
                rates = await _measure_rates(cables, ISOLATED_MEASURE_S)
                spine = roomiest_spine(rates, cables, src, dst, self.down)
            outcome = await send(
                _transfer(plan, a),
                sockets=factory_in(self.lab.netns_path(a.src)),
                paths=paths,
                spine=spine,
                timeout_s=timeout,
                hold_s=a.hold_s,
                deadline_s=a.deadline_s,
            )
            taken = outcome.placement.spine if outcome.placement is not None else None
            if mode == ModeName.ECMP:  # no placement: the documented hash says where it went
                oracle = EcmpOracle(plan.fabric, down=self.down)  # the groups' live members
                taken = oracle.spine(FlowKey(a.src, a.dst, "tcp", a.ecmp_port, RECEIVER_PORT))
            run.transfers.append(
                TransferResult(
                    a.index,
                    a.src,
                    a.dst,
                    a.nbytes,
                    outcome.fct_s,
                    spine=taken,
                    error=outcome.error,
                    decision_s=outcome.decision_s,
                    retransmits=outcome.retransmits,
                    censored_s=outcome.censored_s,
                    started_s=outcome.started_at,
                    held_s=outcome.held_s,
                    deadline_s=a.deadline_s,
                )
            )
            self.progress.advance()

        for phase in schedule.phases:
            if mode == ModeName.ISOLATED or phase.sequential:
                for a in phase.arrivals:  # isolated: the measurement before each is its gap
                    await asyncio.sleep(a.at_s if phase.sequential else 0.0)
                    await one(a)
            else:
                await _concurrently(phase, one)


def measure_rtt(lab: Lab, plan: Plan) -> float | None:
    """Average ping RTT from the first sender to a remote receiver (None if none answer)."""
    src = plan.roles.senders[0]
    remote = [r for r in plan.roles.receivers if plan.roles.leaf_of[r] != plan.roles.leaf_of[src]]
    if not remote:
        return None
    addr = str(plan.fabric.host(remote[0]).ipv4)
    out = lab.cmd(src, "ping", "-c", "5", "-i", "0.2", "-W", "1", "-q", addr)
    for line in out.splitlines():
        if "min/avg/max" in line:
            return float(line.split("=")[1].split("/")[1]) / 1000.0
    return None


async def _start_receivers(lab: Lab, plan: Plan) -> list[Receiver]:
    receivers = []
    for host in plan.roles.receivers:
        receiver = Receiver()
        sock = socket_in(lab.netns_path(host))
        await receiver.start(sock, (str(plan.fabric.host(host).ipv4), RECEIVER_PORT))
        receivers.append(receiver)
    return receivers


def _efficiency(view: Mapping[str, Any]) -> tuple[int, int] | None:
    eff = view.get("efficiency")
    if not isinstance(eff, Mapping):
        return None
    try:
        return int(eff.get("efficient", 0)), int(eff.get("evaluated", 0))
    except (TypeError, ValueError):
        return None


async def _link_events(
    scenario: Scenario,
    lab: Lab,
    down: set[tuple[str, str]],
    log: list[tuple[float, Cable, bool]],
) -> None:
    """Fire the scenario's cable events on time; ``down`` follows the cables set down."""
    start = time.monotonic()
    for e in sorted(scenario.events, key=lambda e: e.at_s):
        await asyncio.sleep(max(0.0, start + e.at_s - time.monotonic()))
        lab.set_cable(e.leaf, e.spine, up=e.up)
        log.append((time.monotonic(), (e.leaf, e.spine), e.up))
        if e.up:
            down.discard((e.leaf, e.spine))
        else:
            down.add((e.leaf, e.spine))


def _cable_intfs(lab: Lab) -> dict[Cable, CableIntfs]:
    return {k: CableIntfs(c.leaf_intf, c.spine_intf, c.bps) for k, c in lab.topo.cables.items()}


async def _measure_rates(cables: Mapping[Cable, CableIntfs], window_s: float) -> dict[str, float]:
    """Bit/s every cable interface sent over ``window_s`` (leaf uplinks and spine downlinks)."""
    intfs = [i for c in cables.values() for i in (c.leaf_intf, c.spine_intf)]
    first = {i: tx_bytes(i) for i in intfs}
    t0 = time.monotonic()
    await asyncio.sleep(window_s)
    dt = max(time.monotonic() - t0, 1e-6)
    return {i: (tx_bytes(i) - first[i]) * 8 / dt for i in intfs}


async def _concurrently(phase: PhasePlan, one: Callable[[Arrival], Awaitable[None]]) -> None:
    start = time.monotonic()

    async def at(a: Arrival) -> None:
        await asyncio.sleep(max(0.0, start + a.at_s - time.monotonic()))
        await one(a)

    tasks = [asyncio.get_running_loop().create_task(at(a)) for a in phase.arrivals]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _transfer(plan: Plan, a: Arrival) -> TransferJob:
    return TransferJob(
        src=a.src,
        dst=a.dst,
        src_addr=str(plan.fabric.host(a.src).ipv4),
        dst_addr=str(plan.fabric.host(a.dst).ipv4),
        nbytes=a.nbytes,
        ecmp_port=a.ecmp_port,
        label=f"t{a.index}",
    )


async def _check_background(
    lab: Lab, flows: Sequence[BackgroundFlow], window_s: float = 1.0
) -> list[str]:
    """Measure the leaf uplinks for ``window_s`` and compare with the background plan."""
    cables = lab.topo.cables

    def read() -> dict[tuple[str, str], int]:
        return {k: tx_bytes(c.leaf_intf) for k, c in cables.items()}

    first = read()
    await asyncio.sleep(window_s)
    last = read()
    measured = {k: (last[k] - first[k]) * 8 / window_s for k in cables}
    capacity = {k: c.bps for k, c in cables.items()}
    return misplaced(planned_uplinks(flows), measured, capacity)
