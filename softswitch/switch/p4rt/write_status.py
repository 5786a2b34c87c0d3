"""The ``google.rpc.Status`` of a failed Write, kept within what gRPC clients accept.

P4Runtime returns a failed Write as an UNKNOWN status whose
``grpc-status-details-bin`` trailer holds one ``p4.v1.Error`` per update, in
order (OK for the ones that succeeded).  A default gRPC client refuses trailing
metadata beyond 8 KiB (RESOURCE_EXHAUSTED, and the client learns nothing); each
detail costs at least 35 bytes before base64 (an OK one is an ``Any`` of an empty
``p4.v1.Error``: 350 KB for 10,000 updates), so the spec's list only fits small
batches.  Hence:

- every message is cut to :data:`MESSAGE_LIMIT` characters (a bad value is
  never quoted whole);
- the details are the spec's per-update list when it fits in
  :data:`DETAILS_BUDGET` bytes, else its longest prefix that does: position
  ``i`` is always update ``i``, so a client that reads them by position (finsy,
  p4runtime-shell) never blames the wrong update;
- the status message always says, in full, which updates failed and which were
  not applied (index ranges; their number is bounded because a CONTINUE batch
  stops after :data:`~softswitch.switch.p4rt.write.MAX_FAILURES` failures), and
  quotes the first error.
"""

from __future__ import annotations

from collections.abc import Iterable

from finsy.proto import p4r, rpc_code, rpc_status
from google.protobuf import any_pb2

MESSAGE_LIMIT = 200
DETAILS_BUDGET = 4000  # bytes of serialised Status; base64 makes it 5,336 of the 8,192
_NOT_APPLIED = rpc_code.ABORTED
_CODE_NAMES: dict[int, str] = {int(number): name for name, number in rpc_code.Code.items()}


def clip(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """``message`` cut to ``limit`` characters, saying how much was cut."""
    if len(message) <= limit:
        return message
    suffix = f"... ({len(message)} characters in all)"
    return message[: max(limit - len(suffix), 0)] + suffix


def ranges(indices: Iterable[int]) -> str:
    """``0-3, 7, 9-10`` from sorted indices."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and spans[-1][1] == i - 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"#{a}" if a == b else f"#{a}-#{b}" for a, b in spans)


def _varint_size(n: int) -> int:
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def summary(errors: list[p4r.Error]) -> str:
    """Which updates failed and which were not applied, and the first error."""
    failed = [
        i for i, e in enumerate(errors) if e.canonical_code not in (rpc_code.OK, _NOT_APPLIED)
    ]
    skipped = [i for i, e in enumerate(errors) if e.canonical_code == _NOT_APPLIED]
    text = f"{len(failed)} of {len(errors)} updates failed"
    if failed:
        text += f" ({ranges(failed)})"
    if skipped:
        text += f"; {len(skipped)} not applied, ABORTED ({ranges(skipped)})"
    applied = len(errors) - len(failed) - len(skipped)
    text += f"; {applied} applied"
    first = failed[0] if failed else (skipped[0] if skipped else None)
    if first is not None:
        error = errors[first]
        name = _CODE_NAMES.get(int(error.canonical_code), str(error.canonical_code))
        message = clip(error.message, 160).encode("ascii", "backslashreplace").decode()
        text += f"; update #{first}: {name}: {message}"
    return text


def write_error_status(errors: list[p4r.Error]) -> rpc_status.Status:
    """The google.rpc.Status of a Write with failed updates (see the module docstring)."""
    status = rpc_status.Status(code=rpc_code.UNKNOWN, message=summary(errors))
    details: list[any_pb2.Any] = []
    size = len(status.SerializeToString()) + 60  # room for the note on a cut list
    for error in errors:
        detail = any_pb2.Any()
        detail.Pack(
            p4r.Error(
                canonical_code=error.canonical_code,
                message=clip(error.message),
                space=error.space,
                code=error.code,
            )
        )
        cost = detail.ByteSize()
        size += 1 + _varint_size(cost) + cost
        if size > DETAILS_BUDGET:
            break
        details.append(detail)
    if len(details) < len(errors):
        shown = f"#0-#{len(details) - 1}" if details else "none"
        status.message += f" (the details list updates {shown} only)"
    status.details.extend(details)
    return status
