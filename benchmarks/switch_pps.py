"""Packets per second through one switch process, beside a bare Python forwarder (root).

Two veth pairs; their inner ends live in a network namespace where a blaster
sends N frames on one and counts what arrives on the other.  First the outer
ends are joined by a bare AF_PACKET recv/send loop (the ceiling for Python),
then by the switch's packet loop (``softswitch.switch.main``).  The switch runs
the fixed patch pipeline of tests/switch/fakes.py until the interpreter is
available, so this measures the I/O path and loop overhead; the ratio is
printed.
"""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softswitch.switch.argv import SwitchOptions  # noqa: E402
from softswitch.switch.io import RawPort  # noqa: E402
from softswitch.switch.main import Switch, run_switch  # noqa: E402
from softswitch.switch.offload import disable_offloads  # noqa: E402
from tests.switch.fakes import patch_loader  # noqa: E402
from tests.switch.harness import Client, pipeline_request  # noqa: E402

N = 20_000
BLASTER = """
import socket, sys, time, select
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); tx.bind((sys.argv[1], 3))
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); rx.bind((sys.argv[2], 3))
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
n = int(sys.argv[3]); frame = bytes.fromhex("02000000000202000000000108004500") + bytes(48)
got = 0; first = last = None
def drain():
    global got, first, last
    while select.select([rx], [], [], 0)[0]:
        data, addr = rx.recvfrom(2048)
        if addr[2] != socket.PACKET_OUTGOING:
            got += 1; last = time.monotonic(); first = first or last
start = time.monotonic()
for i in range(n):
    tx.send(frame)
    if i % 64 == 0:
        drain()
while select.select([rx], [], [], 1.0)[0]:
    drain()
print(got, (last or start) - start)
"""


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def blast(netns: str, send: str, recv: str) -> tuple[int, float]:
    out = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", BLASTER, send, recv, str(N)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(out[0]), float(out[1])


def bare_forwarder(a: str, b: str, stop: threading.Event) -> None:
    pa, pb = RawPort(1, a), RawPort(2, b)
    peer = {pa.fileno(): (pa, pb), pb.fileno(): (pb, pa)}
    while not stop.is_set():
        ready, _, _ = select.select(list(peer), [], [], 0.1)
        for fd in ready:
            src, dst = peer[fd]
            while (frame := src.recv()) is not None:
                dst.send(frame)
    pa.close()
    pb.close()


def main() -> None:
    if os.geteuid() != 0:
        print("switch_pps: needs root (network namespaces); skipped")
        return
    tag = f"kvb{os.getpid() % 100000}"
    netns = f"{tag}ns"
    sh("ip", "netns", "add", netns)
    names = [(f"{tag}a", f"{tag}ai"), (f"{tag}b", f"{tag}bi")]
    try:
        for outside, inside in names:
            sh("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            sh("ip", "link", "set", inside, "netns", netns)
            sh("ip", "link", "set", outside, "up")
            sh("ip", "netns", "exec", netns, "ip", "link", "set", inside, "up")
            disable_offloads(outside)
        (a, ai), (b, bi) = names
        stop = threading.Event()
        thread = threading.Thread(target=bare_forwarder, args=(a, b, stop), daemon=True)
        thread.start()
        time.sleep(0.3)
        bare_got, bare_t = blast(netns, ai, bi)
        stop.set()
        thread.join(5)

        options = SwitchOptions(
            no_p4=True, interfaces=((1, a), (2, b)), cpu_port=255, grpc_addr="127.0.0.1:0"
        )
        loop = asyncio.new_event_loop()
        halt = asyncio.Event()
        ready = threading.Event()
        port: list[int] = []

        def on_ready(switch: Switch, grpc_port: int) -> None:
            port.append(grpc_port)
            ready.set()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(
                run_switch(options, loader=patch_loader, on_ready=on_ready, stop=halt)
            )

        sw_thread = threading.Thread(target=run, daemon=True)
        sw_thread.start()
        ready.wait(20)
        client = Client(f"127.0.0.1:{port[0]}")
        client.arbitrate(1)
        client.arbitration()
        client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
        sw_got, sw_t = blast(netns, ai, bi)
        client.close()
        loop.call_soon_threadsafe(halt.set)
        sw_thread.join(10)

        bare_pps = bare_got / bare_t if bare_t else 0.0
        sw_pps = sw_got / sw_t if sw_t else 0.0
        print(f"switch_pps: bare Python forwarder: {bare_got}/{N} frames, {bare_pps:,.0f} pps")
        print(f"switch_pps: switch process loop:   {sw_got}/{N} frames, {sw_pps:,.0f} pps")
        print(f"switch_pps: ratio switch/bare: {sw_pps / bare_pps if bare_pps else 0:.2f}")
    finally:
        for outside, _ in names:
            subprocess.run(["ip", "link", "del", outside], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


if __name__ == "__main__":
    main()
