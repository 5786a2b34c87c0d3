"""Packets per second through one ``kvfabric switch`` process, beside a bare Python forwarder.

Run as root: ``.venv/bin/python -m benchmarks.switch_pps [--seconds S]``.

Two veth pairs; their inner ends live in a network namespace where a paced
sender offers IPv4/UDP frames on one and a receiver counts what arrives on the
other.  Two forwarders are measured between the outer ends in the same run, on
the same veths, with the same traffic:

1. a bare Python forwarder: its own process, the switch's own ``RawPort``
   sockets, a select loop that copies every frame from one port to the other
   and nothing else.  It is the ceiling of a Python packet path on this machine;
2. a real ``kvfabric switch`` process running benchmarks/programs/router.p4 (an
   IPv4 LPM router: checksum verified, TTL decremented, checksum recomputed,
   destination MAC rewritten), with one route installed over P4Runtime.

For each forwarder the throughput is searched as RFC 2544 does: the offered
rate grows by half until a trial loses more than 1 % of its frames (a lossy
trial is repeated once: the machine is shared), then is bisected three times;
twice the rate found is offered last, to show what an overloaded forwarder
delivers.  Reported: each forwarder's rate at <= 1 % loss and the ratio
switch/bare.  If the sender cannot offer a rate the forwarder still keeps up
with, the figure is marked sender-limited (a lower bound).  The last line is
one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from finsy.proto import p4r
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from benchmarks._common import MAGIC, Search, Traffic, emit_json
from softswitch.switch.dataplane import load_program_file
from softswitch.switch.offload import disable_offloads
from softswitch.switch.process import SwitchProcess
from tests.support.netns import namespace_with_veths
from tests.support.p4rt_client import StreamClient, insert

ROUTER = Path(__file__).resolve().parent / "programs" / "router.p4"
NEXT_HOP_MAC = 0x02000000BEEF

BARE = r"""
import select, sys
from softswitch.switch.io import RawPort
a, b = RawPort(1, sys.argv[1]), RawPort(2, sys.argv[2])
peer = {a.fileno(): (a, b), b.fileno(): (b, a)}
print("ready", flush=True)
while True:
    for fd in select.select(list(peer), [], [])[0]:
        src, dst = peer[fd]
        for _ in range(64):
            frame = src.recv()
            if frame is None:
                break
            dst.send(frame)
"""


def frame() -> bytes:
    packet = (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:0a")
        / IP(src="10.0.1.1", dst="10.0.2.1", ttl=64)
        / UDP(sport=5000, dport=6000)
        / Raw(MAGIC + bytes(18))
    )
    return bytes(packet)


def route(client: StreamClient) -> None:
    info, _, _ = load_program_file(str(ROUTER), 511, None)
    table = next(t for t in info.tables if t.preamble.name.endswith("ipv4_lpm"))
    forward = next(a for a in info.actions if a.preamble.name.endswith("ipv4_forward"))
    entry = p4r.TableEntry(table_id=table.preamble.id)
    entry.match.add(
        field_id=table.match_fields[0].id,
        lpm=p4r.FieldMatch.LPM(value=bytes([10, 0, 2, 0]), prefix_len=24),
    )
    entry.action.action.action_id = forward.preamble.id
    dst, port = forward.params
    entry.action.action.params.add(param_id=dst.id, value=NEXT_HOP_MAC.to_bytes(6, "big"))
    entry.action.action.params.add(param_id=port.id, value=b"\x02")
    client.write([insert(p4r.Entity(table_entry=entry))])


def report(name: str, search: Search) -> dict[str, object]:
    for p in search.points:
        print(
            f"switch_pps: {name:6s} offered {p.offered_pps:9,.0f} pps  sent {p.sent:8d}  "
            f"received {p.received:8d}  delivered {p.delivered_pps:9,.0f} pps  "
            f"loss {p.loss * 100:5.1f} %"
        )
    overload = search.overload
    return {
        "lossless_pps": round(search.lossless_pps),
        "overload_offered_pps": round(overload.offered_pps) if overload else None,
        "overload_delivered_pps": round(overload.delivered_pps) if overload else None,
        "sender_limited": search.sender_limited,
        "trials": len(search.points),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="length of each offered rate")
    parser.add_argument("--start", type=float, default=5000.0, help="first offered rate (pps)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("switch_pps: needs root (network namespaces); skipped")
        emit_json({"skipped": "needs root"})
        return
    data = frame()
    figures: dict[str, object] = {"frame_bytes": len(data), "seconds_per_rate": args.seconds}
    with namespace_with_veths(2, "kvb") as (netns, (a, b)):
        for pair in (a, b):
            disable_offloads(pair.outside)
        traffic = Traffic(netns, a.inside, b.inside, data)
        bare = subprocess.Popen(
            [sys.executable, "-c", BARE, a.outside, b.outside], stdout=subprocess.PIPE, text=True
        )
        try:
            assert bare.stdout is not None and bare.stdout.readline().strip() == "ready"
            bare_search = traffic.throughput(args.start, args.seconds)
        finally:
            os.kill(bare.pid, signal.SIGTERM)
            bare.wait()
        argv = ["-i", f"1@{a.outside}", "-i", f"2@{b.outside}", str(ROUTER),
                "--", "--grpc-server-addr", "127.0.0.1:0"]  # fmt: skip
        with SwitchProcess(argv) as switch, StreamClient(switch.address) as client:
            client.become_primary(1)
            route(client)
            check = traffic.offer(200, 0.5)
            assert check.received == check.sent > 0, f"the route does not forward: {check}"
            switch_search = traffic.throughput(args.start, args.seconds)
            assert switch.running(), switch.stderr_text()
    bare_fig = report("bare", bare_search)
    switch_fig = report("switch", switch_search)
    ratio = switch_search.lossless_pps / bare_search.lossless_pps
    print(f"switch_pps: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print(f"switch_pps: bare Python forwarder: {bare_search.lossless_pps:,.0f} pps at <= 1 % loss"
          + (" (sender-limited: a lower bound)" if bare_search.sender_limited else ""))  # fmt: skip
    print(f"switch_pps: kvfabric switch, router.p4: {switch_search.lossless_pps:,.0f} pps at "
          "<= 1 % loss")  # fmt: skip
    if switch_search.overload is not None:
        over = switch_search.overload
        print(f"switch_pps: kvfabric switch overloaded at {over.offered_pps:,.0f} pps offered: "
              f"{over.delivered_pps:,.0f} pps delivered")  # fmt: skip
    print(f"switch_pps: ratio switch/bare: {ratio:.3f}")
    figures.update(
        bare=bare_fig,
        switch=switch_fig,
        ratio=round(ratio, 4),
        cpus=os.cpu_count(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
    )
    emit_json(figures)


if __name__ == "__main__":
    main()
