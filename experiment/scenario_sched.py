"""The scenario's ``scheduling`` section: when the ``scheduled`` mode sends.

    scheduling:
      policy: srpt              # fifo | srpt | edf: how the controller orders a path's queue
      max_wait: 2s              # the longest the controller holds a transfer (default:
                                # the controller's own)
      batch_max_wait: 1s        # the longest it holds a member of a batch (a burst
                                # decided as one; default: the controller's own)
      deadline: {min: 1s, max: 3s}   # each transfer's deadline after its request, drawn
                                     # uniformly (or one duration for all)

The ``scheduled`` mode is ``kv-aware`` with the controller's temporal scheduling on:
the lab writes ``policy`` and ``max_wait`` into the controller's settings (the fabric
file's ``controller.scheduling``), the simulator hands them to the decision engine.
``kv-aware`` runs with scheduling off (policy ``none``), so the two modes differ only
in when transfers start. Without this section ``scheduled`` uses ``srpt``.

``deadline`` gives every transfer a deadline (``deadline_ms`` of its request in the
modes that ask the controller), drawn from the arrival seed so every mode sees the
same ones; each mode's results count the transfers that met theirs. ``edf`` orders by
deadline, so it needs one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controller.config import (
    MAX_WAIT_LIMIT_S,
    ControllerSettings,
    Policy,
    SchedulingSettings,
    located,
)
from controller.config.located import Node

MAX_DEADLINE_S = 3600.0


@dataclass(frozen=True, slots=True)
class ScenarioScheduling:
    """The ``scheduled`` mode's policy (never ``none``) and ``max_wait`` (None: the
    controller's); ``deadline_s`` (min, max) None: no deadlines."""

    policy: Policy = Policy.SRPT
    max_wait_s: float | None = None
    deadline_s: tuple[float, float] | None = None
    batch_max_wait_s: float | None = None


def with_scheduling(
    settings: ControllerSettings, scheduling: ScenarioScheduling | None
) -> ControllerSettings:
    """The controller's ``settings`` with the scenario's policy, or with scheduling off
    (policy ``none``) when ``scheduling`` is None: the ``scheduled`` mode and the others."""
    base = settings.scheduling
    if scheduling is None:
        policy = SchedulingSettings(Policy.NONE, base.max_wait_s, base.batch_max_wait_s)
    else:
        wait = scheduling.max_wait_s if scheduling.max_wait_s is not None else base.max_wait_s
        batch = scheduling.batch_max_wait_s
        policy = SchedulingSettings(
            scheduling.policy, wait, batch if batch is not None else base.batch_max_wait_s
        )
    return dataclasses.replace(settings, scheduling=policy)


def parse_scheduling(node: Node) -> ScenarioScheduling:
    """Validate a ``scheduling`` section."""
    f = node.fields([], ["policy", "max_wait", "batch_max_wait", "deadline"])
    deadline = _parse_deadline(f["deadline"]) if "deadline" in f else None
    policy = Policy.SRPT
    if "policy" in f:
        policy = located.choice(f["policy"], Policy)
        if policy is Policy.NONE:
            raise f["policy"].error(
                "policy 'none' is the 'kv-aware' mode; the 'scheduled' mode needs one of "
                "fifo, srpt, edf"
            )
        if policy is Policy.EDF and deadline is None:
            raise f["policy"].error(
                "'edf' orders transfers by their deadlines: give 'deadline' (a duration, "
                "or {min, max})"
            )
    return ScenarioScheduling(
        policy=policy,
        max_wait_s=(
            located.duration(f["max_wait"], 1e-3, MAX_WAIT_LIMIT_S) if "max_wait" in f else None
        ),
        deadline_s=deadline,
        batch_max_wait_s=(
            located.duration(f["batch_max_wait"], 1e-3, MAX_WAIT_LIMIT_S)
            if "batch_max_wait" in f
            else None
        ),
    )


# deadline: DURATION | {min: DURATION, max: DURATION}
def _parse_deadline(node: Node) -> tuple[float, float]:
    if node.is_scalar:
        d = located.duration(node, 1e-3, MAX_DEADLINE_S)
        return d, d
    f = node.fields(["min", "max"])
    lo = located.duration(f["min"], 1e-3, MAX_DEADLINE_S)
    hi = located.duration(f["max"], 1e-3, MAX_DEADLINE_S)
    if hi < lo:
        raise f["max"].error(f"'max' must be at least 'min' ({lo:g}s), got {hi:g}s")
    return lo, hi
