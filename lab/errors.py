"""Errors of the emulated fabric, below the experiment's own (:mod:`experiment.errors`).

    ExperimentError                      (experiment.errors)
     +-- ScenarioError                   (experiment.errors)
     +-- FabricError                     (experiment.errors)
     |    +-- SwitchStartError    a switch process died or never opened its gRPC port
     +-- LabError
          +-- SwitchStartError
          +-- TrafficError        a traffic generator (iperf3, a KV transfer) failed
          +-- ControlError        the controller service refused or did not answer

OS and subprocess errors are translated into these where they enter the lab, so the
``kvfabric experiment`` command prints one located line instead of a traceback.
"""

from __future__ import annotations

from experiment.errors import ExperimentError, FabricError


class LabError(ExperimentError):
    """Base of every error the emulation itself reports to a user."""


class SwitchStartError(FabricError, LabError):
    """A switch process exited early or never accepted connections on its gRPC port."""


class TrafficError(LabError):
    """A traffic generator could not be started or failed."""


class ControlError(LabError):
    """The controller service refused a request or did not answer."""
