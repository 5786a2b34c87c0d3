"""The gRPC face of :class:`~softswitch.switch.p4rt.device.Device` (grpc.aio).

Errors are translated here, where they leave the process: a
:class:`RuntimeConfigError` becomes the gRPC status it names; per-update Write
errors become an UNKNOWN status whose ``grpc-status-details-bin`` trailer is a
``google.rpc.Status`` holding one ``p4.v1.Error`` per update, as BMv2 sends them,
within the size a default gRPC client accepts
(:mod:`softswitch.switch.p4rt.write_status`).
The server runs on the switch's asyncio loop, so handlers and the packet loop
never run at the same time. Each Write RPC is logged at info level (how many updates,
of which kinds), so a switch's log counts the writes it received.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from finsy.proto import p4r, p4r_grpc

from softswitch.errors import RuntimeConfigError
from softswitch.switch.argv import TlsOptions
from softswitch.switch.p4rt.device import Device, StreamEnd
from softswitch.switch.p4rt.write_status import write_error_status

LOG = logging.getLogger("kvfabric.switch.p4rt")
Context = grpc.aio.ServicerContext[Any, Any]
MAX_MESSAGE = 256 * 1024 * 1024
DETAILS_KEY = "grpc-status-details-bin"


def _status_code(name: str) -> grpc.StatusCode:
    return grpc.StatusCode[name] if name in grpc.StatusCode.__members__ else grpc.StatusCode.UNKNOWN


async def _abort(
    context: grpc.aio.ServicerContext[object, object], exc: RuntimeConfigError
) -> None:
    await context.abort(_status_code(exc.code), exc.message)


class P4RuntimeService(p4r_grpc.P4RuntimeServicer):
    """P4Runtime RPCs onto one Device."""

    def __init__(self, device: Device) -> None:
        self.device = device

    async def Capabilities(  # noqa: N802 (gRPC method name)
        self,
        request: p4r.CapabilitiesRequest,
        context: Context,
    ) -> p4r.CapabilitiesResponse:
        return self.device.capabilities()

    async def Write(  # noqa: N802
        self,
        request: p4r.WriteRequest,
        context: Context,
    ) -> p4r.WriteResponse:
        if LOG.isEnabledFor(logging.INFO):
            kinds = sorted({f"{p4r.Update.Type.Name(u.type)} {u.entity.WhichOneof('entity')}"
                            for u in request.updates})  # fmt: skip
            LOG.info("P4Runtime Write: %d update(s) (%s)", len(request.updates), ", ".join(kinds))
        try:
            errors = self.device.write(request)
        except RuntimeConfigError as exc:
            await _abort(context, exc)
            raise AssertionError("unreachable") from None
        if errors is not None:
            status = write_error_status(errors)
            await context.abort(
                grpc.StatusCode.UNKNOWN,
                status.message,
                trailing_metadata=((DETAILS_KEY, status.SerializeToString()),),
            )
        return p4r.WriteResponse()

    async def Read(  # noqa: N802
        self,
        request: p4r.ReadRequest,
        context: Context,
    ) -> AsyncIterator[p4r.ReadResponse]:
        try:
            responses = list(self.device.read(request))
        except RuntimeConfigError as exc:
            await _abort(context, exc)
            return
        for response in responses:
            yield response

    async def SetForwardingPipelineConfig(  # noqa: N802
        self,
        request: p4r.SetForwardingPipelineConfigRequest,
        context: Context,
    ) -> p4r.SetForwardingPipelineConfigResponse:
        try:
            self.device.set_pipeline(request)
        except RuntimeConfigError as exc:
            await _abort(context, exc)
        return p4r.SetForwardingPipelineConfigResponse()

    async def GetForwardingPipelineConfig(  # noqa: N802
        self,
        request: p4r.GetForwardingPipelineConfigRequest,
        context: Context,
    ) -> p4r.GetForwardingPipelineConfigResponse:
        try:
            return self.device.get_pipeline(request)
        except RuntimeConfigError as exc:
            await _abort(context, exc)
            raise AssertionError("unreachable") from None

    async def StreamChannel(  # noqa: N802
        self,
        request_iterator: AsyncIterator[p4r.StreamMessageRequest],
        context: Context,
    ) -> AsyncIterator[p4r.StreamMessageResponse]:
        stream_id, queue = self.device.open_stream()
        reader = asyncio.create_task(self._read_stream(stream_id, request_iterator, queue))
        try:
            while True:
                item = await queue.get()
                if isinstance(item, StreamEnd):
                    if item.code is not None:
                        await context.abort(_status_code(item.code), item.message)
                    return
                yield item
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            self.device.close_stream(stream_id)

    async def _read_stream(
        self,
        stream_id: int,
        requests: AsyncIterator[p4r.StreamMessageRequest],
        queue: asyncio.Queue[p4r.StreamMessageResponse | StreamEnd],
    ) -> None:
        try:
            async for request in requests:
                self.device.stream_request(stream_id, request)
        except grpc.aio.AioRpcError:
            pass
        queue.put_nowait(StreamEnd())


def server_credentials(tls: TlsOptions) -> grpc.ServerCredentials:
    """TLS credentials from PEM files; client certificates checked if asked."""
    key = Path(tls.key).read_bytes()
    cert = Path(tls.cert).read_bytes()
    ca = Path(tls.cacert).read_bytes() if tls.cacert else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=tls.with_client_auth
    )


async def start_server(
    device: Device,
    address: str,
    tls: TlsOptions | None = None,
    *,
    services: Sequence[Callable[[grpc.aio.Server], None]] = (),
) -> grpc.aio.Server:
    """Bind ``address`` and serve P4Runtime for ``device``; returns the started server.

    Each of ``services`` adds another service to the same server and port (gNMI, as
    Stratum serves it beside P4Runtime). The bound port is in ``server.kvfabric_port``
    (useful with port 0).
    """
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ]
    )
    p4r_grpc.add_P4RuntimeServicer_to_server(P4RuntimeService(device), server)
    for add in services:
        add(server)
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, server_credentials(tls))
    if port == 0:
        raise OSError(f"cannot bind the gRPC server to {address}")
    await server.start()
    server.kvfabric_port = port  # type: ignore[attr-defined]
    return server
