"""A stand-in for the controller's HTTP API, enough to drive the lab's clients.

It serves the calls the lab makes on a real TCP port: ``POST /v1/transfers``
(answering with a tag from a port range), ``POST /v1/transfers/{id}/complete``,
``GET /v1/fabric``, ``PUT /v1/mode``, ``POST /v1/pins`` (201, as the service answers)
and ``DELETE /v1/pins/{id}``; it records every call.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeController:
    spine: str = "spine2"
    dscp: int = 10
    first_port: int = 40000
    fail_with: int | None = None
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    server: asyncio.Server | None = None
    port: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = (await reader.readline()).decode().split()
        headers = {}
        while (line := (await reader.readline()).decode()) not in ("\r\n", ""):
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        method, path = request[0], request[1]
        data = json.loads(body) if body else None
        self.calls.append((method, path, data))
        status, answer = self._answer(method, path, data)
        payload = json.dumps(answer).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        writer.close()

    def _answer(self, method: str, path: str, data: Any) -> tuple[int, Any]:
        if self.fail_with is not None:
            return self.fail_with, {"error": "refused"}
        if (method, path) == ("POST", "/v1/transfers"):
            n = next(self._ids)
            spine = data.get("spine", self.spine)
            return 200, {
                "id": str(n),
                "path": f"leaf1>{spine}>leaf2",
                "tag": {"dscp": self.dscp, "src_port": self.first_port + n},
            }
        if method == "POST" and path.endswith("/complete"):
            return 200, {}
        if (method, path) == ("GET", "/healthz"):
            return 200, {"ok": True, "ready": True}
        if (method, path) == ("GET", "/v1/fabric"):
            return 200, {
                "staleness_s": {"leaf1": 0.05},
                "efficiency": {"evaluated": 4, "efficient": 3},
            }
        if (method, path) == ("PUT", "/v1/mode"):
            return 200, {"mode": data["mode"]}
        if (method, path) == ("POST", "/v1/pins"):
            return 201, {"id": f"p{next(self._ids)}", "spine": data.get("spine")}
        if method == "DELETE" and path.startswith("/v1/pins/"):
            return 200, {"id": path.rsplit("/", 1)[1], "removed": True}
        return 404, {"error": "no such endpoint"}
