"""A transfer split over spines, end to end: the controller answers slices, the client
opens one tagged connection per slice and sends each its part, and reports once.

The fabric is the controller tests' 2 x 2 of real switch processes, with hosts whose
NICs (40 Mb/s) are twice the 20 Mb/s uplinks: ``selection.max_slices`` defaults to
enough slices for the NIC over one uplink, two.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvfabric.client import AsyncClient, Client
from tests.controller_service.harness import Api, RunningSwitches
from tests.support.controllers import Controllers

MB = 1_000_000


class Sink:
    """A TCP server that keeps, per connection, the peer's port and every byte it sent."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.got: dict[int, bytes] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._read, args=(conn, peer[1]), daemon=True).start()

    def _read(self, conn: socket.socket, port: int) -> None:
        chunks: list[bytes] = []
        with conn:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        with self.lock:
            self.got[port] = b"".join(chunks)

    def wait(self, count: int, timeout_s: float = 10.0) -> dict[int, bytes]:
        for _ in range(int(timeout_s / 0.02)):
            with self.lock:
                if len(self.got) >= count:
                    return dict(self.got)
            threading.Event().wait(0.02)
        raise AssertionError(f"{len(self.got)} of {count} connections ended")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    try:
        yield s
    finally:
        s.close()


def fast_nics(fabric: RunningSwitches, tmp_path: Path) -> Path:
    """The fabric file with hosts at 40 Mb/s behind 20 Mb/s uplinks."""
    text = fabric.yaml()
    lines = [
        line.replace("capacity: 20Mbps", "capacity: 40Mbps") if "leaf:" in line else line
        for line in text.splitlines()
    ]
    path = tmp_path / "fast-nics.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def in_flight(api: Api) -> list[Any]:
    return list(api.call("GET", "/v1/fabric")[1]["transfers"])


def test_a_split_transfer_gets_a_tagged_connection_per_slice(
    fabric: RunningSwitches, controllers: Controllers, sink: Sink, tmp_path: Path
) -> None:
    c, api = controllers.ready(fast_nics(fabric, tmp_path), "--no-audit")
    data = bytes(range(256)) * (2 * MB // 256)
    client = Client([f"{c.host}:{c.port}"], deadline_s=5)
    with client, client.transfer("h11", "h21", len(data), connect=("127.0.0.1", sink.port)) as t:
        slices = t.placement.slices
        assert len(slices) == 2
        assert {s.spine for s in slices} == {"spine1", "spine2"}
        assert sum(s.bytes for s in slices) == len(data)
        assert [s.offset for s in slices] == [0, slices[0].bytes]
        assert len(t.sockets) == 2 and t.socket is t.sockets[0]
        for sock, sl in zip(t.sockets, slices, strict=True):
            assert sock.getsockname()[1] == sl.tag.src_port
            assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == sl.tag.tos
        (seen,) = in_flight(api)
        assert [s["spine"] for s in seen["slices"]] == [s.spine for s in slices]
        t.sendall(data)
    assert t.result.reported
    got = sink.wait(2)
    assert b"".join(got[s.tag.src_port] for s in slices) == data
    assert in_flight(api) == []  # one completion ended every slice


def test_the_async_client_sends_each_slice_its_part(
    fabric: RunningSwitches, controllers: Controllers, sink: Sink, tmp_path: Path
) -> None:
    c, api = controllers.ready(fast_nics(fabric, tmp_path), "--no-audit")
    data = b"kv" * MB

    async def run() -> tuple[list[int], bool]:
        client = AsyncClient([f"{c.host}:{c.port}"], deadline_s=5)
        to = ("127.0.0.1", sink.port)
        async with client, client.transfer("h12", "h22", len(data), connect=to) as t:
            await t.sendall(data)
            ports = [s.tag.src_port for s in t.placement.slices]
        return ports, t.result.reported

    ports, reported = asyncio.run(run())
    assert len(ports) == 2 and reported
    got = sink.wait(2)
    assert b"".join(got[p] for p in ports) == data
    assert in_flight(api) == []


def test_one_slice_when_max_slices_is_one(
    fabric: RunningSwitches, controllers: Controllers, sink: Sink, tmp_path: Path
) -> None:
    path = fast_nics(fabric, tmp_path)
    path.write_text(path.read_text() + "  selection: {max_slices: 1}\n")
    c, _ = controllers.ready(path, "--no-audit")
    client = Client([f"{c.host}:{c.port}"], deadline_s=5)
    with client, client.transfer("h11", "h21", MB, connect=("127.0.0.1", sink.port)) as t:
        assert len(t.placement.slices) == 1 and len(t.sockets) == 1
        t.sendall(b"x" * MB)
    assert sink.wait(1)[t.placement.slices[0].tag.src_port] == b"x" * MB
