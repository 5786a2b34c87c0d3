"""kv_fabric.p4 on running ``kvfabric switch`` processes, driven by finsy (root only).

A leaf and a spine, cabled leaf port 3 <-> spine port 1 by a veth pair. Leaf port 1 and
spine port 2 are veths too, whose far ends Scapy uses as the hosts. The controller side is
finsy, the library the controller uses: it pushes the pipeline, writes the entries of
p4/README.md (action-selector groups, the default action of switch_config, a spine range, the
range entries of the histogram buckets), sends probes with PacketOut and receives them
with PacketIn, and reads counters back, among them the queue histograms by README's read
procedure (counter reads only). The leaf's host port 1 is rate-limited to 10 packets/s
(``--queue-rate 1:10``, BMv2's ``set_queue_rate``) so that a burst towards h1 builds a
real queue. Every link is named after this process and removed by name; each switch
process is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy
import pytest
from scapy.arch.linux import L2Socket
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from kvfabric.cli import main
from softswitch.switch.process import SwitchProcess
from tests.p4 import fabric_model
from tests.support.netns import VethPair, veth

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"

pytestmark = pytest.mark.root

LEAF_MAC = "02:00:00:00:01:00"
SPINE_MAC = "02:00:00:00:f0:01"
H1 = ("10.0.1.1", "00:00:0a:00:01:01")
H2 = ("10.0.2.7", "00:00:0a:00:02:07")
H1_PORT_PPS = 10  # the leaf's port 1 sends a packet every 100 ms
_ids = itertools.count()


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _ends(pair: VethPair) -> tuple[str, str]:
    return pair.outside, pair.inside


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
    target = [
        "--no-p4",
        "--",
        "--grpc-server-addr",
        "127.0.0.1:0",
        "--cpu-port",
        str(fabric_model.CPU_PORT),
    ]
    with ExitStack() as stack:
        h1_side, h1_end = _ends(stack.enter_context(veth("kp")))
        leaf_up, spine_down = _ends(stack.enter_context(veth("kp")))
        h2_side, h2_end = _ends(stack.enter_context(veth("kp")))
        leaf_ports = ["-i", f"1@{h1_side}", "-i", f"3@{leaf_up}"]
        spine_ports = ["-i", f"1@{spine_down}", "-i", f"2@{h2_side}"]
        leaf_queue = ["--queue-rate", f"1:{H1_PORT_PPS}"]
        leaf = stack.enter_context(
            SwitchProcess([*leaf_ports, "--device-id", "1", *leaf_queue, *target])
        )
        spine = stack.enter_context(SwitchProcess([*spine_ports, "--device-id", "2", *target]))
        h1, h2 = Host(h1_end), Host(h2_end)
        stack.callback(h1.close)
        stack.callback(h2.close)
        yield Lab(leaf, spine, h1, h2, fy.SwitchOptions(p4info=p4info, p4blob=blob.read_bytes()))


def leaf_entries() -> list[Any]:
    """The leaf of the lab: h1 on port 1, everything else up the one uplink, port 3.

    Written out rather than taken from :mod:`controller.service.southbound.intent`: this test
    checks the P4 program against p4/README.md on a two-switch lab with no fabric file,
    and its frames are checked against these literal MACs and ports.
    """
    return [
        +fy.P4TableEntry("kv_class", match=fy.P4TableMatch(dscp=fabric_model.KV_DSCP),
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


def bucket_entries() -> list[Any]:
    """README's default buckets of both histograms, as range entries of priority 1.

    From the test's own model (:mod:`tests.p4.fabric_model`), which also reads the
    histograms back: the test checks the program against README, not the controller.
    """
    out = []
    for table, key, action, bounds in (
        ("qdepth_buckets", "enq_qdepth", "set_qdepth_bucket", fabric_model.QDEPTH_BOUNDS),
        ("qdelay_buckets", "deq_timedelta", "set_qdelay_bucket", fabric_model.QDELAY_BOUNDS),
    ):
        for bucket, (low, high) in enumerate(bounds):
            out.append(
                +fy.P4TableEntry(
                    table,
                    match=fy.P4TableMatch({key: (low, high)}),
                    action=fy.P4TableAction(action, bucket=bucket),
                    priority=1,
                )
            )
    return out


HISTOGRAMS = (
    ("port_qdepth_hist", fabric_model.QDEPTH_BOUNDS),
    ("port_qdelay_hist", fabric_model.QDELAY_BOUNDS),
)


async def _read_histograms(sw: Any, ports: tuple[int, ...]) -> dict[tuple[str, int], list[int]]:
    """One ReadRequest for every histogram cell of ``ports``: (counter, port) -> packets."""
    wanted = [
        fy.P4CounterEntry(counter, index=fabric_model.hist_index(port, b))
        for counter, _ in HISTOGRAMS
        for port in ports
        for b in range(fabric_model.HIST_BUCKETS)
    ]
    cells: dict[tuple[str, int], list[int]] = {}
    async for entry in sw.read(wanted):
        counter = entry.counter_id.split(".")[-1]
        port, bucket = divmod(entry.index, fabric_model.HIST_BUCKETS)
        cells.setdefault((counter, port), [0] * fabric_model.HIST_BUCKETS)[bucket] = (
            entry.packet_count
        )
    assert len(cells) == len(HISTOGRAMS) * len(ports)
    return cells


def _deltas(
    before: dict[tuple[str, int], list[int]], after: dict[tuple[str, int], list[int]]
) -> dict[tuple[str, int], list[int]]:
    return {
        key: [
            fabric_model.counter_delta(a, b) for a, b in zip(before[key], after[key], strict=True)
        ]
        for key in after
    }


def spine_entries() -> list[Any]:
    """The spine of the lab, written out as :func:`leaf_entries` is."""
    return [
        +fy.P4TableEntry("kv_class", match=fy.P4TableMatch(dscp=fabric_model.KV_DSCP),
                         action=fy.P4TableAction("mark_kv")),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.0.1.0/24"),
                         action=fy.P4TableAction("forward", port=1)),
        +fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.0.2.0/24"),
                         action=fy.P4TableAction("forward", port=2)),
        +fy.P4TableEntry("port_macs", match=fy.P4TableMatch(egress_port=2),
                         action=fy.P4TableAction("rewrite_macs", src_mac=_mac(SPINE_MAC),
                                                 dst_mac=_mac(H2[1]))),
    ]  # fmt: skip


async def _next_packet(sw: Any, send: Any) -> Any:
    """Open ``sw``'s packet-in queue, run ``send()``, return the first PacketIn (5 s at most)."""
    packets: AsyncIterator[Any] = sw.read_packets(eth_types=[fabric_model.ETHERTYPE_PROBE])
    first = asyncio.ensure_future(anext(packets))
    await asyncio.sleep(0.1)  # the queue exists once the iterator runs
    await send()
    try:
        async with asyncio.timeout(5.0):
            return await first
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


def _to_h1(tag: bytes) -> Packet:
    """A packet h2 sends to h1 (spine port 2 -> leaf port 3 -> leaf port 1)."""
    return (
        Ether(src=H2[1], dst=SPINE_MAC)
        / IP(src=H2[0], dst=H1[0], ttl=64, id=9)
        / UDP(sport=7000, dport=7001)
        / Raw(b"kv-p4rt-" + tag)
    )


def _has(tag: bytes) -> Any:
    return lambda p: Raw in p and p[Raw].load.endswith(tag)


def test_the_controller_programs_probes_and_reads_a_leaf_and_a_spine(lab: Lab) -> None:
    probe_up = fabric_model.probe(sender_device_id=1, sender_port=3, nonce=7, src_mac=LEAF_MAC)
    probe_down = fabric_model.probe(sender_device_id=2, sender_port=1, nonce=8, src_mac=SPINE_MAC)
    kv = _kv_packet(40001, fabric_model.KV_DSCP, b"pinned")
    plain = _kv_packet(30000, 0, b"plain")

    burst = [_to_h1(b"burst-%d" % i) for i in range(8)]

    counters: dict[tuple[str, str, int], tuple[int, int]] = {}
    hist: dict[tuple[str, int], dict[tuple[str, int], list[int]]] = {}
    tx: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}

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
                +fy.P4TableEntry("kv_range",
                                 match=fy.P4TableMatch(ecmp_group=1, l4_src_port="40000...40499"),
                                 action=fy.P4TableAction("pin", port=3), priority=1),
                ~fy.P4TableEntry("switch_config", is_default_action=True,
                                 action=fy.P4TableAction("flowlet_mode", timeout_us=5000,
                                                         generation=1)),
            ])  # fmt: skip
            await leaf.write(bucket_entries())
            await spine.write(spine_entries())
            await spine.write(bucket_entries())
            # the read procedure's baseline, before any traffic
            leaf_ports, spine_ports = (1, 3, fabric_model.CPU_PORT), (1, 2, fabric_model.CPU_PORT)
            hist["leaf", 0] = await _read_histograms(leaf, leaf_ports)
            hist["spine", 0] = await _read_histograms(spine, spine_ports)
            tx["leaf", 0] = {p: await _counter(leaf, "port_tx", p) for p in leaf_ports}
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
                    for port in (1, 2, 3, fabric_model.CPU_PORT):
                        counters[name, counter, port] = await _counter(sw, counter, port)
            # first polling period: the read procedure on both switches
            hist["leaf", 1] = await _read_histograms(leaf, leaf_ports)
            hist["spine", 1] = await _read_histograms(spine, spine_ports)
            tx["leaf", 1] = {p: await _counter(leaf, "port_tx", p) for p in leaf_ports}
            # second period: a burst h2 -> h1 queues on the leaf's rate-limited port 1
            lab.h2.send(*burst)
            seen["burst"] = [lab.h1.expect(_has(b"burst-%d" % i)) for i in range(len(burst))]
            await asyncio.sleep(0.2)
            hist["leaf", 2] = await _read_histograms(leaf, leaf_ports)
            tx["leaf", 2] = {p: await _counter(leaf, "port_tx", p) for p in leaf_ports}
            # a wildcard read returns every cell of a histogram
            seen["wildcard"] = [e async for e in leaf.read(fy.P4CounterEntry("port_qdepth_hist"))]
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
    assert counters["leaf", "port_tx", fabric_model.CPU_PORT][0] == 1  # the spine's probe, punted
    assert counters["spine", "port_tx", 2] == (2, kv_len + plain_len)
    assert counters["spine", "port_kv_tx", 2] == (1, kv_len)
    assert counters["spine", "port_tx", fabric_model.CPU_PORT][0] == 1
    assert counters["spine", "port_tx", 1][0] == 1  # the spine's probe PacketOut

    # Period 1, no rate limit on the way: every packet found an empty queue (bucket 0).
    # Each cell grew by what port_tx counted on its port: leaf port 3 kv, plain and the
    # PacketOut probe; the leaf's CPU port the spine's probe; spine port 2 kv and plain.
    grew = {name: _deltas(hist[name, 0], hist[name, 1]) for name in ("leaf", "spine")}
    for name, port, packets in (
        ("leaf", 3, 3),
        ("leaf", fabric_model.CPU_PORT, 1),
        ("spine", 2, 2),
    ):
        for counter, _ in HISTOGRAMS:
            assert grew[name][counter, port] == [packets] + [0] * 7, (name, counter, port)
            assert (
                fabric_model.max_bucket_grown(
                    hist[name, 0][counter, port], hist[name, 1][counter, port]
                )
                == 0
            )
    assert tx["leaf", 1][3][0] - tx["leaf", 0][3][0] == 3
    for counter, _ in HISTOGRAMS:
        assert (
            fabric_model.max_bucket_grown(hist["leaf", 0][counter, 1], hist["leaf", 1][counter, 1])
            is None
        )

    # Period 2: 8 packets arrive within a few ms at a port that sends one per 100 ms. The
    # first leaves at once; packet k >= 1 finds k - 1 queued ahead and waits about k * 100
    # ms: the largest depth is 6 (bucket 3, 4-7 packets), the largest delay bucket 7.
    assert len(seen["burst"]) == len(burst)
    period = _deltas(hist["leaf", 1], hist["leaf", 2])
    depth, delay = period["port_qdepth_hist", 1], period["port_qdelay_hist", 1]
    assert sum(depth) == sum(delay) == len(burst) == tx["leaf", 2][1][0] - tx["leaf", 1][1][0]
    before, after = hist["leaf", 1], hist["leaf", 2]
    assert fabric_model.max_bucket_grown(
        before["port_qdepth_hist", 1], after["port_qdepth_hist", 1]
    ) == (fabric_model.bucket_of(len(burst) - 2, fabric_model.QDEPTH_BOUNDS))
    assert (
        fabric_model.max_bucket_grown(before["port_qdelay_hist", 1], after["port_qdelay_hist", 1])
        == 7
    )
    assert depth[0] == 2  # the first packet, and the second (the first had left)
    assert delay[0] == 1 and delay[7] == len(burst) - 1
    for counter, _ in HISTOGRAMS:  # nothing else left the leaf in period 2
        assert period[counter, 3] == [0] * 8 and period[counter, fabric_model.CPU_PORT] == [0] * 8

    # the wildcard read: all 4096 cells, non-zero only where traffic left
    wildcard = {e.index: e.packet_count for e in seen["wildcard"]}
    assert len(wildcard) == 512 * fabric_model.HIST_BUCKETS
    nonzero = {i for i, n in wildcard.items() if n}
    assert nonzero == {
        i
        for i in range(4096)
        if i // 8 in (1, 3, fabric_model.CPU_PORT) and after["port_qdepth_hist", i // 8][i % 8]
    }
