"""The decision engine: kvfabric's pure core, wrapped by the controller's I/O shell.

Feed :class:`Engine` events with the time they happened; apply the updates it
returns. Nothing in this package reads a clock or does I/O.

    engine = Engine(Topology(load_config("fabric.yaml")), now=clock())
    decision, updates = engine.decide(TransferRequest("h11", "h21", 2_000_000), clock())

Modules, in the order data flows through them: ``events`` (inputs), ``loads`` (the
per-port picture), ``selection`` (path choice), ``inflight`` (transfers and tags),
``safety`` (baselines, reroutes, fallback), ``schedule`` (when held
transfers start), ``audit`` (model vs probed wiring),
``efficiency`` (offline recomputation), ``static_pins`` (flows held on a spine),
``alerts`` (windowed conditions), ``updates``
(outputs), ``view`` (log records and the fabric view), ``core`` (the engine).
"""

from controller.engine.audit import AuditFindings, LinkVerdict, compare_wiring
from controller.engine.core import Engine
from controller.engine.events import AuditRound, ProbeSeen, SwitchReading, TransferRequest
from controller.engine.flow_pins import (
    PROTOCOLS,
    FlowPin,
    FlowTuple,
    InstallFlowPin,
    RemoveFlowPin,
)
from controller.engine.updates import (
    Alert,
    Decision,
    LinkStatusChanged,
    LogRecord,
    Released,
    SetMode,
    Tag,
    TransferMoved,
    Update,
)
from controller.engine.view import fabric_view, tier_utilisation
from controller.errors import (
    DuplicatePinError,
    EngineError,
    PathDownError,
    TransferStartedError,
    UnknownHostError,
    UnknownPinError,
    UnknownTransferError,
)

__all__ = [
    "PROTOCOLS",
    "Alert",
    "AuditFindings",
    "AuditRound",
    "Decision",
    "DuplicatePinError",
    "Engine",
    "EngineError",
    "FlowPin",
    "FlowTuple",
    "InstallFlowPin",
    "LinkStatusChanged",
    "LinkVerdict",
    "LogRecord",
    "PathDownError",
    "ProbeSeen",
    "Released",
    "RemoveFlowPin",
    "SetMode",
    "SwitchReading",
    "Tag",
    "TransferMoved",
    "TransferRequest",
    "TransferStartedError",
    "UnknownHostError",
    "UnknownPinError",
    "UnknownTransferError",
    "Update",
    "compare_wiring",
    "fabric_view",
    "tier_utilisation",
]
