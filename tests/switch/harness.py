"""The switch tests' program, an in-process P4Runtime server, and entity builders.

``fabric()`` compiles tests/switch/programs/fabric_test.p4 with the real
front-end, P4Info extractor and device-config writer (what ``kvfabric compile
-o`` does); the P4Info and device config it returns are what a controller would
push.  :class:`ServerThread` serves a real :class:`Device`, with the real
device-config loader (interpreter included), on an ephemeral port.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from finsy.proto import U128, p4i, p4r, rpc_status

from softswitch.switch.dataplane import load_program_file, make_loader
from softswitch.switch.p4rt.device import Device
from softswitch.switch.p4rt.service import start_server
from tests.support.p4rt_client import StreamClient

T = TypeVar("T")
PROGRAMS = Path(__file__).parent / "programs"
FABRIC_P4 = PROGRAMS / "fabric_test.p4"
Client = StreamClient


@functools.cache
def fabric() -> tuple[p4i.P4Info, bytes]:
    """P4Info and device config of fabric_test.p4."""
    info, device_config, _ = load_program_file(str(FABRIC_P4), 511, 255)
    return info, device_config


def ids(kind: str) -> dict[str, int]:
    """Short name -> id of the P4Info objects of one kind (``tables``, ``actions``...)."""
    info, _ = fabric()
    return {o.preamble.name.split(".")[-1]: o.preamble.id for o in getattr(info, kind)}


def call_on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], T]) -> T:
    """Run ``fn`` on ``loop``, which runs in another thread, and return its result.

    An exception ``fn`` raises is raised here; a loop that does not run ``fn``
    within 10 s is a TimeoutError.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            future.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return future.result(10)


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
        return call_on_loop(self.loop, fn)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(0), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


def make_device(device_id: int = 0, **kwargs: Any) -> Device:
    return Device(device_id, make_loader(511, 255), **kwargs)


def pipeline_request(
    device_id: int = 0, election_id: int | None = None, cookie: int | None = 7
) -> p4r.SetForwardingPipelineConfigRequest:
    info, device_config = fabric()
    request = p4r.SetForwardingPipelineConfigRequest(
        device_id=device_id, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.config.p4info.CopyFrom(info)
    request.config.p4_device_config = device_config
    if cookie is not None:
        request.config.cookie.cookie = cookie
    if election_id is not None:
        request.election_id.CopyFrom(U128.encode(election_id))
    return request


# --- entities of fabric_test.p4 ---------------------------------------------------------------


def action(name: str, *params: int) -> p4r.Action:
    """An Action by short name; parameters in declaration order, as padded bytestrings."""
    info, _ = fabric()
    spec = next(a for a in info.actions if a.preamble.name.split(".")[-1] == name)
    out = p4r.Action(action_id=spec.preamble.id)
    for param, value in zip(spec.params, params, strict=True):
        out.params.add(param_id=param.id, value=value.to_bytes((param.bitwidth + 7) // 8, "big"))
    return out


def table_entry(table: str, action_msg: p4r.Action | None = None, **kw: Any) -> p4r.TableEntry:
    entry = p4r.TableEntry(table_id=ids("tables")[table], **kw)
    if action_msg is not None:
        entry.action.action.CopyFrom(action_msg)
    return entry


def l2_entry(mac: int | bytes, act: p4r.Action) -> p4r.Entity:
    value = mac if isinstance(mac, bytes) else mac.to_bytes(6, "big")
    entry = table_entry("l2", act)
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=value))
    return p4r.Entity(table_entry=entry)


def lpm_entry(prefix: int, plen: int, act: p4r.Action) -> p4r.Entity:
    entry = table_entry("ipv4_lpm", act)
    entry.match.add(
        field_id=1, lpm=p4r.FieldMatch.LPM(value=prefix.to_bytes(4, "big"), prefix_len=plen)
    )
    return p4r.Entity(table_entry=entry)


def write_errors(error: grpc.RpcError) -> list[p4r.Error]:
    """The per-update p4.v1.Errors a failed Write carries in its status details."""
    trailers: Any = error.trailing_metadata()
    status = rpc_status.Status.FromString(dict(trailers)["grpc-status-details-bin"])
    out = []
    for detail in status.details:
        item = p4r.Error()
        detail.Unpack(item)
        out.append(item)
    return out
