"""One transfer split over two idle spines ends in about half the time (root, Mininet).

Two leaves, two spines, 20 Mb/s cables, hosts on 40 Mb/s links: a host's NIC is twice
one uplink, so the controller's default ``max_slices`` splits a transfer in two. The
same 2 MB transfer from h11 to h21 goes once forced onto one spine (the lab's
``isolated`` reference: one slice) and once as the controller chooses (a slice on
each spine, each its own tagged connection through ``kvfabric.client``), on an idle
fabric. Split, it must end in about half the time: real TCP on real switch processes
through shaped links, each slice on its own cable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from experiment.flows import RECEIVER_PORT
from lab.kvtransfer import Outcome, Receiver, TransferJob, send
from lab.netns import factory_in, socket_in
from lab.topo import DEFAULT_QUEUE
from tests.lab.controlled import Running, controlled_lab

pytestmark = [pytest.mark.root, pytest.mark.slow]

NBYTES = 2_000_000  # 0.8 s alone on one 20 Mb/s cable


@pytest.fixture(scope="module")
def two_spines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with controlled_lab(
        tmp_path_factory.mktemp("kvslices"), 2, host_bps=40_000_000, queue_packets=DEFAULT_QUEUE
    ) as running:
        yield running


def _send(run: Running, spine: str | None) -> Outcome:
    fabric, lab = run.fabric, run.lab
    src, dst = "h11", "h21"
    job = TransferJob(src, dst, str(fabric.host(src).ipv4), str(fabric.host(dst).ipv4), NBYTES,
                      label=f"split-{spine}")  # fmt: skip

    async def main() -> Outcome:
        receiver = Receiver()
        sock = socket_in(lab.netns_path(dst))
        await receiver.start(sock, (str(fabric.host(dst).ipv4), RECEIVER_PORT))
        try:
            return await send(job, sockets=factory_in(lab.netns_path(src)),
                              paths=run.control.client, spine=spine, timeout_s=30.0)  # fmt: skip
        finally:
            await receiver.close()

    return asyncio.run(main())


def test_a_transfer_split_over_two_idle_spines_ends_in_about_half_the_time(
    two_spines: Running,
) -> None:
    one = _send(two_spines, "spine1")
    split = _send(two_spines, None)
    assert one.error is None and split.error is None, (one.error, split.error)
    assert one.placement is not None and split.placement is not None
    assert one.fct_s is not None and split.fct_s is not None
    assert len(one.placement.slices) == 1
    assert {s.spine for s in split.placement.slices} == {"spine1", "spine2"}
    ratio = split.fct_s / one.fct_s
    print(f"one spine {one.fct_s:.3f} s, two slices {split.fct_s:.3f} s: {ratio:.2f}")
    assert 0.35 <= ratio <= 0.7, ratio
