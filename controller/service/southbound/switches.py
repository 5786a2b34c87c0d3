"""One switch's P4Runtime channel, with finsy and gRPC errors translated at the edge.

:class:`SwitchLink` owns a ``finsy.Switch`` (connection, arbitration, pipeline cookie
check, reconnection) and offers the few calls the service makes: batched reads
that return protobuf entities, batched writes by operation, and PacketOut. Every
call has a deadline, and every failure becomes a :class:`SwitchError` naming the
switch and the call, so the rest of the service never handles a gRPC type.

Reconnection is :meth:`SwitchLink.run`'s, not finsy's. finsy's own loop
(``Switch.run``) keeps one gRPC channel waiting for the switch, so a switch that
comes back is found only when gRPC's reconnect backoff next fires (1 s, growing by
1.6 to 15 s, with 20 % jitter), and a channel that fails within 2 s of opening is
retried only after 10 s: a restarted switch waited 0.15-8.8 s for its controller.
New channels do not escape that backoff either: gRPC shares one subchannel per
address and arguments between channels, and a subchannel whose connection failed
keeps failing every new channel, at once and with the old error, until its backoff
timer fires. So ``run`` polls with a plain TCP connection (which leaves no gRPC state
behind) after 50 ms, then 100, 200 and 250 ms at most, and opens a channel (``async
with switch``: connection, arbitration, pipeline check) only once the switch
accepts it: a switch that starts listening is connected within ``RECONNECT_MAX_S``
plus one handshake.

Election ids: a controller bids ``base + 1`` on every switch as primary and ``base``
as backup (``base`` is the switch's ``election_id`` from the fabric file, else 100).
When the primary's stream closes, the switch tells the backup there is no primary,
and finsy bids again with the highest id seen, so the backup takes over. Its
pipeline cookie matches, so the pipeline is not pushed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy
import grpc
from finsy import p4entity
from finsy.p4client import P4ClientError
from finsy.proto import p4r

from controller.config import SwitchConfig, TlsSettings
from controller.errors import NotPrimaryError, SwitchError, SwitchUnavailable

RECONNECT_MIN_S = 0.05
RECONNECT_MAX_S = 0.25
"""Waits between two connection attempts: doubling from the first to the second."""

PROBE_TIMEOUT_S = 1.0
"""A TCP probe of the switch's address that takes longer counts as not listening."""

CONNECT_TIMEOUT_S = 10.0
"""An attempt (connection, arbitration, pipeline) that takes longer is abandoned."""

DEFAULT_ELECTION_BASE = 100
"""Election id of a backup when the fabric file gives none; the primary bids one more."""

log = logging.getLogger("kvfabric.controller")

ReadyHandler = Callable[["SwitchLink"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The program to push: its P4Info file and the device config bytes."""

    p4info: Path
    blob: bytes


def election_id(config: SwitchConfig, backup: bool) -> int:
    """The election id this controller bids on ``config``'s switch."""
    base = config.election_id if config.election_id is not None else DEFAULT_ELECTION_BASE
    return base if backup else base + 1


def credentials(tls: TlsSettings | None) -> fy.GRPCCredentialsTLS | None:
    """finsy's TLS credentials for the fabric's ``p4runtime_tls`` settings."""
    if tls is None:
        return None
    return fy.GRPCCredentialsTLS(cacert=tls.ca_cert, cert=tls.cert, private_key=tls.key)


class SwitchLink:
    """A P4Runtime client of one switch (see the module docstring)."""

    def __init__(
        self,
        config: SwitchConfig,
        pipeline: Pipeline,
        *,
        backup: bool,
        tls: TlsSettings | None,
        on_ready: ReadyHandler,
        timeout_s: float = 3.0,
    ) -> None:
        self.config = config
        self.name = config.name
        self.timeout_s = timeout_s
        self._on_ready = on_ready
        self._stream_lock = asyncio.Lock()
        options = fy.SwitchOptions(
            p4info=pipeline.p4info,
            p4blob=pipeline.blob,
            device_id=config.device_id,
            initial_election_id=election_id(config, backup),
            channel_credentials=credentials(tls),
            ready_handler=self._ready,
        )
        self.switch: Any = fy.Switch(config.name, config.p4runtime, options)
        self._down = asyncio.Event()
        self.switch.ee.on(fy.SwitchEvent.CHANNEL_DOWN, lambda _sw: self._down.set())
        self.tried = 0
        """Connection attempts finished so far, successful or not."""

    async def _ready(self, _switch: Any) -> None:
        await self._on_ready(self)

    async def run(self) -> None:
        """Keep a channel to the switch open until cancelled (see the module docstring)."""
        delay = RECONNECT_MIN_S
        while True:
            self._down.clear()
            if await self._listening():
                await self._session()
                if self._down.is_set():  # it was up: start the schedule again
                    delay = RECONNECT_MIN_S
            self.tried += 1
            await asyncio.sleep(delay)
            delay = min(2 * delay, RECONNECT_MAX_S)

    async def _listening(self) -> bool:
        """True when the switch accepts a TCP connection: a probe that leaves no gRPC
        state (so no reconnect backoff) behind; True too for an address it cannot parse."""
        host, _, port = self.config.p4runtime.rpartition(":")
        if not port.isdigit():
            return True
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def _session(self) -> None:
        """One channel: connect, arbitrate, check the pipeline, serve until it closes."""
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                await self.switch.__aenter__()
        except TimeoutError:
            log.info("%s: no channel after %gs; trying again", self.name, CONNECT_TIMEOUT_S)
            return
        except (P4ClientError, grpc.RpcError, OSError, RuntimeError) as exc:
            log.debug("%s: cannot connect to %s: %s", self.name, self.config.p4runtime, exc)
            return
        log.info(
            "%s: channel up as %s in %.0f ms (pipeline checked)",
            self.name,
            "primary" if self.primary else "backup",
            (time.monotonic() - t0) * 1e3,
        )
        try:
            await self._down.wait()
        finally:
            await self.switch.__aexit__(None, None, None)
        log.info("%s: channel down; reconnecting", self.name)

    # -- state ------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        """True while the P4Runtime stream is open."""
        return bool(self.switch.is_up)

    @property
    def primary(self) -> bool:
        """True while this controller is the switch's primary."""
        return bool(self.switch.is_up and self.switch.is_primary)

    @property
    def schema(self) -> Any:
        """The switch's P4 schema (finsy's ``P4Schema``)."""
        return self.switch.p4info

    def encode(self, entity: Any) -> p4r.Entity:
        """A finsy entity as its P4Runtime protobuf."""
        if isinstance(entity, p4r.Entity):
            return entity
        message: p4r.Entity = entity.encode(self.switch.p4info)
        return message

    # -- calls ------------------------------------------------------------------------

    async def read(self, entities: Sequence[Any]) -> list[Any]:
        """One ReadRequest; the decoded finsy entities."""
        if not entities:
            return []
        schema = self.switch.p4info
        answer = await self.read_raw(self.read_request(entities))
        return [p4entity.decode_entity(e, schema) for e in answer]

    def read_request(self, entities: Iterable[Any]) -> p4r.ReadRequest:
        """A ReadRequest of ``entities`` (finsy entities or protobufs), encoded once so
        that :meth:`read_raw` can send it again and again."""
        return p4r.ReadRequest(
            device_id=self.switch.device_id, entities=[self.encode(e) for e in entities]
        )

    async def read_raw(self, request: p4r.ReadRequest) -> list[p4r.Entity]:
        """Send ``request`` (see :meth:`read_request`); the answered entities, undecoded.

        finsy's ``Switch.read`` encodes every entity asked for and decodes every entity
        answered into Python objects, which for the telemetry poller's few dozen counter
        cells per switch every poll interval was the controller's largest steady cost on
        its event loop. This sends a prepared request through the same finsy client
        (its channel, its role on the request, its error translation) and leaves
        decoding to the caller.
        """
        self._check(write=False)

        async def go() -> list[p4r.Entity]:
            client = self.switch._p4client  # finsy's Switch.read uses it the same way
            if client is None:
                raise SwitchUnavailable(self.name, "read: the P4Runtime channel closed")
            return [e async for reply in client.request_iter(request) for e in reply.entities]

        result: list[p4r.Entity] = await self._call("read", go())
        return result

    async def write(self, op: str, entities: Iterable[Any]) -> None:
        """One WriteRequest of ``op`` (insert, modify, delete) for every entity.

        Deletions ignore entities already gone (NOT_FOUND), so a retried removal
        is harmless.
        """
        batch = [self.encode(e) for e in entities]
        if not batch:
            return
        self._check(write=True)
        sw = self.switch
        if op == "insert":
            call = sw.insert(batch)
        elif op == "modify":
            call = sw.modify(batch)
        elif op == "delete":
            call = sw.delete(batch, strict=False)
        else:
            raise ValueError(f"unknown write operation {op!r}")
        await self._call(op, call)

    async def packet_out(self, frame: bytes, port: int) -> None:
        """Send ``frame`` out of ``port`` (a PacketOut on the stream).

        One message at a time: gRPC streams take no concurrent writes, and two at once
        break the stream (INTERNAL on the client side).
        """
        self._check(write=True)
        async with self._stream_lock:
            await self._call(
                "packet-out", self.switch.write([fy.P4PacketOut(frame, egress_port=port, _pad=0)])
            )

    def check_readable(self) -> None:
        """Raise :class:`SwitchUnavailable` unless the P4Runtime stream is up (a read on
        another channel is only tried then: :mod:`reads`)."""
        self._check(write=False)

    def _check(self, *, write: bool) -> None:
        if not self.switch.is_up:
            raise SwitchUnavailable(self.name, f"no P4Runtime channel to {self.config.p4runtime}")
        if write and not self.switch.is_primary:
            raise NotPrimaryError(self.name, "this controller is a backup here; it does not write")

    async def _call(self, what: str, call: Awaitable[Any]) -> Any:
        try:
            return await asyncio.wait_for(call, self.timeout_s)
        except TimeoutError:
            raise SwitchError(self.name, f"{what}: no answer in {self.timeout_s:g}s") from None
        except P4ClientError as exc:
            codes = {exc.code.name, *(e.canonical_code.name for e in exc.details.values())}
            raise SwitchError(self.name, f"{what}: {_describe(exc)}", frozenset(codes)) from None
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
            raise SwitchError(
                self.name, f"{what}: {code}: {exc.details()}", frozenset({code})
            ) from None
        except AssertionError:
            # finsy asserts an open client; the stream closed under the call.
            raise SwitchUnavailable(self.name, f"{what}: the P4Runtime channel closed") from None


def _describe(exc: P4ClientError) -> str:
    details = "; ".join(f"#{i}: {e}" for i, e in sorted(exc.details.items()))
    text = f"{exc.code.name}: {exc.message}"
    return f"{text} ({details})" if details else text
