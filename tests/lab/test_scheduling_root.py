"""Temporal scheduling on a Mininet fabric with the real controller (root).

One spine between two leaves: every transfer from leaf1 to leaf2 has one path. The
controller runs with a scheduling policy (``fifo``, ``max_wait`` far beyond the run).
Two 1 MB transfers (0.4 s alone at 20 Mb/s) are requested at the same time from h11
to h21 and from h12 to h22, through the lab's sender and ``kvfabric.client``. The
controller holds the second behind the first; its sender waits for the release. The
switch's counters must show it: leaf2's egress ports towards h21 and h22 are sampled
while the transfers run, and the held transfer's bytes start only once the other's
have all left. Sent at once, both ports would count from the start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from controller.config import FabricConfig, Policy
from controller.config.generate import leaf_spine
from experiment.fabric import lab_fabric, write_fabric
from experiment.scenario_sched import ScenarioScheduling, with_scheduling
from lab.control import ControllerProcess, HttpControl
from lab.kvtransfer import Outcome, Receiver, TransferJob, send
from lab.monitor import tx_bytes
from lab.net import Lab, leftovers
from lab.netns import factory_in, socket_in
from lab.topo import FabricTopo

pytestmark = [pytest.mark.root, pytest.mark.slow]

NBYTES = 1_000_000
PAIRS = (("h11", "h21"), ("h12", "h22"))
SAMPLE_S = 0.01


@dataclass
class Running:
    lab: Lab
    fabric: FabricConfig
    control: HttpControl


@pytest.fixture(scope="module")
def one_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    out = tmp_path_factory.mktemp("kvsched")
    fabric = lab_fabric(leaf_spine(1, 2, 2, link_bps=20_000_000))
    settings = with_scheduling(fabric.controller, ScenarioScheduling(Policy.FIFO, 30.0))
    fabric = dataclasses.replace(fabric, controller=settings)
    lab = Lab(FabricTopo(fabric, queue_packets=10), log_dir=out / "logs")
    lab.start()
    try:
        fabric_file = write_fabric(fabric, out / "fabric.yaml")
        ControllerProcess(fabric_file, out / "logs" / "controller.log", lab.processes).start()
        control = HttpControl.for_fabric(fabric)
        asyncio.run(control.ready(90))
        yield Running(lab, fabric, control)
    finally:
        lab.stop(check=False)
    assert lab.footprint is not None
    assert leftovers(lab.footprint, wait_s=0) == []


async def _sample(intfs: dict[str, str], stop: asyncio.Event) -> list[tuple[float, dict[str, int]]]:
    """(time, bytes sent so far) of every interface, every ``SAMPLE_S`` until ``stop``."""
    base = {h: tx_bytes(i) for h, i in intfs.items()}
    samples = []
    while not stop.is_set():
        samples.append((time.monotonic(), {h: tx_bytes(i) - base[h] for h, i in intfs.items()}))
        await asyncio.sleep(SAMPLE_S)
    return samples


def _transfer(fabric: FabricConfig, src: str, dst: str) -> TransferJob:
    addr = {h: str(fabric.host(h).ipv4) for h in (src, dst)}
    return TransferJob(src, dst, addr[src], addr[dst], NBYTES, label=f"{src}-{dst}")


def _first(samples: list[tuple[float, dict[str, int]]], host: str, at_least: int) -> float:
    """When ``host``'s port had sent ``at_least`` bytes."""
    return next(t for t, sent in samples if sent[host] >= at_least)


def test_two_transfers_on_one_path_go_one_after_the_other(one_path: Running) -> None:
    lab, fabric = one_path.lab, one_path.fabric
    # leaf2's egress ports towards the receivers: what the switch sent each of them
    intfs = {dst: lab.topo.intf("leaf2", fabric.host(dst).port) for _, dst in PAIRS}

    async def main() -> tuple[list[Outcome], list[tuple[float, dict[str, int]]]]:
        receivers = []
        for _, dst in PAIRS:
            receiver = Receiver()
            sock = socket_in(lab.netns_path(dst))
            await receiver.start(sock, (str(fabric.host(dst).ipv4), 7000))
            receivers.append(receiver)
        stop = asyncio.Event()
        sampler = asyncio.get_running_loop().create_task(_sample(intfs, stop))
        try:
            outcomes = await asyncio.gather(
                *(
                    send(
                        _transfer(fabric, src, dst),
                        sockets=factory_in(lab.netns_path(src)),
                        paths=one_path.control.client,
                        timeout_s=30.0,
                    )
                    for src, dst in PAIRS
                )
            )
        finally:
            stop.set()
            samples = await sampler
            for receiver in receivers:
                await receiver.close()
        return list(outcomes), samples

    outcomes, samples = asyncio.run(main())
    for out in outcomes:
        assert out.error is None, out.error
        assert out.placement is not None and out.placement.spine == "spine1"
    # one was held by the controller until the other's end, the other went at once
    held = [o.held_s or 0.0 for o in outcomes]
    first, second = sorted(range(2), key=lambda k: held[k])
    assert held[second] > 10 * held[first], held
    assert all(o.release_error is None for o in outcomes)
    fct = [o.fct_s or 0.0 for o in outcomes]
    assert fct[second] > fct[first]
    # the counters: the held transfer's first 5% left the switch after the other's last
    # byte (a sample of slack for the sampling)
    a, b = PAIRS[first][1], PAIRS[second][1]
    first_done = _first(samples, a, NBYTES)
    second_starts = _first(samples, b, NBYTES // 20)
    print(f"held {held}, fct {fct}, {a} done at {first_done:.3f}, {b} starts {second_starts:.3f}")
    assert second_starts >= first_done - SAMPLE_S
