"""The packet-level engine: the same fabric in ns-3, TCP packets through real queues.

It is the reference the flow-level model (:mod:`simulator.flow`) is checked against,
and what anyone who wants packet-level detail (slow start, queues, drops, ECN) runs.
It implements :class:`simulator.engine.FabricEngine`, so every mode's driver, kv-aware
and the controller's own engine included, runs on it unchanged.

The model (``ns3`` from PyPI, 3.44, through cppyy; :file:`packet_model.cpp`):

- every host, leaf and spine is an ns-3 node with the Internet stack; every link of
  the :class:`~simulator.network.Network` is one direction of a point-to-point cable
  at its capacity (a bundle of cables is one cable at their sum), with the
  scenario's ``link_delay``;
- every egress port has a queue disc of ``queue`` packets (default: the scenario's
  ``shaping.queue``, the lab's own queue): FIFO, or RED marking ECN
  above ``ecn`` packets (instantaneous queue, DCTCP's marking);
- a flow is a TCP connection (``cubic``, ``newreno`` or ``dctcp``) from an ns-3
  ``BulkSendApplication`` to a ``PacketSink``; the leaves forward a flow's packets to
  the spine its driver chose (the ECMP hash of ``kv_fabric.p4`` from
  :mod:`experiment.ecmp`, a pin, a flowlet's salt), so both engines put a flow on the same
  spine, and moving a flow rewrites that choice without touching the connection;
- background flows run between background hosts like transfers, on the spine their
  driver hashes them to (and move when it hashes them again): ns-3's
  ``OnOffApplication``, UDP at a constant rate (the queue it overloads drops the
  excess), or TCP writing at most its target rate into its socket;
- a cable that fails drops every packet it carries until it comes back; a
  re-provisioned cable changes its devices' rate.

Per-packet work stays in C++: forwarding, the links' byte counters (what the switches'
egress counters read; kv-aware's telemetry comes from them) and the receivers' byte
counts. Python runs at flow granularity: ns-3 runs until the next timer of the
drivers, or until a flow receives its last byte, whichever is first.

``scale`` (``simulation.packet.scale``) multiplies every rate and every transfer's
bytes: a transfer keeps its duration, with ``scale`` times the packets; the results
(times, and bytes counted back at full scale) read as the full-scale fabric's. What
differs is what a packet costs against a transfer (one packet time, and a queue of
``queue`` packets, last ``1/scale`` times longer).

ns-3 is a small-scale reference: :func:`check_size` refuses a run past
:data:`MAX_HOSTS` hosts or :data:`MAX_PACKETS` packets of transfers, with the way to
scale it down, rather than run for hours.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from experiment.errors import ScenarioError
from experiment.scenario_sim import PacketSettings, Tcp
from simulator.engine import DoneCallback, FabricEngine
from simulator.maxmin import FloatArray
from simulator.network import Network
from simulator.workload import Workload

MAX_HOSTS = 256
"""The most hosts a packet-engine run accepts."""

MAX_PACKETS = 20_000_000
"""The most packets of transfers (every mode's run, scale applied) it accepts."""

MAX_FLOWS = 55_535
"""Connections in one run (one port each, both ends)."""

DEFAULT_QUEUE = 100
"""Packets per egress queue when neither the engine's settings nor the scenario say."""

SEGMENT = 1448
"""TCP payload per packet (1,500-byte MTU, timestamps on)."""

BUFFER = 1 << 23
"""Every socket's send and receive buffer, well above any path's bandwidth-delay product."""

TCP_TYPES = {Tcp.CUBIC: "ns3::TcpCubic", Tcp.NEWRENO: "ns3::TcpNewReno", Tcp.DCTCP: "ns3::TcpDctcp"}

_SOURCE = Path(__file__).with_name("packet_model.cpp")


@cache
def ns3_model() -> Any:
    """ns-3 and the engine's C++ side, compiled once per process (the first call JITs for
    tens of seconds; cling's warnings about static initialisers go to /dev/null)."""
    saved = os.dup(2)
    try:
        sys.stderr.flush()
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        from ns import ns

        cppyy = ns.cppyy
        cppyy.cppdef(_SOURCE.read_text())
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return cppyy.gbl.kvf


def check_size(work: Workload, settings: PacketSettings) -> None:
    """Refuse a run the packet engine cannot finish in reasonable time (a located error)."""
    s = work.scenario
    hosts = len(work.fabric.hosts)
    flows = s.transfers * max(1, s.simulation.ecmp_k)
    packets = s.transfers * math.ceil(work.nbytes * settings.scale / SEGMENT)
    where = (s.source, "fabric")
    if hosts > MAX_HOSTS:
        raise ScenarioError(
            *where,
            f"{hosts} hosts: the packet engine is a small-scale reference and takes at most "
            f"{MAX_HOSTS}; run this scenario with `--engine flow`",
        )
    if flows > MAX_FLOWS:
        raise ScenarioError(
            s.source, "arrivals", f"{flows} connections: the packet engine takes at most "
            f"{MAX_FLOWS} per run; run fewer transfers, or `--engine flow`",
        )  # fmt: skip
    if packets > MAX_PACKETS:
        need = MAX_PACKETS / max(packets / settings.scale, 1)
        raise ScenarioError(
            s.source, "simulation.packet.scale", f"{packets:,} packets of transfers per mode "
            f"at scale {settings.scale:g}: the packet engine takes at most {MAX_PACKETS:,}; "
            f"set simulation.packet.scale to {need:.2g} or less (rates and bytes scale "
            "together, times stay), or run with `--engine flow`",
        )  # fmt: skip


def for_workload(work: Workload) -> PacketEngine:
    """The packet engine for a scenario's run, once :func:`check_size` allows it."""
    settings = work.scenario.simulation.packet or PacketSettings()
    if settings.queue_packets is None:
        queue = work.scenario.shaping.queue_packets
        settings = dataclasses.replace(settings, queue_packets=queue)
    check_size(work, settings)
    return PacketEngine(work.network, settings)


@dataclass(slots=True)
class _Flow:
    links: tuple[int, ...]
    nbytes: int  # at scale
    on_done: DoneCallback | None


class PacketEngine(FabricEngine):
    """One run on ns-3 (see the module docstring); one at a time per process.

    :func:`for_workload` checks the scenario's size first; a new engine ends the
    previous one's simulation (ns-3's simulator is one per process)."""

    _current: PacketEngine | None = None

    def __init__(self, network: Network, settings: PacketSettings | None = None) -> None:
        super().__init__()
        settings = settings or PacketSettings()
        kvf = ns3_model()
        if PacketEngine._current is not None:
            PacketEngine._current.model.Destroy()  # ns-3's simulator is one per process
        PacketEngine._current = self
        self.network = net = network
        self.settings = settings
        self.scale = settings.scale
        n = net.nlinks
        self.model: Any = kvf.Model(
            n, TCP_TYPES[settings.tcp], settings.queue_packets or DEFAULT_QUEUE,
            settings.ecn_packets or 0,
            settings.link_delay_s, SEGMENT, BUFFER, settings.min_rto_s,
        )  # fmt: skip
        m = self.model
        leaf_index = {leaf: i for i, leaf in enumerate(net.leaves)}
        self.spine_index = {spine: i for i, spine in enumerate(net.spines)}
        self.host_node: dict[str, int] = {}
        for host in net.fabric.hosts:
            self.host_node[host.name] = m.AddHost(leaf_index[host.leaf], host.port)
        m.AddSwitches(len(net.leaves), len(net.spines))
        cap = net.capacity * self.scale
        self._nic_host: dict[int, str] = {}
        self._port_host: dict[int, str] = {}
        for name, node in self.host_node.items():
            nic, port = net.nic[name], net.host_port[name]
            m.ConnectHost(node, float(cap[nic]), float(cap[port]), nic, port)
            self._nic_host[nic] = name
            self._port_host[port] = name
        self._uplink_spine: dict[int, str] = {}
        for (leaf, spine), up in net.up.items():
            down = net.down[spine, leaf]
            m.ConnectCable(
                leaf_index[leaf], self.spine_index[spine], float(cap[up]), float(cap[down]),
                up, down,
            )  # fmt: skip
            self._uplink_spine[up] = spine
        self.sent_bytes: FloatArray = np.zeros(n)
        self.kv_bytes: FloatArray = np.zeros(n)
        self._flows: dict[int, _Flow] = {}
        self._background: dict[int, tuple[int, ...]] = {}  # flow -> path
        self._last_sent: FloatArray = np.zeros(n)
        self._last_t = 0.0

    # -- flows ----------------------------------------------------------------------

    def _start(self, links: Sequence[int], nbytes: float, on_done: DoneCallback | None,
               kv: bool, cap_bps: float) -> int:  # fmt: skip
        """A TCP connection over ``links`` now (a host-to-host path)."""
        if math.isinf(nbytes) or math.isfinite(cap_bps):
            raise ValueError(
                "the packet engine runs host-to-host transfers of a finite size "
                "(background: start_background)"
            )
        src, dst, spine = self._ends(links)
        scaled = max(1, round(nbytes * self.scale))
        f = int(self.model.StartFlow(self.host_node[src], self.host_node[dst], spine, scaled, kv,
                                     65536))  # fmt: skip
        if f < 0:
            raise RuntimeError(f"more than {MAX_FLOWS} connections in one packet-engine run")
        self._flows[f] = _Flow(tuple(links), scaled, on_done)
        return f

    def start_background(self, links: Sequence[int], bps: float, *, elastic: bool) -> int:
        """Background from host to host over ``links``: TCP writing at most ``bps``
        (``elastic``), or UDP at a constant ``bps``."""
        if bps <= 0:
            raise ValueError(f"background needs a positive rate, got {bps}")
        src, dst, spine = self._ends(links)
        f = int(self.model.StartBackground(self.host_node[src], self.host_node[dst], spine,
                                           bps * self.scale, elastic, SEGMENT))  # fmt: skip
        if f < 0:
            raise RuntimeError(f"more than {MAX_FLOWS} connections in one packet-engine run")
        self._background[f] = tuple(links)
        return f

    def _ends(self, links: Sequence[int]) -> tuple[str, str, int]:
        """Source host, destination host and spine index (-1: same leaf) of a path."""
        links = [x for x in links if x != self.network.pad]
        src = self._nic_host.get(links[0])
        dst = self._port_host.get(links[-1])
        if src is None or dst is None or len(links) not in (2, 4):
            raise ValueError(f"not a host-to-host path: links {list(links)}")
        spine = self.spine_index[self._uplink_spine[links[1]]] if len(links) == 4 else -1
        return src, dst, spine

    def reroute(self, flow: int, links: Sequence[int]) -> None:
        """The leaves send the flow's next packets on the new path."""
        spine = self._ends(links)[2]
        if flow in self._background:
            self._background[flow] = tuple(links)
        else:
            self._check(flow).links = tuple(links)
        self.model.Reroute(flow, spine)

    def stop_flow(self, flow: int) -> float:
        """Close the sender now; the bytes (at full scale) not yet received (background:
        inf, it never ends)."""
        if self._background.pop(flow, None) is not None:
            self.model.StopBackground(flow)
            return math.inf
        f = self._check(flow)
        got = int(self.model.StopFlow(flow))
        del self._flows[flow]
        return max(f.nbytes - got, 0) / self.scale

    def is_active(self, flow: int) -> bool:
        """True until the flow's last byte has arrived (background: until stopped)."""
        return flow in self._flows or flow in self._background

    def path_of(self, flow: int) -> tuple[int, ...]:
        """The links the flow's packets take now."""
        links = self._background.get(flow)
        if links is None:
            links = self._check(flow).links
        return tuple(x for x in links if x != self.network.pad)

    def _check(self, flow: int) -> _Flow:
        f = self._flows.get(flow)
        if f is None:
            raise KeyError(f"no active flow {flow}")
        return f

    # -- links ----------------------------------------------------------------------

    def set_capacity(self, link: int, bps: float) -> None:
        """A link's rate from now on (0: it drops every packet)."""
        self.model.SetRate(link, bps * self.scale)

    def utilisation(self) -> FloatArray:
        """Each link's load since the previous call, over its nominal capacity."""
        self._read_counters()
        dt = self.now - self._last_t
        out: FloatArray = np.zeros(self.network.nlinks)
        if dt > 0:
            cap = self.network.capacity
            ok = np.isfinite(cap) & (cap > 0)
            out[ok] = np.minimum((self.sent_bytes[ok] - self._last_sent[ok]) * 8 / dt / cap[ok], 1)
        self._last_sent = self.sent_bytes.copy()
        self._last_t = self.now
        return out

    def _read_counters(self) -> None:
        n = self.network.nlinks
        self.sent_bytes = (
            np.frombuffer(self.model.sent.data(), dtype=np.float64, count=n) / self.scale
        )
        self.kv_bytes = np.frombuffer(self.model.kv.data(), dtype=np.float64, count=n) / self.scale

    def packet_count(self) -> int:
        """Packet transmissions so far, every hop counted."""
        return int(self.model.packets)

    # -- the loop -------------------------------------------------------------------

    def run(self, until: float = math.inf) -> None:
        """Run ns-3 from timer to timer, stopping early at each flow's last byte."""
        while self._pending or self._flows:
            t = min(self.next_timer(), until)
            if math.isinf(t):
                t = self.now + 1.0  # flows, and nothing else due: run on
            reached = float(self.model.RunUntil(t))
            done = [int(f) for f in self.model.TakeDone()]
            if done:
                self.now = reached
                self._read_counters()
                self._finish(done)
                continue
            self.now = max(reached, t)
            if self.now >= until:
                return
            self._read_counters()
            self.fire_due(self.now)

    def _finish(self, done: list[int]) -> None:
        callbacks: list[tuple[int, Callable[[int, float], None]]] = []
        for flow in done:
            f = self._flows.pop(flow, None)
            if f is not None and f.on_done is not None:
                callbacks.append((flow, f.on_done))
        for flow, on_done in callbacks:
            self.events += 1
            on_done(flow, self.now)
