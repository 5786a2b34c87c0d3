"""A real P4Runtime server on an ephemeral port, in a thread with its own event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from finsy.proto import U128, p4r, p4r_grpc

from softswitch.switch.p4rt.device import Device
from softswitch.switch.p4rt.service import start_server

from .fakes import load_p4info, p4info_loader

T = TypeVar("T")


class ServerThread:
    """Runs a Device and its gRPC server; ``address`` is ``127.0.0.1:<port>``."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("server did not start")
        self.address = f"127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(start_server(self.device, "127.0.0.1:0"))
        self.port = self.server.kvfabric_port  # type: ignore[attr-defined]
        self._ready.set()
        self.loop.run_forever()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the server's loop (where the Device lives) and return its result."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return future.result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(0), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


def make_device(device_id: int = 0, **kwargs: Any) -> Device:
    return Device(device_id, p4info_loader, **kwargs)


def pipeline_request(
    device_id: int = 0, election_id: int | None = None, cookie: int | None = 7
) -> p4r.SetForwardingPipelineConfigRequest:
    request = p4r.SetForwardingPipelineConfigRequest(
        device_id=device_id, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.config.p4info.CopyFrom(load_p4info())
    request.config.p4_device_config = b"{}"
    if cookie is not None:
        request.config.cookie.cookie = cookie
    if election_id is not None:
        request.election_id.CopyFrom(U128.encode(election_id))
    return request


class Client:
    """A raw-stub client with one StreamChannel, for the error cases finsy hides."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self._requests: list[p4r.StreamMessageRequest | None] = []
        self._cond = threading.Condition()
        self._stream: Any = None
        self.responses: queue.Queue[p4r.StreamMessageResponse | grpc.RpcError] = queue.Queue()

    def _iter(self) -> Any:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._requests))
                item = self._requests.pop(0)
            if item is None:
                return
            yield item

    def send(self, request: p4r.StreamMessageRequest) -> None:
        if self._stream is None:
            self._stream = self.stub.StreamChannel(self._iter())
            threading.Thread(target=self._pump, daemon=True).start()
        with self._cond:
            self._requests.append(request)
            self._cond.notify()

    def _pump(self) -> None:
        try:
            for response in self._stream:
                self.responses.put(response)
        except grpc.RpcError as exc:
            self.responses.put(exc)

    def arbitrate(self, election_id: int, device_id: int = 0, role: str = "") -> None:
        update = p4r.MasterArbitrationUpdate(
            device_id=device_id, election_id=U128.encode(election_id)
        )
        if role:
            update.role.name = role
        self.send(p4r.StreamMessageRequest(arbitration=update))

    def receive(self, timeout: float = 5.0) -> p4r.StreamMessageResponse:
        """The next stream message; raises the stream's RpcError if it ended with one."""
        item = self.responses.get(timeout=timeout)
        if isinstance(item, grpc.RpcError):
            raise item
        return item

    def arbitration(self, timeout: float = 5.0) -> p4r.MasterArbitrationUpdate:
        msg = self.receive(timeout)
        assert msg.WhichOneof("update") == "arbitration", msg
        return msg.arbitration

    def close(self) -> None:
        with self._cond:
            self._requests.append(None)
            self._cond.notify()
        self.channel.close()
