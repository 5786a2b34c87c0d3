"""The API's routes as data: method, path template, bodies, answers.

One table, :data:`ROUTES`, says what the server answers: :class:`api.Api` routes
requests by it (each route's ``operation`` names its handler), and
:mod:`openapi` documents it. A path template's ``{name}`` matches one segment of
:data:`schema.ID_PATTERN`'s characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.service.http import schema

Answers = Mapping[int, tuple[type | None, str]]


@dataclass(frozen=True, slots=True)
class QueryInt:
    """An integer query parameter, ``minimum..maximum``, ``default`` when left out."""

    name: str
    description: str
    minimum: int
    maximum: int
    default: int


@dataclass(frozen=True, slots=True)
class Route:
    """One method on one path template."""

    method: str
    path: str
    operation: str
    endpoint: str
    summary: str
    body: type | None = None
    answers: Answers = field(default_factory=dict)
    refusals: tuple[int, ...] = ()
    authorised: bool = True
    content_type: str = "application/json"
    token_in_query: bool = False
    """The token may also come as ``?token=`` (a browser's page and ``EventSource``)."""
    query: tuple[QueryInt, ...] = ()
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[A-Za-z0-9._-]{1,64})", re.escape(self.path))
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))

    @property
    def parameters(self) -> tuple[str, ...]:
        """The names of the path's parameters."""
        return tuple(re.findall(r"\{(\w+)\}", self.path))

    def errors(self) -> tuple[int, ...]:
        """Every error status this route can answer, in order."""
        found = set(self.refusals)
        if self.authorised:
            found.add(401)
        if self.body is not None:
            found |= {400, 411, 413}
        return tuple(sorted(found))


_ENGINE = (404, 409, 422, 502, 503)

START_TIMEOUT = QueryInt(
    "timeout_ms",
    "how long to wait for the release, in ms (0: answer at once)",
    0,
    schema.MAX_START_TIMEOUT_MS,
    1000,
)

ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/transfers", "transfer", "transfers",
          "Decide a KV transfer's path; answer the tag to set",
          schema.TransferRequest, {201: (schema.TransferAnswer, "the decision")}, (409, 422, 503)),
    Route("POST", "/v1/transfers/batch", "transfer_batch", "batch",
          "Decide many transfers at once (a coordinator holding many completions)",
          schema.BatchRequest, {200: (schema.BatchAnswer, "each decision or error, in order")}),
    Route("GET", "/v1/transfers/{id}/start", "start", "start",
          "Wait until a held transfer may start (long poll: answers at the release or timeout)",
          None, {200: (schema.StartAnswer, "released, or not yet at the timeout")}, (400, 404),
          query=(START_TIMEOUT,)),
    Route("DELETE", "/v1/transfers/{id}", "cancel", "cancel",
          "Give up a held transfer before its release (its pin and tag go back)",
          None, {200: (schema.CancelAnswer, "cancelled")}, (404, 409, 503)),
    Route("POST", "/v1/transfers/{id}/complete", "complete", "complete",
          "Report a transfer's end and duration",
          schema.CompleteRequest, {200: (schema.CompleteAnswer, "recorded")}, (404, 503)),
    Route("POST", "/v1/pins", "pin", "pins",
          "Hold one flow (5-tuple) on a spine in every mode",
          schema.PinRequest, {201: (schema.PinAnswer, "the pin")}, _ENGINE),
    Route("DELETE", "/v1/pins/{id}", "unpin", "pins", "Release a flow pin",
          None, {200: (schema.PinAnswer, "the pin, removed")}, (404, 503)),
    Route("GET", "/v1/fabric", "fabric", "fabric",
          "Topology, utilisation, pins, flow pins, mode, alerts and controller",
          None, {200: (None, "the fabric view (free-form object)")}),
    Route("GET", "/v1/mode", "get_mode", "mode", "The mode set and the mode in force",
          None, {200: (schema.ModeAnswer, "the modes")}),
    Route("POST", "/v1/mode", "set_mode", "mode", "Set the scheduling mode",
          schema.ModeRequest, {200: (schema.ModeAnswer, "the modes")}, (503,)),
    Route("PUT", "/v1/mode", "set_mode", "mode", "Set the scheduling mode",
          schema.ModeRequest, {200: (schema.ModeAnswer, "the modes")}, (503,)),
    Route("GET", "/metrics", "metrics", "metrics", "Prometheus metrics",
          None, {200: (None, "Prometheus text exposition")},
          content_type="text/plain; version=0.0.4; charset=utf-8"),
    Route("GET", "/healthz", "health", "healthz", "Liveness, role and readiness",
          None, {200: (schema.HealthAnswer, "the controller's state")}, authorised=False),
    Route("GET", "/openapi.json", "openapi", "openapi", "This document",
          None, {200: (None, "the OpenAPI 3.1 document")}, authorised=False),
    Route("GET", "/ui", "ui_page", "ui", "The live fabric page (one HTML file, no external asset)",
          None, {200: (None, "the page")}, content_type="text/html; charset=utf-8",
          token_in_query=True),
    Route("GET", "/ui/events", "ui_events", "ui_events",
          "The live page's server-sent events: a JSON picture of the fabric on each change",
          None, {200: (None, "an event stream, one 'fabric' event per change")},
          content_type="text/event-stream", token_in_query=True),
)  # fmt: skip


def match(method: str, path: str) -> tuple[Route, dict[str, str]] | tuple[None, list[str]]:
    """The route of ``method`` on ``path`` and its parameters, or None and the methods
    the path allows (empty when no route has that path). A path written out in the
    table (``/v1/transfers/batch``) is never taken for a template's parameter."""
    exact = _LITERAL.get((method, path))
    if exact is not None:
        return exact, {}
    allowed: list[str] = []
    literal = [r for r in ROUTES if r.path == path]
    for route in literal or ROUTES:
        found = route.pattern.match(path)
        if found is None:
            continue
        if route.method == method:
            return route, found.groupdict()
        allowed.append(route.method)
    return None, allowed


_LITERAL = {(r.method, r.path): r for r in ROUTES if "{" not in r.path}
"""The routes without parameters, by method and path (most requests: a dict look-up)."""
