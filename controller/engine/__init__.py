"""The decision engine: kvfabric's pure core, wrapped by the controller's I/O shell.

Feed :class:`Engine` events with the time they happened; apply the updates it
returns. Nothing in this package reads a clock or does I/O.

    engine = Engine(Topology(load_config("fabric.yaml")), now=clock())
    decision, updates = engine.decide(Demand("h11", "h21", 2_000_000), clock())

Modules, in the order data flows through them: ``events`` (inputs: a :class:`Demand`
for a transfer, switch readings, audit rounds, the switches' ports), ``telemetry_math``
(counters to utilisation), ``loads`` (the per-port picture), ``ports`` (the speeds and
oper-status the switches report, against the fabric file), ``fluid`` (the engine's own flows:
bytes left and rates), ``selection`` (path choice), ``slicing`` (a transfer split over
spines),
``inflight`` (transfers in flight, the :class:`~controller.engine.inflight.Choice`
behind each, and tag ports), ``safety`` (baselines, reroutes, fallback), ``schedule``
(when held transfers start), ``batch`` (a burst decided as one: its order and its
measure), ``audit`` and ``liveness`` (model vs probed wiring, and
when a lost probe means a dead link), ``efficiency`` (offline recomputation),
``flow_pins`` (flows held on a spine), ``alerts`` (windowed conditions), ``updates``
(outputs), ``snapshot`` (the engine at one instant, read-only: all the shell reads of
it), ``view`` (log records and the fabric view), ``core`` (the engine).
"""

from controller.engine.audit import AuditFindings, LinkVerdict, compare_wiring
from controller.engine.core import Engine
from controller.engine.events import (
    AuditRound,
    Demand,
    PortStates,
    PortStatus,
    ProbeSeen,
    SwitchReading,
)
from controller.engine.flow_pins import (
    PROTOCOLS,
    FlowPin,
    FlowTuple,
    InstallFlowPin,
    RemoveFlowPin,
)
from controller.engine.snapshot import Counts, Snapshot, TransferNow
from controller.engine.updates import (
    Alert,
    CapacityChanged,
    Decision,
    LinkStatusChanged,
    LogRecord,
    Marking,
    Released,
    SetMode,
    Slice,
    TransferMoved,
    Update,
)
from controller.engine.view import fabric_view
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
    "CapacityChanged",
    "Counts",
    "Decision",
    "Demand",
    "DuplicatePinError",
    "Engine",
    "EngineError",
    "FlowPin",
    "FlowTuple",
    "InstallFlowPin",
    "LinkStatusChanged",
    "LinkVerdict",
    "LogRecord",
    "Marking",
    "PathDownError",
    "PortStates",
    "PortStatus",
    "ProbeSeen",
    "Released",
    "RemoveFlowPin",
    "SetMode",
    "Slice",
    "Snapshot",
    "SwitchReading",
    "TransferMoved",
    "TransferNow",
    "TransferStartedError",
    "UnknownHostError",
    "UnknownPinError",
    "UnknownTransferError",
    "Update",
    "compare_wiring",
    "fabric_view",
]
