"""Errors of the controller service (the I/O shell), translated where they enter.

    ControllerError                      (controller.config_errors)
     +-- ServiceError                    the service cannot do what was asked
          +-- SwitchError                a P4Runtime call to one switch failed
          |    +-- SwitchUnavailable     the switch is not connected (or not ours)
          +-- PipelineError              the P4 program could not be compiled or read
          +-- NotPrimaryError            this instance is a backup for that switch
          +-- PinNotWrittenError         a leaf refused a static pin's entry

gRPC and finsy errors (``P4ClientError``, ``grpc.aio.AioRpcError``) and time-outs are
turned into :class:`SwitchError` by :mod:`controller.service.switches`; nothing above
it sees a gRPC type. The HTTP API maps these and the engine's errors to statuses.
"""

from __future__ import annotations

from controller.config_errors import ControllerError


class ServiceError(ControllerError):
    """The controller service could not do what was asked."""


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
    """A static pin's entry could not be written on its leaf: the pin was not made."""
