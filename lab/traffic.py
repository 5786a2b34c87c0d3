"""Background traffic in the lab: the planned flows, run as iperf3 clients and servers.

What the background is (which flows, between which background hosts, at which rates,
with which 5-tuples, steered onto which spines) is planned once for both tools by
:mod:`experiment.background`, whose names this module re-exports for the lab's runner.
Here each planned flow becomes an iperf3 server on its destination host and a client
on its source host, with the plan's source port bound (``--cport``) and its rate
paced (``-b``); UDP flows send 8900-byte datagrams (one per 9000-byte frame). A failure
re-hashes the flows by itself (the controller rewrites the ECMP groups and the leaves
hash the same 5-tuples over the members left), exactly as the simulator re-hashes
them.

:class:`Background` starts the servers and clients inside the hosts through the
lab, each tracked by pid, and reports flows that died early.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from experiment.background import (
    BG_CLIENT_PORTS,
    BG_SERVER_PORT,
    BackgroundFlow,
    PathOracle,
    Steer,
    leaf_pairs,
    load_spine,
    misplaced,
    plan_background,
    planned_uplinks,
    resteer,
    spine_load_flows,
)
from lab.procs import Tracked

if TYPE_CHECKING:
    from lab.net import Lab

__all__ = [
    "BG_CLIENT_PORTS",
    "BG_SERVER_PORT",
    "DURATION_S",
    "UDP_DATAGRAM",
    "Background",
    "BackgroundFlow",
    "PathOracle",
    "Steer",
    "client_argv",
    "leaf_pairs",
    "load_spine",
    "misplaced",
    "plan_background",
    "planned_uplinks",
    "resteer",
    "server_argv",
    "spine_load_flows",
]

UDP_DATAGRAM = 8900
DURATION_S = 86400


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
