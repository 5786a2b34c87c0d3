"""The controller service: the I/O shell around the pure decision engine.

The engine (:mod:`controller.engine`) decides; this package does everything that
touches the world, and only applies what the engine returns. Its modules follow the
data:

- ``switches``: one finsy P4Runtime channel per switch (arbitration, the pipeline
  cookie, TLS), with gRPC errors translated into :class:`SwitchError`;
- ``intent`` and ``reconcile`` (pure): what each switch should hold, and the writes
  that make it so; ``provision`` reads a switch back and writes only the difference;
- ``telemetry``: counters and queue banks of every switch, polled concurrently;
- ``prober``: link probes (PacketOut) and their PacketIns, for the topology audit;
- ``pins`` and ``adopt``: pin entries with the metadata that lets a restarted
  controller, or a backup taking over, adopt the transfers in flight;
- ``flow_pins``: flow pins' ``flow_pin`` entries, written, removed, and synced or
  adopted when a leaf (re)connects;
- ``enforce``: the engine's updates applied (pins, modes, ECMP groups, alerts, log);
- ``metrics`` (every Prometheus metric, one class), ``translog`` (JSON lines);
- ``http`` (aiohttp's HTTP/1.1 with the API's limits and JSON errors) and ``api`` (the
  endpoints): the HTTP/JSON API; ``service`` wires it all, ``main`` runs it.

Public API::

    Service, ServiceOptions, serve, compile_program, load_pipeline, Pipeline
"""

from controller.errors import (
    NotPrimaryError,
    PinNotWrittenError,
    PipelineError,
    ServiceError,
    SwitchError,
    SwitchUnavailable,
)
from controller.service.main import serve
from controller.service.pipeline import compile_program, load_pipeline
from controller.service.service import Service, ServiceOptions
from controller.service.switches import Pipeline

__all__ = [
    "NotPrimaryError",
    "PinNotWrittenError",
    "Pipeline",
    "PipelineError",
    "Service",
    "ServiceError",
    "ServiceOptions",
    "SwitchError",
    "SwitchUnavailable",
    "compile_program",
    "load_pipeline",
    "serve",
]
