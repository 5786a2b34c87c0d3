"""P4Runtime performance of the switch's server: table inserts per second and read latency.

Runs a real gRPC server (the switch's Device on the runtime objects of
tests/switch/programs/fabric_test.p4's P4Info) on an ephemeral port and drives
it with synchronous grpc stubs, as the BMv2 reference figures were taken
(about 2,000 inserts/s, 1.6 ms to read 10 entries).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from finsy.proto import U128, p4r  # noqa: E402

from tests.switch.fakes import load_p4info  # noqa: E402
from tests.switch.harness import Client, ServerThread, make_device, pipeline_request  # noqa: E402

INFO = load_p4info()
L2 = next(t for t in INFO.tables if t.preamble.name.endswith("l2"))
FORWARD = next(a for a in INFO.actions if a.preamble.name.endswith("forward"))


def entry(i: int) -> p4r.Update:
    e = p4r.TableEntry(table_id=L2.preamble.id)
    e.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=i.to_bytes(6, "big")))
    e.action.action.action_id = FORWARD.preamble.id
    e.action.action.params.add(param_id=1, value=b"\x01")
    return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=e))


def main() -> None:
    server = ServerThread(make_device())
    client = Client(server.address)
    try:
        client.arbitrate(1)
        client.arbitration()
        client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
        election = U128.encode(1)

        def write(updates: list[p4r.Update]) -> None:
            request = p4r.WriteRequest(device_id=0, election_id=election, updates=updates)
            client.stub.Write(request)

        n = 1000
        start = time.perf_counter()
        for i in range(1, n + 1):
            client.stub.Write(
                p4r.WriteRequest(device_id=0, election_id=election, updates=[entry(i)])
            )
        single = n / (time.perf_counter() - start)
        client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
        batch = 100
        start = time.perf_counter()
        for b in range(10):
            updates = [entry(10_000 + b * batch + i) for i in range(batch)]
            write(updates)
        batched = 10 * batch / (time.perf_counter() - start)
        # read latency: a wildcard read of a table holding 10 entries
        client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
        for i in range(1, 11):
            client.stub.Write(
                p4r.WriteRequest(device_id=0, election_id=election, updates=[entry(i)])
            )
        request = p4r.ReadRequest(
            device_id=0, entities=[p4r.Entity(table_entry=p4r.TableEntry(table_id=L2.preamble.id))]
        )
        samples = []
        for _ in range(300):
            t0 = time.perf_counter()
            got = sum(len(r.entities) for r in client.stub.Read(request))
            samples.append(time.perf_counter() - t0)
            assert got == 10
        print(f"switch_p4rt: inserts/s, one update per Write: {single:,.0f}")
        print(f"switch_p4rt: inserts/s, 100 updates per Write: {batched:,.0f}")
        print(
            "switch_p4rt: read of 10 entries: median "
            f"{statistics.median(samples) * 1e3:.2f} ms, p99 "
            f"{sorted(samples)[int(len(samples) * 0.99)] * 1e3:.2f} ms"
        )
    finally:
        client.close()
        server.stop()


if __name__ == "__main__":
    main()
