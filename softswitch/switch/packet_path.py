"""The packet path of one switch: ports -> ingress -> traffic manager -> egress -> ports.

As in BMv2's simple_switch, the traffic manager sits between the two halves
of the pipeline: ingress puts each packet in its egress port's queue, and the
packet goes through egress when it leaves the queue.  A packet leaves when
its departure time has come (the queue's rate, ``set_queue_rate``) *and* its
port can take a frame: a port whose socket refused a frame (send buffer full,
see :mod:`softswitch.switch.io`) holds that one frame and takes no packet out
of its queue until the socket is writable again and the frame has gone.  So a
link slower than the traffic fills the switch's queue (``set_queue_depth``,
64 packets by default, then tail drop), and P4 sees its depth in
``enq_qdepth``/``deq_qdepth``, as on BMv2.

Everything runs on the switch's one asyncio loop: a readable port runs
ingress and then :meth:`Switch.drain`, which takes every packet that may
leave; a timer calls it again at the next departure time of a rate-limited
queue, and a writer callback when a held frame's socket is writable again.

The queues belong to the switch, not to the loaded program: their rates and
depths survive a pipeline change (their packets do not).  Time is the
switch's clock (nanoseconds since it started), the one the pipeline's
timestamps use.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from softswitch.runtime.tm import QueueTicket, TrafficManager
from softswitch.switch.argv import SwitchOptions
from softswitch.switch.dataplane import Clock, Dataplane, Queued, take_digests
from softswitch.switch.io import BUSY, SENT, LinkDown, RawPort
from softswitch.switch.p4rt.device import Device
from softswitch.switch.pcap import PcapWriter

LOG = logging.getLogger("kvfabric.switch")
BATCH = 64
MAX_DRAIN = 4096  # packets taken out of the queues per call, so the loop stays responsive


class Switch:
    """Ports, the device, the traffic manager and the packet path of one switch."""

    def __init__(
        self,
        options: SwitchOptions,
        ports: dict[int, RawPort],
        device: Device,
        clock: Clock | None = None,
    ) -> None:
        self.options = options
        self.ports = ports
        self.device = device
        self.cpu_port = options.cpu_port
        start = time.monotonic_ns()
        self.clock: Clock = clock or (lambda: time.monotonic_ns() - start)
        self.tm = TrafficManager()
        self.tm.set_queues_per_port(options.priority_queues)
        for queue_port, rate in options.queue_rates:
            self.tm.set_queue_rate(rate, queue_port)
        for queue_port, depth in options.queue_depths:
            self.tm.set_queue_depth(depth, queue_port)
        self.held: dict[int, bytes] = {}  # port -> the frame its socket refused (BUSY)
        self.pcap_in: dict[int, PcapWriter] = {}
        self.pcap_out: dict[int, PcapWriter] = {}
        self.received = 0
        self.transmitted = 0
        self.tail_dropped = 0
        self.send_dropped = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.TimerHandle | None = None
        self._wake_at = 0
        if options.pcap_dir is not None:
            directory = Path(options.pcap_dir)
            for number, port in ports.items():
                self.pcap_in[number] = PcapWriter(directory / f"{port.iface}_in.pcap")
                self.pcap_out[number] = PcapWriter(directory / f"{port.iface}_out.pcap")

    # --- queue settings (simple_switch_CLI's set_queue_rate / set_queue_depth) -------------

    def set_queue_rate(self, port: int | None, pps: int, priority: int | None = None) -> None:
        """Egress rate of ``port``'s queues (every port's when None) in packets per
        second; 0 is unlimited.  ``priority`` names one queue of the port."""
        self.tm.set_queue_rate(pps, port, priority)

    def set_queue_depth(self, port: int | None, depth: int, priority: int | None = None) -> None:
        """Capacity in packets of ``port``'s queues (every port's when None)."""
        self.tm.set_queue_depth(depth, port, priority)

    def queue_depth(self, port: int) -> int:
        """Packets queued for ``port`` now."""
        return self.tm.qdepth(port)

    # --- ingress --------------------------------------------------------------------------

    def on_readable(self, number: int) -> None:
        port = self.ports[number]
        for _ in range(BATCH):
            try:
                frame = port.recv()
            except LinkDown:
                self._link_down(number)
                return
            if frame is None:
                return
            self.received += 1
            pcap = self.pcap_in.get(number)
            if pcap is not None:
                pcap.write(frame)
            self.process(number, frame)

    def process(self, number: int, frame: bytes) -> None:
        """One frame through ingress into the queues, and out of the queues what may leave."""
        dataplane = self.device.dataplane
        if dataplane is None:
            return
        if self.options.dump_packet_data:
            LOG.debug("port %d in: %s", number, frame[: self.options.dump_packet_data].hex())
        dataplane.state.set_time(time.monotonic_ns())
        try:
            jobs = dataplane.ingress(number, frame)
        except Exception:  # one bad packet must never stop the switch: logged, dropped
            LOG.exception("packet from port %d dropped: the pipeline failed", number)
            return
        if dataplane.digests:
            self._digests(dataplane)
        if jobs:
            self._admit(dataplane, jobs)

    def inject(self, frame: bytes) -> None:
        """A PacketOut: the frame enters the pipeline on the CPU port."""
        assert self.cpu_port is not None
        self.process(self.cpu_port, frame)

    def _admit(self, dataplane: Dataplane, jobs: Sequence[Queued]) -> None:
        """Packets from ingress: through egress at once where their queue lets them
        (nothing queued ahead, no rate holding them, the port not held), else queued."""
        now = self.clock()
        tm = self.tm
        queued = False
        for job in jobs:
            queue = tm.queue_for(job.priority)
            if queue is None:
                LOG.error("priority out of range, dropping packet (port %d)", job.port)
                continue
            if job.port not in self.held and not queued:
                ticket = tm.pass_through(job.port, now, job, queue)
                if ticket is not None:
                    queued = self._egress(dataplane, ticket)
                    continue
            queued = True
            if tm.enqueue(job.port, now, job, queue) is None:
                self.tail_dropped += 1
        if queued:
            self.drain()

    def _enqueue(self, jobs: Sequence[Queued]) -> None:
        now = self.clock()
        tm = self.tm
        for job in jobs:
            queue = tm.queue_for(job.priority)
            if queue is None:
                LOG.error("priority out of range, dropping packet (port %d)", job.port)
            elif tm.enqueue(job.port, now, job, queue) is None:
                self.tail_dropped += 1

    def _digests(self, dataplane: Dataplane) -> None:
        for name, values in take_digests(dataplane):
            self.device.digest(name, values)

    # --- egress ---------------------------------------------------------------------------

    def drain(self) -> None:
        """Take out of the queues, through egress and out, every packet that may leave."""
        dataplane = self.device.dataplane
        tm = self.tm
        if dataplane is None:
            tm.reset()
            return
        now = self.clock()
        taken = 0
        while taken < MAX_DRAIN:
            before = taken
            for port in tm.ports():
                if port in self.held:
                    continue
                ticket = tm.pop(port, now)
                if ticket is not None:
                    taken += 1
                    self._egress(dataplane, ticket)
            if taken == before:
                break
        if taken >= MAX_DRAIN and self._loop is not None:
            self._loop.call_soon(self.drain)
            return
        self._schedule(now)

    def _egress(self, dataplane: Dataplane, ticket: QueueTicket) -> bool:
        """Egress of one packet and its frames out; True if it queued new packets."""
        try:
            outputs, jobs = dataplane.egress(ticket.item, ticket)
        except Exception:  # one bad packet must never stop the switch: logged, dropped
            LOG.exception("packet to port %d dropped: the pipeline failed", ticket.port)
            return False
        if dataplane.digests:
            self._digests(dataplane)
        for out_port, data in outputs:
            self.emit(out_port, data)
        if jobs:
            self._enqueue(jobs)
            return True
        return False

    def emit(self, number: int, frame: bytes) -> None:
        if number == self.cpu_port:
            self.device.packet_in(frame)
            return
        port = self.ports.get(number)
        if port is None:
            return
        pcap = self.pcap_out.get(number)
        if pcap is not None:
            pcap.write(frame)
        result = port.send(frame)
        if result == SENT:
            self.transmitted += 1
        elif result == BUSY and self._loop is not None:
            self.held[number] = frame
            self._loop.add_writer(port.fileno(), self._on_writable, number)
        else:
            self.send_dropped += 1

    def _on_writable(self, number: int) -> None:
        port = self.ports.get(number)
        frame = self.held.get(number)
        if port is None or frame is None:
            return
        result = port.send(frame)
        if result == BUSY:
            return  # still full: the writer stays registered
        assert self._loop is not None
        self._loop.remove_writer(port.fileno())
        del self.held[number]
        if result == SENT:
            self.transmitted += 1
        else:
            self.send_dropped += 1
        self.drain()

    def _schedule(self, now: int) -> None:
        """Wake up at the next departure time of a port that can send."""
        due = self.tm.next_departure_ns(self.held)
        if due is None or self._loop is None:
            return
        if self._wake is not None:
            if self._wake_at <= due:
                return
            self._wake.cancel()
        self._wake_at = due
        self._wake = self._loop.call_later(max(0, due - now) / 1e9, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        self.drain()

    def on_dataplane_change(self, dataplane: Dataplane | None) -> None:
        """A new pipeline: the queued packets belonged to the old one."""
        del dataplane
        self.tm.reset()

    # --- ports ----------------------------------------------------------------------------

    def _link_down(self, number: int) -> None:
        """A port's link went down: a link that comes back keeps its socket; a removed
        interface (a torn-down veth) ends the port."""
        port = self.ports[number]
        if port.exists():
            LOG.info("port %d (%s): link down", number, port.iface)
            return
        LOG.info("port %d (%s): interface removed, port closed", number, port.iface)
        self._close_port(number)

    def _close_port(self, number: int) -> None:
        port = self.ports.pop(number)
        if self._loop is not None:
            self._loop.remove_reader(port.fileno())
            if self.held.pop(number, None) is not None:
                self._loop.remove_writer(port.fileno())
        port.close()

    # --- lifecycle --------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        for number, port in self.ports.items():
            loop.add_reader(port.fileno(), self.on_readable, number)

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._wake is not None:
            self._wake.cancel()
        for number in list(self.ports):
            if self._loop is None:
                self.ports.pop(number).close()
            else:
                self._close_port(number)
        for pcap in [*self.pcap_in.values(), *self.pcap_out.values()]:
            pcap.close()
        del loop
