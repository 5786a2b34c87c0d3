"""Errors of the decision engine: requests it cannot serve.

    ControllerError
     +-- EngineError                a request that does not make sense
          +-- UnknownHostError      a host not in the fabric ("did you mean ...")
          +-- UnknownTransferError  a completion for a transfer the engine does not track
          +-- PathDownError         a forced spine whose path has a cable down or miswired
          +-- UnknownPinError       a static pin id the engine does not hold
          +-- DuplicatePinError     a static pin of a 5-tuple (or an id) already pinned

The HTTP API turns them into 4xx answers; they never mean the engine is broken.
"""

from __future__ import annotations

from controller.config_errors import ControllerError


class EngineError(ControllerError):
    """A request the engine refuses."""


class UnknownHostError(EngineError):
    """A transfer names a host that is not in the fabric."""


class UnknownTransferError(EngineError):
    """A completion names a transfer that is not in flight (done, timed out or never)."""


class PathDownError(EngineError):
    """A request forces a spine whose path crosses a cable that is down or miswired."""


class UnknownPinError(EngineError):
    """A request names a static pin that does not exist (removed, or never made)."""


class DuplicatePinError(EngineError):
    """A static pin of a 5-tuple that is already pinned (or of an id already in use)."""
