"""Errors of the experiment's definition, shared by the lab and the simulator.

    ExperimentError
     +-- ScenarioError    a bad scenario or sweep file: ``file:line:col: key.path: message``
     +-- FabricError      the fabric a run needs cannot be made (a shape that does not
                          exist, a cable the scenario slows that the fabric lacks); the
                          lab's ``SwitchStartError`` is one too (:mod:`lab.errors`)

The engines add their own below :class:`ExperimentError` (the lab's ``LabError``, the
simulator's ``ClusterError``), so that ``kvfabric experiment`` and ``kvfabric
simulate`` catch one tree and print one located line instead of a traceback.
"""

from __future__ import annotations

from controller.errors import LocatedError


class ExperimentError(Exception):
    """Base of every error a run of the experiment reports to a user."""


class ScenarioError(LocatedError, ExperimentError):
    """A scenario file that cannot be loaded, located by file, key path and line."""


class FabricError(ExperimentError):
    """The fabric of a run could not be made, built, started or torn down."""
