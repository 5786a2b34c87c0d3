"""Packet I/O on Linux interfaces with AF_PACKET raw sockets.

One :class:`RawPort` per ``-i PORT@IFACE``.  Sockets are non-blocking so that the
switch's asyncio loop can watch them with ``add_reader`` next to the gRPC
server: one thread does everything, and the interpreter never runs concurrently
with a P4Runtime write.

Our own transmissions come back on a packet socket as ``PACKET_OUTGOING``; they
are filtered in the kernel with ``PACKET_IGNORE_OUTGOING`` (Linux >= 4.20) and,
for older kernels, dropped by their packet type.  When a driver strips the VLAN
tag (rx VLAN offload left on), the tag comes back from ``PACKET_AUXDATA`` and is
put back into the frame so the P4 parser sees the wire format.

Sending follows BMv2, whose ports send on blocking sockets: a frame the socket
cannot take now (its send buffer is full, ``EAGAIN``) is :data:`BUSY`, and the
switch keeps it and stops taking packets of that port out of the egress queue
until the socket is writable again (backpressure), so the queue builds in the
switch where P4 sees it.  A frame the kernel refuses (a full qdisc, ``ENOBUFS``;
a link that is down; too big) is :data:`DROPPED`, as BMv2 drops it.  The send
buffer is the kernel's default, as BMv2's; ``send_buffer`` raises it for
callers whose kernel queue (a qdisc with a limit) is meant to be the buffer.

A link going down (``ENETDOWN`` on receive) raises :class:`LinkDown`: the
caller tells a link that is down (it comes back up on the same socket) from an
interface that is gone (:meth:`RawPort.exists`).
"""

from __future__ import annotations

import errno
import socket
import struct
from collections.abc import Callable
from typing import Literal

from softswitch.errors import SoftswitchError

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("=IIIHHHH")
_MAX_FRAME = 65536
_ANCILLARY = socket.CMSG_SPACE(_AUXDATA.size)


class PortError(SoftswitchError):
    """An interface that cannot be opened or written."""


class LinkDown(PortError):
    """The port's link went down (or its interface was removed)."""


SendResult = Literal["sent", "busy", "dropped"]
SENT: SendResult = "sent"
BUSY: SendResult = "busy"
DROPPED: SendResult = "dropped"


class RawPort:
    """A switch port bound to one Linux interface."""

    def __init__(self, port: int, iface: str, send_buffer: int | None = None) -> None:
        self.port = port
        self.iface = iface
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except OSError as exc:
            raise PortError(f"{iface}: cannot open a packet socket: {exc.strerror}") from None
        try:
            sock.bind((iface, ETH_P_ALL))
        except OSError as exc:
            sock.close()
            raise PortError(f"{iface}: cannot bind: {exc.strerror}") from None
        self._kernel_filters_outgoing = _try_setsockopt(sock, PACKET_IGNORE_OUTGOING)
        _try_setsockopt(sock, PACKET_AUXDATA)
        _set_buffer(sock, socket.SO_RCVBUF, _SO_RCVBUFFORCE, _SOCKET_BUFFER)
        if send_buffer is not None:
            _set_buffer(sock, socket.SO_SNDBUF, _SO_SNDBUFFORCE, send_buffer)
        sock.setblocking(False)
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def recv(self) -> bytes | None:
        """The next received frame, or None when none is waiting (or it was our own)."""
        try:
            data, ancdata, _flags, addr = self.sock.recvmsg(_MAX_FRAME, _ANCILLARY)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            if exc.errno in (errno.ENETDOWN, errno.ENODEV, errno.ENXIO):
                raise LinkDown(f"{self.iface}: {exc.strerror}") from None
            raise
        if addr[2] == PACKET_OUTGOING:
            return None
        for level, kind, payload in ancdata:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(payload) >= _AUXDATA.size:
                return _restore_vlan(data, payload)
        return data

    def send(self, frame: bytes) -> SendResult:
        """Transmit one frame: :data:`SENT`, :data:`BUSY` (send buffer full: try again
        once writable) or :data:`DROPPED` (the kernel refused it: full qdisc, link down,
        too big)."""
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            return BUSY
        except OSError:
            return DROPPED
        return SENT

    def exists(self) -> bool:
        """Whether the interface still exists (a link that is down still does)."""
        try:
            socket.if_nametoindex(self.iface)
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.sock.close()


_SOCKET_BUFFER = 4 << 20
_SO_SNDBUFFORCE = 32  # linux/asm-generic/socket.h
_SO_RCVBUFFORCE = 33


def _set_buffer(sock: socket.socket, option: int, force_option: int, size: int) -> None:
    """Set a socket buffer (the receive buffer holds a burst while the switch is busy).
    The FORCE variant (root) passes the sysctl cap; without privilege the capped size
    is what the kernel gives."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, force_option, size)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, option, size)


def _try_setsockopt(sock: socket.socket, option: int) -> bool:
    try:
        sock.setsockopt(SOL_PACKET, option, 1)
    except OSError:
        return False
    return True


def _restore_vlan(frame: bytes, auxdata: bytes) -> bytes:
    status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(auxdata)
    if not status & TP_STATUS_VLAN_VALID or len(frame) < 12:
        return frame
    if not status & TP_STATUS_VLAN_TPID_VALID:
        tpid = 0x8100
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


FrameSink = Callable[[int, bytes], None]
