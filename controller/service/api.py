"""The coordinators' and operators' HTTP/JSON API.

    POST /v1/transfers              {src, dst, bytes, trace_id?, spine?}
                                    -> 201 {id, path, spine, tag: {dscp, tos, src_port}, ...}
    POST /v1/transfers/{id}/complete {duration_s} (or duration_ms) -> 200
    POST /v1/pins                   {src, dst, protocol, src_port, dst_port, spine}
                                    -> 201 {id, leaf, spine, port, placement, ...}
    DELETE /v1/pins/{id}            -> 200 {id, ..., removed: true}
    GET  /v1/fabric                 topology, utilisation, pins, static pins, mode,
                                    alerts, controller
    POST /v1/mode  (or PUT)         {mode: kv-aware | ecmp | flowlet} -> 200
    GET  /metrics                   Prometheus text
    GET  /healthz                   {ok, role, ready, instance, switches: {name: {role,
                                    address}}} (no token needed)

``tag`` says exactly what the sender sets: the IP DSCP (``tos`` is the whole TOS
byte, ``dscp << 2``, for ``IP_TOS``) and the L4 source port to bind. A transfer the
controller does not pin still gets a tag (its bytes are counted as KV traffic) and
``path`` null; ``placement`` says ``pinned``, ``ecmp`` or ``local``. ``spine`` in a
request forces the path (the lab's ``isolated`` reference).

A static pin (``POST /v1/pins``) holds one flow, by its whole 5-tuple, on a spine in
every mode, whatever its class (the lab's background): hosts by name, ``protocol``
``"tcp"``, ``"udp"`` or a number 0-255 (ports 0 for a protocol without them), ports
0-65535. It moves off a cable the audit takes down, to the live spine with the most
capacity left, or to ECMP while no spine is live (``placement`` says which).

With a token configured every endpoint but ``/healthz`` needs
``Authorization: Bearer <token>`` (401 otherwise). Errors are JSON
``{"error", "status"}``: 400 malformed body or field, 401, 404 unknown endpoint,
transfer or pin, 405 wrong method, 409 a forced spine whose path has a cable down, or a
5-tuple already pinned, 413 body too large, 422 a request the engine refuses (unknown
host, same source and destination or rack, a spine not on a path), 502 the leaf
refused a pin's entry, 503 not ready or backup.

Roles and readiness (:mod:`readiness`): ``/healthz`` gives each switch's state for this
controller (``primary``, ``provisioning``, ``backup``, ``down``, ``connecting``) and an
overall ``role``: ``primary`` when this controller is the primary of every switch it
reaches, ``backup`` when it is the backup of all of them, ``mixed`` only when it is
both. ``ready`` is true once every switch is provisioned and has a telemetry sample
taken since (a switch whose counters cannot be read stops being waited for after
twice the staleness limit). A request is answered 503 (``Retry-After: 1``) only for the switches it
needs, the two leaves and the spines between them for a transfer or a static pin:
when this controller is the backup of one of them (the error names it), or while one
is connecting or being provisioned. A switch that is down refuses nothing: a spine
without telemetry is left out of path selection, and a transfer whose source leaf is
unreachable is answered 201 with ``placement`` ``ecmp``, its tag, and a fallback
naming the leaf and its address (the leaf's data plane may still forward; only its
pin cannot be written, and the sender must not wait for a controller to come back).
"""

from __future__ import annotations

import hmac
import math
import re
import time
from collections.abc import Awaitable, Callable

from controller.config import Mode
from controller.engine import (
    PROTOCOLS,
    DuplicatePinError,
    EngineError,
    FlowTuple,
    PathDownError,
    UnknownPinError,
    UnknownTransferError,
)
from controller.service.errors import PinNotWrittenError
from controller.service.http import HttpError, Request, Response
from controller.service.metrics import CONTENT_TYPE
from controller.service.service import NotReadyError, Service

_COMPLETE = re.compile(r"^/v1/transfers/([A-Za-z0-9._-]{1,64})/complete$")
_PIN = re.compile(r"^/v1/pins/([^/]{1,64})$")
_MAX_BYTES = 1 << 50


class Api:
    """Routes requests to the service (see the module docstring)."""

    def __init__(self, service: Service, token: str | None) -> None:
        self.service = service
        self.token = token
        self.metrics = service.metrics

    async def __call__(self, request: Request) -> Response:
        """Answer one request, timing it by endpoint."""
        t0 = time.perf_counter()
        endpoint = "unknown"
        status = 500
        try:
            endpoint, call = self._route(request)
            if endpoint != "healthz":
                self._authorise(request)
            response = await call(request)
            status = response.status
            return response
        except HttpError as exc:
            status = exc.status
            raise
        finally:
            self.metrics.api_seconds.labels(endpoint).observe(time.perf_counter() - t0)
            self.metrics.api_requests.labels(endpoint, str(status)).inc()

    def _route(self, r: Request) -> tuple[str, Callable[[Request], Awaitable[Response]]]:
        path, method = r.path.rstrip("/") or "/", r.method
        routes: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {
            "/v1/transfers": {"POST": self._transfer},
            "/v1/fabric": {"GET": self._fabric},
            "/v1/mode": {"POST": self._mode, "PUT": self._mode, "GET": self._get_mode},
            "/metrics": {"GET": self._metrics},
            "/healthz": {"GET": self._health},
            "/v1/pins": {"POST": self._pin},
        }
        name = path.strip("/").replace("v1/", "") or "root"
        methods = routes.get(path)
        if methods is None:
            if _COMPLETE.match(path):
                name, methods = "complete", {"POST": self._complete}
            elif _PIN.match(path):
                name, methods = "pins", {"DELETE": self._unpin}
            else:
                raise HttpError(404, f"no endpoint {path}; see GET /v1/fabric, POST /v1/transfers")
        call = methods.get(method)
        if call is None:
            allowed = ", ".join(sorted(methods))
            raise HttpError(
                405, f"{method} is not allowed on {path}; use {allowed}", {"Allow": allowed}
            )
        return name, call

    def _authorise(self, r: Request) -> None:
        """Compare bytes: the header's as sent (the server decodes them as UTF-8 and keeps
        undecodable bytes as surrogates, which gives them back unchanged) with the token's
        in UTF-8, as clients send it."""
        if self.token is None:
            return
        given = r.headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip(" \t").encode("utf-8", "surrogateescape"),
            self.token.encode("utf-8", "surrogateescape"),
        ):
            raise HttpError(
                401,
                "missing or wrong bearer token (send 'Authorization: Bearer <token>')",
                {"WWW-Authenticate": 'Bearer realm="kvfabric"'},
            )

    # -- endpoints ------------------------------------------------------------------------

    async def _transfer(self, r: Request) -> Response:
        body = _object(r)
        _only(body, {"src", "dst", "bytes", "trace_id", "spine"})
        src, dst = _text(body, "src"), _text(body, "dst")
        nbytes = body.get("bytes")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 < nbytes <= _MAX_BYTES:
            raise HttpError(400, f"'bytes' must be a positive integer, got {nbytes!r}")
        trace = _text(body, "trace_id") if "trace_id" in body else None
        spine = _text(body, "spine") if body.get("spine") is not None else None
        answer = await self._engine_call(
            self.service.transfer(src, dst, nbytes, trace_id=trace, spine=spine)
        )
        return Response(201, answer, headers={"Location": f"/v1/transfers/{answer['id']}"})

    async def _complete(self, r: Request) -> Response:
        match = _COMPLETE.match(r.path.rstrip("/"))
        assert match is not None
        body = _object(r)
        _only(body, {"duration_s", "duration_ms"})
        if "duration_s" in body:
            duration = _number(body, "duration_s")
        elif "duration_ms" in body:
            duration = _number(body, "duration_ms") / 1e3
        else:
            raise HttpError(400, "the body needs 'duration_s' (seconds) or 'duration_ms'")
        if not duration > 0:
            raise HttpError(400, f"the duration must be positive, got {duration}")
        answer = await self._engine_call(self.service.complete(match.group(1), duration))
        return Response(200, answer)

    async def _fabric(self, _r: Request) -> Response:
        return Response(200, _finite(self.service.fabric()))

    async def _get_mode(self, _r: Request) -> Response:
        e = self.service.engine
        return Response(200, {"mode": str(e.mode), "effective_mode": str(e.effective_mode)})

    async def _mode(self, r: Request) -> Response:
        body = _object(r)
        _only(body, {"mode"})
        text = _text(body, "mode")
        try:
            mode = Mode(text)
        except ValueError:
            names = ", ".join(m.value for m in Mode)
            raise HttpError(400, f"unknown mode {text!r}; expected one of {names}") from None
        return Response(200, await self._engine_call(self.service.set_mode(mode)))

    async def _metrics(self, _r: Request) -> Response:
        return Response(200, text=self.metrics.render(), content_type=CONTENT_TYPE)

    async def _health(self, _r: Request) -> Response:
        return Response(200, self.service.health())

    async def _pin(self, r: Request) -> Response:
        body = _object(r)
        _only(body, {"src", "dst", "protocol", "src_port", "dst_port", "spine"})
        protocol = _protocol(body)
        ports = _port(body, "src_port"), _port(body, "dst_port")
        if protocol not in PROTOCOLS.values() and ports != (0, 0):
            raise HttpError(
                400,
                f"protocol {protocol} has no ports (only tcp and udp do): 'src_port' and "
                f"'dst_port' must be 0, got {ports[0]} and {ports[1]}",
            )
        flow = FlowTuple(_text(body, "src"), _text(body, "dst"), protocol, *ports)
        answer = await self._engine_call(self.service.pin_flow(flow, _text(body, "spine")))
        return Response(201, answer, headers={"Location": f"/v1/pins/{answer['id']}"})

    async def _unpin(self, r: Request) -> Response:
        match = _PIN.match(r.path.rstrip("/"))
        assert match is not None
        return Response(200, await self._engine_call(self.service.unpin_flow(match.group(1))))

    @staticmethod
    async def _engine_call(call: Awaitable[dict[str, object]]) -> dict[str, object]:
        try:
            return await call
        except NotReadyError as exc:
            raise HttpError(503, str(exc), {"Retry-After": "1"}) from None
        except (UnknownTransferError, UnknownPinError) as exc:
            raise HttpError(404, str(exc)) from None
        except (PathDownError, DuplicatePinError) as exc:
            raise HttpError(409, str(exc)) from None
        except PinNotWrittenError as exc:
            raise HttpError(502, str(exc)) from None
        except EngineError as exc:
            raise HttpError(422, str(exc)) from None


def _object(r: Request) -> dict[str, object]:
    body = r.json()
    if not isinstance(body, dict):
        raise HttpError(400, f"the body must be a JSON object, got {type(body).__name__}")
    return body


def _only(body: dict[str, object], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise HttpError(
            400, f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {sorted(allowed)}"
        )


def _text(body: dict[str, object], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value or len(value) > 128:
        raise HttpError(400, f"{name!r} must be a non-empty string, got {value!r}")
    return value


def _protocol(body: dict[str, object]) -> int:
    value = body.get("protocol")
    if isinstance(value, str) and value.lower() in PROTOCOLS:
        return PROTOCOLS[value.lower()]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return value
    raise HttpError(
        400, f"'protocol' must be 'tcp', 'udp' or an IPv4 protocol number 0-255, got {value!r}"
    )


def _port(body: dict[str, object], name: str) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise HttpError(400, f"{name!r} must be an integer 0-65535, got {value!r}")
    return value


def _number(body: dict[str, object], name: str) -> float:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HttpError(400, f"{name!r} must be a number, got {value!r}")
    return float(value)


def _finite(value: object) -> object:
    """``value`` with NaN and infinities replaced by None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
