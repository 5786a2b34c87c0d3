"""Packets per second through Pipeline.process for the IPv4 LPM router (one core, no I/O).

Run: ``.venv/bin/python -m benchmarks.interp_router [--packets N]``.  Loads
``benchmarks/programs/router.p4``, installs 256 LPM routes, and times
``process`` on a rotation of 64 IPv4 packets that all hit a route.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from softswitch.frontend import load_program
from softswitch.interp.pipeline import Pipeline
from softswitch.runtime.tables import ActionCall, Lpm, TableEntry

PROGRAM = Path(__file__).resolve().parent / "programs" / "router.p4"


def ipv4_packet(dst: bytes, ttl: int = 64) -> bytes:
    """An Ethernet + IPv4 packet with a correct header checksum and 26 bytes of payload."""
    head = bytes([0x45, 0, 0, 46, 0, 1, 0, 0, ttl, 17, 0, 0, 192, 168, 0, 1]) + dst
    words = sum(int.from_bytes(head[i : i + 2], "big") for i in range(0, 20, 2))
    words = (words & 0xFFFF) + (words >> 16)
    head = head[:10] + ((~words) & 0xFFFF).to_bytes(2, "big") + head[12:]
    return bytes.fromhex("00aabbccddee00112233445508 00".replace(" ", "")) + head + bytes(26)


def main() -> None:
    """Measure and print packets/s."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--packets", type=int, default=50_000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    pipeline = Pipeline.load(load_program(str(PROGRAM)))
    load_ms = (time.perf_counter() - t0) * 1000
    table = pipeline.state.table("MyIngress.ipv4_lpm")
    for i in range(256):
        table.insert(
            TableEntry(
                (Lpm((10 << 24) | (i << 16), 16),),
                action=ActionCall("MyIngress.ipv4_forward", (0x0A0B0C0D0E00 + i, 1 + i % 8)),
            )
        )
    packets = [ipv4_packet(bytes([10, i * 4 % 256, 1, 1])) for i in range(64)]
    for p in packets:
        assert pipeline.process(0, p), "every benchmark packet must be forwarded"
    process = pipeline.process
    n = args.packets
    start = time.perf_counter()
    for i in range(n):
        process(0, packets[i & 63])
    elapsed = time.perf_counter() - start
    print(f"load: {load_ms:.1f} ms")
    print(
        f"{n} packets in {elapsed:.3f} s: {n / elapsed:,.0f} packets/s "
        f"({elapsed / n * 1e6:.1f} us/packet)"
    )


if __name__ == "__main__":
    main()
