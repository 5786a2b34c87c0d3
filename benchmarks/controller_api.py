"""End-to-end latency of ``POST /v1/transfers`` against a controller driving real switches.

Starts four ``kvfabric switch`` processes (the 2 x 2 fabric of the controller tests,
P4Runtime only), a ``kvfabric controller`` process with the link audit off, and
times, from this client, each request from send to the last byte of the answer: the
engine's decision and the pin written to the leaf over P4Runtime before the answer.
Each transfer is then completed (also timed), so the number in flight stays at
``--inflight``. The telemetry poller runs meanwhile (every 100 ms, four switches).

    .venv/bin/python benchmarks/controller_api.py [--requests N] [--inflight K]

Prints a summary and, last, one JSON line: ``p50_ms``, ``p99_ms``, ``max_ms`` of the
transfer requests, ``complete_p50_ms``/``complete_p99_ms``, and ``goal_p99_ms`` (10).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import deque
from pathlib import Path

from controller.engine.telemetry_math import percentile
from tests.controller_service.harness import (
    ControllerProc,
    Fabric,
    compile_pipeline,
)

HOSTS = (("h11", "h21"), ("h12", "h22"), ("h11", "h22"), ("h12", "h21"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--inflight", type=int, default=32, help="transfers kept in flight")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kvfabric-bench-") as tmp:
        work = Path(tmp)
        pipeline = compile_pipeline(work)
        fabric = Fabric(work).start()
        controller = ControllerProc(fabric.path, pipeline, "--no-audit")
        try:
            controller.start()
            api = controller.api()
            api.wait_ready()
            post: list[float] = []
            complete: list[float] = []
            pinned = 0
            open_ids: deque[str] = deque()
            for n in range(args.warmup + args.requests):
                src, dst = HOSTS[n % len(HOSTS)]
                body = {"src": src, "dst": dst, "bytes": 4_000_000}
                t0 = time.perf_counter()
                status, answer = api.call("POST", "/v1/transfers", body)
                took = time.perf_counter() - t0
                if status != 201:
                    raise SystemExit(f"POST /v1/transfers answered {status}: {answer}")
                open_ids.append(str(answer["id"]))
                if n >= args.warmup:
                    post.append(took)
                    pinned += answer["placement"] == "pinned"
                if len(open_ids) > args.inflight:
                    tid = open_ids.popleft()
                    t0 = time.perf_counter()
                    status, answer = api.call(
                        "POST", f"/v1/transfers/{tid}/complete", {"duration_s": 0.05}
                    )
                    if status != 200:
                        raise SystemExit(f"complete answered {status}: {answer}")
                    if n >= args.warmup:
                        complete.append(time.perf_counter() - t0)
            api.close()
        finally:
            controller.close()
            fabric.close()

    ms = [t * 1e3 for t in post]
    cms = [t * 1e3 for t in complete]
    result = {
        "benchmark": "controller_api",
        "requests": len(ms),
        "inflight": args.inflight,
        "pinned": pinned,
        "p50_ms": round(percentile(ms, 50), 3),
        "p90_ms": round(percentile(ms, 90), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "max_ms": round(max(ms), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "complete_p50_ms": round(percentile(cms, 50), 3),
        "complete_p99_ms": round(percentile(cms, 99), 3),
        "goal_p99_ms": 10.0,
    }
    result["goal_met"] = result["p99_ms"] < result["goal_p99_ms"]
    print(
        f"POST /v1/transfers x{len(ms)} ({pinned} pinned, {args.inflight} in flight): "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms; "
        f"complete p50 {result['complete_p50_ms']} ms"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
