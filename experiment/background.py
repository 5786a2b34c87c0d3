"""The background, planned once: which flows load which spines, with which 5-tuples.

Both tools plan a scenario's background here, so they run the same flows: the lab
starts each one as an iperf3 client and server (:mod:`lab.traffic`), the simulator as
a constant-rate (UDP) or capped elastic (TCP) flow in either engine
(:mod:`simulator.modes`). A flow is a 5-tuple between two background hosts
(:mod:`experiment.roles`) and a rate; nothing in the plan pins it.

Loading a spine
---------------
To load spine S to a level L, flows go from background hosts on one leaf to
background hosts on another, up the source leaf's uplink to S and down S's downlink to
the destination leaf, each pair of leaves at L times the smaller of the two cables'
capacities. Which leaves pair up is the plan's :class:`Pairing`:

- ``racks`` (the lab's, and the simulator's whenever the scenario has background
  hosts): every leaf of KV senders paired round robin with a leaf of KV receivers, so
  the uplinks and downlinks the transfers cross carry the load. A pair's load is split
  over several flows only when one background host's link is too slow to carry it.
- ``ring`` (the simulator's when the fabric has no background host and it gives each
  leaf one, :func:`simulator.workload.build_workload`): each leaf wired to S sends to
  the next one (in the fabric's order, the last to the first), so that every cable of
  S carries L in both directions: a rack's traffic to the other racks. Each pair's load
  is split into :data:`RING_FLOWS` flows, so that a cable's background is a few flows
  that a re-hash spreads over the surviving uplinks as many flows would, and the count
  stays bounded: ``RING_FLOWS`` per cable and loaded spine, whatever the racks hold
  (the design's cluster: 24 leaves, 3 loaded spines, 288 flows).

A load on one cable (``link``, the simulator only) goes from the cable's leaf to every
other leaf wired to the spine with background hosts, and back, each flow at L times
the cable's capacity over the number of those leaves: the cable carries L both ways,
each other cable of the spine a share of it.

Steering by source port
-----------------------
Each flow must *cross* S before any failure, in every mode alike, or modes would not
see the same background. With a :data:`PathOracle` (a function telling which spine
ECMP gives a 5-tuple, :class:`experiment.ecmp.EcmpOracle`), the flow's source port is
searched until ECMP itself puts it on S; without one (the lab's ``pin_background``),
the flow is marked ``pinned`` and the controller pins it.

A failure changes the ECMP groups, and every flow of a group that lost a member
re-hashes by itself, in the lab as in both simulator engines: where it lands is the
hash's business. Given the oracle of the groups after the scenario's first failure
(``after``), each flow records that spine (``after_failure``). A load that names an
``after_failure`` spine (deprecated, :mod:`experiment.scenario`) restricts the search
to source ports that put it on S before *and* on that spine after: it stages one
outcome of the re-hash, and every tool then sees that outcome because every tool
hashes the same 5-tuples.

The 5-tuples are fixed in advance: iperf3 binds the client's source port (``--cport``)
and each flow has its own server port, so flows never share state. Flowlet mode gets
its own source ports (:func:`for_flowlet`), steered for a flowlet slot's first salt.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from controller.config import FabricConfig
from experiment.ecmp import FLOWLET_STEP, EcmpOracle
from experiment.errors import ScenarioError
from experiment.flows import FlowKey
from experiment.roles import Roles
from experiment.scenario import BackgroundLoad, Protocol

PathOracle = Callable[[FlowKey], "str | None"]
"""The spine ECMP puts a flow on (None when unknown)."""

BG_CLIENT_PORTS = tuple(p for p in range(1024, 32768) if not 5201 <= p < 5400 and p != 7000)
"""Source ports of background flows: below Linux's ephemeral range (iperf3's control
connection takes one of those) and spread over 15 bits, because the CRC-16 ECMP hash is
linear: ports that differ in their low bits only reach some of the uplinks."""
BG_SERVER_PORT = 5201
BG_SERVER_PORTS = 199
"""Server ports ``BG_SERVER_PORT ..`` one per flow (wrapping after this many: the
simulator's plans are larger than the lab's, and the source ports keep them apart)."""
PORT_BLOCKS = 7
"""Disjoint sets of background source ports: the first for ECMP, the others for flowlet
mode's runs (a flowlet slot remembers its salt from one run to the next)."""
RING_FLOWS = 4
"""Flows per pair of leaves in a ``ring`` plan (see the module docstring)."""


class Pairing(StrEnum):
    """Which leaves a spine's background runs between (see the module docstring)."""

    RACKS = "racks"
    RING = "ring"


@dataclass(frozen=True, slots=True)
class BackgroundFlow:
    """One background flow at ``rate_bps`` planned to cross ``spine``."""

    key: FlowKey
    rate_bps: int
    spine: str
    src_leaf: str
    dst_leaf: str
    pinned: bool
    after_failure: str | None = None
    """The spine ECMP puts the flow on once the scenario's failure is out of the groups."""

    @property
    def elastic(self) -> bool:
        """TCP backs off (an elastic flow capped at its rate); UDP does not."""
        return self.key.protocol == str(Protocol.TCP)


def port_block(k: int) -> tuple[int, ...]:
    """The k-th of :data:`PORT_BLOCKS` disjoint sets of source ports (each spans 15 bits)."""
    return BG_CLIENT_PORTS[k::PORT_BLOCKS]


def _cable_bps(fabric: FabricConfig) -> dict[tuple[str, str], int]:
    """Capacity of every leaf-spine cable, keyed (leaf, spine)."""
    leaves = {s.name for s in fabric.leaves}
    out = {}
    for link in fabric.links:
        a, b = link.a.switch, link.b.switch
        if a in leaves or b in leaves:
            leaf, spine = (a, b) if a in leaves else (b, a)
            out[(leaf, spine)] = link.capacity_bps
    return out


def _leaves(hosts: Iterable[str], leaf_of: Mapping[str, str]) -> list[str]:
    return sorted({leaf_of[h] for h in hosts})


def leaf_pairs(roles: Roles) -> list[tuple[str, str]]:
    """Sender leaves paired round robin with receiver leaves (different leaves only)."""
    src = _leaves(roles.senders, roles.leaf_of)
    dst = _leaves(roles.receivers, roles.leaf_of)
    pairs = []
    for k in range(max(len(src), len(dst))):
        s, d = src[k % len(src)], dst[k % len(dst)]
        if s != d:
            pairs.append((s, d))
    return pairs


def ring_pairs(fabric: FabricConfig, roles: Roles, spine: str) -> list[tuple[str, str]]:
    """Each leaf wired to ``spine`` that has background hosts, to the next such leaf (in
    the fabric's order; the last to the first)."""
    cables = _cable_bps(fabric)
    hosting = {roles.leaf_of[h] for h in roles.background}
    ring = [s.name for s in fabric.leaves if s.name in hosting and (s.name, spine) in cables]
    if len(ring) < 2:
        return []
    return [(leaf, ring[(k + 1) % len(ring)]) for k, leaf in enumerate(ring)]


Planned = tuple[str, str, int, str, str]
"""(src host, dst host, rate, src leaf, dst leaf) of one flow, before its ports."""


def spine_load_flows(
    fabric: FabricConfig,
    roles: Roles,
    spine: str,
    level: float,
    *,
    used: dict[str, int] | None = None,
    pairing: Pairing = Pairing.RACKS,
) -> list[Planned]:
    """The flows loading ``spine`` to ``level`` (see the module docstring).

    ``used`` is each background host's rate already planned (updated in place).
    """
    cables = _cable_bps(fabric)
    used = used if used is not None else {}
    pairs = leaf_pairs(roles) if pairing is Pairing.RACKS else ring_pairs(fabric, roles, spine)
    parts = 1 if pairing is Pairing.RACKS else RING_FLOWS
    flows: list[Planned] = []
    for src_leaf, dst_leaf in pairs:
        if (src_leaf, spine) not in cables or (dst_leaf, spine) not in cables:
            continue
        want = round(level * min(cables[(src_leaf, spine)], cables[(dst_leaf, spine)]))
        what = f"{level:.0%} of {spine}'s capacity"
        flows += _pair_flows(
            fabric, roles, used, leaves=(src_leaf, dst_leaf), want=want, parts=parts, what=what
        )
    return flows


def link_load_flows(
    fabric: FabricConfig,
    roles: Roles,
    cable: tuple[str, str],
    level: float,
    *,
    used: dict[str, int] | None = None,
) -> list[Planned]:
    """The flows loading one cable to ``level`` both ways (see the module docstring)."""
    leaf, spine = cable
    cables = _cable_bps(fabric)
    if cable not in cables:
        raise ScenarioError("<scenario>", "background", f"no cable between {leaf} and {spine}")
    used = used if used is not None else {}
    hosting = {roles.leaf_of[h] for h in roles.background}
    partners = [
        s.name
        for s in fabric.leaves
        if s.name in hosting and s.name != leaf and (s.name, spine) in cables
    ]
    if leaf not in hosting or not partners:
        raise ScenarioError(
            "<scenario>",
            "background",
            f"loading the cable {leaf}-{spine} needs background hosts on {leaf} and on "
            f"another leaf wired to {spine}",
        )
    share = round(level * cables[cable] / len(partners))
    what = f"{level:.0%} of the cable {leaf}-{spine}"
    flows: list[Planned] = []
    for other in partners:
        flows += _pair_flows(
            fabric, roles, used, leaves=(leaf, other), want=share, parts=1, what=what
        )
        flows += _pair_flows(
            fabric, roles, used, leaves=(other, leaf), want=share, parts=1, what=what
        )
    return flows


def _pair_flows(
    fabric: FabricConfig,
    roles: Roles,
    used: dict[str, int],
    *,
    leaves: tuple[str, str],
    want: int,
    parts: int,
    what: str,
) -> list[Planned]:
    """``want`` bit/s from background hosts of one leaf to those of another, in ``parts``
    flows, each split again when the least-used hosts' links cannot carry it."""
    src_leaf, dst_leaf = leaves
    capacity = {h.name: h.capacity_bps for h in fabric.hosts}
    srcs = [h for h in roles.background if roles.leaf_of[h] == src_leaf]
    dsts = [h for h in roles.background if roles.leaf_of[h] == dst_leaf]
    if want and (not srcs or not dsts):
        raise ScenarioError(
            "<scenario>",
            "background",
            f"{what} needs background hosts on {src_leaf} and {dst_leaf}",
        )
    flows: list[Planned] = []
    for part in range(parts):
        left = want // parts + (1 if part < want % parts else 0)
        k = 0
        while left > 0:
            src = min(srcs, key=lambda h: used.get(h, 0))
            dst = min(dsts, key=lambda h: used.get(h, 0))
            room = min(capacity[src] - used.get(src, 0), capacity[dst] - used.get(dst, 0))
            if room <= 0 or k > 64:
                raise ScenarioError(
                    "<scenario>",
                    "background",
                    f"the background hosts of {src_leaf} and {dst_leaf} cannot carry "
                    f"{what}: give them faster links or add hosts",
                )
            rate = min(left, room)
            flows.append((src, dst, rate, src_leaf, dst_leaf))
            used[src] = used.get(src, 0) + rate
            used[dst] = used.get(dst, 0) + rate
            left -= rate
            k += 1
    return flows


def plan_background(
    loads: Sequence[BackgroundLoad],
    fabric: FabricConfig,
    roles: Roles,
    *,
    oracle: PathOracle | None = None,
    after: PathOracle | None = None,
    failed: Collection[tuple[str, str]] = (),
    source: str = "<scenario>",
    ports: Sequence[int] = BG_CLIENT_PORTS,
    pairing: Pairing = Pairing.RACKS,
) -> list[BackgroundFlow]:
    """Every background flow of a scenario, with fixed 5-tuples (see the module docstring).

    ``after`` is ECMP once the ``failed`` cables are out of the groups. Source ports are
    searched in ``ports``, so that differently steered plans (ECMP and flowlet mode) can
    use disjoint ports.
    """
    spines = [s.name for s in fabric.spines]
    used: dict[str, int] = {}
    taken: set[int] = set()
    flows: list[BackgroundFlow] = []
    for i, load in enumerate(loads):
        for spine, planned in _load_flows(
            load, i, fabric, roles, used=used, pairing=pairing, source=source
        ):
            for src, dst, rate, src_leaf, dst_leaf in planned:
                _check_after(
                    load.after_failure, (src_leaf, dst_leaf), spines, failed, where=(source, i)
                )
                dst_port = BG_SERVER_PORT + len(flows) % BG_SERVER_PORTS
                template = FlowKey(src, dst, str(load.protocol), 0, dst_port)
                steer = Steer(spine, oracle, load.after_failure if oracle else None, after)
                key = _choose_port(template, steer, ports, taken)
                flows.append(
                    BackgroundFlow(
                        key,
                        rate,
                        spine,
                        src_leaf,
                        dst_leaf,
                        pinned=oracle is None,
                        after_failure=after(key) if after and oracle else None,
                    )
                )
    return flows


def _load_flows(
    load: BackgroundLoad,
    i: int,
    fabric: FabricConfig,
    roles: Roles,
    *,
    used: dict[str, int],
    pairing: Pairing,
    source: str,
) -> list[tuple[str, list[Planned]]]:
    """(spine, flows) of one load: a cable's, or each spine's it names."""
    spines = [s.name for s in fabric.spines]
    targets = spines if load.spine is None else [load.spine]
    if load.link is None and load.spine is not None and load.spine not in spines:
        raise ScenarioError(
            source, f"background[{i}].spine", f"fabric {fabric.name!r} has no spine {load.spine!r}"
        )
    try:
        if load.link is not None:
            return [(load.link[1], link_load_flows(fabric, roles, load.link, load.load, used=used))]
        return [
            (spine, spine_load_flows(fabric, roles, spine, load.load, used=used, pairing=pairing))
            for spine in targets
        ]
    except ScenarioError as exc:
        raise ScenarioError(source, f"background[{i}]", exc.message) from None


def _check_after(
    want: str | None,
    leaves: tuple[str, str],
    spines: Sequence[str],
    failed: Collection[tuple[str, str]],
    *,
    where: tuple[str, int],
) -> None:
    """An ``after_failure`` spine must exist and stay connected to the flow's leaves."""
    if want is None:
        return
    source, i = where
    if want not in spines:
        raise ScenarioError(
            source, f"background[{i}].after_failure", f"the fabric has no spine {want!r}"
        )
    for leaf in leaves:
        if (leaf, want) in failed:
            raise ScenarioError(
                source,
                f"background[{i}].after_failure",
                f"the failure takes down the cable {leaf}-{want}: the background of "
                f"{leaves[0]}->{leaves[1]} cannot run over {want} after it",
            )


@dataclass(frozen=True, slots=True)
class Steer:
    """Where a flow must run: ``spine`` by ``oracle``, then ``after_spine`` by ``after``."""

    spine: str
    oracle: PathOracle | None
    after_spine: str | None = None
    after: PathOracle | None = None

    def accepts(self, key: FlowKey) -> bool:
        """True when ``key`` runs where it must (anything goes without an oracle)."""
        if self.oracle is not None and self.oracle(key) != self.spine:
            return False
        if self.after_spine is None or self.after is None:
            return True
        return self.after(key) == self.after_spine


def _choose_port(template: FlowKey, steer: Steer, ports: Sequence[int], taken: set[int]) -> FlowKey:
    """``template`` with a free source port of ``ports`` that ECMP puts where ``steer`` says.

    Ports are tried in a fixed pseudo-random order: the CRC hash is linear, so ports in
    sequence change only their low bits and may keep missing an uplink for thousands
    of tries.
    """
    for port in _search_order(tuple(ports)):
        if port in taken:
            continue
        key = dataclasses.replace(template, src_port=port)
        if steer.accepts(key):
            taken.add(port)
            return key
    after = f" and then on {steer.after_spine}" if steer.after_spine else ""
    raise ScenarioError(
        "<scenario>",
        "background",
        f"no source port puts {template.src}->{template.dst} on {steer.spine}{after} by ECMP",
    )


@functools.lru_cache(maxsize=16)
def _search_order(ports: tuple[int, ...]) -> tuple[int, ...]:
    """``ports`` in the fixed pseudo-random order the search tries them (computed once)."""
    order = random.Random(f"kvfabric-bg:{len(ports)}:{ports[0] if ports else 0}")
    return tuple(order.sample(list(ports), len(ports)))


def resteer(
    flows: Iterable[BackgroundFlow],
    oracle: PathOracle,
    ports: Sequence[int],
    after: PathOracle | None = None,
) -> list[BackgroundFlow]:
    """The same flows with source ports from ``ports`` that ``oracle`` puts on their spines
    (and ``after``, when given, on their ``after_failure`` spines)."""
    taken: set[int] = set()
    out = []
    for f in flows:
        key = _choose_port(f.key, Steer(f.spine, oracle, f.after_failure, after), ports, taken)
        out.append(dataclasses.replace(f, key=key, pinned=False))
    return out


def for_flowlet(
    flows: Sequence[BackgroundFlow],
    fabric: FabricConfig,
    repeat: int,
    failed: Collection[tuple[str, str]] = (),
) -> list[BackgroundFlow]:
    """The background of flowlet mode's run number ``repeat``: the ECMP plan's flows with
    their own source ports, steered for a flowlet slot's first salt (and, with a failure,
    onto the same spines after it), fresh for each run: a slot remembers its salt."""
    oracle = EcmpOracle(fabric, salts=(FLOWLET_STEP,))
    after = EcmpOracle(fabric, salts=(FLOWLET_STEP,), down=failed) if failed else None
    return resteer(flows, oracle, port_block(1 + repeat % (PORT_BLOCKS - 1)), after)


def load_spine(
    fabric: FabricConfig,
    roles: Roles,
    spine: str,
    level: float,
    protocol: Protocol = Protocol.UDP,
    *,
    oracle: PathOracle | None = None,
) -> list[BackgroundFlow]:
    """The background flows that load ``spine`` to ``level`` (0..1) of its capacity."""
    return plan_background([BackgroundLoad(spine, level, protocol)], fabric, roles, oracle=oracle)


def planned_uplinks(flows: Iterable[BackgroundFlow]) -> dict[tuple[str, str], int]:
    """Background bit/s planned on each leaf uplink, keyed (leaf, spine)."""
    out: dict[tuple[str, str], int] = {}
    for f in flows:
        out[(f.src_leaf, f.spine)] = out.get((f.src_leaf, f.spine), 0) + f.rate_bps
    return out


def misplaced(
    planned: Mapping[tuple[str, str], int],
    measured: Mapping[tuple[str, str], float],
    capacity: Mapping[tuple[str, str], int],
    tolerance: float = 0.15,
) -> list[str]:
    """Uplinks whose measured background differs from the plan by more than ``tolerance``."""
    out = []
    for key in sorted(set(planned) | set(measured)):
        want, got = planned.get(key, 0), measured.get(key, 0.0)
        if abs(got - want) > tolerance * capacity.get(key, 1):
            out.append(
                f"background on {key[0]}->{key[1]} was {got / 1e6:.1f} Mb/s instead of the "
                f"planned {want / 1e6:.1f} Mb/s (modes no longer see the same background)"
            )
    return out
