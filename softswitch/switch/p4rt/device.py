"""The P4Runtime device: everything the server knows, with no gRPC in it.

One :class:`Device` per switch.  The gRPC service calls its request methods;
the switch's packet loop calls :meth:`Device.packet_in`, :meth:`Device.digest`
and :meth:`Device.tick`.  Outgoing stream messages are put on the per-stream
queues the service registered (:meth:`Device.open_stream`), so a slow client
never blocks the packet loop.

Request checks come in BMv2's order: the device id (NOT_FOUND), the primary
(PERMISSION_DENIED, for Write and SetForwardingPipelineConfig), the pipeline
(FAILED_PRECONDITION).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from finsy.proto import U128, p4r, rpc_code

from softswitch.errors import RuntimeConfigError
from softswitch.switch.dataplane import Dataplane, DataplaneLoader
from softswitch.switch.p4rt import roles
from softswitch.switch.p4rt.arbitration import Arbiter, Notification
from softswitch.switch.p4rt.pipeline_config import PipelineConfigs
from softswitch.switch.p4rt.read import ReadSource, encode_entry, read_entities
from softswitch.switch.p4rt.roles import RoleConfig
from softswitch.switch.p4rt.stream import (
    DigestQueue,
    idle_notification,
    packet_in_message,
    packet_out_frame,
)
from softswitch.switch.p4rt.write import WriteTarget, apply_write

LOG = logging.getLogger("kvfabric.switch.p4rt")
API_VERSION = "1.4.1"
MAX_READ_BATCH = 4096


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """Put on a stream's queue to end it, with an error status or cleanly (code None)."""

    code: str | None = None
    message: str = ""


StreamItem = p4r.StreamMessageResponse | StreamEnd
Injector = Callable[[bytes], None]


class Device:
    """A P4Runtime target: arbitration, pipeline configs, entities, stream messages."""

    def __init__(
        self,
        device_id: int,
        loader: DataplaneLoader,
        *,
        cpu_port: int | None = None,
        inject: Injector | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        import time

        self.device_id = device_id
        self.cpu_port = cpu_port
        self.inject = inject
        self.clock = clock or time.monotonic_ns
        self.arbiter = Arbiter(device_id)
        self.configs = PipelineConfigs(loader)
        self.digests = DigestQueue()
        self.streams: dict[int, asyncio.Queue[StreamItem]] = {}
        self._stream_ids = itertools.count(1)
        self.on_dataplane_change: Callable[[Dataplane | None], None] = lambda _: None
        self.packets_in = 0
        self.packets_out = 0

    # --- forwarding view ----------------------------------------------------------------

    @property
    def dataplane(self) -> Dataplane | None:
        """The dataplane that forwards packets (the committed one)."""
        committed = self.configs.committed
        return None if committed is None else committed.dataplane

    # --- unary requests -----------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise RuntimeConfigError("NOT_FOUND", f"Invalid device id {device_id}")

    def _check_primary(self, role: str, election_id: p4r.Uint128 | None) -> None:
        self.arbiter.check_primary(role, None if election_id is None else U128.decode(election_id))

    def capabilities(self) -> p4r.CapabilitiesResponse:
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def write(self, request: p4r.WriteRequest) -> list[p4r.Error] | None:
        """Apply a WriteRequest; None on success, per-update errors otherwise."""
        self._check_device(request.device_id)
        self._check_primary(
            request.role, request.election_id if request.HasField("election_id") else None
        )
        loaded = self.configs.current
        target = WriteTarget(
            loaded.schema,
            loaded.dataplane.state,
            self.digests,
            role=request.role,
            role_config=self.arbiter.config_of(request.role),
        )
        return apply_write(target, request)

    def read(self, request: p4r.ReadRequest) -> Iterator[p4r.ReadResponse]:
        """ReadResponses for a ReadRequest (all errors are raised before the first one)."""
        self._check_device(request.device_id)
        loaded = self.configs.current
        source = ReadSource(loaded.schema, loaded.dataplane.state, self.digests, self.clock())
        entities = list(read_entities(source, request))
        for start in range(0, max(len(entities), 1), MAX_READ_BATCH):
            yield p4r.ReadResponse(entities=entities[start : start + MAX_READ_BATCH])

    def set_pipeline(self, request: p4r.SetForwardingPipelineConfigRequest) -> None:
        self._check_device(request.device_id)
        self._check_primary(
            request.role, request.election_id if request.HasField("election_id") else None
        )
        roles.check_push_pipeline(request.role, self.arbiter.config_of(request.role))
        if self.configs.set(request):
            self.digests.clear()
            self.on_dataplane_change(self.dataplane)

    def get_pipeline(
        self, request: p4r.GetForwardingPipelineConfigRequest
    ) -> p4r.GetForwardingPipelineConfigResponse:
        self._check_device(request.device_id)
        return p4r.GetForwardingPipelineConfigResponse(
            config=self.configs.get(request.response_type)
        )

    # --- streams ------------------------------------------------------------------------

    def open_stream(self) -> tuple[int, asyncio.Queue[StreamItem]]:
        stream_id = next(self._stream_ids)
        queue: asyncio.Queue[StreamItem] = asyncio.Queue()
        self.streams[stream_id] = queue
        return stream_id, queue

    def close_stream(self, stream_id: int) -> None:
        self.streams.pop(stream_id, None)
        self._send(self.arbiter.remove(stream_id))

    def _send(self, notifications: list[Notification]) -> None:
        for stream_id, msg in notifications:
            queue = self.streams.get(stream_id)
            if queue is not None:
                queue.put_nowait(msg)

    def _to_primaries(
        self, msg: p4r.StreamMessageResponse, wants: Callable[[RoleConfig | None], bool]
    ) -> None:
        """Send ``msg`` to the primary of every role whose config ``wants`` it."""
        for role, stream_id in self.arbiter.primaries():
            if wants(self.arbiter.config_of(role)):
                self.streams[stream_id].put_nowait(msg)

    def stream_request(self, stream_id: int, request: p4r.StreamMessageRequest) -> None:
        """One message from a client's StreamChannel."""
        queue = self.streams[stream_id]
        kind = request.WhichOneof("update")
        if kind == "arbitration":
            try:
                self._send(self.arbiter.arbitrate(stream_id, request.arbitration))
            except RuntimeConfigError as exc:
                queue.put_nowait(StreamEnd(exc.code, exc.message))
            return
        if kind == "packet":
            try:
                self._packet_out(stream_id, request.packet)
            except RuntimeConfigError as exc:
                error = _stream_error(exc)
                error.packet_out.packet_out.CopyFrom(request.packet)
                queue.put_nowait(p4r.StreamMessageResponse(error=error))
            return
        if kind == "digest_ack":
            ack = request.digest_ack
            if not self.digests.ack(ack.digest_id, ack.list_id):
                error = _stream_error(
                    RuntimeConfigError("NOT_FOUND", f"no digest list {ack.list_id} to ack")
                )
                error.digest_list_ack.digest_list_ack.CopyFrom(ack)
                queue.put_nowait(p4r.StreamMessageResponse(error=error))
            return
        error = _stream_error(RuntimeConfigError("UNIMPLEMENTED", f"stream message {kind}"))
        error.other.SetInParent()
        queue.put_nowait(p4r.StreamMessageResponse(error=error))

    def _packet_out(self, stream_id: int, packet: p4r.PacketOut) -> None:
        if not self.arbiter.is_primary_stream(stream_id):
            raise RuntimeConfigError("PERMISSION_DENIED", "only the primary may send packets")
        loaded = self.configs.committed
        if loaded is None:
            raise RuntimeConfigError("FAILED_PRECONDITION", "no pipeline config is committed")
        if self.cpu_port is None or self.inject is None:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION", "packet-out needs a CPU port (-- --cpu-port N)"
            )
        frame = packet_out_frame(loaded.schema, packet)
        self.packets_out += 1
        self.inject(frame)

    # --- from the packet loop -----------------------------------------------------------

    def packet_in(self, frame: bytes) -> None:
        """A frame the pipeline sent to the CPU port."""
        loaded = self.configs.committed
        if loaded is None:
            return
        self.packets_in += 1
        packet = packet_in_message(loaded.schema, frame)
        self._to_primaries(
            p4r.StreamMessageResponse(packet=packet),
            lambda config: roles.wants_packet_in(config, packet),
        )

    def digest(self, name: str, values: tuple[int, ...]) -> None:
        loaded = self.configs.committed
        if loaded is None:
            return
        info = loaded.schema.digests.by_name.get(name)
        if info is not None:
            self.digests.add(info.preamble.id, values, self.clock())

    def tick(self) -> None:
        """Send the digest lists and idle-timeout notifications that are due."""
        loaded = self.configs.committed
        if loaded is None:
            return
        now = self.clock()
        for msg in self.digests.due(loaded.schema, now):
            digest_id = msg.digest.digest_id
            self._to_primaries(msg, partial(roles.wants_notification, digest_id))
        state = loaded.dataplane.state
        source = ReadSource(loaded.schema, state, self.digests, now)
        for info in loaded.schema.tables.by_id.values():
            if not info.idle_timeout_behavior:
                continue
            table = state.tables[info.preamble.name]
            expired = [encode_entry(source, info, table, e) for e in table.expired_entries(now)]
            if expired:
                table_id = info.preamble.id
                self._to_primaries(
                    idle_notification(expired, now),
                    partial(roles.wants_notification, table_id),
                )


def _stream_error(exc: RuntimeConfigError) -> p4r.StreamError:
    return p4r.StreamError(canonical_code=code_number(exc.code), message=exc.message)


def code_number(name: str) -> int:
    """The google.rpc.Code number of a status name (UNKNOWN for a name it does not know)."""
    return dict(rpc_code.Code.items()).get(name, rpc_code.UNKNOWN)
