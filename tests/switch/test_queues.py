"""Egress queues with real packets: rates, depths, backpressure, and what P4 sees (root).

queue_probe.p4 sends probes from port 1 to port 2 and writes, in egress, the
queueing metadata into each probe, with a mark when ``enq_qdepth`` reached 10
(as the ECN exercises compare it with a threshold).  The switch runs either in
this process (to drive its queue API: ``set_queue_rate`` / ``set_queue_depth``)
or as a ``kvfabric switch`` process behind a shaped link.
"""

from __future__ import annotations

import asyncio
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from softswitch.switch.argv import parse_argv
from softswitch.switch.main import run_switch
from softswitch.switch.packet_path import Switch
from softswitch.switch.process import SwitchProcess
from tests.support.netns import VethPair, namespace, veths

from .harness import PROGRAMS, call_on_loop
from .netns import NsPort

pytestmark = pytest.mark.root

QUEUE_PROBE_P4 = PROGRAMS / "queue_probe.p4"
TYPE_PROBE = 0x88B5
MARK = 10  # QUEUE_MARK of the program
_PROBE = struct.Struct("!IIIIB")
T = TypeVar("T")


@dataclass(frozen=True)
class Probe:
    """What egress wrote into one probe."""

    seq: int
    enq_qdepth: int
    deq_qdepth: int
    deq_timedelta: int
    enq_timestamp: int
    mark: int


def probe_frame(seq: int, size: int = 200) -> bytes:
    eth = bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=TYPE_PROBE))
    tag = b"probe-%06d" % seq
    return eth + _PROBE.pack(0, 0, 0, 0, 0) + tag + bytes(max(0, size - len(tag)))


def is_probe(packet: Packet) -> bool:
    return Ether in packet and packet[Ether].type == TYPE_PROBE


def decode(packet: Packet) -> Probe:
    data = bytes(packet[Ether].payload)
    fields = _PROBE.unpack_from(data)
    seq = int(data[_PROBE.size + 6 : _PROBE.size + 12])
    return Probe(seq, *fields)


def send_burst(host: NsPort, first: int, count: int, size: int = 200) -> None:
    for seq in range(first, first + count):
        host.sock.send(Raw(probe_frame(seq, size)))


def receive(host: NsPort, count: int, timeout: float = 10.0, quiet: float = 1.0) -> list[Probe]:
    return [decode(p) for p in host.sniff(timeout, is_probe, count=count, quiet=quiet)]


def check_marks(probes: list[Probe]) -> None:
    for probe in probes:
        assert probe.mark == (3 if probe.enq_qdepth >= MARK else 0), probe


class InProcessSwitch:
    """``run_switch`` on its own loop in a thread of the test process."""

    def __init__(self, switch: Switch, loop: asyncio.AbstractEventLoop) -> None:
        self.switch = switch
        self.loop = loop

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the switch's loop (between two packets) and return its result."""
        return call_on_loop(self.loop, fn)


@contextmanager
def in_process_switch(argv: list[str]) -> Iterator[InProcessSwitch]:
    options = parse_argv(argv)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    def on_ready(switch: Switch, _port: int) -> None:
        box["switch"] = switch
        ready.set()

    async def main() -> None:
        box["stop"] = asyncio.Event()
        try:
            await run_switch(options, on_ready=on_ready, stop=box["stop"])
        finally:
            ready.set()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()))
    thread.start()
    try:
        assert ready.wait(60) and "switch" in box, "the switch did not start"
        yield InProcessSwitch(box["switch"], loop)
    finally:
        if "stop" in box:
            loop.call_soon_threadsafe(box["stop"].set)
        thread.join(15)
        loop.close()


def switch_argv(pairs: list[VethPair], *extra: str) -> list[str]:
    argv = [a for i, p in enumerate(pairs, 1) for a in ("-i", f"{i}@{p.outside}")]
    return [*argv, *extra, str(QUEUE_PROBE_P4), "--", "--grpc-server-addr", "127.0.0.1:0"]


def test_queue_rate_and_depth_set_through_the_switch_build_a_queue_p4_sees() -> None:
    with namespace() as ns, veths(ns, 2) as pairs, in_process_switch(switch_argv(pairs)) as sw:
        h1, h2 = NsPort(ns, pairs[0].inside), NsPort(ns, pairs[1].inside)
        try:
            # No rate (BMv2's default): every probe finds an empty queue.
            send_burst(h1, 0, 20)
            free = receive(h2, 20)
            assert [p.seq for p in free] == list(range(20))
            assert {p.enq_qdepth for p in free} == {0}
            assert {p.mark for p in free} == {0}

            # 50 packets a second on port 2: a burst of 30 waits in the switch.
            sw.call(lambda: sw.switch.set_queue_rate(2, 50))
            send_burst(h1, 100, 30)
            slow = receive(h2, 30)
            assert [p.seq for p in slow] == list(range(100, 130))  # none dropped (64)
            assert max(p.enq_qdepth for p in slow) >= MARK
            assert max(p.deq_qdepth for p in slow) > 0
            assert max(p.deq_timedelta for p in slow) >= 100_000  # microseconds
            check_marks(slow)
            assert sw.call(lambda: sw.switch.queue_depth(2)) == 0

            # A queue of 4: the rest of the burst is tail-dropped.
            sw.call(lambda: sw.switch.set_queue_depth(2, 4))
            send_burst(h1, 200, 30)
            short = receive(h2, 30)
            assert 4 <= len(short) < 30
            assert max(p.enq_qdepth for p in short) <= 3
            assert sw.call(lambda: sw.switch.tail_dropped) == 30 - len(short)
        finally:
            h1.close()
            h2.close()


def test_a_slow_link_backs_up_into_the_switch_queue() -> None:
    """Port 2's link is shaped to 2 Mb/s with htb (as Mininet's TCLink does), no queue
    rate is set: once the port's socket buffer is full the switch holds the packets,
    its queue builds to its depth (64) and P4 sees it; the rest is tail-dropped."""
    with namespace() as ns, veths(ns, 2) as pairs:
        slow = pairs[1].outside
        subprocess.run(
            ["tc", "qdisc", "add", "dev", slow, "root", "handle", "5:", "htb", "default", "1"],
            check=True,
        )
        subprocess.run(
            ["tc", "class", "add", "dev", slow, "parent", "5:", "classid", "5:1",
             "htb", "rate", "2mbit", "burst", "15k"],
            check=True,
        )  # fmt: skip
        with SwitchProcess(switch_argv(pairs)):
            h1, h2 = NsPort(ns, pairs[0].inside), NsPort(ns, pairs[1].inside)
            try:
                send_burst(h1, 0, 400, size=1000)
                got = receive(h2, 400, timeout=20.0, quiet=2.0)
            finally:
                h1.close()
                h2.close()
        seqs = [p.seq for p in got]
        assert seqs == sorted(seqs) and len(got) < 400  # in order; the queue overflowed
        assert max(p.enq_qdepth for p in got) >= MARK
        assert max(p.enq_qdepth for p in got) <= 63
        assert max(p.deq_qdepth for p in got) > 0
        assert any(p.mark == 3 for p in got)
        check_marks(got)
