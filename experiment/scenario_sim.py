"""The scenario's ``simulation`` section: what only ``kvfabric simulate`` reads.

    simulation:
      ecmp_k: 4                 # sub-flows per transfer in ecmp-k, each hashed on its own
      flowlet_period: 20ms      # mean time between a transfer's flowlet boundaries
      write_latency: 1ms        # from a cable's verdict to its ranges rewritten in the leaf
      telemetry_delay: 5ms      # from a counter read to the engine's telemetry entry point
      sample_interval: 10ms     # utilisation samples (default: the poll, or a quarter of
                                # a transfer alone on the fastest cable if that is shorter)
      batch_window: 2ms         # kv-aware and scheduled: a burst's requests that arrive
                                # within this of the first go to the engine as one batch
                                # (Engine.decide_batch), as a coordinator sends them
                                # (default 0: each alone)
      controller:               # the fabric file's controller section, same keys
        telemetry: {poll_interval: 100ms}
      packet:                   # the packet engine only (`--engine packet`)
        tcp: cubic              # cubic | newreno | dctcp (dctcp needs ecn)
        queue: 100              # packets each egress port queues (default: shaping.queue)
        ecn: 20                 # RED marks ECN above this many packets (none: no marking)
        link_delay: 1us         # propagation delay of every link
        min_rto: 10ms           # TCP's minimum retransmission time-out
        scale: 0.1              # every rate and transfer size times this (times stay)

``controller`` takes exactly the keys of the fabric file's ``controller`` section (the
settings ``kvfabric controller`` reads), validated by the same parser; kv-aware runs
the decision engine with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from controller.config import ControllerSettings, located
from controller.config.located import Node
from controller.config.sections import parse_controller_settings


class Tcp(StrEnum):
    """The packet engine's TCP congestion control (ns-3's TcpCubic, TcpNewReno or
    TcpDctcp; DCTCP needs the queues to mark ECN)."""

    CUBIC = "cubic"
    NEWRENO = "newreno"
    DCTCP = "dctcp"


@dataclass(frozen=True, slots=True)
class PacketSettings:
    """The packet engine's model; ``queue_packets`` None: the scenario's ``shaping.queue``;
    ``line``/``col`` locate the section for errors."""

    tcp: Tcp = Tcp.CUBIC
    queue_packets: int | None = None
    ecn_packets: int | None = None
    link_delay_s: float = 1e-6
    min_rto_s: float = 0.01
    scale: float = 1.0
    line: int | None = None
    col: int | None = None


@dataclass(frozen=True, slots=True)
class SimulationSettings:
    """Model parameters of the simulator; ``controller`` None: the fabric's defaults."""

    ecmp_k: int = 4
    flowlet_period_s: float = 0.02
    write_latency_s: float = 0.001
    telemetry_delay_s: float = 0.005
    sample_interval_s: float | None = None
    batch_window_s: float = 0.0
    controller: ControllerSettings | None = None
    packet: PacketSettings | None = None


def parse_simulation(node: Node, base_dir: Path) -> SimulationSettings:
    """Validate a ``simulation`` section."""
    keys = [
        "ecmp_k", "flowlet_period", "write_latency", "telemetry_delay", "sample_interval",
        "batch_window",
    ]  # fmt: skip
    f = node.fields([], [*keys, "controller", "packet"])
    d = SimulationSettings()
    return SimulationSettings(
        ecmp_k=located.optional(f, "ecmp_k", d.ecmp_k, located.integer, 1, 64),
        flowlet_period_s=located.optional(
            f, "flowlet_period", d.flowlet_period_s, located.duration, 1e-6, 3600.0
        ),
        write_latency_s=located.optional(
            f, "write_latency", d.write_latency_s, located.duration, 0.0, 60.0
        ),
        telemetry_delay_s=located.optional(
            f, "telemetry_delay", d.telemetry_delay_s, located.duration, 0.0, 60.0
        ),
        sample_interval_s=located.optional(
            f, "sample_interval", None, located.duration, 1e-6, 3600.0
        ),
        batch_window_s=located.optional(
            f, "batch_window", d.batch_window_s, located.duration, 0.0, 10.0
        ),
        controller=located.optional(f, "controller", None, parse_controller_settings, base_dir),
        packet=located.optional(f, "packet", None, parse_packet),
    )


def parse_packet(node: Node) -> PacketSettings:
    """Validate a ``simulation.packet`` section."""
    f = node.fields([], ["tcp", "queue", "ecn", "link_delay", "min_rto", "scale"])
    d = PacketSettings()
    tcp = located.optional(f, "tcp", d.tcp, located.choice, Tcp)
    queue = located.optional(f, "queue", None, located.integer, 2, 1_000_000)
    ecn = located.optional(f, "ecn", None, located.integer, 1, queue or 1_000_000)
    if tcp is Tcp.DCTCP and ecn is None:
        raise f["tcp"].error("dctcp needs ECN marking: set `ecn` (packets) in this section")
    mark = node.raw.start_mark if node.raw is not None else None
    return PacketSettings(
        tcp=tcp,
        queue_packets=queue,
        ecn_packets=ecn,
        link_delay_s=located.optional(f, "link_delay", d.link_delay_s, located.duration, 0.0, 1.0),
        min_rto_s=located.optional(f, "min_rto", d.min_rto_s, located.duration, 1e-6, 60.0),
        scale=located.optional(f, "scale", d.scale, located.number, 1e-6, 1.0),
        line=mark.line + 1 if mark is not None else None,
        col=mark.column + 1 if mark is not None else None,
    )
