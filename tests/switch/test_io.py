"""AF_PACKET ports and offload handling on real veth pairs (root)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from softswitch.switch.io import RawPort
from softswitch.switch.offload import (
    OffloadError,
    disable_offloads,
    prepare_interfaces,
    read_offloads,
)
from tests.support.netns import VethPair

pytestmark = pytest.mark.root


def _recv(port: RawPort, timeout: float = 2.0) -> bytes | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = port.recv()
        if frame is not None:
            return frame
        time.sleep(0.001)
    return None


def test_frames_cross_a_veth_and_own_transmissions_are_ignored(
    veth_pairs: list[VethPair],
) -> None:
    a, b = veth_pairs[0], veth_pairs[1]
    # Two ports in the root namespace: a.outside and b.outside; link a<->b via the netns ends
    # is not needed: send on a.outside, receive on the netns end with a second RawPort.
    sender = RawPort(1, a.outside)
    frame = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP() / UDP())
    try:
        assert sender.send(frame)
        # Our own transmission must not come back on the sending socket.
        assert _recv(sender, timeout=0.3) is None
    finally:
        sender.close()
    del b


def test_vlan_tag_survives_rx_vlan_offload(netns: str, veth_pairs: list[VethPair]) -> None:
    pair = veth_pairs[0]
    port = RawPort(1, pair.outside)
    try:
        frame = bytes(
            Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1Q(vlan=42) / IP() / UDP()
        )
        script = (
            "from scapy.all import sendp, Ether; import sys; "
            f"sendp(Ether(bytes.fromhex('{frame.hex()}')), iface='{pair.inside}', verbose=0)"
        )
        subprocess.run(
            ["ip", "netns", "exec", netns, sys.executable, "-c", script],
            check=True,
            capture_output=True,
        )
        got = _recv(port)
        while got is not None and got != frame and got[12:14] != b"\x81\x00":
            got = _recv(port)
        assert got == frame
    finally:
        port.close()


def test_offloads_are_turned_off(veth_pairs: list[VethPair]) -> None:
    iface = veth_pairs[0].outside
    assert any(read_offloads(iface).values())
    disable_offloads(iface)
    assert not any(read_offloads(iface).values())
    assert prepare_interfaces([iface], "refuse") == {}


def test_refuse_mode_names_the_offloads(veth_pairs: list[VethPair]) -> None:
    iface = veth_pairs[1].outside
    with pytest.raises(OffloadError, match="tx-checksumming"):
        prepare_interfaces([iface], "refuse")


def test_unknown_interface_is_a_clear_error() -> None:
    with pytest.raises(OffloadError, match="no such network interface"):
        read_offloads("nosuchif0")


def test_port_send_buffer_is_the_kernels_unless_raised(veth_pairs: list[VethPair]) -> None:
    """As BMv2's, a port's send buffer is the kernel's default (a slow link fills it and
    then the switch's queue); ``send_buffer`` raises it so that a burst of 64 jumbo frames
    fits (the kernel reports twice the size it was given). The receive buffer is 4 MiB."""
    import socket

    default_port = RawPort(1, veth_pairs[0].outside)
    raised_port = RawPort(2, veth_pairs[1].outside, send_buffer=4 << 20)
    try:
        default = default_port.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        raised = raised_port.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        rcvbuf = default_port.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    finally:
        default_port.close()
        raised_port.close()
    with open("/proc/sys/net/core/wmem_default") as f:
        assert default == int(f.read())
    assert raised >= 64 * 9000
    assert rcvbuf >= 64 * 9000
