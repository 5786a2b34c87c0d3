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

Background: flows between background hosts, planned as the lab plans them
(:mod:`experiment.background`, the same 5-tuples for the same scenario), which the
drivers start in every mode and hash as the data plane does (:mod:`simulator.modes`).
A scenario written for the simulator's scale names no background host: the simulator
then gives each leaf one (:func:`with_background_hosts`), a stand-in for the rack's
other traffic, and plans a ``ring`` (every cable of a loaded spine carries the load
both ways, a few flows per cable) instead of the lab's ``racks`` pairing.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from controller.config import FabricConfig, HostConfig, Pool
from experiment.arrivals import Schedule, generate
from experiment.background import BackgroundFlow, Pairing, plan_background, port_block
from experiment.ecmp import EcmpOracle
from experiment.errors import FabricError, ScenarioError
from experiment.fabric import fabric_from_params, lab_fabric
from experiment.kvsize import Scaling, Setting, scale_to_lab
from experiment.roles import Roles, resolve_roles
from experiment.scenario import FabricParams, Scenario
from simulator import pods
from simulator.network import Network

BACKGROUND_HOST = "{leaf}-bg"
"""The name of the background host the simulator gives a leaf (see the module docstring)."""


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
    """The background flows, planned for ECMP (flowlet mode steers its own ports)."""
    pairing: Pairing = Pairing.RACKS

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
    pairing = Pairing.RACKS
    if scenario.background and not _names_background_hosts(scenario, fabric):
        fabric = with_background_hosts(fabric)
        pairing = Pairing.RING
    network = Network(fabric)
    _check_cables(scenario, network)
    roles = resolve_roles(scenario, fabric)
    scaling = _scaling(scenario, fabric)
    nbytes = scaling.lab_bytes if scaling is not None else scenario.transfer.real_bytes
    background = plan_scenario_background(scenario, fabric, roles, pairing)
    return Workload(scenario, fabric, network, roles, nbytes, scaling, background, pairing)


def plan_scenario_background(
    scenario: Scenario, fabric: FabricConfig, roles: Roles, pairing: Pairing = Pairing.RACKS
) -> tuple[BackgroundFlow, ...]:
    """The scenario's background flows on ``fabric``, steered as the lab steers them: onto
    their spines by ECMP's own hash (salt 0), from the first block of source ports, each
    recording where the scenario's first failure re-hashes it."""
    failed = scenario.failed_cables
    after = EcmpOracle(fabric, salts=(0,), down=failed) if failed else None
    flows = plan_background(
        scenario.background,
        fabric,
        roles,
        oracle=EcmpOracle(fabric, salts=(0,)),
        after=after,
        failed=failed,
        source=scenario.source,
        ports=port_block(0),
        pairing=pairing,
    )
    return tuple(flows)


def _names_background_hosts(scenario: Scenario, fabric: FabricConfig) -> bool:
    """Whether the scenario or the fabric says which hosts carry the background."""
    return scenario.hosts.background is not None or any(h.pool is Pool.OTHER for h in fabric.hosts)


def with_background_hosts(fabric: FabricConfig) -> FabricConfig:
    """``fabric`` with one background host per leaf (:data:`BACKGROUND_HOST`): pool
    ``other``, on the leaf's next free port and the highest free address of its subnet,
    its link as fast as the leaf's uplinks together (it never limits the background)."""
    uplinks: dict[str, int] = {}
    ports: dict[str, set[int]] = {}
    for link in fabric.links:
        for end in (link.a, link.b):
            ports.setdefault(end.switch, set()).add(end.port)
            uplinks[end.switch] = uplinks.get(end.switch, 0) + link.capacity_bps
    hosts = list(fabric.hosts)
    for leaf in fabric.leaves:
        mine = [h for h in fabric.hosts if h.leaf == leaf.name]
        used = ports.get(leaf.name, set()) | {h.port for h in mine}
        net = leaf.subnet or (
            IPv4Network(f"{mine[0].ipv4}/{mine[0].prefix_len}", strict=False) if mine else None
        )
        if net is None:
            raise FabricError(f"leaf {leaf.name} has no subnet and no host: no address for "
                              "its background host")  # fmt: skip
        taken = {h.ipv4 for h in mine}
        address = next(a for a in reversed(list(net.hosts())) if a not in taken)
        hosts.append(
            HostConfig(
                name=BACKGROUND_HOST.format(leaf=leaf.name),
                leaf=leaf.name,
                port=max(used, default=0) + 1,
                ipv4=IPv4Address(address),
                prefix_len=net.prefixlen,
                mac=f"08:00:00:ff:{len(hosts) >> 8 & 0xFF:02x}:{len(hosts) & 0xFF:02x}",
                pool=Pool.OTHER,
                capacity_bps=uplinks.get(leaf.name, 0),
            )
        )
    return dataclasses.replace(fabric, hosts=tuple(hosts))


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


def _check_cables(scenario: Scenario, net: Network) -> None:
    for load in scenario.background:
        if load.link is not None:
            _check_cable(net, scenario, "background", *load.link)
        elif load.spine is not None and load.spine not in net.spines:
            raise ScenarioError(
                scenario.source,
                "background",
                f"no spine {load.spine!r} (spines: {', '.join(net.spines)})",
            )
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
