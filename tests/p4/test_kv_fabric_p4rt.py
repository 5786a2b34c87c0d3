"""kv_fabric.p4 on running ``kvfabric switch`` processes, driven by finsy (root only).

A leaf and a spine, cabled leaf port 3 <-> spine port 1 by a veth pair. Leaf port 1 and
spine port 2 are veths too, whose far ends Scapy uses as the hosts. The controller side is
finsy, the library the controller uses: it pushes the pipeline, writes the entries of
p4/README.md (action-selector groups, the default actions of the keyless tables, a pin),
sends probes with PacketOut and receives them with PacketIn, and reads counters and
registers back. Every link is named after this process and removed by name; each switch
process is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy
import pytest
from scapy.arch.linux import L2Socket
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from kvfabric.cli import main
from softswitch.switch.process import SwitchProcess
from tests.p4 import fabric_model as m

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (veth pairs)")

LEAF_MAC = "02:00:00:00:01:00"
SPINE_MAC = "02:00:00:00:f0:01"
H1 = ("10.0.1.1", "00:00:0a:00:01:01")
H2 = ("10.0.2.7", "00:00:0a:00:02:07")
_ids = itertools.count()


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


@contextmanager
def _veth() -> Iterator[tuple[str, str]]:
    """A veth pair (a, b) in this namespace, both up, without IPv6 (no stray frames)."""
    base = f"kp{os.getpid() % 100000}x{next(_ids)}"
    a, b = f"{base}a", f"{base}b"
    _run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    try:
        for end in (a, b):
            _run("sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
            _run("ip", "link", "set", end, "up")
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


class Host:
    """Scapy on the far end of a switch port's veth."""

    def __init__(self, iface: str) -> None:
        self.sock = L2Socket(iface=iface, promisc=False)

    def send(self, *packets: Packet) -> None:
        for packet in packets:
            self.sock.send(packet)

    def expect(self, match: Callable[[Packet], bool], timeout: float = 5.0) -> Packet:
        """The first frame that ``match``es; AssertionError if none arrives in time."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.sock.select([self.sock], left):
                break
            packet = self.sock.recv()
            if packet is not None and match(packet):
                return packet
        raise AssertionError(f"nothing matching arrived on {self.sock.iface} within {timeout} s")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Lab:
    leaf: SwitchProcess
    spine: SwitchProcess
    h1: Host  # leaf port 1
    h2: Host  # spine port 2
    options: fy.SwitchOptions

    def switch_options(self, device_id: int) -> fy.SwitchOptions:
        return fy.SwitchOptions(
            p4info=self.options.p4info, p4blob=self.options.p4blob, device_id=device_id
        )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    out = tmp_path_factory.mktemp("kv_fabric")
    p4info, blob = out / "kv_fabric.p4info.txt", out / "kv_fabric.json"
    assert main(["compile", str(PROGRAM), "--p4runtime-files", str(p4info), "-o", str(blob)]) == 0
    target = ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0", "--cpu-port", str(m.CPU_PORT)]
    with ExitStack() as stack:
        h1_side, h1_end = stack.enter_context(_veth())
        leaf_up, spine_down = stack.enter_context(_veth())
        h2_side, h2_end = stack.enter_context(_veth())
        leaf_ports = ["-i", f"1@{h1_side}", "-i", f"3@{leaf_up}"]
        spine_ports = ["-i", f"1@{spine_down}", "-i", f"2@{h2_side}"]
        leaf = stack.enter_context(SwitchProcess([*leaf_ports, "--device-id", "1", *target]))
        spine = stack.enter_context(SwitchProcess([*spine_ports, "--device-id", "2", *target]))
        h1, h2 = Host(h1_end), Host(h2_end)
        stack.callback(h1.close)
        stack.callback(h2.close)
        yield Lab(leaf, spine, h1, h2, fy.SwitchOptions(p4info=p4info, p4blob=blob.read_bytes()))


def leaf_entries() -> list[Any]:
    """The leaf of the lab: h1 on port 1, everything else up the one uplink, port 3."""
    return [
        +fy.P4TableEntry("kv_class", match=fy.P4TableMatch(dscp=m.KV_DSCP),
                         action=fy.P4TableAction("mark_kv")),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr=f"{H1[0]}/32"),
                         action=fy.P4TableAction("forward", port=1)),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.0.0.0/8"),
                         action=fy.P4TableAction("route_ecmp", group=1)),
        +fy.P4ActionProfileMember("ecmp_selector", member_id=1,
                                  action=fy.P4TableAction("set_uplink", port=3)),
        +fy.P4ActionProfileGroup("ecmp_selector", group_id=1, members=[fy.P4Member(1, weight=1)]),
        +fy.P4TableEntry("port_macs", match=fy.P4TableMatch(egress_port=1),
                         action=fy.P4TableAction("rewrite_macs", src_mac=_mac(LEAF_MAC),
                                                 dst_mac=_mac(H1[1]))),
        +fy.P4TableEntry("port_macs", match=fy.P4TableMatch(egress_port=3),
                         action=fy.P4TableAction("rewrite_macs", src_mac=_mac(LEAF_MAC),
                                                 dst_mac=_mac(SPINE_MAC))),
        +fy.P4TableEntry("arp_proxy", match=fy.P4TableMatch(tpa="10.0.0.0/8"),
                         action=fy.P4TableAction("arp_reply", mac=_mac(LEAF_MAC))),
    ]  # fmt: skip


def spine_entries() -> list[Any]:
    return [
        +fy.P4TableEntry("kv_class", match=fy.P4TableMatch(dscp=m.KV_DSCP),
                         action=fy.P4TableAction("mark_kv")),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.0.1.0/24"),
                         action=fy.P4TableAction("forward", port=1)),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.0.2.0/24"),
                         action=fy.P4TableAction("forward", port=2)),
        +fy.P4TableEntry("port_macs", match=fy.P4TableMatch(egress_port=2),
                         action=fy.P4TableAction("rewrite_macs", src_mac=_mac(SPINE_MAC),
                                                 dst_mac=_mac(H2[1]))),
    ]  # fmt: skip


async def _next_packet(sw: Any, send: Any, timeout: float = 5.0) -> Any:
    """Open ``sw``'s packet-in queue, run ``send()``, return the first PacketIn."""
    packets: AsyncIterator[Any] = sw.read_packets(eth_types=[m.ETHERTYPE_PROBE])
    first = asyncio.ensure_future(anext(packets))
    await asyncio.sleep(0.1)  # the queue exists once the iterator runs
    await send()
    try:
        return await asyncio.wait_for(first, timeout)
    finally:
        await packets.aclose()  # type: ignore[attr-defined]


async def _counter(sw: Any, name: str, index: int) -> tuple[int, int]:
    [entry] = [e async for e in sw.read(fy.P4CounterEntry(name, index=index))]
    return int(entry.data.packet_count), int(entry.data.byte_count)


def _kv_packet(sport: int, dscp: int, tag: bytes) -> Packet:
    return (
        Ether(src=H1[1], dst=LEAF_MAC)
        / IP(src=H1[0], dst=H2[0], tos=dscp << 2, ttl=64, id=5)
        / TCP(sport=sport, dport=5201, flags="PA", seq=1, window=1000)
        / Raw(b"kv-p4rt-" + tag)
    )


def _has(tag: bytes) -> Any:
    return lambda p: Raw in p and p[Raw].load.endswith(tag)


def test_the_controller_programs_probes_and_reads_a_leaf_and_a_spine(lab: Lab) -> None:
    probe_up = m.probe(sender_device_id=1, sender_port=3, nonce=7, src_mac=LEAF_MAC)
    probe_down = m.probe(sender_device_id=2, sender_port=1, nonce=8, src_mac=SPINE_MAC)
    kv = _kv_packet(40001, m.KV_DSCP, b"pinned")
    plain = _kv_packet(30000, 0, b"plain")

    counters: dict[tuple[str, str, int], tuple[int, int]] = {}

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with (
            fy.Switch("leaf", lab.leaf.address, lab.switch_options(1)) as leaf_sw,
            fy.Switch("spine", lab.spine.address, lab.switch_options(2)) as spine_sw,
        ):
            leaf: Any = leaf_sw
            spine: Any = spine_sw
            await leaf.write(leaf_entries())
            await leaf.write([
                +fy.P4TableEntry("ecmp", match=fy.P4TableMatch(ecmp_group=1),
                                 action=fy.P4IndirectAction(group_id=1)),
                +fy.P4TableEntry("kv_pin",
                                 match=fy.P4TableMatch(src_addr=H1[0], dst_addr=H2[0],
                                                       l4_src_port=40001),
                                 action=fy.P4TableAction("pin", port=3)),
                ~fy.P4TableEntry("switch_config", is_default_action=True,
                                 action=fy.P4TableAction("flowlet_mode", timeout_us=5000,
                                                         generation=1)),
                ~fy.P4TableEntry("telemetry_epoch", is_default_action=True,
                                 action=fy.P4TableAction("set_epoch", epoch=1)),
            ])  # fmt: skip
            await spine.write(spine_entries())
            # the controller reads the configuration back (as after a restart)
            seen["config"] = [
                e async for e in leaf.read(fy.P4TableEntry("switch_config", is_default_action=True))
            ]
            # link discovery, both directions of the one cable
            seen["up"] = await _next_packet(
                spine, lambda: leaf.write([fy.P4PacketOut(probe_up, egress_port=3, _pad=0)])
            )
            seen["down"] = await _next_packet(
                leaf, lambda: spine.write([fy.P4PacketOut(probe_down, egress_port=1, _pad=0)])
            )
            # traffic: a pinned KV packet and a plain one, h1 -> leaf -> spine -> h2
            lab.h1.send(kv, plain)
            seen["kv"] = lab.h2.expect(_has(b"pinned"))
            seen["plain"] = lab.h2.expect(_has(b"plain"))
            await asyncio.sleep(0.2)
            for name, sw in (("leaf", leaf), ("spine", spine)):
                for counter in ("port_tx", "port_kv_tx"):
                    for port in (1, 2, 3, m.CPU_PORT):
                        counters[name, counter, port] = await _counter(sw, counter, port)
            [cell] = [e async for e in leaf.read(fy.P4RegisterEntry("queue_bank1", index=3))]
            seen["queue_cell"] = int(cell.data)
        return seen

    seen = asyncio.run(scenario())

    [config] = seen["config"]
    assert config.action.name == "flowlet_mode"
    assert config.action.args == {"timeout_us": 5000, "generation": 1}

    assert seen["up"].payload[: len(probe_up)] == probe_up
    assert seen["up"]["ingress_port"] == 1  # spine port 1 is the other end of leaf port 3
    assert seen["down"].payload[: len(probe_down)] == probe_down
    assert seen["down"]["ingress_port"] == 3

    for got, sent in ((seen["kv"], kv), (seen["plain"], plain)):
        assert got[Ether].src == SPINE_MAC and got[Ether].dst == H2[1]
        assert got[IP].ttl == 62  # two routed hops
        assert bytes(got[TCP]) == bytes(sent[TCP])

    kv_len, plain_len = len(kv), len(plain)
    probe_out = len(probe_up) + 2  # a PacketOut counts with its packet_out header
    assert counters["leaf", "port_tx", 3] == (3, kv_len + plain_len + probe_out)
    assert counters["leaf", "port_kv_tx", 3] == (1, kv_len)
    assert counters["leaf", "port_tx", m.CPU_PORT][0] == 1  # the spine's probe, punted
    assert counters["spine", "port_tx", 2] == (2, kv_len + plain_len)
    assert counters["spine", "port_kv_tx", 2] == (1, kv_len)
    assert counters["spine", "port_tx", m.CPU_PORT][0] == 1
    assert counters["spine", "port_tx", 1][0] == 1  # the spine's probe PacketOut
    assert seen["queue_cell"] >> 64 == 1  # stamped with epoch 1 (bank 1)
