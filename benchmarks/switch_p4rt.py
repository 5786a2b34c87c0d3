"""P4Runtime performance of a ``kvfabric switch`` process: table inserts per second, read latency.

Run: ``.venv/bin/python -m benchmarks.switch_p4rt [--inserts N]`` (no root needed).

A real switch process runs benchmarks/programs/router.p4 (no ports) and serves
P4Runtime on an ephemeral port; a synchronous gRPC client in this process is
its primary.  Measured, each on a fresh pipeline:

- inserts/s with one update per Write RPC (a controller programming routes one
  by one: every insert pays a full round trip);
- inserts/s with 100 updates per Write;
- the latency of reading 10 entries (a wildcard read of the table), median and
  99th percentile over 300 reads, and of reading 1,000 entries.

BMv2's simple_switch_grpc, measured the same way elsewhere, does about 2,000
single inserts/s and reads 10 entries in about 1.6 ms.  The last line is one
JSON object of the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from finsy.proto import p4i, p4r

from benchmarks._common import emit_json
from controller.engine.telemetry_math import percentile
from softswitch.switch.dataplane import load_program_file
from softswitch.switch.process import SwitchProcess
from tests.support.p4rt_client import StreamClient, insert

ROUTER = Path(__file__).resolve().parent / "programs" / "router.p4"


class Routes:
    """LPM entries of router.p4's ipv4_lpm, one per /24 under 10.0.0.0/8."""

    def __init__(self, info: p4i.P4Info) -> None:
        self.table = next(t for t in info.tables if t.preamble.name.endswith("ipv4_lpm"))
        self.action = next(a for a in info.actions if a.preamble.name.endswith("ipv4_forward"))

    def update(self, i: int) -> p4r.Update:
        entry = p4r.TableEntry(table_id=self.table.preamble.id)
        prefix = bytes([10, (i >> 8) & 0xFF, i & 0xFF, 0])
        entry.match.add(
            field_id=self.table.match_fields[0].id,
            lpm=p4r.FieldMatch.LPM(value=prefix, prefix_len=24),
        )
        entry.action.action.action_id = self.action.preamble.id
        dst, port = self.action.params
        entry.action.action.params.add(param_id=dst.id, value=(0x020000000000 + i).to_bytes(6))
        entry.action.action.params.add(param_id=port.id, value=bytes([1 + i % 4]))
        return insert(p4r.Entity(table_entry=entry))

    def read_all(self) -> p4r.Entity:
        return p4r.Entity(table_entry=p4r.TableEntry(table_id=self.table.preamble.id))


def read_latency(client: StreamClient, routes: Routes, count: int, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        got = client.read(routes.read_all())
        samples.append(time.perf_counter() - t0)
        assert len(got) == count, f"read {len(got)} entries, expected {count}"
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inserts", type=int, default=1000, help="single-update inserts (<= 1024)")
    args = parser.parse_args()
    info, device_config, _ = load_program_file(str(ROUTER), 511, None)
    routes = Routes(info)
    argv = [str(ROUTER), "--", "--grpc-server-addr", "127.0.0.1:0"]
    if not 0 < args.inserts <= 1024:
        parser.error("--inserts must be in [1, 1024]: the table holds 1,024 entries")
    with SwitchProcess(argv) as switch, StreamClient(switch.address) as client:
        client.become_primary(1)

        def fresh() -> None:
            client.set_pipeline(info, device_config)

        fresh()
        start = time.perf_counter()
        for i in range(args.inserts):
            client.write([routes.update(i)])
        single = args.inserts / (time.perf_counter() - start)

        fresh()
        batches, batch = 10, 100  # the table holds 1,024 entries
        start = time.perf_counter()
        for b in range(batches):
            client.write([routes.update(b * batch + i) for i in range(batch)])
        batched = batches * batch / (time.perf_counter() - start)

        fresh()
        client.write([routes.update(i) for i in range(10)])
        small = read_latency(client, routes, 10, 300)
        fresh()
        for b in range(10):
            client.write([routes.update(b * 100 + i) for i in range(100)])
        large = read_latency(client, routes, 1000, 30)
        assert switch.running(), switch.stderr_text()

    figures = {
        "inserts_per_s_single": round(single),
        "inserts_per_s_batch100": round(batched),
        "read10_median_ms": round(statistics.median(small) * 1e3, 3),
        "read10_p99_ms": round(percentile(small, 99) * 1e3, 3),
        "read1000_median_ms": round(statistics.median(large) * 1e3, 2),
    }
    print(f"switch_p4rt: inserts/s, one update per Write: {single:,.0f}")
    print(f"switch_p4rt: inserts/s, 100 updates per Write: {batched:,.0f}")
    print(
        f"switch_p4rt: read of 10 entries: median {figures['read10_median_ms']} ms, "
        f"p99 {figures['read10_p99_ms']} ms"
    )
    print(f"switch_p4rt: read of 1,000 entries: median {figures['read1000_median_ms']} ms")
    emit_json(figures)


if __name__ == "__main__":
    main()
