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
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

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


class RawPort:
    """A switch port bound to one Linux interface."""

    def __init__(self, port: int, iface: str) -> None:
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
        _set_buffer(sock, socket.SO_RCVBUF, _SO_RCVBUFFORCE)
        _set_buffer(sock, socket.SO_SNDBUF, _SO_SNDBUFFORCE)
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
        if addr[2] == PACKET_OUTGOING:
            return None
        for level, kind, payload in ancdata:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(payload) >= _AUXDATA.size:
                return _restore_vlan(data, payload)
        return data

    def send(self, frame: bytes) -> bool:
        """Transmit one frame; False when the kernel refused it (too big, link down, full)."""
        try:
            self.sock.send(frame)
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.sock.close()


_SOCKET_BUFFER = 4 << 20
_SO_SNDBUFFORCE = 32  # linux/asm-generic/socket.h
_SO_RCVBUFFORCE = 33


def _set_buffer(sock: socket.socket, option: int, force_option: int) -> None:
    """Give the socket a 4 MiB buffer: the default send buffer holds only about a dozen
    jumbo frames, and a frame that finds it full is dropped silently (EAGAIN). The
    FORCE variant (root) passes the sysctl cap; without privilege the capped size is
    what the kernel gives."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, force_option, _SOCKET_BUFFER)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, option, _SOCKET_BUFFER)


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
