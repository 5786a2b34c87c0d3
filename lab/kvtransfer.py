"""KV-cache transfers: a receiver that serves many at once, and a timed sender.

The wire format is minimal. The sender opens a TCP connection and writes a 28-byte
header, then the payload; the receiver reads exactly that many bytes and answers
with a 12-byte acknowledgement carrying the count it received, then closes::

    sender -> receiver:  b"KVT1" | bytes (u64, big-endian) | transfer id (16 bytes)
                         payload (bytes)
    receiver -> sender:  b"KVAK" | bytes received (u64)

**Flow completion time** runs from the moment the sender asks for a path (before
the controller request in ``kv-aware`` mode, so the decision's latency counts) to
the moment the acknowledgement arrives: the last byte has been received, not
merely written into the sender's socket buffer. Every wait before the first byte
counts: a hold the sender was given (``hold_s``, a staggered burst) and, in the
``scheduled`` mode, the controller's hold until it releases the transfer. This is the
time a decode GPU waits for its KV cache, and it is measured the same way in every
mode.

**Tagging.** In ``kv-aware`` mode the sender asks the controller through
:mod:`kvfabric.client` (``POST /v1/transfers``, retried on the backup, ECMP when no
controller answers in time) and marks the flow as told: the DSCP goes into the IP TOS
byte (``IP_TOS = dscp << 2``) and the socket is bound to the tagged source port, so
the source leaf's pin entry matches. A transfer the controller split over spines goes
as one connection per slice (each with its own tag, header and acknowledgement, its
slice's bytes), all at once; it completes with its last acknowledgement. In ``ecmp``
and ``flowlet`` modes there is no
request and no tag; the transfer uses the source port the schedule assigned, so
that every mode hashes the same 5-tuples. A transfer that completes is reported
back (``POST /v1/transfers/{id}/complete``) with its duration.

Sockets come from a :data:`~lab.netns.SocketFactory`, the one seam between this
module and the network: the lab passes a factory that creates sockets in a Mininet
host's namespace, tests and real hosts pass plain sockets.

Run standalone on real hosts::

    python -m lab.kvtransfer serve --bind 0.0.0.0:7000
    python -m lab.kvtransfer send --to 10.0.2.1:7000 --bytes 2MB \\
        [--controller 127.0.0.1:8080 --src h11 --dst h21]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import socket
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from experiment.flows import RECEIVER_PORT
from kvfabric.client import AsyncClient, ClientError, Placement
from lab.control import PathService
from lab.errors import LabError, TrafficError
from lab.netns import SocketFactory, plain_factory

HEADER = struct.Struct("!4sQ16s")
ACK = struct.Struct("!4sQ")
MAGIC, ACK_MAGIC = b"KVT1", b"KVAK"
_CHUNK = bytes(256 * 1024)
_LINGER_RESET = struct.pack("ii", 1, 0)


@dataclass(frozen=True, slots=True)
class Received:
    """What the receiver saw of one transfer (monotonic times)."""

    transfer_id: str
    nbytes: int
    peer: tuple[str, int]
    first_byte_at: float
    last_byte_at: float


@dataclass(slots=True)
class Receiver:
    """Accepts transfers concurrently; records each one it finishes."""

    received: list[Received] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    server: asyncio.Server | None = None
    _arriving: dict[asyncio.StreamWriter, asyncio.Task[None]] = field(default_factory=dict)
    """The connections still being read, with the tasks that read them."""

    async def start(self, sock: socket.socket, address: tuple[str, int]) -> None:
        """Listen on ``address`` with ``sock`` (made by the host's socket factory)."""
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(256)
        sock.setblocking(False)
        self.server = await asyncio.start_server(self._serve, sock=sock)

    async def close(self) -> None:
        """Stop accepting, cut the transfers still arriving (each is recorded as an
        error) and close the listening socket.

        Their tasks end here, by the reset, rather than by ``asyncio.run``'s final
        cancellation after Ctrl-C: Python 3.11's ``start_server`` reports a cancelled
        connection task as an "Exception in callback" with a traceback.
        """
        if self.server is not None:
            self.server.close()
            for writer in self._arriving:
                writer.transport.abort()
            await asyncio.gather(*self._arriving.values(), return_exceptions=True)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await self.server.wait_closed()
            self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        task = asyncio.current_task()
        assert task is not None
        self._arriving[writer] = task
        try:
            self.received.append(await _receive(reader, writer, (str(peer[0]), int(peer[1]))))
        except (OSError, asyncio.IncompleteReadError, TrafficError) as exc:
            self.errors.append(f"{peer}: {exc}")
        finally:
            del self._arriving[writer]
            writer.close()


async def _receive(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: tuple[str, int]
) -> Received:
    magic, nbytes, raw_id = HEADER.unpack(await reader.readexactly(HEADER.size))
    if magic != MAGIC:
        raise TrafficError(f"not a KV transfer from {peer}")
    first = time.monotonic()
    left = nbytes
    while left:
        data = await reader.read(min(left, 1 << 20))
        if not data:
            raise TrafficError(f"{peer} closed after {nbytes - left} of {nbytes} bytes")
        left -= len(data)
    last = time.monotonic()
    writer.write(ACK.pack(ACK_MAGIC, nbytes))
    await writer.drain()
    tid = raw_id.rstrip(b"\0").decode("ascii", "replace")
    return Received(tid, nbytes, peer, first, last)


@dataclass(frozen=True, slots=True)
class TransferJob:
    """One transfer to make: hosts by name, their addresses, size and ECMP source port."""

    src: str
    dst: str
    src_addr: str
    dst_addr: str
    nbytes: int
    ecmp_port: int | None = None
    dst_port: int = RECEIVER_PORT
    label: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a transfer went; ``fct_s`` is None when it failed (``error`` says why).

    A transfer that timed out has ``censored_s``, the time it ran: its completion time
    is at least that. ``started_at`` is the clock's reading when it started.
    ``fallback`` says why a kv-aware transfer went by plain ECMP, untagged (no
    controller answered within the client's deadline). ``held_s`` is how long it waited
    before sending (its stagger, and the controller's hold until the release);
    ``release_error`` why a held transfer started without its release.
    """

    transfer: TransferJob
    fct_s: float | None
    placement: Placement | None
    src_port: int | None
    error: str | None = None
    decision_s: float | None = None
    retransmits: int | None = None
    censored_s: float | None = None
    started_at: float | None = None
    fallback: str | None = None
    held_s: float | None = None
    release_error: str | None = None


async def send(
    transfer: TransferJob,
    *,
    sockets: SocketFactory = plain_factory,
    paths: PathService | AsyncClient | None = None,
    spine: str | None = None,
    timeout_s: float = 120.0,
    clock: Callable[[], float] = time.monotonic,
    hold_s: float = 0.0,
    deadline_s: float | None = None,
) -> Outcome:
    """Make ``transfer``; ask ``paths`` for its placement first when given (kv-aware):
    a :class:`kvfabric.client.AsyncClient` (the controller's API, with its retries and
    ECMP fallback), or any other :class:`PathService` (the lab's static fabric).
    ``hold_s``: wait that long first (inside the completion time); ``deadline_s``: the
    transfer's deadline after its request, sent to the controller (``deadline_ms``)."""
    start = clock()
    if hold_s > 0:
        await asyncio.sleep(hold_s)
    attempt = _Attempt(transfer, sockets, spine, timeout_s, clock, start, deadline_s)
    if isinstance(paths, AsyncClient):
        outcome = await _send_with_client(attempt, paths)
    else:
        outcome = await _send_with_service(attempt, paths)
    return dataclasses.replace(outcome, held_s=hold_s + (outcome.held_s or 0.0))


class _Attempt(NamedTuple):
    """What :func:`send` hands to the way it sends: ``start`` is the request's time."""

    transfer: TransferJob
    sockets: SocketFactory
    spine: str | None
    timeout_s: float
    clock: Callable[[], float]
    start: float
    deadline_s: float | None = None


async def _send_with_service(attempt: _Attempt, paths: PathService | None) -> Outcome:
    """:func:`send` without the client: ask ``paths`` (if any), then connect and stream."""
    transfer, sockets, spine, timeout_s, clock, start, _ = attempt
    placement: Placement | None = None
    decision_s = None
    port = transfer.ecmp_port
    try:
        if paths is not None:
            placement = await paths.request_transfer(
                transfer.src, transfer.dst, transfer.nbytes, spine=spine
            )
            decision_s = clock() - start
            port = placement.tag.src_port if placement.tag is not None else port
        moving = clock()
        async with asyncio.timeout(timeout_s):  # not wait_for: see lab.run
            retransmits = await _move(transfer, sockets, placement, port)
        fct = clock() - start
    except TimeoutError:
        # not acknowledged by the deadline: that much is known of its completion time
        return Outcome(
            transfer,
            None,
            placement,
            port,
            f"timed out after {timeout_s:g}s",
            decision_s,
            censored_s=moving - start + timeout_s,
            started_at=start,
        )
    except (OSError, asyncio.IncompleteReadError, LabError) as exc:
        return Outcome(
            transfer, None, placement, port, _describe(exc), decision_s, started_at=start
        )
    if paths is not None and placement is not None and placement.transfer_id is not None:
        try:
            await paths.complete_transfer(placement.transfer_id, fct)
        except LabError as exc:
            return Outcome(
                transfer,
                fct,
                placement,
                port,
                f"completion not reported: {exc}",
                decision_s,
                retransmits,
                started_at=start,
            )
    return Outcome(transfer, fct, placement, port, None, decision_s, retransmits, started_at=start)


async def _send_with_client(attempt: _Attempt, client: AsyncClient) -> Outcome:
    """:func:`send` through ``client.transfer``: the client asks, tags, binds, connects
    and reports; a fallback (no controller in time) goes untagged from the ECMP port."""
    transfer, sockets, spine, timeout_s, clock, start, deadline_s = attempt
    placement: Placement | None = None
    decision_s = None
    port = transfer.ecmp_port
    bind = (transfer.src_addr, transfer.ecmp_port or 0)
    target = (transfer.dst_addr, transfer.dst_port)
    deadline = clock() + timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            async with client.transfer(
                transfer.src, transfer.dst, transfer.nbytes,
                connect=target, bind=bind, spine=spine, sockets=sockets,
                deadline_ms=_milliseconds(deadline_s),
            ) as t:  # fmt: skip
                placement = _placement(t.placement)
                decision_s = t.result.decision_s
                assert t.socket is not None
                port = t.socket.getsockname()[1]
                t.keep_socket = True  # the streams below own and close them
                retransmits = await _stream_slices(transfer, t.placement, t.sockets)
        fct = clock() - start
    except TimeoutError:
        # not done by the deadline: that much is known (the clean-up after it is not)
        return Outcome(
            transfer, None, placement, port, f"timed out after {timeout_s:g}s", decision_s,
            censored_s=deadline - start, started_at=start,
        )  # fmt: skip
    except (OSError, asyncio.IncompleteReadError, LabError, ClientError) as exc:
        return Outcome(
            transfer, None, placement, port, _describe(exc), decision_s, started_at=start
        )
    error = None
    if not t.placement.fell_back and not t.result.reported:
        error = f"completion not reported: {t.result.report_error}"
    return Outcome(
        transfer, fct, placement, port, error, decision_s, retransmits, started_at=start,
        fallback=t.placement.fallbacks[0] if t.placement.fell_back else None,
        held_s=t.result.wait_s, release_error=t.result.release_error,
    )  # fmt: skip


async def _stream_slices(
    transfer: TransferJob, placement: Placement, socks: list[socket.socket]
) -> int | None:
    """Stream each slice's part of ``transfer`` on its own connection, all at once (one
    connection: the whole transfer); the retransmissions of all of them. Every
    connection runs to its end or its error; the first error is raised."""
    jobs = _slice_jobs(transfer, placement, len(socks))
    outcomes = await asyncio.gather(
        *(_stream(job, sock) for job, sock in zip(jobs, socks, strict=True)),
        return_exceptions=True,
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    counts = [n for n in outcomes if isinstance(n, int)]
    return sum(counts) if counts else None


def _slice_jobs(transfer: TransferJob, placement: Placement, count: int) -> list[TransferJob]:
    """``transfer`` as ``count`` parts, one per slice of ``placement`` (its bytes)."""
    slices = placement.slices
    if count <= 1 or len(slices) < count:
        return [transfer]
    sizes = [s.bytes for s in slices[:count]]
    sizes[-1] += transfer.nbytes - sum(sizes)
    return [dataclasses.replace(transfer, nbytes=n) for n in sizes]


def _milliseconds(seconds: float | None) -> int | None:
    """A deadline as the API takes it: whole milliseconds, at least one."""
    return None if seconds is None else max(1, round(seconds * 1000.0))


def _placement(p: Placement) -> Placement | None:
    """The placement an outcome records: None for the ECMP fallback (no controller
    answered; ``Outcome.fallback`` says why)."""
    return None if p.fell_back else p


async def _move(
    transfer: TransferJob, sockets: SocketFactory, placement: Placement | None, port: int | None
) -> int | None:
    """Send the transfer and wait for its acknowledgement; the TCP retransmissions."""
    sock = sockets()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if placement is not None and placement.tag is not None:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, placement.tag.tos)
        sock.bind((transfer.src_addr, port or 0))
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (transfer.dst_addr, transfer.dst_port))
    except BaseException:
        sock.close()
        raise
    return await _stream(transfer, sock)


async def _stream(transfer: TransferJob, sock: socket.socket) -> int | None:
    """Send the header and payload on a connected socket, wait for the acknowledgement,
    close; the TCP retransmissions."""
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        await _exchange(reader, writer, transfer)
        retransmits = tcp_retransmits(sock)
    except BaseException:
        # timed out or failed: a graceful close would wait for the unsent bytes to drain
        # as long as the path stays stuck, and even a closed socket lives on in the kernel
        # until TCP gives up, holding its 5-tuple (the next mode's transfer with the same
        # ports would fail to connect). Linger 0: the close resets the connection.
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        writer.transport.abort()
        raise
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return retransmits


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, transfer: TransferJob
) -> None:
    """Header and payload out, acknowledgement in."""
    label = (transfer.label or "").encode("ascii", "replace")[:16]
    writer.write(HEADER.pack(MAGIC, transfer.nbytes, label))
    left = transfer.nbytes
    view = memoryview(_CHUNK)
    while left:
        n = min(left, len(view))
        writer.write(view[:n])
        left -= n
        await writer.drain()
    magic, count = ACK.unpack(await reader.readexactly(ACK.size))
    if magic != ACK_MAGIC or count != transfer.nbytes:
        raise TrafficError(f"bad acknowledgement: {magic!r} {count} of {transfer.nbytes}")


_TCP_INFO_TOTAL_RETRANS = struct.Struct("=I")
_TCP_INFO_TOTAL_RETRANS_OFFSET = 100
"""``tcpi_total_retrans`` in Linux's ``struct tcp_info``: 8 bytes of u8 fields, then
``tcpi_rto`` ... ``tcpi_rcv_space`` (23 u32), then ``tcpi_total_retrans``."""


def tcp_retransmits(sock: socket.socket) -> int | None:
    """Segments the connection retransmitted so far (Linux ``TCP_INFO``), None elsewhere."""
    option = getattr(socket, "TCP_INFO", None)
    if option is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, option, 104)
    except OSError:
        return None
    if len(info) < _TCP_INFO_TOTAL_RETRANS_OFFSET + 4:
        return None
    (total,) = _TCP_INFO_TOTAL_RETRANS.unpack_from(info, _TCP_INFO_TOTAL_RETRANS_OFFSET)
    return int(total)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the receiver closed before acknowledging"
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# -- standalone use --------------------------------------------------------------------


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lab.kvtransfer serve|send``: the pair on real hosts."""
    from experiment.scenario import parse_bytes

    parser = argparse.ArgumentParser(
        prog="python -m lab.kvtransfer", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="receive transfers")
    serve.add_argument("--bind", default=f"0.0.0.0:{RECEIVER_PORT}")
    snd = sub.add_parser("send", help="make one transfer and print its outcome as JSON")
    snd.add_argument("--to", required=True, help="receiver HOST:PORT")
    snd.add_argument("--bytes", required=True, type=parse_bytes)
    snd.add_argument("--from-addr", default="0.0.0.0")
    snd.add_argument("--controller", help="controller API HOST:PORT (kv-aware mode)")
    snd.add_argument("--src", default="", help="source host name known to the controller")
    snd.add_argument("--dst", default="", help="destination host name known to the controller")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return asyncio.run(_serve_forever(_address(args.bind)))
    host, port = _address(args.to)
    paths = AsyncClient([args.controller], deadline_s=5.0) if args.controller else None
    t = TransferJob(args.src, args.dst, args.from_addr, host, args.bytes, dst_port=port)
    outcome = asyncio.run(send(t, paths=paths))
    print(
        json.dumps({"fct_s": outcome.fct_s, "src_port": outcome.src_port, "error": outcome.error})
    )
    return 0 if outcome.error is None else 1


async def _serve_forever(address: tuple[str, int]) -> int:
    receiver = Receiver()
    await receiver.start(plain_factory(), address)
    print(f"receiving on {address[0]}:{address[1]}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await receiver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
