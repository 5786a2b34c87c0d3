"""The scenario's ``simulation`` section: what only ``kvfabric simulate`` reads.

    simulation:
      ecmp_k: 4                 # sub-flows per transfer in ecmp-k, each hashed on its own
      flowlet_period: 20ms      # mean time between a transfer's flowlet boundaries
      write_latency: 1ms        # from the controller's decision to the pin in the leaf
      telemetry_delay: 5ms      # from a counter read to the engine's telemetry entry point
      sample_interval: 10ms     # utilisation samples (default: the poll, or a quarter of
                                # a transfer alone on the fastest cable if that is shorter)
      controller:               # the fabric file's controller section, same keys
        telemetry: {poll_interval: 100ms}

``controller`` takes exactly the keys of the fabric file's ``controller`` section (the
settings ``kvfabric controller`` reads), validated by the same parser; kv-aware runs
the decision engine with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.config import ControllerSettings, located
from controller.config.located import Node
from controller.config.sections import parse_controller_settings


@dataclass(frozen=True, slots=True)
class SimulationSettings:
    """Model parameters of the simulator; ``controller`` None: the fabric's defaults."""

    ecmp_k: int = 4
    flowlet_period_s: float = 0.02
    write_latency_s: float = 0.001
    telemetry_delay_s: float = 0.005
    sample_interval_s: float | None = None
    controller: ControllerSettings | None = None


def parse_simulation(node: Node, base_dir: Path) -> SimulationSettings:
    """Validate a ``simulation`` section."""
    keys = ["ecmp_k", "flowlet_period", "write_latency", "telemetry_delay", "sample_interval"]
    f = node.fields([], [*keys, "controller"])
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
        controller=located.optional(f, "controller", None, parse_controller_settings, base_dir),
    )
