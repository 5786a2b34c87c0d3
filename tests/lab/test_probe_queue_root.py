"""Link probes cross a saturated lab link in their own htb class (root, Mininet).

Two Mininet hosts joined by one :class:`~lab.links.ShapedLink` at 20 Mb/s over a
10-packet pfifo, the lab's shaping. The sender floods the link with 1500-byte frames
at about twice its rate (the pfifo is full all the time and the kernel refuses what
does not fit) and sends a link probe (EtherType 0x88B5) every 100 ms, each at a
moment the data queue is full (just after the kernel refused a bulk frame); the
receiver counts what arrives. With the protected class every probe gets through; on the same
link without it (``protected_ethertypes = ()``), probes queue behind the bulk frames
and are tail-dropped like them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mininet.net import Mininet

from controller.service.southbound.prober import ETHERTYPE
from lab.links import PROBE_ETHERTYPE, ShapedIntf, ShapedLink
from lab.topo import default_prefix

pytestmark = [pytest.mark.root, pytest.mark.slow]

PROBES = 20

SENDER = """
import errno, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 3))
src = bytes.fromhex("020000000001")
bulk = b"\\xff" * 6 + src + b"\\x88\\xb6" + bytes(1486)
probe = bytes.fromhex("0180c200000e") + src + b"\\x88\\xb5" + b"KVFP" + bytes(42)
sent = refused = probes = 0
start = time.monotonic()
next_probe = start + 0.3
while probes < int(sys.argv[2]):
    due = time.monotonic() >= next_probe
    for _ in range(16):  # about 3,300 frames (40 Mb/s) a second, twice the link
        try:
            s.send(bulk)
            sent += 1
        except OSError as exc:
            assert exc.errno == errno.ENOBUFS, exc
            refused += 1
            if due:  # the data queue is full right now: the worst time for a probe
                try:
                    s.send(probe)
                except OSError as exc:
                    assert exc.errno == errno.ENOBUFS, exc
                probes += 1
                next_probe += 0.1
                due = False
    time.sleep(max(0.0, start + (sent + refused) / 3300 - time.monotonic()))
print(sent, refused, flush=True)
"""

RECEIVER = """
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 3))
s.settimeout(0.5)
print("ready", flush=True)
probes = bulk = 0
end = None
while True:
    try:
        frame = s.recv(2048)
    except TimeoutError:
        if end is not None and time.monotonic() > end:
            break
        continue
    kind = frame[12:14]
    if kind == b"\\x88\\xb5":
        probes += 1
    elif kind == b"\\x88\\xb6":
        bulk += 1
    if end is None and bulk:
        end = time.monotonic() + float(sys.argv[2])
    if end is not None and time.monotonic() > end:
        break
print(probes, bulk, flush=True)
"""


class UnprotectedIntf(ShapedIntf):
    """The lab's shaping without the probes' class: the control experiment."""

    protected_ethertypes = ()


class UnprotectedLink(ShapedLink):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls1", UnprotectedIntf)
        kwargs.setdefault("cls2", UnprotectedIntf)
        super().__init__(*args, **kwargs)


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, str, str]]:
    """Two hosts on one saturable link; the link class is the test's parameter."""
    prefix = default_prefix()
    net = Mininet(topo=None, controller=None, link=request.param, build=False,
                  autoSetMacs=False, waitConnected=False)  # fmt: skip
    try:
        a, b = net.addHost(f"{prefix}qa"), net.addHost(f"{prefix}qb")
        ia, ib = f"{prefix}qa0", f"{prefix}qb0"
        net.addLink(a, b, intfName1=ia, intfName2=ib, bw=20, max_queue_size=10)
        net.build()
        yield a, b, ia, ib
    finally:
        net.stop()


def _exchange(pair: tuple[Any, Any, str, str]) -> tuple[int, int, int, int]:
    """(probes received, bulk frames received, bulk sent, bulk refused by the queue)."""
    a, b, ia, ib = pair
    receiver = b.popen([sys.executable, "-c", RECEIVER, ib, str(PROBES * 0.1 + 1.5)])
    try:
        assert receiver.stdout.readline().strip() == b"ready"
        sender = a.popen([sys.executable, "-c", SENDER, ia, str(PROBES)])
        out, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
        sent, refused = map(int, out.split())
        got, _ = receiver.communicate(timeout=60)
    finally:
        for proc in (receiver,):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    probes, bulk = map(int, got.split())
    return probes, bulk, sent, refused


def test_the_lab_protects_the_controllers_probe_ethertype() -> None:
    assert PROBE_ETHERTYPE == ETHERTYPE


@pytest.mark.parametrize("pair", [ShapedLink], indirect=True)
def test_every_probe_crosses_a_saturated_link(pair: tuple[Any, Any, str, str]) -> None:
    probes, bulk, sent, refused = _exchange(pair)
    assert refused > sent / 4, (sent, refused)  # the data queue overflowed all along
    assert probes == PROBES, (probes, bulk, sent, refused)
    print(f"protected class: {probes}/{PROBES} probes, {bulk} of {sent + refused} bulk frames")


@pytest.mark.parametrize("pair", [UnprotectedLink], indirect=True)
def test_without_the_class_probes_are_tail_dropped(pair: tuple[Any, Any, str, str]) -> None:
    probes, bulk, sent, refused = _exchange(pair)
    assert refused > sent / 4, (sent, refused)
    assert probes < PROBES, (probes, bulk, sent, refused)
    print(f"no protected class: {probes}/{PROBES} probes, {bulk} of {sent + refused} bulk frames")
