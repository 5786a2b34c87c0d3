"""Run inside a network namespace: send frames on one interface, print what another receives.

    python netns_probe.py SEND_IFACE RECV_IFACE TIMEOUT FRAME_HEX...

Prints the hex of every frame received on RECV_IFACE (one per line) until
TIMEOUT seconds pass.  Uses plain AF_PACKET sockets so that it starts fast.
"""

from __future__ import annotations

import select
import socket
import sys
import time


def main() -> None:
    send_iface, recv_iface, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    frames = [bytes.fromhex(h) for h in sys.argv[4:]]
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    rx.bind((recv_iface, 3))
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    tx.bind((send_iface, 3))
    for frame in frames:
        tx.send(frame)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([rx], [], [], left)
        if not ready:
            break
        data, addr = rx.recvfrom(65535)
        if addr[2] != socket.PACKET_OUTGOING:
            print(data.hex(), flush=True)


if __name__ == "__main__":
    main()
