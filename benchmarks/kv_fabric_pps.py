"""Packets per second of p4/kv_fabric.p4 through Pipeline.process (one core, no I/O).

Run: ``.venv/bin/python -m benchmarks.kv_fabric_pps [--packets N]``. Loads the program,
configures a leaf the way the controller does (two hosts, four uplinks in one ECMP group,
the KV class, the four spines' ranges of the tag ports, MACs per port, proxy ARP,
README's default buckets of the queue-depth and queueing-delay histograms), and times
``process`` on a rotation of packets that mixes

* ECMP flows: TCP and UDP to other leaves, untagged, or tagged outside every range;
* pinned flows: tagged KV transfers whose source port is in a spine's range;
* local flows: host to host on the same leaf.

It measures that mix in kv-aware mode (the ranges on) and in flowlet mode, and a spine
forwarding by leaf prefix. The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from controller.service.southbound.intent import DELAY_BUCKETS, DEPTH_BUCKETS
from softswitch.frontend import load_program
from softswitch.interp.pipeline import Pipeline
from softswitch.runtime.tables import ActionCall, Exact, Lpm, Range, TableEntry

PROGRAM = Path(__file__).resolve().parents[1] / "p4" / "kv_fabric.p4"
LEAF_MAC = 0x020000000100
HOSTS = {1: ("10.0.1.1", "00:00:0a:00:01:01"), 2: ("10.0.1.2", "00:00:0a:00:01:02")}
UPLINKS = (3, 4, 5, 6)
KV_DSCP = 10
PINS = 512
"""Tagged transfers in flight (source ports 40000-40511, in the first three ranges)."""
PAYLOAD = bytes(64)


def ip(address: str) -> int:
    return int.from_bytes(bytes(int(x) for x in address.split(".")), "big")


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def configure_leaf(pipeline: Pipeline) -> None:
    """The entries the controller writes to a leaf (p4/README.md, Roles).

    Deliberately not derived from :mod:`controller.service.southbound.intent`: these are the
    interpreter's own entries, inserted with no P4Runtime in between, for a fixed leaf
    with no fabric file (two hosts, four uplinks in one ECMP group behind a /8 route),
    so that the figure is the pipeline's and stays comparable from run to run.
    """
    state = pipeline.state
    route = state.table("ipv4_route")
    for port, (address, _) in HOSTS.items():
        route.insert(TableEntry((Lpm(ip(address), 32),), action=call("forward", port)))
    route.insert(TableEntry((Lpm(ip("10.0.0.0"), 8),), action=call("route_ecmp", 1)))
    selector = state.action_profile("ecmp_selector")
    for member, port in enumerate(UPLINKS, start=1):
        selector.insert_member(member, call("set_uplink", port))
    selector.insert_group(1, dict.fromkeys(range(1, len(UPLINKS) + 1), 1))  # type: ignore[attr-defined]
    state.table("ecmp").insert(TableEntry((Exact(1),), group_id=1))
    state.table("kv_class").insert(TableEntry((Exact(KV_DSCP),), action=call("mark_kv")))
    macs = state.table("port_macs")
    for port, (_, host_mac) in HOSTS.items():
        macs.insert(
            TableEntry((Exact(port),), action=call("rewrite_macs", LEAF_MAC, mac(host_mac)))
        )
    for port in UPLINKS:
        spine_mac = 0x02000000F000 + port
        macs.insert(TableEntry((Exact(port),), action=call("rewrite_macs", LEAF_MAC, spine_mac)))
    state.table("arp_proxy").insert(
        TableEntry((Lpm(ip("10.0.0.0"), 8),), action=call("arp_reply", LEAF_MAC))
    )
    ranges = state.table("kv_range")
    size = 1000 // len(UPLINKS)
    for k, uplink in enumerate(UPLINKS):
        first = 40000 + k * size
        ranges.insert(
            TableEntry(
                (Exact(1), Range(first, first + size - 1)), priority=1, action=call("pin", uplink)
            )
        )
    state.table("switch_config").set_default(call("kv_aware_mode"))


def configure_histograms(pipeline: Pipeline) -> None:
    """The bucket entries of both queue histograms, the controller's buckets."""
    for table, action, bounds in (
        ("qdepth_buckets", "set_qdepth_bucket", DEPTH_BUCKETS),
        ("qdelay_buckets", "set_qdelay_bucket", DELAY_BUCKETS),
    ):
        buckets = pipeline.state.table(table)
        for bucket, (low, high) in enumerate(bounds):
            entry = TableEntry((Range(low, high),), priority=1, action=call(action, bucket))
            buckets.insert(entry)


EGRESS_ACTIONS = {"rewrite_macs", "set_qdepth_bucket", "set_qdelay_bucket"}


def call(action: str, *args: int) -> ActionCall:
    prefix = "FabricEgress." if action in EGRESS_ACTIONS else "FabricIngress."
    return ActionCall(prefix + action, args)


def packet(port: int, dst: str, proto: int, sport: int, dport: int, *, dscp: int = 0) -> bytes:
    src, src_mac = HOSTS[port]
    l4 = TCP(sport=sport, dport=dport, flags="A") if proto == 6 else UDP(sport=sport, dport=dport)
    frame = Ether(src=src_mac, dst="02:00:00:00:01:00") / IP(src=src, dst=dst, tos=dscp << 2)
    return bytes(frame / l4 / Raw(PAYLOAD))


def leaf_mix() -> tuple[list[tuple[int, bytes]], dict[str, int]]:
    """(ingress port, frame) of the rotation, and how many packets of each kind it has."""
    mix: list[tuple[int, bytes]] = []
    counts = {"ecmp": 0, "ecmp_tagged_unpinned": 0, "pinned": 0, "local": 0}
    for i in range(64):
        proto = 6 if i % 3 else 17
        mix.append((1 + i % 2, packet(1 + i % 2, f"10.0.{3 + i % 5}.{i}", proto, 20000 + i, 5201)))
        counts["ecmp"] += 1
    for i in range(16):
        mix.append((1, packet(1, f"10.0.9.{i}", 6, 41500 + i, 5201, dscp=KV_DSCP)))
        counts["ecmp_tagged_unpinned"] += 1
    for i in range(0, PINS, PINS // 32):
        dst = f"10.0.{2 + i // 256}.{i % 256}"
        mix.append((1 + i % 2, packet(1 + i % 2, dst, 6, 40000 + i, 5201, dscp=KV_DSCP)))
        counts["pinned"] += 1
    for i in range(16):
        mix.append((1, packet(1, HOSTS[2][0], 17, 30000 + i, 6000)))
        counts["local"] += 1
    return mix, counts


def configure_spine(pipeline: Pipeline, leaves: int = 32) -> list[tuple[int, bytes]]:
    """A spine with one port per leaf; returns a rotation of leaf-to-leaf packets."""
    route = pipeline.state.table("ipv4_route")
    for leaf in range(leaves):
        route.insert(
            TableEntry((Lpm(ip(f"10.0.{leaf + 1}.0"), 24),), action=call("forward", leaf + 1))
        )
    frames = []
    for i in range(64):
        src_leaf, dst_leaf = i % leaves, (i * 7 + 3) % leaves
        frame = Ether() / IP(src=f"10.0.{src_leaf + 1}.5", dst=f"10.0.{dst_leaf + 1}.9")
        frames.append(
            (src_leaf + 1, bytes(frame / TCP(sport=40000 + i, dport=5201) / Raw(PAYLOAD)))
        )
    return frames


def measure(
    process: Callable[[int, bytes], object], mix: Sequence[tuple[int, bytes]], n: int
) -> float:
    """Packets per second of ``process`` over ``n`` packets of the rotation."""
    size = len(mix)
    start = time.perf_counter()
    for i in range(n):
        port, data = mix[i % size]
        process(port, data)
    return n / (time.perf_counter() - start)


def main() -> None:
    """Measure and print the figures; the last line is JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=30_000)
    args = parser.parse_args()
    program = load_program(str(PROGRAM))

    leaf = Pipeline.load(program, cpu_port=255)
    configure_leaf(leaf)
    configure_histograms(leaf)
    mix, counts = leaf_mix()
    for port, data in mix:
        assert leaf.process(port, data), "every benchmark packet must be forwarded"
    kv_aware_pps = measure(leaf.process, mix, args.packets)

    leaf.state.table("switch_config").set_default(call("flowlet_mode", 500, 1))
    flowlet_pps = measure(leaf.process, mix, args.packets)

    spine = Pipeline.load(program, cpu_port=255)
    spine_mix = configure_spine(spine)
    configure_histograms(spine)
    spine_pps = measure(spine.process, spine_mix, args.packets)
    counted = sum(c.packets for c in leaf.state.counter("port_qdepth_hist").read_all())
    assert counted == len(mix) + 2 * args.packets, "every packet must land in a depth bucket"

    print(f"leaf, kv-aware:     {kv_aware_pps:10,.0f} packets/s "
          f"({1e6 / kv_aware_pps:.1f} us/packet)")  # fmt: skip
    print(f"leaf, flowlet mode: {flowlet_pps:10,.0f} packets/s ({1e6 / flowlet_pps:.1f} us/packet)")
    print(f"spine:              {spine_pps:10,.0f} packets/s ({1e6 / spine_pps:.1f} us/packet)")
    print(
        json.dumps(
            {
                "benchmark": "kv_fabric_pps",
                "packets": args.packets,
                "leaf_kv_aware_pps": round(kv_aware_pps),
                "leaf_flowlet_pps": round(flowlet_pps),
                "spine_pps": round(spine_pps),
                "leaf_mix": counts,
                "frame_bytes": len(mix[0][1]),
            }
        )
    )


if __name__ == "__main__":
    main()
