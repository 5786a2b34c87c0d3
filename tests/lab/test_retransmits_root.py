"""The sender counts its TCP retransmissions (TCP_INFO) on a real path that loses packets.

Two namespaces joined by a veth pair, the sender's side shaped to 8 Mb/s by a tbf whose
queue holds a whole transfer (a clean transfer loses nothing). The receiver's end goes
down for 400 ms in the middle of a 2 MB transfer, so the segments in flight are lost
and must be sent again. Root only.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator

import pytest

from lab.kvtransfer import Receiver, TransferJob, send
from lab.netns import factory_in, socket_in
from tests.support.netns import namespace, sh, veth

pytestmark = pytest.mark.root

SENDER, RECEIVER = "10.77.0.1", "10.77.0.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def pair() -> Iterator[tuple[str, str, str]]:
    with (
        namespace("kvrt") as a,
        namespace("kvrt") as b,
        veth("kvrt", outside_ns=a, inside_ns=b) as v,
    ):
        for ns, dev, addr in ((a, v.outside, SENDER), (b, v.inside, RECEIVER)):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", v.outside, "root", "tbf",
           "rate", "8mbit", "burst", "16kb", "limit", "4mb")  # fmt: skip
        yield a, b, v.inside


def test_a_transfer_through_an_outage_reports_its_retransmissions(
    pair: tuple[str, str, str],
) -> None:
    a, b, vb = pair

    async def main() -> tuple[int | None, int | None]:
        receiver = Receiver()
        await receiver.start(socket_in(f"/run/netns/{b}"), (RECEIVER, 5599))
        try:
            t = TransferJob("h1", "h2", SENDER, RECEIVER, 500_000, dst_port=5599, label="clean")
            clean = await send(t, sockets=factory_in(f"/run/netns/{a}"), timeout_s=20)
            assert clean.error is None, clean.error

            async def outage() -> None:
                await asyncio.sleep(0.5)
                _ip("-n", b, "link", "set", vb, "down")
                await asyncio.sleep(0.4)
                _ip("-n", b, "link", "set", vb, "up")

            lossy = TransferJob("h1", "h2", SENDER, RECEIVER, 2_000_000, dst_port=5599, label="x")
            cut = asyncio.get_running_loop().create_task(outage())
            out = await send(lossy, sockets=factory_in(f"/run/netns/{a}"), timeout_s=30)
            await cut
            assert out.error is None, out.error
            assert out.fct_s is not None and out.fct_s > 2.0  # 2 MB at 8 Mb/s, plus the outage
            return clean.retransmits, out.retransmits
        finally:
            await receiver.close()

    clean, lossy = asyncio.run(main())
    assert clean == 0
    assert lossy is not None and 0 < lossy < 2_000  # segments lost in the outage, sent again
