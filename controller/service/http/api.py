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
(a long poll; :mod:`starts` says why not server-sent events). ``DELETE`` gives up a
held transfer (409 once released: report its completion instead); a cancelled or
unknown id is 404.

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

Roles and readiness (:mod:`readiness`): ``/healthz`` gives each switch's state for this
controller (``primary``, ``provisioning``, ``backup``, ``down``, ``connecting``) and an
overall ``role``: ``primary`` when this controller is the primary of every switch it
reaches, ``backup`` when it is the backup of all of them, ``mixed`` only when it is
both. ``ready`` is true once every switch is provisioned and has a telemetry sample
taken since (a switch whose counters cannot be read stops being waited for after
twice the staleness limit). A request is answered 503 (``Retry-After: 1``) only for the switches it
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
from typing import Any, TypeVar

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
from controller.errors import NotReadyError, PinNotWrittenError
from controller.service.http import openapi, schema, ui
from controller.service.http.routes import ROUTES, START_TIMEOUT, QueryInt, Route, match
from controller.service.http.server import (
    HttpError,
    Request,
    Response,
    error_response,
    finite,
    respond,
)
from controller.service.metrics import CONTENT_TYPE
from controller.service.service import Service

Call = Callable[[Request, dict[str, str]], Awaitable[Response]]
STREAMS = frozenset({"ui_events"})
"""The operations whose answer is a stream (aiohttp writes it)."""
NowCall = Callable[[Request, dict[str, str]], tuple[Response, list[Update]]]
T = TypeVar("T")


class Api:
    """Routes requests to the service (see the module docstring)."""

    def __init__(self, service: Service, token: str | None) -> None:
        self.service = service
        self.token = token
        self.metrics = service.metrics
        self.calls: dict[str, Call] = {
            "transfer": self._awaited(self._transfer_now),
            "transfer_batch": self._awaited(self._batch_now),
            "start": self._start,
            "cancel": self._cancel,
            "complete": self._awaited(self._complete_now),
            "pin": self._pin,
            "unpin": self._unpin,
            "fabric": self._fabric,
            "get_mode": self._get_mode,
            "set_mode": self._mode,
            "metrics": self._metrics,
            "health": self._health,
            "openapi": self._openapi,
            "ui_page": self._ui_page,
            "ui_events": self._ui_events,
        }
        missing = {r.operation for r in ROUTES} ^ set(self.calls)
        assert not missing, f"routes and handlers differ: {sorted(missing)}"
        self.now_calls: dict[str, NowCall] = {
            "transfer": self._transfer_now,
            "transfer_batch": self._batch_now,
            "complete": self._complete_now,
        }
        """The operations :meth:`now` answers (the lane's)."""
        self._children: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._document: bytes | None = None

    async def __call__(self, request: Request) -> Response:
        """Answer one request, timing it by endpoint."""
        t0 = time.perf_counter()
        endpoint = "unknown"
        status = 500
        try:
            route, params = self._route(request)
            endpoint = route.endpoint
            if route.authorised:
                self._authorise(request, in_query=route.token_in_query)
            response = await self.calls[route.operation](request, params)
            status = response.status
            return response
        except HttpError as exc:
            status = exc.status
            raise
        finally:
            self._count(endpoint, status, t0)

    def now(self, request: Request) -> Response | Awaitable[Response] | None:
        """Answer a request for :mod:`lane`: the answer at once for the coordinators' hot
        path (a decision, a batch, a completion), an awaitable of it for any other request
        and for the rare hot one whose engine updates write a switch (a reroute that
        tripped the limit changes the leaves' mode), or None for a stream, which the lane
        leaves to aiohttp. A refusal is its JSON error answer, as aiohttp's side gives."""
        route, params = match(request.method, request.path.rstrip("/") or "/")
        if route is None or route.operation not in self.now_calls:
            if route is not None and route.operation in STREAMS:
                return None
            return respond(self, request)
        assert isinstance(params, dict)
        t0 = time.perf_counter()
        try:
            if route.authorised:
                self._authorise(request)
            response, rest = self.now_calls[route.operation](request, params)
        except HttpError as exc:
            self._count(route.endpoint, exc.status, t0)
            return error_response(exc)
        if rest:
            return self._after(response, rest, route.endpoint, t0)
        self._count(route.endpoint, response.status, t0)
        return response

    async def _after(
        self, response: Response, rest: list[Update], endpoint: str, t0: float
    ) -> Response:
        """``response`` once ``rest`` is applied (or the error applying it gave)."""
        try:
            await self._engine_call(self.service.enforcer.apply(rest))
        except HttpError as exc:
            response = error_response(exc)
        self._count(endpoint, response.status, t0)
        return response

    def _awaited(self, now_call: NowCall) -> Call:
        """The async handler of a hot operation (aiohttp's side): its synchronous answer,
        given once the engine's updates it left are applied."""

        async def call(r: Request, p: dict[str, str]) -> Response:
            response, rest = now_call(r, p)
            await self._engine_call(self.service.enforcer.apply(rest))
            return response

        return call

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
    def _route(r: Request) -> tuple[Route, dict[str, str]]:
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

    def _transfer_now(self, r: Request, _p: dict[str, str]) -> tuple[Response, list[Update]]:
        ask = schema.decode(schema.TransferRequest, r.json())
        with _engine_errors():
            answer, rest = self.service.transfer_now(ask)
        location = {"Location": f"/v1/transfers/{answer.id}"}
        return Response(201, schema.encode(answer), headers=location), rest

    def _batch_now(self, r: Request, _p: dict[str, str]) -> tuple[Response, list[Update]]:
        """Decide every transfer in order, as the single endpoint would."""
        batch = schema.decode(schema.BatchRequest, r.json())
        answers: list[object] = []
        rest: list[Update] = []
        for ask in batch.transfers:
            try:
                with _engine_errors():
                    answer, more = self.service.transfer_now(ask)
                answers.append(schema.encode(answer))
                rest += more
            except HttpError as exc:
                answers.append(error_response(exc).body)
        return Response(200, {"transfers": answers}), rest

    async def _start(self, r: Request, p: dict[str, str]) -> Response:
        timeout_ms = _query_int(r, START_TIMEOUT)
        answer = await self._engine_call(self.service.start(p["id"], timeout_ms / 1e3))
        return Response(200, schema.encode(answer))

    async def _cancel(self, _r: Request, p: dict[str, str]) -> Response:
        answer = await self._engine_call(self.service.cancel(p["id"]))
        return Response(200, schema.encode(answer))

    def _complete_now(self, r: Request, p: dict[str, str]) -> tuple[Response, list[Update]]:
        done = schema.decode(schema.CompleteRequest, r.json())
        if done.duration_s is not None:
            duration = done.duration_s
        elif done.duration_ms is not None:
            duration = done.duration_ms / 1e3
        else:
            raise HttpError(400, "the body needs 'duration_s' (seconds) or 'duration_ms'")
        with _engine_errors():
            answer, rest = self.service.complete_now(p["id"], duration)
        return Response(200, schema.encode(answer)), rest

    async def _fabric(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, finite(self.service.fabric()))

    async def _get_mode(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, schema.encode(self.service.modes()))

    async def _mode(self, r: Request, _p: dict[str, str]) -> Response:
        ask = schema.decode(schema.ModeRequest, r.json())
        return Response(
            200, schema.encode(await self._engine_call(self.service.set_mode(Mode(ask.mode))))
        )

    async def _metrics(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, text=self.metrics.render(), content_type=CONTENT_TYPE)

    async def _health(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, schema.encode(self.service.health()))

    async def _ui_page(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, text=ui.page(), content_type="text/html; charset=utf-8")

    async def _ui_events(self, _r: Request, _p: dict[str, str]) -> Response:
        return Response(200, content_type="text/event-stream", stream=ui.events(self.service))

    async def _openapi(self, _r: Request, _p: dict[str, str]) -> Response:
        if self._document is None:
            self._document = openapi.render().encode()
        return Response(200, text=self._document)

    async def _pin(self, r: Request, _p: dict[str, str]) -> Response:
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

    async def _unpin(self, _r: Request, p: dict[str, str]) -> Response:
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
