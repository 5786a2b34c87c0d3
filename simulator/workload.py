"""What one simulated run carries: the fabric, the transfers, the background, the events.

A scenario is read exactly as the lab reads it (:mod:`experiment.scenario`, for the
simulator's tool), and the same functions turn it into a fabric
(:func:`experiment.fabric.fabric_from_params` and ``shaping.links``), host roles
(:func:`experiment.roles.resolve_roles`) and a schedule of transfers
(:func:`experiment.arrivals.generate`): for the same seed, the simulator and the lab run the
same transfers between the same hosts with the same ECMP source ports. On top, the
simulator's keys for scale: cables bundled ``uplinks_per_leaf / spines`` at a time
(their capacities add: one pipe per leaf-spine pair, which the flow model cannot tell
from separate cables hashed evenly), per-spine cable rates, fewer GPUs in the
prefill racks, and pods joined by superspines (:mod:`simulator.pods`).

Transfer size: a scenario written for the lab (``lab_bytes`` or ``time_scale``) runs
as the lab runs it, with the lab's bytes at the fabric's (lab) rates; otherwise every
transfer carries the real KV cache at the fabric's rates (the production regime).

Background: a spine's (or a cable's) load is put on both directions of each of its
cables. UDP is constant-rate traffic that takes its share of a link before any flow;
TCP is a flow per cable direction capped at the target rate, which gives way under
max-min sharing as a TCP sender would.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from controller.config import FabricConfig, Pool
from experiment.arrivals import Schedule, generate
from experiment.errors import ScenarioError
from experiment.fabric import fabric_from_params, lab_fabric
from experiment.kvsize import Scaling, Setting, scale_to_lab
from experiment.roles import Roles, resolve_roles
from experiment.scenario import BackgroundLoad, FabricParams, Protocol, Scenario
from simulator import pods
from simulator.network import Network


@dataclass(frozen=True, slots=True)
class BackgroundFlow:
    """Background on one directed link: constant (UDP) or capped elastic (TCP)."""

    link: int
    bps: float
    elastic: bool


@dataclass(frozen=True, slots=True)
class Workload:
    """Everything a run of a scenario needs but the mode and the seed's schedule."""

    scenario: Scenario
    fabric: FabricConfig
    network: Network
    roles: Roles
    nbytes: int
    scaling: Scaling | None
    background: tuple[BackgroundFlow, ...]

    def schedule(self, seed: int) -> Schedule:
        """The transfers of one run (the lab's generator, the lab's seed)."""
        try:
            return generate(
                self.scenario.phases,
                self.roles,
                self.nbytes,
                seed,
                self.scenario.scheduling.deadline_s,
            )
        except ValueError as exc:
            raise ScenarioError(self.scenario.source, "arrivals", str(exc)) from None


def build_workload(scenario: Scenario) -> Workload:
    """The fabric, roles, transfer size and background of ``scenario``."""
    fabric = build_fabric(scenario.fabric, scenario)
    network = Network(fabric)
    # the simulator puts background on cables directly: it needs no background hosts
    roles = resolve_roles(dataclasses.replace(scenario, background=()), fabric)
    scaling = _scaling(scenario, fabric)
    nbytes = scaling.lab_bytes if scaling is not None else scenario.transfer.real_bytes
    background = tuple(
        flow for load in scenario.background for flow in _background(load, network, scenario)
    )
    _check_events(scenario, network)
    return Workload(scenario, fabric, network, roles, nbytes, scaling, background)


def build_fabric(params: FabricParams, scenario: Scenario) -> FabricConfig:
    """The scenario's fabric with the simulator's keys for scale applied."""
    if params.pods > 1:
        fabric = pods.within_pods(fabric_from_params(pods.flattened(params), scenario.name), params)
    else:
        fabric = fabric_from_params(params, scenario.name)
    rates = dict(params.spine_rates)
    bundle = params.bundle
    if bundle != 1 or rates:
        spines = {s.name for s in fabric.spines}
        links = []
        for link in fabric.links:
            spine = link.a.switch if link.a.switch in spines else link.b.switch
            rate = rates.get(spine, link.capacity_bps)
            links.append(dataclasses.replace(link, capacity_bps=rate * bundle))
        fabric = dataclasses.replace(fabric, links=tuple(links))
    if params.superspines:
        fabric = pods.with_superspines(fabric, params)
    if params.prefill_hosts_per_leaf is not None:
        keep = params.prefill_hosts_per_leaf
        hosts = tuple(h for h in fabric.hosts if h.pool is not Pool.PREFILL or h.port <= keep)
        fabric = dataclasses.replace(fabric, hosts=hosts)
    if scenario.shaping.links:
        fabric = lab_fabric(fabric, link_rates=scenario.shaping.links, fresh_ports=False)
    return fabric


def _scaling(scenario: Scenario, fabric: FabricConfig) -> Scaling | None:
    t = scenario.transfer
    if t.lab_bytes is None and t.time_scale is None:
        return None
    rates = Counter(link.capacity_bps for link in fabric.links)
    return scale_to_lab(
        t.real_bytes,
        Setting(t.real_link_bps, t.real_poll_interval_s, t.real_rtt_s),
        Setting(rates.most_common(1)[0][0], fabric.controller.telemetry.poll_interval_s, 1e-3),
        concurrency=scenario.max_concurrency,
        spines=len(fabric.spines),
        time_scale=t.time_scale,
        lab_bytes=t.lab_bytes,
    )


def _background(load: BackgroundLoad, net: Network, scenario: Scenario) -> list[BackgroundFlow]:
    if load.link is not None:
        leaf, spine = load.link
        _check_cable(net, scenario, "background", leaf, spine)
        cables = [(leaf, spine)]
    else:
        spines = net.spines if load.spine is None else (load.spine,)
        if load.spine is not None and load.spine not in net.spines:
            raise ScenarioError(
                scenario.source,
                "background",
                f"no spine {load.spine!r} (spines: {', '.join(net.spines)})",
            )
        cables = [(leaf, s) for s in spines for leaf in net.leaves if (leaf, s) in net.up]
    out = []
    for leaf, spine in cables:
        for link in net.cable_links(leaf, spine):
            bps = load.load * net.capacity[link]
            if bps > 0:
                out.append(BackgroundFlow(link, bps, load.protocol is Protocol.TCP))
    return out


def _check_events(scenario: Scenario, net: Network) -> None:
    for e in scenario.events:
        _check_cable(net, scenario, "events", e.leaf, e.spine)


def _check_cable(net: Network, scenario: Scenario, key: str, leaf: str, spine: str) -> None:
    if (leaf, spine) not in net.up:
        raise ScenarioError(
            scenario.source,
            key,
            f"no cable between {leaf!r} and {spine!r} (leaves: {', '.join(net.leaves)}; "
            f"spines: {', '.join(net.spines)})",
        )
