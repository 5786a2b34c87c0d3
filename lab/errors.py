"""Errors of the lab and the experiment.

    LabError
     +-- ScenarioError    a bad scenario file: ``file:line:col: key.path: message``
     +-- FabricError      the emulated fabric could not be built, started or cleaned up
     |    +-- SwitchStartError    a switch process died or never opened its gRPC port
     +-- TrafficError     a traffic generator (iperf3, a KV transfer) failed
     +-- ControlError     the controller service refused or did not answer

OS and subprocess errors are translated into these where they enter the lab, so the
``kvfabric experiment`` command prints one located line instead of a traceback.
"""

from __future__ import annotations

from controller.errors import LocatedError


class LabError(Exception):
    """Base of every error the lab reports to a user."""


class ScenarioError(LocatedError, LabError):
    """A scenario file that cannot be loaded, located by file, key path and line."""


class FabricError(LabError):
    """The emulated fabric could not be built, started or torn down."""


class SwitchStartError(FabricError):
    """A switch process exited early or never accepted connections on its gRPC port."""


class TrafficError(LabError):
    """A traffic generator could not be started or failed."""


class ControlError(LabError):
    """The controller service refused a request or did not answer."""
