"""Background traffic: iperf3 flows that load chosen spines to chosen levels.

Loading a spine
---------------
A spine carries KV transfers on two egress ports per path: the source leaf's uplink
towards it and its own downlink towards the destination leaf. To load spine S to a
level L, :func:`spine_load_flows` pairs every sender leaf with a receiver leaf (round
robin, so each of those uplinks and downlinks of S is used) and, per pair, sends
``L x capacity`` of the pair's cables from background hosts on the source leaf to
background hosts on the destination leaf, split over several flows when one host's
link is too slow to carry it.

Each flow must then *cross* S, in every mode alike, or modes would not see the same
background. Two ways, chosen by :func:`plan_background`:

- with a :data:`PathOracle` (a function telling which spine ECMP gives a 5-tuple),
  the flow's source port is searched until ECMP itself puts it on S;
- without one, the flow is marked ``pinned`` and the experiment asks the controller
  to pin it to S in every mode (:meth:`~lab.control.FabricControl.pin_flow`).

A failure changes the ECMP groups, and every flow in a group that lost a member
re-hashes. Given the oracle of the groups after the failure (``after``), each flow
records the spine it will move to (``after_failure``), and a load with
``after_failure`` gets source ports that put it on S before *and* on that spine
after: the scenario decides where the failure shifts its background. Pinned flows
are moved by the controller instead, wherever it chooses.

The 5-tuples are fixed in advance: iperf3 binds the client's source port
(``--cport``) and each flow has its own server port, so flows never share state.
UDP flows send 8900-byte datagrams (one per 9000-byte frame).

:class:`Background` starts the servers and clients inside the hosts through the
lab, each tracked by pid, and reports flows that died early.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config import FabricConfig
from experiment.errors import ScenarioError
from experiment.flows import FlowKey
from experiment.roles import Roles
from experiment.scenario import BackgroundLoad, Protocol
from lab.procs import Tracked

if TYPE_CHECKING:
    from lab.net import Lab

PathOracle = Callable[[FlowKey], "str | None"]
"""The spine ECMP puts a flow on (None when unknown)."""

BG_CLIENT_PORTS = tuple(p for p in range(1024, 32768) if not 5201 <= p < 5400 and p != 7000)
"""Source ports of background flows: below Linux's ephemeral range (iperf3's control
connection takes one of those) and spread over 15 bits, because the CRC-16 ECMP hash is
linear: ports that differ in their low bits only reach some of the uplinks."""
BG_SERVER_PORT = 5201
UDP_DATAGRAM = 8900
DURATION_S = 86400


@dataclass(frozen=True, slots=True)
class BackgroundFlow:
    """One iperf3 flow at ``rate_bps`` meant to cross ``spine``."""

    key: FlowKey
    rate_bps: int
    spine: str
    src_leaf: str
    dst_leaf: str
    pinned: bool
    after_failure: str | None = None
    """The spine ECMP puts the flow on once the scenario's failure is out of the groups."""


def _cable_bps(fabric: FabricConfig) -> dict[tuple[str, str], int]:
    """Capacity of every leaf-spine cable, keyed (leaf, spine)."""
    leaves = {s.name for s in fabric.leaves}
    out = {}
    for link in fabric.links:
        a, b = link.a.switch, link.b.switch
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


def spine_load_flows(
    fabric: FabricConfig,
    roles: Roles,
    spine: str,
    level: float,
    *,
    used: dict[str, int] | None = None,
) -> list[tuple[str, str, int, str, str]]:
    """(src host, dst host, rate, src leaf, dst leaf) of flows loading ``spine`` to ``level``.

    ``used`` is each background host's rate already planned (updated in place).
    """
    cables = _cable_bps(fabric)
    used = used if used is not None else {}
    capacity = {h.name: h.capacity_bps for h in fabric.hosts}
    flows = []
    for src_leaf, dst_leaf in leaf_pairs(roles):
        if (src_leaf, spine) not in cables or (dst_leaf, spine) not in cables:
            continue
        want = round(level * min(cables[(src_leaf, spine)], cables[(dst_leaf, spine)]))
        srcs = [h for h in roles.background if roles.leaf_of[h] == src_leaf]
        dsts = [h for h in roles.background if roles.leaf_of[h] == dst_leaf]
        if want and (not srcs or not dsts):
            raise ScenarioError(
                "<scenario>",
                "background",
                f"loading {spine} needs background hosts on {src_leaf} and {dst_leaf}",
            )
        k = 0
        while want > 0:
            src = min(srcs, key=lambda h: used.get(h, 0))
            dst = min(dsts, key=lambda h: used.get(h, 0))
            room = min(capacity[src] - used.get(src, 0), capacity[dst] - used.get(dst, 0))
            if room <= 0 or k > 64:
                raise ScenarioError(
                    "<scenario>",
                    "background",
                    f"the background hosts of {src_leaf} and {dst_leaf} cannot carry "
                    f"{level:.0%} of {spine}'s capacity: give them faster links or add hosts",
                )
            rate = min(want, room)
            flows.append((src, dst, rate, src_leaf, dst_leaf))
            used[src] = used.get(src, 0) + rate
            used[dst] = used.get(dst, 0) + rate
            want -= rate
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
        targets = spines if load.spine is None else [load.spine]
        for spine in targets:
            if spine not in spines:
                raise ScenarioError(
                    source,
                    f"background[{i}].spine",
                    f"fabric {fabric.name!r} has no spine {spine!r}",
                )
            try:
                planned = spine_load_flows(fabric, roles, spine, load.load, used=used)
            except ScenarioError as exc:
                raise ScenarioError(source, f"background[{i}]", exc.message) from None
            for src, dst, rate, src_leaf, dst_leaf in planned:
                _check_after(
                    load.after_failure, (src_leaf, dst_leaf), spines, failed, where=(source, i)
                )
                dst_port = BG_SERVER_PORT + len(flows)
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
    order = random.Random(f"kvfabric-bg:{len(ports)}:{ports[0] if ports else 0}")
    for port in order.sample(list(ports), len(ports)):
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


# -- iperf3 ----------------------------------------------------------------------------


def server_argv(flow: BackgroundFlow) -> list[str]:
    """The iperf3 server of one flow (one server per flow: iperf3 runs one test at a time)."""
    return ["iperf3", "-s", "-p", str(flow.key.dst_port)]


def client_argv(flow: BackgroundFlow, dst_addr: str, duration_s: int = DURATION_S) -> list[str]:
    """The iperf3 client of one flow: fixed source port, paced to the flow's rate."""
    argv = ["iperf3", "-c", dst_addr, "-p", str(flow.key.dst_port)]
    argv += ["--cport", str(flow.key.src_port), "-b", str(flow.rate_bps), "-t", str(duration_s)]
    if flow.key.protocol == "udp":
        argv += ["-u", "-l", str(UDP_DATAGRAM)]
    return argv


@dataclass(slots=True)
class Background:
    """The running background flows of one mode's run."""

    flows: Sequence[BackgroundFlow]
    servers: list[Tracked]
    clients: list[tuple[BackgroundFlow, Tracked]]

    @classmethod
    def start(cls, lab: Lab, flows: Sequence[BackgroundFlow], log_dir: Path) -> Background:
        """Start every server, then every client, inside their hosts."""
        log_dir.mkdir(parents=True, exist_ok=True)
        addr = {h.name: str(h.ipv4) for h in lab.topo.fabric.hosts}
        servers = [
            lab.popen(f.key.dst, f"iperf3-s-{i}", server_argv(f), log_dir / f"bg{i}-server.log")
            for i, f in enumerate(flows)
        ]
        time.sleep(0.3 if flows else 0.0)  # the servers bind before the clients connect
        clients = [
            (
                f,
                lab.popen(
                    f.key.src,
                    f"iperf3-c-{i}",
                    client_argv(f, addr[f.key.dst]),
                    log_dir / f"bg{i}-client.log",
                ),
            )
            for i, f in enumerate(flows)
        ]
        return cls(flows, servers, clients)

    def failures(self) -> list[str]:
        """Flows whose client exited (they are meant to run until stopped)."""
        out = []
        for f, t in self.clients:
            code = t.process.poll()
            if code is not None:
                out.append(
                    f"background flow {f.key.src}->{f.key.dst} ({f.key.protocol}, "
                    f"{f.rate_bps / 1e6:g} Mb/s via {f.spine}) stopped with status {code}"
                )
        return out

    def stop(self, lab: Lab) -> None:
        """Stop clients, then servers, by pid."""
        for _, t in self.clients:
            lab.processes.stop(t, grace_s=1.0)
        for t in self.servers:
            lab.processes.stop(t, grace_s=1.0)
