"""Every error the controller reports to a user, in one tree.

    LocatedError                         a file's problem: ``file:line:col: key.path: message``
                                         (also the base of the lab's ScenarioError)
    ControllerError
     +-- ConfigError  (LocatedError)     a bad fabric file
     +-- TopologyError  (KeyError)       a name not in the topology ("did you mean ...")
     +-- EngineError                     a request the engine refuses (HTTP 4xx)
     |    +-- UnknownHostError           a host not in the fabric
     |    +-- UnknownTransferError       a completion for a transfer not in flight
     |    +-- TransferStartedError       a cancel of a transfer already released to start
     |    +-- PathDownError              a forced spine whose path has a cable down or miswired
     |    +-- ForcedSpineError           a forced spine with no path between the two hosts
     |    +-- UnknownPinError            a flow pin id the engine does not hold
     |    +-- DuplicatePinError          a flow pin of a 5-tuple (or an id) already pinned
     +-- ServiceError                    the service cannot do what was asked
          +-- NotReadyError              no transfers now (backup, or switches not provisioned)
          +-- SwitchError                a P4Runtime call to one switch failed
          |    +-- SwitchUnavailable     the switch is not connected (or not ours)
          |    +-- NotPrimaryError       this instance is a backup for that switch
          +-- PipelineError              the P4 program could not be compiled or read
          +-- PinNotWrittenError         a leaf refused a flow pin's entry

A user's file is blamed by file, YAML key path and (when a node is known) line and
column; ``kvfabric check-config`` prints ``str(error)`` and exits 1, never a traceback.
The engine's errors never mean the engine is broken: the HTTP API answers them with
4xx statuses. gRPC and finsy errors (``P4ClientError``, ``grpc.aio.AioRpcError``) and
time-outs become :class:`SwitchError` in :mod:`controller.service.southbound.switches`, so
nothing above it sees a gRPC type.
"""

from __future__ import annotations


class LocatedError(Exception):
    """A problem in a user's file, located by file, key path and (if known) line and column."""

    def __init__(
        self,
        file: str,
        path: str,
        message: str,
        line: int | None = None,
        col: int | None = None,
    ) -> None:
        self.file = file
        self.path = path
        self.message = message
        self.line = line
        self.col = col
        super().__init__(self._render())

    def __reduce__(self) -> tuple[type[LocatedError], tuple[str, str, str, int | None, int | None]]:
        # what a worker process (a simulation's run, a sweep's task) raises reaches the
        # parent pickled; the default would call the class with the rendered text alone
        return type(self), (self.file, self.path, self.message, self.line, self.col)

    def _render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        if self.path:
            return f"{where}: {self.path}: {self.message}"
        return f"{where}: {self.message}"


class ControllerError(Exception):
    """Base of every error the controller reports to a user."""


class ConfigError(LocatedError, ControllerError):
    """A fabric file that cannot be loaded, located by file, key path and line."""


class TopologyError(ControllerError, KeyError):
    """A name that is not in the topology; the message guesses the name meant."""

    def __str__(self) -> str:
        return str(self.args[0])


# -- the engine ---------------------------------------------------------------------


class EngineError(ControllerError):
    """A request the engine refuses."""


class UnknownHostError(EngineError):
    """A transfer names a host that is not in the fabric."""


class UnknownTransferError(EngineError):
    """A completion names a transfer that is not in flight (done, timed out or never)."""


class TransferStartedError(EngineError):
    """A cancel names a transfer that is no longer held: it may have started (complete it)."""


class PathDownError(EngineError):
    """A request forces a spine whose path crosses a cable that is down or miswired."""


class ForcedSpineError(EngineError):
    """A request forced a spine that has no path between the two hosts."""


class UnknownPinError(EngineError):
    """A request names a flow pin that does not exist (removed, or never made)."""


class DuplicatePinError(EngineError):
    """A flow pin of a 5-tuple that is already pinned (or of an id already in use)."""


# -- the service --------------------------------------------------------------------


class ServiceError(ControllerError):
    """The controller service could not do what was asked."""


class NotReadyError(ServiceError):
    """The service cannot take transfers now (backup, or switches not provisioned)."""


class SwitchError(ServiceError):
    """A P4Runtime request to a switch failed; the message names the switch and the call."""

    def __init__(self, switch: str, message: str, codes: frozenset[str] = frozenset()) -> None:
        super().__init__(f"{switch}: {message}")
        self.switch = switch
        self.codes = codes
        """The status names of the call and of each failed update (``NOT_FOUND``...)."""


class SwitchUnavailable(SwitchError):
    """The switch has no open P4Runtime channel."""


class NotPrimaryError(SwitchError):
    """This controller is a backup on the switch; only the primary writes."""


class PipelineError(ServiceError):
    """The P4 program could not be compiled, or its P4Info could not be read."""


class PinNotWrittenError(ServiceError):
    """A flow pin's entry could not be written on its leaf: the pin was not made."""
