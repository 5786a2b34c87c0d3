"""What the experiment needs from the controller service, and its HTTP implementation.

The controller owns provisioning, telemetry and path choice; the lab
drives it through the small :class:`FabricControl` protocol:

``ready(timeout_s)``
    every switch is provisioned and reporting telemetry;
``set_mode(mode)``
    ``kv-aware`` (pins), ``ecmp`` (no pins) or ``flowlet`` (the data plane's LetFlow);
``request_transfer(src, dst, nbytes, spine=None)`` -> :class:`kvfabric.client.Placement`
    ``POST /v1/transfers``; ``spine`` forces the path (the ``isolated`` reference);
``complete_transfer(id, duration_s)``
    ``POST /v1/transfers/{id}/complete``;
``pin_flow(flow, spine)`` / ``unpin_flow(flow)``
    a flow pin for a background flow that holds in *every* mode, so that
    background traffic takes the same spine whatever the mode under test;
``fabric()``
    ``GET /v1/fabric`` (utilisation, tiers, efficiency counts);
``poll_seconds()``
    how long one telemetry poll of every switch takes (``GET /metrics``), the floor of
    a polling period (:mod:`lab.timescale`).

:class:`HttpControl` speaks the controller's HTTP/JSON API, including three parts
the lab asked for: ``PUT /v1/mode {"mode"}`` and the optional
``spine`` of a transfer request, and ``POST /v1/pins`` / ``DELETE /v1/pins/{id}``
(``pin_flow``/``unpin_flow``): the controller holds the flow's whole 5-tuple on the
spine with a ``flow_pin`` entry in every mode, whatever its class, and moves it off a
cable the audit takes down. The lab steers background by its source port by default
(:mod:`experiment.ecmp`), and ``pin_flow`` is used when an experiment asks for it
(``pin_background``).

:class:`ControllerProcess` starts ``kvfabric controller FABRIC`` as a tracked
process.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from prometheus_client.parser import text_string_to_metric_families

from controller.config import FabricConfig
from experiment.flows import FlowKey
from kvfabric.client import AsyncClient, Placement
from lab.errors import ControlError
from lab.procs import ProcessTable, Tracked


class PathService(Protocol):
    """The part of the controller a KV sender talks to."""

    async def request_transfer(
        self, src: str, dst: str, nbytes: int, *, spine: str | None = None
    ) -> Placement:
        """Ask where a transfer goes (``POST /v1/transfers``)."""
        ...

    async def complete_transfer(self, transfer_id: str, duration_s: float) -> None:
        """Report a transfer's measured duration."""
        ...


POLL_SECONDS = "kvfabric_telemetry_poll_seconds"


class FabricControl(PathService, Protocol):
    """Everything the experiment asks of the controller service."""

    async def ready(self, timeout_s: float) -> None:
        """Return once every switch is provisioned and reporting; raise on timeout."""
        ...

    async def set_mode(self, mode: str) -> None:
        """Switch placement and data plane to ``kv-aware``, ``ecmp`` or ``flowlet``."""
        ...

    async def pin_flow(self, flow: FlowKey, spine: str) -> None:
        """Pin a background flow to ``spine`` in every mode."""
        ...

    async def unpin_flow(self, flow: FlowKey) -> None:
        """Remove a background flow's pin."""
        ...

    async def fabric(self) -> Mapping[str, Any]:
        """The controller's fabric view (``GET /v1/fabric``)."""
        ...

    async def poll_seconds(self) -> float | None:
        """How long one telemetry poll of every switch takes (None: not measured)."""
        ...


# -- HTTP ------------------------------------------------------------------------------


class HttpControl:
    """:class:`FabricControl` over the controller's HTTP/JSON API (one connection per call)."""

    def __init__(
        self, host: str, port: int, *, token: str | None = None, timeout_s: float = 5.0
    ) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.timeout_s = timeout_s
        self._pins: dict[FlowKey, str] = {}
        self.client = AsyncClient([(host, port)], token=token, deadline_s=timeout_s)
        """What the KV senders ask (:mod:`kvfabric.client`: retries, ECMP fallback)."""

    @classmethod
    def for_fabric(cls, fabric: FabricConfig) -> HttpControl:
        """The API of the controller configured in ``fabric``."""
        api = fabric.controller.api
        host = "127.0.0.1" if api.host in ("0.0.0.0", "") else api.host
        return cls(host, api.port, token=api.token)

    async def request(self, method: str, path: str, body: object = None) -> Any:
        """One HTTP request; the decoded JSON answer, or :class:`ControlError`."""
        text = await self.text(method, path, body)
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise ControlError(f"{method} {path}: the answer is not JSON: {text[:200]!r}") from None

    async def text(self, method: str, path: str, body: object = None) -> str:
        """One HTTP request; the answer's text, or :class:`ControlError`."""
        try:
            async with asyncio.timeout(self.timeout_s):  # not wait_for: see lab.run
                return await self._request(method, path, body)
        except TimeoutError:
            raise ControlError(f"{method} {path}: no answer in {self.timeout_s:g}s") from None
        except OSError as exc:
            raise ControlError(
                f"{method} {path}: cannot reach the controller at {self.host}:{self.port}: "
                f"{exc.strerror or exc}"
            ) from None

    async def _request(self, method: str, path: str, body: object) -> str:
        data = b"" if body is None else json.dumps(body).encode()
        head = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Connection: close",
            "Accept: application/json",
            f"Content-Length: {len(data)}",
        ]
        if body is not None:
            head.append("Content-Type: application/json")
        if self.token:
            head.append(f"Authorization: Bearer {self.token}")
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
            status, headers = await _read_head(reader)
            length = headers.get("content-length")
            payload = await (reader.readexactly(int(length)) if length else reader.read())
        finally:
            writer.close()
        text = payload.decode("utf-8", "replace")
        if not 200 <= status < 300:
            raise ControlError(f"{method} {path}: HTTP {status}: {text.strip()[:300]}")
        return text

    async def ready(self, timeout_s: float) -> None:
        """Poll until ``GET /healthz`` says ready and every switch has telemetry."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                health = await self.request("GET", "/healthz")
                if not (isinstance(health, Mapping) and health.get("ready")):
                    last = f"not provisioned yet ({health!r:.200})"
                    await asyncio.sleep(0.2)
                    continue
                view = await self.fabric()
                staleness = view.get("staleness_s", {})
                waiting = [s for s, age in staleness.items() if age is None]
                if isinstance(staleness, Mapping) and staleness and not waiting:
                    return
                last = f"waiting for {', '.join(waiting) or 'the first telemetry'}"
            except ControlError as exc:
                last = str(exc)
            await asyncio.sleep(0.2)
        raise ControlError(f"the controller was not ready after {timeout_s:g}s: {last}")

    async def set_mode(self, mode: str) -> None:
        """``PUT /v1/mode`` ."""
        await self.request("PUT", "/v1/mode", {"mode": mode})

    async def request_transfer(
        self, src: str, dst: str, nbytes: int, *, spine: str | None = None
    ) -> Placement:
        """``POST /v1/transfers`` -> the placement and the tag to set."""
        body: dict[str, object] = {"src": src, "dst": dst, "bytes": nbytes}
        if spine is not None:
            body["spine"] = spine
        answer = await self.request("POST", "/v1/transfers", body)
        return parse_placement(answer, f"{self.host}:{self.port}")

    async def complete_transfer(self, transfer_id: str, duration_s: float) -> None:
        """``POST /v1/transfers/{id}/complete`` with the measured duration."""
        await self.request(
            "POST", f"/v1/transfers/{transfer_id}/complete", {"duration_s": duration_s}
        )

    async def pin_flow(self, flow: FlowKey, spine: str) -> None:
        """``POST /v1/pins``: hold ``flow`` on ``spine`` in every mode (a flow pin)."""
        answer = await self.request(
            "POST",
            "/v1/pins",
            {
                "src": flow.src,
                "dst": flow.dst,
                "protocol": flow.protocol,
                "src_port": flow.src_port,
                "dst_port": flow.dst_port,
                "spine": spine,
            },
        )
        if isinstance(answer, Mapping) and "id" in answer:
            self._pins[flow] = str(answer["id"])

    async def unpin_flow(self, flow: FlowKey) -> None:
        """``DELETE /v1/pins/{id}`` of the pin ``pin_flow`` made for ``flow``."""
        pin = self._pins.pop(flow, None)
        if pin is not None:
            await self.request("DELETE", f"/v1/pins/{pin}")

    async def fabric(self) -> Mapping[str, Any]:
        """``GET /v1/fabric``."""
        answer = await self.request("GET", "/v1/fabric")
        if not isinstance(answer, Mapping):
            raise ControlError("GET /v1/fabric: expected a JSON object")
        return answer

    async def poll_seconds(self) -> float | None:
        """The mean time of one concurrent poll of every switch so far, from the
        controller's ``kvfabric_telemetry_poll_seconds`` (``GET /metrics``)."""
        return poll_seconds(await self.text("GET", "/metrics"))


def poll_seconds(metrics: str) -> float | None:
    """Mean of the ``kvfabric_telemetry_poll_seconds`` histogram in Prometheus text
    (None before the first poll)."""
    total = count = None
    for family in text_string_to_metric_families(metrics):
        if family.name != POLL_SECONDS:
            continue
        for sample in family.samples:
            if sample.name == f"{POLL_SECONDS}_sum":
                total = sample.value
            elif sample.name == f"{POLL_SECONDS}_count":
                count = sample.value
    if total is None or not count:
        return None
    return float(total / count)


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = (await reader.readline()).decode("latin-1").strip()
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ControlError(f"not an HTTP answer: {status_line[:100]!r}")
    headers: dict[str, str] = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def parse_placement(answer: object, controller: str) -> Placement:
    """The client's :class:`~kvfabric.client.Placement` of a ``POST /v1/transfers``
    answer from ``controller``, checked first: ``{id, path, tag: {dscp, src_port}}``."""
    if not isinstance(answer, Mapping) or "id" not in answer:
        raise ControlError(f"POST /v1/transfers: expected {{id, path, tag}}, got {answer!r:.200}")
    tag = answer.get("tag") or {}
    if not isinstance(tag, Mapping):
        raise ControlError(f"POST /v1/transfers: 'tag' must be an object, got {tag!r:.100}")
    if tag and not ({"dscp", "src_port"} <= tag.keys()):
        raise ControlError(f"POST /v1/transfers: 'tag' needs dscp and src_port, got {tag!r:.100}")
    path = answer.get("path")
    if path is not None and not isinstance(path, str):
        raise ControlError(f"POST /v1/transfers: 'path' must be a string, got {path!r:.100}")
    return Placement.from_answer(answer, controller)


# -- the controller process ------------------------------------------------------------


class ControllerProcess:
    """``kvfabric controller FABRIC`` as a tracked process of the lab."""

    def __init__(
        self,
        fabric_file: Path,
        log_path: Path,
        processes: ProcessTable,
        argv: Sequence[str] | None = None,
        *,
        transfer_log: Path | None = None,
        options: Sequence[str] = (),
    ) -> None:
        self.fabric_file = fabric_file
        self.log_path = log_path
        self.processes = processes
        self.transfer_log = transfer_log
        self.options = tuple(options)
        self.custom = argv is not None
        self.argv = list(argv) if argv is not None else self._default_argv()
        self.entry: Tracked | None = None

    def _default_argv(self) -> list[str]:
        argv = [sys.executable, "-m", "kvfabric.cli", "controller", str(self.fabric_file)]
        argv += self.options
        if self.transfer_log is not None:
            argv += ["--log", str(self.transfer_log)]
        return argv

    def restart_with(self, fabric_file: Path, log_path: Path) -> Tracked:
        """Stop the controller and start it again on ``fabric_file`` (other settings, same
        fabric); it adopts the switches' state as any restarted controller does."""
        if self.custom:
            raise ControlError(
                "a controller started from a custom command line cannot switch files"
            )
        self.stop()
        self.fabric_file, self.log_path = fabric_file, log_path
        self.argv = self._default_argv()
        return self.start()

    def start(self) -> Tracked:
        """Start the controller; its output goes to ``log_path``."""
        self.entry = self.processes.start("controller", self.argv, log_path=self.log_path)
        return self.entry

    def check(self) -> None:
        """Raise if the controller exited."""
        if self.entry is not None and self.entry.process.poll() is not None:
            code = self.entry.process.returncode
            raise ControlError(f"the controller exited with status {code}; see {self.log_path}")

    def stop(self) -> None:
        """Stop the controller by pid."""
        if self.entry is not None:
            self.processes.stop(self.entry)
            self.entry = None
