"""The API's JSON bodies, as dataclasses: the one definition of what goes in and out.

The handlers (:mod:`api`) decode every request body into one of these classes with
:func:`decode` and answer with instances of the others, encoded by :func:`encode`;
:mod:`openapi` turns the same classes into the JSON Schemas of ``/openapi.json``. So
the document cannot drift from what the server accepts and answers.

A field's type is ``str``, ``int``, ``float``, ``bool``, a ``Literal`` of strings, a
nested dataclass, ``list[X]``, ``dict[str, X]``, ``X | None`` or a union of those;
its bounds and description are in its metadata (:func:`spec`). :func:`decode`
refuses, with a 400 that names the field, an unknown field, a missing one, a wrong
type (``true`` is not an integer) and a value out of bounds. A field with a default
may be left out; ``None`` is accepted only where the type says ``| None``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from controller.service.http.server import HttpError

T = TypeVar("T")

MAX_BYTES = 1 << 50
MAX_DEADLINE_MS = 600_000
MAX_START_TIMEOUT_MS = 60_000
MODES = ("kv-aware", "ecmp", "flowlet")
ID_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"


def spec(
    description: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    enum: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """A field's metadata: its description and bounds, in JSON Schema's words."""
    found = {
        "description": description,
        "minimum": minimum,
        "maximum": maximum,
        "exclusiveMinimum": exclusive_minimum,
        "minLength": min_length,
        "maxLength": max_length,
        "pattern": pattern,
        "enum": list(enum) if enum is not None else None,
    }
    return {k: v for k, v in found.items() if v is not None}


def _name(n: int = 128) -> dict[str, Any]:
    return {"min_length": 1, "max_length": n}


# -- requests ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransferRequest:
    """Ask for a KV transfer's path (``POST /v1/transfers``)."""

    src: str = field(metadata=spec("the sending host (a prefill GPU's host)", **_name()))
    dst: str = field(metadata=spec("the receiving host (a decode GPU's host)", **_name()))
    bytes: int = field(metadata=spec("the transfer's size in bytes", minimum=1, maximum=MAX_BYTES))
    trace_id: str | None = field(
        default=None, metadata=spec("the caller's id, logged with the transfer", **_name())
    )
    spine: str | None = field(
        default=None,
        metadata=spec("force this spine (the lab's isolated reference)", **_name()),
    )
    deadline_ms: int | None = field(
        default=None,
        metadata=spec(
            "when the transfer should be complete, in ms from the request (the TTFT budget; "
            "the edf scheduling policy's key)",
            minimum=1,
            maximum=MAX_DEADLINE_MS,
        ),
    )


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """Ask for many transfers' paths at once (``POST /v1/transfers/batch``)."""

    transfers: list[TransferRequest] = field(
        metadata=spec("the transfers, answered in this order", min_length=1, max_length=512)
    )


@dataclass(frozen=True, slots=True)
class CompleteRequest:
    """A transfer finished (``POST /v1/transfers/{id}/complete``): give one duration."""

    duration_s: float | None = field(
        default=None, metadata=spec("how long it took, in seconds", exclusive_minimum=0)
    )
    duration_ms: float | None = field(
        default=None, metadata=spec("or in milliseconds", exclusive_minimum=0)
    )


@dataclass(frozen=True, slots=True)
class PinRequest:
    """Hold one flow on a spine in every mode (``POST /v1/pins``)."""

    src: str = field(metadata=spec("the flow's source host", **_name()))
    dst: str = field(metadata=spec("the flow's destination host", **_name()))
    protocol: Literal["tcp", "udp"] | int = field(
        metadata=spec("'tcp', 'udp' or an IPv4 protocol number", minimum=0, maximum=255)
    )
    src_port: int = field(
        metadata=spec("L4 source port (0 for a protocol without ports)", minimum=0, maximum=65535)
    )
    dst_port: int = field(
        metadata=spec("L4 destination port (0 without ports)", minimum=0, maximum=65535)
    )
    spine: str = field(metadata=spec("the spine to hold it on", **_name()))


@dataclass(frozen=True, slots=True)
class ModeRequest:
    """Set the scheduling mode (``POST`` or ``PUT /v1/mode``)."""

    mode: Literal["kv-aware", "ecmp", "flowlet"] = field(metadata=spec("the mode to run"))


# -- responses -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tag:
    """What the sender sets so that the fabric recognises its flow."""

    dscp: int = field(metadata=spec("the IP DSCP of a KV transfer", minimum=0, maximum=63))
    tos: int = field(metadata=spec("the whole TOS byte, dscp << 2, for IP_TOS", minimum=0))
    src_port: int = field(metadata=spec("the L4 source port to bind", minimum=0, maximum=65535))


@dataclass(frozen=True, slots=True)
class SliceAnswer:
    """One slice of a transfer split over spines: one tagged connection of its own."""

    spine: str = field(metadata=spec("the slice's spine"))
    path: str = field(metadata=spec("the slice's path"))
    bytes: int = field(metadata=spec("the bytes to send on this slice's connection", minimum=1))
    tag: Tag = field(metadata=spec("what to set on this slice's connection"))


@dataclass(frozen=True, slots=True)
class TransferAnswer:
    """The decision for one transfer."""

    id: str = field(metadata=spec("the transfer's id, for its completion"))
    trace_id: str = field(metadata=spec("the caller's id, or one the controller made"))
    src: str = field(metadata=spec("the sending host"))
    dst: str = field(metadata=spec("the receiving host"))
    bytes: int = field(metadata=spec("the transfer's size in bytes"))
    path: str | None = field(metadata=spec("the pinned path, null when not pinned"))
    spine: str | None = field(metadata=spec("the pinned spine, null when not pinned"))
    placement: str = field(
        metadata=spec(
            "pinned on a spine, left to ECMP, or within one rack",
            enum=("pinned", "ecmp", "local"),
        )
    )
    best: str | None = field(metadata=spec("the least-loaded path at decision time"))
    mode: str = field(metadata=spec("the effective mode that decided"))
    reason: str = field(metadata=spec("why this path"))
    expected_s: float | None = field(metadata=spec("the expected duration in seconds"))
    fallbacks: list[str] = field(metadata=spec("what fell back, and why"))
    tag: Tag | None = field(
        metadata=spec(
            "what to set on the flow; null for a kv-aware fallback to ECMP (send untagged, "
            "any port: every tag port is in some spine's range) or when the host's tag "
            "ports are all in use"
        )
    )
    held: bool = field(
        metadata=spec(
            "do not start yet: wait for GET /v1/transfers/{id}/start (the path and tag are "
            "set, the pin is in force: the tag port's spine range)"
        ),
    )
    wait_ms: float = field(
        metadata=spec("the expected wait before the start, in ms (0: start now)")
    )
    start_at: float | None = field(
        metadata=spec(
            "the expected start, the controller's wall-clock Unix time in seconds; null when "
            "not held"
        ),
    )
    slices: list[SliceAnswer] = field(
        default_factory=list,
        metadata=spec(
            "a pinned transfer's parts, one tagged connection each, with the bytes each "
            "carries (their sum is bytes); the first is path, spine and tag. One slice when "
            "it is not split, none when it is not pinned. A sender that opens one connection "
            "only sends everything on the first slice's tag: it still arrives, on one spine"
        ),
    )


@dataclass(frozen=True, slots=True)
class BatchAnswer:
    """One entry per transfer asked, in order: a decision, or the error that refused it."""

    transfers: list[TransferAnswer | ErrorBody] = field(
        metadata=spec("each transfer's decision, or its error")
    )


@dataclass(frozen=True, slots=True)
class CompleteAnswer:
    """A completion recorded."""

    id: str = field(metadata=spec("the transfer's id"))
    completed: bool = field(metadata=spec("always true"))
    adopted: bool = field(metadata=spec("the transfer was adopted from another instance"))
    late: bool = field(
        default=False, metadata=spec("it came after the transfer timed out (its pin is gone)")
    )


@dataclass(frozen=True, slots=True)
class StartAnswer:
    """Whether a held transfer may start (``GET /v1/transfers/{id}/start``)."""

    id: str = field(metadata=spec("the transfer's id"))
    released: bool = field(metadata=spec("true: start now; false: the wait timed out, ask again"))
    wait_ms: float = field(metadata=spec("the expected wait still ahead, in ms (0 once released)"))


@dataclass(frozen=True, slots=True)
class CancelAnswer:
    """A held transfer given up (``DELETE /v1/transfers/{id}``)."""

    id: str = field(metadata=spec("the transfer's id"))
    cancelled: bool = field(metadata=spec("always true"))


@dataclass(frozen=True, slots=True)
class PinAnswer:
    """A flow pin as the controller holds it."""

    id: str = field(metadata=spec("the pin's id, for DELETE /v1/pins/{id}"))
    src: str = field(metadata=spec("the flow's source host"))
    dst: str = field(metadata=spec("the flow's destination host"))
    protocol: int = field(metadata=spec("the IPv4 protocol number", minimum=0, maximum=255))
    src_port: int = field(metadata=spec("L4 source port", minimum=0, maximum=65535))
    dst_port: int = field(metadata=spec("L4 destination port", minimum=0, maximum=65535))
    leaf: str = field(metadata=spec("the leaf that holds the entry"))
    requested_spine: str = field(metadata=spec("the spine asked for"))
    spine: str | None = field(metadata=spec("the spine it is on now, null on ECMP"))
    path: str | None = field(metadata=spec("its path now, null on ECMP"))
    port: int | None = field(metadata=spec("the leaf's egress port, null on ECMP"))
    placement: str = field(metadata=spec("on a spine, or on ECMP", enum=("pinned", "ecmp")))
    moved: list[str] = field(metadata=spec("the moves the audit made, oldest first"))
    removed: bool = field(default=False, metadata=spec("true in the answer of DELETE"))


@dataclass(frozen=True, slots=True)
class ModeAnswer:
    """The mode set, and the one in force (ecmp while the safety fallback holds)."""

    mode: str = field(metadata=spec("the mode set", enum=MODES))
    effective_mode: str = field(metadata=spec("the mode in force", enum=MODES))


@dataclass(frozen=True, slots=True)
class SwitchHealth:
    """One switch's state for this controller."""

    role: str = field(
        metadata=spec(
            "this controller's relation to the switch",
            enum=("primary", "provisioning", "backup", "down", "connecting"),
        )
    )
    address: str = field(metadata=spec("the switch's P4Runtime address"))


@dataclass(frozen=True, slots=True)
class HealthAnswer:
    """Liveness, role and readiness (``GET /healthz``, no token needed)."""

    ok: bool = field(metadata=spec("always true: the process answers"))
    role: str = field(
        metadata=spec(
            "the overall role",
            enum=("primary", "backup", "mixed", "down", "connecting", "provisioning"),
        )
    )
    ready: bool = field(metadata=spec("every switch provisioned and sampled"))
    instance: str = field(metadata=spec("this controller's instance id"))
    switches: dict[str, SwitchHealth] = field(metadata=spec("each switch's state"))


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """Every error answer."""

    error: str = field(metadata=spec("what is wrong, and what to do"))
    status: int = field(metadata=spec("the HTTP status, repeated"))


# -- decoding and encoding -------------------------------------------------------------


_SCALARS = (str, int, float, bool, type(None))
_FIELDS: dict[type, tuple[str, ...]] = {}
"""The field names of each dataclass encoded so far (an answer is encoded per request)."""


_PLAIN = frozenset(_SCALARS)
"""The exact types :func:`encode` returns as they are (checked first: most values)."""


def encode(value: object) -> object:
    """A dataclass tree as JSON-ready dicts and lists."""
    if type(value) in _PLAIN or isinstance(value, _SCALARS):
        return value
    names = _FIELDS.get(type(value))
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS[type(value)] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        out = {}
        for name in names:
            v = getattr(value, name)
            out[name] = v if type(v) in _PLAIN else encode(v)
        return out
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(cls: type[T], body: object, where: str = "") -> T:
    """``body`` as a ``cls``; 400 naming the field otherwise (see the module docstring)."""
    if not isinstance(body, dict):
        what = f"{where!r}" if where else "the body"
        raise HttpError(400, f"{what} must be a JSON object, got {_kind(body)}")
    plan = _PLANS.get(cls) or _plan(cls)
    if not plan.names.issuperset(body):
        unknown = sorted(set(body) - plan.names)
        raise HttpError(
            400,
            f"unknown field(s) {', '.join(repr(where + k) for k in unknown)}; "
            f"allowed: {sorted(plan.names)}",
        )
    values: dict[str, object] = {}
    for name, tp, meta, required in plan.fields:
        if name not in body:
            if required:
                raise HttpError(400, f"{where + name!r} is required: {meta['description']}")
            continue
        value = body[name]
        if tp in _CHECKED:  # a plain field: its one check, no look at its type
            values[name] = _scalar(tp, value, where + name, meta)
        elif value is None and tp in _OPTIONAL:
            values[name] = None
        else:
            values[name] = _value(tp, value, where + name, meta)
    return cls(**values)


_CHECKED = frozenset({str, int, float, bool})
_OPTIONAL = frozenset({str | None, int | None, float | None, bool | None})
"""Field types whose None needs no other check (``_value`` would take the same path)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to decode one dataclass: its field names, and per field its name, resolved
    type, metadata and whether it is required."""

    names: frozenset[str]
    fields: tuple[tuple[str, Any, typing.Mapping[str, Any], bool], ...]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    hints = hints_of(cls)
    fields = tuple(
        (f.name, hints[f.name], f.metadata, f.default is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
    )
    plan = _PLANS[cls] = _Plan(frozenset(name for name, *_ in fields), fields)
    return plan


@functools.cache
def hints_of(cls: type) -> dict[str, Any]:
    """The resolved field types of a dataclass of this module (computed once per class:
    ``get_type_hints`` evaluates every annotation's text each call)."""
    return get_type_hints(cls, globals())


def _value(tp: Any, value: object, where: str, meta: typing.Mapping[str, Any]) -> object:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in (o for o in options if o is not type(None)):
            try:
                return _value(option, value, where, meta)
            except HttpError as exc:
                errors.append(exc.message)
        raise HttpError(400, " or ".join(errors) if len(errors) < 3 else errors[0])
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed or isinstance(value, bool):
            raise HttpError(
                400, f"{where!r} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
            )
        return value
    if origin is list:
        if not isinstance(value, list):
            raise HttpError(400, f"{where!r} must be a list, got {_kind(value)}")
        _bounds(len(value), where, meta, "minLength", "maxLength", unit="items")
        (item,) = get_args(tp)
        return [_value(item, v, f"{where}[{i}]", {}) for i, v in enumerate(value)]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decode(tp, value, where + ".")
    return _scalar(tp, value, where, meta)


def _scalar(tp: Any, value: object, where: str, meta: typing.Mapping[str, Any]) -> object:
    if tp is str:
        if not isinstance(value, str) or not value:
            raise HttpError(400, f"{where!r} must be a non-empty string, got {value!r}")
        _bounds(len(value), where, meta, "minLength", "maxLength", unit="characters")
        if "pattern" in meta and not re.fullmatch(meta["pattern"].strip("^$"), value):
            raise HttpError(400, f"{where!r} must match {meta['pattern']}, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise HttpError(400, f"{where!r} must be {_int_range(meta)}, got {value!r}")
        if not meta.get("minimum", value) <= value <= meta.get("maximum", value):
            raise HttpError(400, f"{where!r} must be {_int_range(meta)}, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise HttpError(400, f"{where!r} must be a number, got {value!r}")
        if "exclusiveMinimum" in meta and not value > meta["exclusiveMinimum"]:
            raise HttpError(400, f"{where!r} must be positive, got {value!r}")
        return float(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise HttpError(400, f"{where!r} must be true or false, got {value!r}")
        return value
    raise TypeError(f"the schema has a field of unsupported type {tp!r}")  # a bug here


def _bounds(
    n: int, where: str, meta: typing.Mapping[str, Any], lo: str, hi: str, *, unit: str
) -> None:
    if n < meta.get(lo, 0) or (hi in meta and n > meta[hi]):
        raise HttpError(
            400, f"{where!r} must have {meta.get(lo, 0)}-{meta.get(hi, 'any')} {unit}, got {n}"
        )


def _int_range(meta: typing.Mapping[str, Any]) -> str:
    lo, hi = meta.get("minimum"), meta.get("maximum")
    if lo == 1:
        return "a positive integer" if hi is None else f"a positive integer up to {hi}"
    if lo is not None and hi is not None:
        return f"an integer {lo}-{hi}"
    return "an integer"


def _kind(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )
