"""Run a controller until told to stop: the service, its API server, signals.

:func:`serve` is what ``kvfabric controller`` calls; tests and benchmarks start the
command as a process. Once the API listens it prints one line to standard output,
``kvfabric controller: API listening on HOST:PORT``, so a parent that asked for
port 0 learns the port (as ``kvfabric switch`` does with its gRPC port).
"""

from __future__ import annotations

import asyncio
import signal
import sys

from controller import collector
from controller.service.http.api import Api
from controller.service.http.lane import Lanes
from controller.service.http.server import HttpServer
from controller.service.service import Service, ServiceOptions

READY_PREFIX = "kvfabric controller: API listening on "


async def serve(options: ServiceOptions, host: str, port: int, token: str | None) -> None:
    """Run the controller until SIGTERM or SIGINT."""
    service = Service(options)
    api = Api(service, token)
    lanes = Lanes(
        lambda request: api.answer(request, streams=False), service.metrics.api_handoffs.inc
    )
    server = HttpServer(api.answer, lanes=lanes)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def started() -> None:
        # what is loaded by now (the P4Info, the topology, the libraries) lives as long
        # as the process: the collector's full passes need not walk it again and again
        collector.settle()
        bound_host, bound_port = await server.start(host, port)
        print(f"{READY_PREFIX}{bound_host}:{bound_port}", flush=True)
        print(
            f"kvfabric controller: instance {service.instance}, "
            f"{'backup' if options.backup else 'primary'}, "
            f"{len(service.switches.links)} switches",
            file=sys.stderr,
            flush=True,
        )

    runner = asyncio.create_task(service.run(started))
    waiter = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({runner, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if runner in done:
            runner.result()
    finally:
        await server.close()
        await service.flush()
        runner.cancel()
        waiter.cancel()
        await asyncio.gather(runner, waiter, return_exceptions=True)
