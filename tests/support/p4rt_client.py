"""A small synchronous P4Runtime client: raw gRPC stubs and one StreamChannel.

finsy is the project's controller library; this client is for the places that
need the exact messages and status codes finsy hides, or no event loop:
tests of the server, benchmarks and quick tools.  Stream messages arrive on a
background thread and wait in :attr:`StreamClient.responses`; a stream that
ends with an error puts its ``grpc.RpcError`` there, and :meth:`receive`
raises it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import grpc
from finsy.proto import U128, p4i, p4r, p4r_grpc

SET = p4r.SetForwardingPipelineConfigRequest


class StreamClient:
    """One channel to a P4Runtime server, its stub, and (once used) one stream."""

    def __init__(
        self,
        address: str,
        *,
        device_id: int = 0,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self.device_id = device_id
        self.election_id: int | None = None
        if credentials is None:
            self.channel = grpc.insecure_channel(address, options=options)
        else:
            self.channel = grpc.secure_channel(address, credentials, options=options)
        self.stub = p4r_grpc.P4RuntimeStub(self.channel)
        self._requests: list[p4r.StreamMessageRequest | None] = []
        self._cond = threading.Condition()
        self._stream: Any = None
        self.responses: queue.Queue[p4r.StreamMessageResponse | grpc.RpcError] = queue.Queue()

    # --- stream -----------------------------------------------------------------------

    def _iter(self) -> Iterator[p4r.StreamMessageRequest]:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._requests))
                item = self._requests.pop(0)
            if item is None:
                return
            yield item

    def send(self, request: p4r.StreamMessageRequest) -> None:
        """Put a message on the stream (opening it on first use)."""
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

    def arbitrate(
        self, election_id: int, role: str = "", config: Any = None, device_id: int | None = None
    ) -> None:
        """Send a MasterArbitrationUpdate (``config``: a message packed into role.config)."""
        update = p4r.MasterArbitrationUpdate(
            device_id=self.device_id if device_id is None else device_id,
            election_id=U128.encode(election_id),
        )
        if role:
            update.role.name = role
        if config is not None:
            update.role.config.Pack(config)
        self.send(p4r.StreamMessageRequest(arbitration=update))

    def receive(self, timeout: float = 5.0) -> p4r.StreamMessageResponse:
        """The next stream message; raises the stream's RpcError if it ended with one."""
        item = self.responses.get(timeout=timeout)
        if isinstance(item, grpc.RpcError):
            raise item
        return item

    def receive_kind(self, kind: str, timeout: float = 5.0) -> p4r.StreamMessageResponse:
        """The next stream message of one kind (``packet``, ``digest``...); others are dropped."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            msg = self.receive(max(0.0, deadline - time.monotonic()))
            if msg.WhichOneof("update") == kind:
                return msg

    def arbitration(self, timeout: float = 5.0) -> p4r.MasterArbitrationUpdate:
        msg = self.receive(timeout)
        if msg.WhichOneof("update") != "arbitration":
            raise AssertionError(f"expected an arbitration update, got {msg}")
        return msg.arbitration

    def become_primary(self, election_id: int = 1, role: str = "") -> None:
        """Arbitrate and check the answer says primary; later requests carry the id."""
        self.arbitrate(election_id, role)
        status = self.arbitration().status
        if status.code != 0:
            raise AssertionError(f"not primary: {status}")
        self.election_id = election_id

    # --- unary requests -----------------------------------------------------------------

    def _election(self) -> p4r.Uint128 | None:
        return None if self.election_id is None else U128.encode(self.election_id)

    def set_pipeline(
        self,
        p4info: p4i.P4Info,
        device_config: bytes,
        *,
        action: SET.Action.ValueType = SET.VERIFY_AND_COMMIT,
        cookie: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        request = SET(device_id=self.device_id, action=action, election_id=self._election())
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        if cookie is not None:
            request.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(request, timeout=timeout)

    def write(
        self,
        updates: Iterable[p4r.Update],
        *,
        atomicity: int = p4r.WriteRequest.CONTINUE_ON_ERROR,
        timeout: float = 10.0,
    ) -> None:
        request = p4r.WriteRequest(
            device_id=self.device_id,
            election_id=self._election(),
            updates=list(updates),
            atomicity=atomicity,  # type: ignore[arg-type]
        )
        self.stub.Write(request, timeout=timeout)

    def read(self, *entities: p4r.Entity, timeout: float = 10.0) -> list[p4r.Entity]:
        request = p4r.ReadRequest(device_id=self.device_id, entities=entities)
        out: list[p4r.Entity] = []
        for response in self.stub.Read(request, timeout=timeout):
            out.extend(response.entities)
        return out

    def close(self) -> None:
        with self._cond:
            self._requests.append(None)
            self._cond.notify()
        self.channel.close()

    def __enter__(self) -> StreamClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def insert(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.INSERT, entity=entity)


def modify(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.MODIFY, entity=entity)


def delete(entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.DELETE, entity=entity)
