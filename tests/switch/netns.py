"""Scapy on interfaces that live in a network namespace, from the test process itself.

A packet socket belongs to the network namespace of the thread that opens it,
and ``setns(CLONE_NEWNET)`` changes only the calling thread's namespace.  So a
short-lived thread enters the namespace, opens Scapy's ``L2Socket`` on the
interface and exits; the socket keeps sending and receiving in that namespace
while the test uses it from its own thread, with Scapy building, sending,
sniffing and dissecting the frames.  No helper process, no Scapy start-up cost
per probe.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable

import scapy.layers.inet
import scapy.layers.l2  # noqa: F401  (both register the layers received frames are dissected with)
from scapy.arch.linux import L2Socket
from scapy.packet import Packet, Raw

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def open_in_netns(netns: str, iface: str) -> L2Socket:
    """Scapy's L2Socket on ``iface`` of namespace ``netns`` (``/run/netns/NAME``)."""
    result: dict[str, object] = {}

    def enter_and_open() -> None:
        try:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({netns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            result["socket"] = L2Socket(iface=iface, promisc=False)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=enter_and_open)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    sock = result["socket"]
    assert isinstance(sock, L2Socket)
    return sock


class NsPort:
    """A host's side of one switch port: send and capture frames with Scapy."""

    def __init__(self, netns: str, iface: str) -> None:
        self.netns = netns
        self.iface = iface
        self.sock = open_in_netns(netns, iface)

    def send(self, *packets: Packet | bytes) -> None:
        for packet in packets:
            self.sock.send(packet if isinstance(packet, Packet) else Raw(packet))

    def sniff(
        self,
        timeout: float = 1.0,
        match: Callable[[Packet], bool] = lambda p: True,
        count: int = 0,
        quiet: float | None = None,
    ) -> list[Packet]:
        """Frames received within ``timeout`` seconds that ``match``.

        Stops early at ``count`` matching frames, or once a frame has matched and
        nothing more arrived for ``quiet`` seconds.
        """
        deadline = time.monotonic() + timeout
        got: list[Packet] = []
        while (left := deadline - time.monotonic()) > 0:
            if got and quiet is not None:
                left = min(left, quiet)
            if not self.sock.select([self.sock], left):
                break
            packet = self.sock.recv()
            if packet is not None and match(packet):
                got.append(packet)
                if count and len(got) >= count:
                    break
        return got

    def expect(self, match: Callable[[Packet], bool], timeout: float = 3.0) -> Packet:
        """The first frame that ``match``es; AssertionError if none arrives in time."""
        got = self.sniff(timeout, match, count=1)
        assert got, f"nothing matching arrived on {self.iface} within {timeout} s"
        return got[0]

    def drain(self) -> None:
        """Drop every frame already waiting."""
        self.sniff(0.05)

    def close(self) -> None:
        self.sock.close()
