"""The telemetry poller's reads, off the event loop: a worker thread with its own
blocking gRPC channel to each switch.

A poll round of four switches cost the event loop about 4.6 ms of CPU in small steps,
most of it gRPC's own asyncio machinery (about 0.7 ms per read); an API request that
arrived during a round waited behind the steps queued before it, which is most of the
difference between the API's p99 with the poller running (4.1-4.8 ms) and with it
slowed to nothing (3.0 ms). Here the read and the decoding of its answer run on one
worker thread, which holds the GIL only while it decodes (a fraction of a millisecond
per switch: gRPC releases it while it waits), and the loop only folds the result in.

A P4Runtime Read needs no arbitration (a backup reads as the primary does), so these
channels open no stream; they use the fabric's TLS settings and the switch's address
from the fabric file. A read is only tried while the switch's P4Runtime stream
(:class:`SwitchLink`) is up, as the loop's own reads are; a failed read raises
:class:`SwitchError` naming the switch, as those do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
from finsy.proto import p4r, p4r_grpc

from controller.config import TlsSettings
from controller.errors import SwitchError
from controller.service.southbound.switches import SwitchLink, credentials

T = TypeVar("T")


class ThreadReads:
    """Blocking reads of switches on one worker thread (see the module docstring)."""

    def __init__(self, tls: TlsSettings | None, timeout_s: float = 3.0) -> None:
        tls_credentials = credentials(tls)
        self._credentials = (
            tls_credentials.to_client_credentials() if tls_credentials is not None else None
        )
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvfabric-reads")
        self._lock = threading.Lock()
        self._stubs: dict[str, tuple[str, grpc.Channel, Any]] = {}

    async def read(
        self, link: SwitchLink, request: p4r.ReadRequest, then: Callable[[list[p4r.Entity]], T]
    ) -> T:
        """Send ``request`` to ``link``'s switch and return ``then(entities)``, both on the
        worker thread."""
        link.check_readable()
        loop = asyncio.get_running_loop()
        address = link.config.p4runtime
        return await loop.run_in_executor(self._pool, self._read, link.name, address, request, then)

    def _read(
        self,
        name: str,
        address: str,
        request: p4r.ReadRequest,
        then: Callable[[list[p4r.Entity]], T],
    ) -> T:
        stub = self._stub(name, address)
        try:
            entities = [
                e for reply in stub.Read(request, timeout=self.timeout_s) for e in reply.entities
            ]
        except grpc.RpcError as exc:
            code = exc.code().name if isinstance(exc, grpc.Call) else "UNKNOWN"
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            raise SwitchError(name, f"read: {code}: {details}", frozenset({code})) from None
        return then(entities)

    def _stub(self, name: str, address: str) -> Any:
        with self._lock:
            found = self._stubs.get(name)
            if found is not None and found[0] == address:
                return found[2]
            if found is not None:
                found[1].close()
            channel = (
                grpc.secure_channel(address, self._credentials)
                if self._credentials is not None
                else grpc.insecure_channel(address)
            )
            stub = p4r_grpc.P4RuntimeStub(channel)
            self._stubs[name] = (address, channel, stub)
            return stub

    def close(self) -> None:
        """Stop the worker (a read under way is left to finish) and close the channels."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            for _address, channel, _stub in self._stubs.values():
                channel.close()
            self._stubs.clear()
