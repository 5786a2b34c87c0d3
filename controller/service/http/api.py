"""The coordinators' and operators' HTTP/JSON API.

    POST /v1/transfers              TransferRequest {src, dst, bytes, trace_id?, spine?,
                                    deadline_ms?} -> 201 TransferAnswer {id, path, spine,
                                    tag: {dscp, tos, src_port}, placement, fallbacks, held,
                                    wait_ms, start_at, ...}
    POST /v1/transfers/batch        {transfers: [TransferRequest, ...]} (1-512)
                                    -> 200 {transfers: [TransferAnswer or {error, status}]}
    GET  /v1/transfers/{id}/start?timeout_ms=N
                                    -> 200 {id, released, wait_ms} (long poll: at the
                                    release, or released false at the timeout)
    DELETE /v1/transfers/{id}       -> 200 {id, cancelled: true} (a held transfer)
    POST /v1/transfers/{id}/complete {duration_s} (or duration_ms) -> 200
    POST /v1/pins                   {src, dst, protocol, src_port, dst_port, spine}
                                    -> 201 {id, leaf, spine, port, placement, ...}
    DELETE /v1/pins/{id}            -> 200 {id, ..., removed: true}
    GET  /v1/fabric                 topology, utilisation, pins, flow pins, mode,
                                    alerts, controller
    GET  /v1/mode, POST (or PUT)    {mode: kv-aware | ecmp | flowlet} -> 200
    GET  /metrics                   Prometheus text
    GET  /healthz                   {ok, role, ready, instance, switches: {name: {role,
                                    address}}} (no token needed)
    GET  /openapi.json              the OpenAPI 3.1 document of all this (no token needed)
    GET  /ui                        the live fabric page (HTML, no external assets)
    GET  /ui/events                 its server-sent events (:mod:`ui`)

The routes are the table of :mod:`routes` and the bodies the dataclasses of
:mod:`schema`; :mod:`openapi` documents both, and ``docs/api.md`` says how to use them.
Every request comes in through one entry point, :meth:`Api.answer`, whether the lane
(:mod:`lane`) or aiohttp's side (:mod:`server`) read it, and :attr:`Api.handlers` is
the one table of who answers each route's operation and how: :class:`AtOnce` (the
coordinators' hot path, answered in the turn that read the request), :class:`Awaited`
or :class:`Streamed` (server-sent events, which only aiohttp's side writes).

``tag`` says exactly what the sender sets: the IP DSCP (``tos`` is the whole TOS
byte, ``dscp << 2``, for ``IP_TOS``) and the L4 source port to bind. A transfer the
controller does not pin still gets a tag (its bytes are counted as KV traffic) and
``path`` null; ``placement`` says ``pinned``, ``ecmp`` or ``local``. ``spine`` in a
request forces the path (the lab's ``isolated`` reference). A batch answers each
transfer as the single endpoint would, in order: a refused one (503 included: retry
it) is its error body, and the others are still decided.

With a scheduling policy (the fabric file's ``controller.scheduling``), a transfer
whose paths are all busy may be answered ``held``: its path, tag and pin are set, but
its sender starts only when ``GET /v1/transfers/{id}/start`` answers ``released``
(a long poll; :mod:`~controller.service.starts` says why not server-sent events).
``DELETE`` gives up a held transfer (409 once released: report its completion
instead); a cancelled or unknown id is 404.

A flow pin (``POST /v1/pins``) holds one flow, by its whole 5-tuple, on a spine in
every mode, whatever its class (the lab's background): hosts by name, ``protocol``
``"tcp"``, ``"udp"`` or a number 0-255 (ports 0 for a protocol without them), ports
0-65535. It moves off a cable the audit takes down, to the live spine with the most
capacity left, or to ECMP while no spine is live (``placement`` says which).

With a token configured every endpoint but ``/healthz`` and ``/openapi.json`` needs
``Authorization: Bearer <token>`` (401 otherwise); ``/ui`` and ``/ui/events`` also take
it as ``?token=``, since a browser's ``EventSource`` cannot send the header. Errors are JSON
``{"error", "status"}``: 400 malformed body, field or query parameter, 401, 404 unknown
endpoint, transfer or pin, 405 wrong method, 409 a forced spine whose path has a cable
down, a 5-tuple already pinned, or a cancel of a transfer already released, 411 a chunked
body, 413 body too large, 422 a request the engine refuses (unknown host, same source
and destination or rack, a spine not on a path), 431 a request head too large, 502 the
leaf refused a pin's entry, 503 not ready or backup.

Roles and readiness (:mod:`~controller.service.southbound.readiness`): ``/healthz``
gives each switch's state for this controller (``primary``, ``provisioning``,
``backup``, ``down``, ``connecting``) and an overall ``role``: ``primary`` when this
controller is the primary of every switch it reaches, ``backup`` when it is the backup
of all of them, ``mixed`` only when it is both. ``ready`` is true once every switch is
provisioned and has a telemetry sample taken since (a switch whose counters cannot be
read stops being waited for after twice the staleness limit). A request is answered
503 (``Retry-After: 1``) only for the switches it
needs, the two leaves and the spines between them for a transfer or a flow pin:
when this controller is the backup of one of them (the error names it), or while one
is connecting or being provisioned. A switch that is down refuses nothing: a spine
without telemetry is left out of path selection, and a transfer whose source leaf is
unreachable is answered 201 with ``placement`` ``ecmp``, its tag, and a fallback
naming the leaf and its address (the leaf's data plane may still forward; only its
pin cannot be written, and the sender must not wait for a controller to come back).
"""

from __future__ import annotations

import contextlib
import hmac
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from controller.config import Mode
from controller.engine import (
    PROTOCOLS,
    DuplicatePinError,
    EngineError,
    FlowTuple,
    PathDownError,
    TransferStartedError,
    UnknownPinError,
    UnknownTransferError,
    Update,
)
from controller.errors import NotReadyError, PinNotWrittenError, ServiceError
from controller.service.http import openapi, schema, ui
from controller.service.http.coalesce import Coalescer
from controller.service.http.routes import ROUTES, START_TIMEOUT, QueryInt, Route, match
from controller.service.http.server import (
    HttpError,
    Request,
    Response,
    error_response,
    finite,
)
from controller.service.metrics import CONTENT_TYPE
from controller.service.service import Service

Params = dict[str, str]
"""A route's path parameters, by name."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AtOnce:
    """An operation answered in the turn of the event loop that read its request (the
    coordinators' hot path: a decision, a batch, a completion): its answer, and the
    engine's updates left to apply before the answer is given (rarely any: a reroute
    that changes the leaves' mode, a flow pin moved by a timeout)."""

    call: Callable[[Request, Params], tuple[Response, list[Update]]]


@dataclass(frozen=True, slots=True)
class Awaited:
    """An operation whose answer is awaited (a switch write, a long poll, the rest)."""

    call: Callable[[Request, Params], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Streamed:
    """An operation whose answer is a stream (server-sent events), which only aiohttp's
    side writes."""

    call: Callable[[Request, Params], Response]


Handler = AtOnce | Awaited | Streamed


class Api:
    """Answers requests for the service (see the module docstring)."""

    def __init__(self, service: Service, token: str | None) -> None:
        self.service = service
        self.token = token
        self.metrics = service.metrics
        window = service.settings.api.coalesce_window_s
        self.coalescer = (
            Coalescer(window, service.decide_batch, self._engine_call_apply) if window else None
        )
        """Single path requests decided together (``api.coalesce_window``), or None."""
        self.handlers: dict[str, Handler] = {
            "transfer": AtOnce(self._transfer) if window == 0 else Awaited(self._coalesced),
            "transfer_batch": AtOnce(self._batch),
            "complete": AtOnce(self._complete),
            "start": Awaited(self._start),
            "cancel": Awaited(self._cancel),
            "pin": Awaited(self._pin),
            "unpin": Awaited(self._unpin),
            "fabric": Awaited(self._fabric),
            "get_mode": Awaited(self._get_mode),
            "set_mode": Awaited(self._set_mode),
            "metrics": Awaited(self._metrics),
            "health": Awaited(self._health),
            "openapi": Awaited(self._openapi),
            "ui_page": Awaited(self._ui_page),
            "ui_events": Streamed(self._ui_events),
        }
        """The one handler table: who answers each operation of :data:`ROUTES`, and how."""
        missing = {r.operation for r in ROUTES} ^ set(self.handlers)
        assert not missing, f"routes and handlers differ: {sorted(missing)}"
        self._children: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._document: bytes | None = None

    @overload
    def answer(
        self, request: Request, *, streams: Literal[True] = True
    ) -> Response | Awaitable[Response]: ...

    @overload
    def answer(
        self, request: Request, *, streams: Literal[False]
    ) -> Response | Awaitable[Response] | None: ...

    def answer(
        self, request: Request, *, streams: bool = True
    ) -> Response | Awaitable[Response] | None:
        """The API's one entry point, for the lane and for aiohttp's side alike: the answer
        to ``request``, at once for an operation answered at once (unless it left engine
        updates that write a switch) and for a refusal (its JSON error answer), else an
        awaitable of it; every answer is timed and counted by endpoint. With ``streams``
        False (the lane, which writes no stream): None for a streamed operation, which is
        left to aiohttp's side, untouched and uncounted."""
        t0 = time.perf_counter()
        try:
            route, params = self._route(request)
        except HttpError as exc:
            return self._counted(error_response(exc), "unknown", t0)
        handler = self.handlers[route.operation]
        if isinstance(handler, Streamed) and not streams:
            return None
        endpoint = route.endpoint
        try:
            if route.authorised:
                self._authorise(request, in_query=route.token_in_query)
            if isinstance(handler, Awaited):
                return self._awaited(handler.call(request, params), endpoint, t0)
            if isinstance(handler, Streamed):
                return self._counted(handler.call(request, params), endpoint, t0)
            response, rest = handler.call(request, params)
        except HttpError as exc:
            return self._counted(error_response(exc), endpoint, t0)
        except Exception:  # a bug: counted as the 500 the server answers, then raised
            self._count(endpoint, 500, t0)
            raise
        if rest:
            return self._awaited(self._applied(response, rest), endpoint, t0)
        return self._counted(response, endpoint, t0)

    async def _awaited(self, answer: Awaitable[Response], endpoint: str, t0: float) -> Response:
        """``answer`` awaited, an :class:`HttpError` as its JSON answer, counted (a bug's
        exception as the 500 the server answers)."""
        status = 500
        try:
            try:
                response = await answer
            except HttpError as exc:
                response = error_response(exc)
            status = response.status
        finally:
            self._count(endpoint, status, t0)
        return response

    async def _applied(self, response: Response, rest: list[Update]) -> Response:
        """``response`` once ``rest`` is applied (or the error applying it gave)."""
        await self._engine_call(self.service.apply(rest))
        return response

    def _counted(self, response: Response, endpoint: str, t0: float) -> Response:
        self._count(endpoint, response.status, t0)
        return response

    def _count(self, endpoint: str, status: int, t0: float) -> None:
        took = time.perf_counter() - t0
        key = endpoint, status
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.metrics.api_seconds.labels(endpoint),
                self.metrics.api_requests.labels(endpoint, str(status)),
            )
        children[0].observe(took)
        children[1].inc()

    @staticmethod
    def _route(r: Request) -> tuple[Route, Params]:
        path = r.path.rstrip("/") or "/"
        route, found = match(r.method, path)
        if route is not None:
            assert isinstance(found, dict)
            return route, found
        if not found:
            raise HttpError(404, f"no endpoint {path}; see GET /openapi.json, POST /v1/transfers")
        allowed = ", ".join(sorted(set(found)))
        raise HttpError(
            405, f"{r.method} is not allowed on {path}; use {allowed}", {"Allow": allowed}
        )

    def _authorise(self, r: Request, *, in_query: bool = False) -> None:
        """Compare bytes: the header's as sent (the server decodes them as UTF-8 and keeps
        undecodable bytes as surrogates, which gives them back unchanged) with the token's
        in UTF-8, as clients send it. With ``in_query``, a ``token`` query parameter
        (percent-decoded as UTF-8) also does."""
        if self.token is None:
            return
        expected = self.token.encode("utf-8", "surrogateescape")
        if in_query:
            for value in urllib.parse.parse_qs(r.query).get("token", []):
                if hmac.compare_digest(value.encode("utf-8", "surrogateescape"), expected):
                    return
        given = r.headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip(" \t").encode("utf-8", "surrogateescape"), expected
        ):
            raise HttpError(
                401,
                "missing or wrong bearer token (send 'Authorization: Bearer <token>')",
                {"WWW-Authenticate": 'Bearer realm="kvfabric"'},
            )

    # -- endpoints ------------------------------------------------------------------------

    def _transfer(self, r: Request, _p: Params) -> tuple[Response, list[Update]]:
        ask = schema.decode(schema.TransferRequest, r.json())
        with _engine_errors():
            answer, rest = self.service.decide(ask)
        location = {"Location": f"/v1/transfers/{answer.id}"}
        return Response(201, schema.encode(answer), headers=location), rest

    async def _coalesced(self, r: Request, _p: Params) -> Response:
        """A single path request decided with those of its window (:mod:`coalesce`)."""
        ask = schema.decode(schema.TransferRequest, r.json())
        assert self.coalescer is not None
        try:
            answer = await self.coalescer.ask(ask)
        except (ServiceError, EngineError) as exc:
            raise _http_error(exc) from None
        location = {"Location": f"/v1/transfers/{answer.id}"}
        return Response(201, schema.encode(answer), headers=location)

    async def _engine_call_apply(self, rest: list[Update]) -> None:
        await self._engine_call(self.service.apply(rest))

    def _batch(self, r: Request, _p: Params) -> tuple[Response, list[Update]]:
        """Decide the transfers as one (``Engine.decide_batch``): each answered as the
        single endpoint would, in order, a refused one by its error body."""
        batch = schema.decode(schema.BatchRequest, r.json())
        outcomes, rest = self.service.decide_batch(batch.transfers)
        answers: list[object] = []
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                answers.append(error_response(_http_error(outcome)).body)
            else:
                answers.append(schema.encode(outcome))
        return Response(200, {"transfers": answers}), rest

    async def _start(self, r: Request, p: Params) -> Response:
        timeout_ms = _query_int(r, START_TIMEOUT)
        answer = await self._engine_call(self.service.start(p["id"], timeout_ms / 1e3))
        return Response(200, schema.encode(answer))

    async def _cancel(self, _r: Request, p: Params) -> Response:
        answer = await self._engine_call(self.service.cancel(p["id"]))
        return Response(200, schema.encode(answer))

    def _complete(self, r: Request, p: Params) -> tuple[Response, list[Update]]:
        done = schema.decode(schema.CompleteRequest, r.json())
        if done.duration_s is not None:
            duration = done.duration_s
        elif done.duration_ms is not None:
            duration = done.duration_ms / 1e3
        else:
            raise HttpError(400, "the body needs 'duration_s' (seconds) or 'duration_ms'")
        with _engine_errors():
            answer, rest = self.service.complete(p["id"], duration)
        return Response(200, schema.encode(answer)), rest

    async def _fabric(self, _r: Request, _p: Params) -> Response:
        return Response(200, finite(self.service.fabric()))

    async def _get_mode(self, _r: Request, _p: Params) -> Response:
        return Response(200, schema.encode(self.service.modes()))

    async def _set_mode(self, r: Request, _p: Params) -> Response:
        ask = schema.decode(schema.ModeRequest, r.json())
        return Response(
            200, schema.encode(await self._engine_call(self.service.set_mode(Mode(ask.mode))))
        )

    async def _metrics(self, _r: Request, _p: Params) -> Response:
        return Response(200, text=self.metrics.render(), content_type=CONTENT_TYPE)

    async def _health(self, _r: Request, _p: Params) -> Response:
        return Response(200, schema.encode(self.service.health()))

    async def _ui_page(self, _r: Request, _p: Params) -> Response:
        return Response(200, text=ui.page(), content_type="text/html; charset=utf-8")

    def _ui_events(self, _r: Request, _p: Params) -> Response:
        return Response(200, content_type="text/event-stream", stream=ui.events(self.service))

    async def _openapi(self, _r: Request, _p: Params) -> Response:
        if self._document is None:
            self._document = openapi.render().encode()
        return Response(200, text=self._document)

    async def _pin(self, r: Request, _p: Params) -> Response:
        ask = schema.decode(schema.PinRequest, r.json())
        protocol = PROTOCOLS[ask.protocol] if isinstance(ask.protocol, str) else ask.protocol
        ports = ask.src_port, ask.dst_port
        if protocol not in PROTOCOLS.values() and ports != (0, 0):
            raise HttpError(
                400,
                f"protocol {protocol} has no ports (only tcp and udp do): 'src_port' and "
                f"'dst_port' must be 0, got {ports[0]} and {ports[1]}",
            )
        flow = FlowTuple(ask.src, ask.dst, protocol, *ports)
        answer = await self._engine_call(self.service.pin_flow(flow, ask.spine))
        return Response(201, schema.encode(answer), headers={"Location": f"/v1/pins/{answer.id}"})

    async def _unpin(self, _r: Request, p: Params) -> Response:
        return Response(
            200, schema.encode(await self._engine_call(self.service.unpin_flow(p["id"])))
        )

    @staticmethod
    async def _engine_call(call: Awaitable[T]) -> T:
        with _engine_errors():
            return await call


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    """The service's refusals as HTTP errors."""
    try:
        yield
    except NotReadyError as exc:
        raise HttpError(503, str(exc), {"Retry-After": "1"}) from None
    except (UnknownTransferError, UnknownPinError) as exc:
        raise HttpError(404, str(exc)) from None
    except (PathDownError, DuplicatePinError, TransferStartedError) as exc:
        raise HttpError(409, str(exc)) from None
    except PinNotWrittenError as exc:
        raise HttpError(502, str(exc)) from None
    except EngineError as exc:
        raise HttpError(422, str(exc)) from None


def _http_error(exc: Exception) -> HttpError:
    """The HTTP error a refusal of the service or the engine is answered with."""
    try:
        with _engine_errors():
            raise exc
    except HttpError as http:
        return http
    raise AssertionError("unreachable")  # pragma: no cover


def _query_int(r: Request, param: QueryInt) -> int:
    """An integer query parameter in its bounds (400 naming it otherwise)."""
    values = urllib.parse.parse_qs(r.query, keep_blank_values=True).get(param.name)
    if not values:
        return param.default
    text = values[-1]
    if not text.isascii() or not text.isdigit() or not param.minimum <= int(text) <= param.maximum:
        raise HttpError(
            400,
            f"query parameter {param.name!r} must be an integer {param.minimum}-{param.maximum} "
            f"({param.description}), got {text!r}",
        )
    return int(text)
