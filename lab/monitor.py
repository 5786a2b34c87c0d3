"""What the machine and the fabric did during a run: CPU, port counters, queue drops.

While a mode runs, :class:`Monitor` samples, every ``interval_s``:

- the CPU time of every switch process (``/proc/PID/stat``) and of the whole machine
  (``/proc/stat``), as shares of a core and of all cores over the interval;
- the transmitted bytes of every switch port (``/sys/class/net/IF/statistics``),
  as utilisation of the port's capacity, grouped by tier: a leaf's ports towards
  hosts are ``intra-rack``, a leaf's uplinks ``inter-rack``, a spine's ports ``spine``
  (the controller's tiers); and, timed, as bit/s per interface (``rate_samples``:
  which spines had room when, :mod:`lab.room`).

At the start and the end it also takes a :class:`Counters` snapshot per switch:
packets received and sent on its interfaces, packets the kernel dropped on receive,
and packets its egress queues (tc) dropped. What a switch received but neither sent
nor lost in a shaped queue, it lost itself (:func:`unexplained_drops`): the
saturation that :mod:`lab.validity` looks for. Probes the controller sends out of
host ports are sent without being received, so they can only hide drops, never
invent them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lab.procs import cpu_seconds
from lab.topo import FabricTopo


@dataclass(frozen=True, slots=True)
class PortInfo:
    """A switch port the monitor reads: its interface, tier and capacity."""

    switch: str
    port: int
    intf: str
    tier: str
    bps: int


def port_table(topo: FabricTopo) -> list[PortInfo]:
    """Every switch port of the lab with its tier and capacity."""
    fabric = topo.fabric
    out = []
    for h in fabric.hosts:
        bps = h.capacity_bps or max(c.bps for c in topo.cables.values())
        out.append(PortInfo(h.leaf, h.port, topo.intf(h.leaf, h.port), "intra-rack", bps))
    for c in topo.cables.values():
        out.append(PortInfo(c.leaf, c.leaf_port, c.leaf_intf, "inter-rack", c.bps))
        out.append(PortInfo(c.spine, c.spine_port, c.spine_intf, "spine", c.bps))
    return out


def _stat(intf: str, name: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{intf}/statistics/{name}").read_text())
    except (OSError, ValueError):
        return 0


def tx_bytes(intf: str) -> int:
    """Bytes ``intf`` has transmitted (0 when it is gone)."""
    return _stat(intf, "tx_bytes")


def qdisc_stats(intf: str) -> tuple[int, int]:
    """(packets dropped, packets queued now) of the root qdisc of ``intf``."""
    try:
        out = subprocess.run(
            ["tc", "-s", "-j", "qdisc", "show", "dev", intf],
            capture_output=True,
            text=True,
            check=True,
            timeout=5,
        ).stdout
        qdiscs = json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError):
        return 0, 0
    roots = [q for q in qdiscs if q.get("root")]
    drops = sum(int(q.get("drops", 0)) for q in roots)
    queued = sum(int(q.get("qlen", 0)) for q in roots)
    return drops, queued


@dataclass(frozen=True, slots=True)
class Counters:
    """One switch's packet totals over its interfaces (``queued``: in its egress queues now)."""

    rx: int = 0
    tx: int = 0
    rx_dropped: int = 0
    queue_drops: int = 0
    queued: int = 0

    def __sub__(self, other: Counters) -> Counters:
        return Counters(
            self.rx - other.rx,
            self.tx - other.tx,
            self.rx_dropped - other.rx_dropped,
            self.queue_drops - other.queue_drops,
            self.queued - other.queued,
        )

    def __add__(self, other: Counters) -> Counters:
        return Counters(
            self.rx + other.rx,
            self.tx + other.tx,
            self.rx_dropped + other.rx_dropped,
            self.queue_drops + other.queue_drops,
            self.queued + other.queued,
        )


def read_counters(ports: list[PortInfo]) -> dict[str, Counters]:
    """Per switch, the totals of its interfaces now.

    The packet counters of every interface are read first, together (a millisecond),
    so that a packet crossing a switch during the read is not counted in on one port
    and not yet out on another; the queue statistics, which take a ``tc`` call per
    interface, follow.
    """
    totals: dict[str, Counters] = {}
    for p in ports:
        c = Counters(
            _stat(p.intf, "rx_packets"), _stat(p.intf, "tx_packets"), _stat(p.intf, "rx_dropped")
        )
        totals[p.switch] = totals.get(p.switch, Counters()) + c
    for p in ports:
        drops, queued = qdisc_stats(p.intf)
        totals[p.switch] = totals[p.switch] + Counters(queue_drops=drops, queued=queued)
    return totals


def unexplained_drops(delta: Counters) -> int:
    """Packets a switch received and neither sent, nor lost or still held in an egress queue."""
    return max(0, delta.rx - delta.tx - delta.queue_drops - delta.queued) + delta.rx_dropped


def _machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [float(x) for x in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    total = sum(values[:8])
    return total - idle, total


@dataclass(slots=True)
class Observed:
    """What a monitor saw during one run."""

    duration_s: float = 0.0
    switch_cpu: dict[str, list[float]] = field(default_factory=dict)
    machine_cpu: list[float] = field(default_factory=list)
    tier_samples: dict[str, list[float]] = field(default_factory=dict)
    counters: dict[str, Counters] = field(default_factory=dict)
    interval_s: float = 1.0
    rate_samples: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    """``(monotonic time at the end of a sample, bit/s each interface sent during it)``."""


class Monitor:
    """Samples CPU and port counters while a mode runs (start, then stop)."""

    def __init__(
        self, topo: FabricTopo, switch_pids: Mapping[str, int], interval_s: float = 1.0
    ) -> None:
        self.ports = port_table(topo)
        self.pids = dict(switch_pids)
        self.interval_s = interval_s
        self.observed = Observed(interval_s=interval_s)
        self._task: asyncio.Task[None] | None = None
        self._before: dict[str, Counters] = {}
        self._started = 0.0

    def start(self) -> None:
        """Take the first snapshot and start sampling."""
        self._before = read_counters(self.ports)
        self._started = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> Observed:
        """Stop sampling and take the last snapshot."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        after = read_counters(self.ports)
        self.observed.counters = {sw: after[sw] - self._before.get(sw, Counters()) for sw in after}
        self.observed.duration_s = time.monotonic() - self._started
        return self.observed

    async def _run(self) -> None:
        cpu = {sw: cpu_seconds(pid) for sw, pid in self.pids.items()}
        machine = _machine_cpu()
        tx = {p.intf: _stat(p.intf, "tx_bytes") for p in self.ports}
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.interval_s)
            now = time.monotonic()
            dt = max(now - last, 1e-6)
            last = now
            for sw, pid in self.pids.items():
                value = cpu_seconds(pid)
                before = cpu.get(sw)
                if value is not None and before is not None:
                    self.observed.switch_cpu.setdefault(sw, []).append((value - before) / dt)
                cpu[sw] = value
            busy, total = _machine_cpu()
            if total > machine[1]:
                self.observed.machine_cpu.append((busy - machine[0]) / (total - machine[1]))
            machine = (busy, total)
            rates: dict[str, float] = {}
            for p in self.ports:
                value = _stat(p.intf, "tx_bytes")
                rates[p.intf] = (value - tx[p.intf]) * 8 / dt
                tx[p.intf] = value
                self.observed.tier_samples.setdefault(p.tier, []).append(rates[p.intf] / p.bps)
            self.observed.rate_samples.append((now, rates))


def cpu_count() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0))
