"""The telemetry poll against a real switch: its prepared, undecoded read gives the
reading that finsy's decoded entities give, on the event loop and on the worker thread
of :mod:`controller.service.southbound.reads` alike.

A ``kvfabric switch`` process (leaf1 of the test fabric) and a :class:`SwitchLink`
as the controller holds it (primary, pipeline pushed). Each round writes every counter
cell the poll reads with values of its own (a P4Runtime MODIFY of the counter
entries), so the two paths are compared on counts that differ cell by cell and grow
from round to round, int64 wraps and histogram buckets included.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import finsy as fy

from controller.config import FabricConfig, parse_config
from controller.engine import SwitchReading
from controller.service.southbound.reads import ThreadReads
from controller.service.southbound.switches import Pipeline, SwitchLink
from controller.service.southbound.telemetry import BUCKETS, Cell, Poller
from controller.topology import Topology
from tests.controller_service.harness import RunningSwitches

COUNTERS = ("port_tx", "port_kv_tx", "port_qdepth_hist", "port_qdelay_hist")


def _cells(ports: list[int]) -> list[tuple[str, int]]:
    """The (counter, index) cells of the module docstring of ``telemetry``, written out."""
    out: list[tuple[str, int]] = []
    for port in ports:
        out += [("port_tx", port), ("port_kv_tx", port)]
        for hist in ("port_qdepth_hist", "port_qdelay_hist"):
            out += [(hist, port * BUCKETS + b) for b in range(BUCKETS)]
    return out


def _value(round_: int, counter: str, index: int) -> tuple[int, int]:
    """(bytes, packets) of a cell in a round: distinct per cell, growing per round; the
    third round wraps port 3's byte count past int64 (negative on the wire)."""
    if counter == "port_tx" and index == 3 and round_ == 2:
        return -(2**63) + 5, 40 + round_
    base = 1000 * (COUNTERS.index(counter) + 1) + index
    return base * (round_ + 1), (index % 7) * round_ + round_


def _entry(counter: str, index: int, nbytes: int, packets: int) -> fy.P4CounterEntry:
    data = fy.P4CounterData(byte_count=nbytes, packet_count=packets)
    return fy.P4CounterEntry(counter, index=index, data=data)


async def _compare(config: FabricConfig, pipeline: Pipeline) -> list[SwitchReading]:
    topology = Topology(config)
    ready = asyncio.Event()

    async def on_ready(_link: SwitchLink) -> None:
        ready.set()

    leaf1 = next(s for s in config.switches if s.name == "leaf1")
    link = SwitchLink(leaf1, pipeline, backup=False, tls=None, on_ready=on_ready)
    runner = asyncio.create_task(link.run())
    raw, decoded = Poller(topology), Poller(topology)
    reads = ThreadReads(None)
    threaded = Poller(topology, reads)
    cells = _cells(sorted(raw.capacity["leaf1"]))
    entities = [fy.P4CounterEntry(c, index=i) for c, i in cells]
    readings: list[SwitchReading] = []
    try:
        await asyncio.wait_for(ready.wait(), 60)
        for round_ in range(3):
            await link.write("modify", [_entry(c, i, *_value(round_, c, i)) for c, i in cells])
            reading = await raw.poll(link)
            finsy_cells = [
                Cell(e.counter_id, e.index, e.data.byte_count, e.data.packet_count)
                for e in await link.read(entities)
            ]
            assert reading == decoded.reading("leaf1", finsy_cells)
            assert await threaded.poll(link) == reading  # read and decoded off the loop
            readings.append(reading)
        request = link.read_request(entities[:1])
        worker = await reads.read(link, request, lambda _entities: threading.get_ident())
        assert worker != threading.get_ident()
    finally:
        reads.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    return readings


def test_the_raw_poll_reads_what_finsy_decodes_on_the_loop_or_a_worker_thread(
    fabric: RunningSwitches, pipeline: tuple[Path, Path]
) -> None:
    config = parse_config(fabric.path.read_text(), str(fabric.path))
    readings = asyncio.run(_compare(config, Pipeline(pipeline[0], pipeline[1].read_bytes())))
    first, second, third = readings
    assert set(first.ports) == {1, 2, 3, 4}  # the ports the topology models
    assert first.ports[3].bytes == 1003 and first.ports[3].kv_bytes == 2003
    assert second.ports[4].bytes == 2008 and second.ports[4].packets == 5
    # every bucket grew in the second round: the highest one gives the depth
    assert (second.ports[3].queue_depth or 0) > 0
    assert third.ports[3].bytes == 2**63 + 5  # int64 on the wire, unsigned count
