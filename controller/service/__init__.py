"""The controller service: the I/O shell around the pure decision engine.

The engine (:mod:`controller.engine`) decides; this package does everything that
touches the world, and only applies what the engine returns. It has two rooms and a
shell between them:

- ``http``: the front, where the coordinators' and operators' requests come in (the
  fast lane, aiohttp's server, the API's one handler table, the routes and bodies,
  the OpenAPI document, the live page);
- ``southbound``: the switches' side (P4Runtime channels, intent and reconciliation,
  enforcement, telemetry, link probes, the ledger and adoption, flow pins);
- the shell: ``service`` (the :class:`Service`: the API's operations and the loops,
  wiring the rest), ``starts`` (held transfers' long polls), ``metrics`` (every
  Prometheus metric, one class), ``translog`` (the JSON-lines transfer log),
  ``tracing`` (OpenTelemetry spans), and ``main``, which runs it all.

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
from controller.service.service import Service, ServiceOptions
from controller.service.southbound.pipeline import compile_program, load_pipeline
from controller.service.southbound.switches import Pipeline

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
