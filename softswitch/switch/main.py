"""The switch process: ports, pipeline and P4Runtime server on one asyncio loop.

Design: a single thread.  ``loop.add_reader`` watches each port's raw socket;
a readable socket is drained (up to a batch) through the pipeline and the
outputs are transmitted at once.  The gRPC server (grpc.aio) runs on the same
loop, so a P4Runtime write and a packet are never processed at the same time
and the runtime needs no locks.  A periodic tick sends digest lists and
idle-timeout notifications.

Start-up order follows what launchers expect of simple_switch_grpc: offloads
off, ports open, program loaded, and only then the gRPC port is bound and
``Server listening on ADDR`` printed.  SIGTERM and SIGINT stop the loop; the
server gets a short grace period and every socket and pcap file is closed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from finsy.proto import p4r

from softswitch.errors import SoftswitchError
from softswitch.switch.argv import SwitchOptions
from softswitch.switch.dataplane import (
    Dataplane,
    DataplaneLoader,
    load_program_file,
    make_loader,
    take_digests,
)
from softswitch.switch.io import RawPort
from softswitch.switch.offload import prepare_interfaces
from softswitch.switch.p4rt.device import Device
from softswitch.switch.p4rt.service import start_server
from softswitch.switch.pcap import PcapWriter

LOG = logging.getLogger("kvfabric.switch")
BATCH = 64
TICK_S = 0.005
_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 10,
}


class Switch:
    """Ports, the device and the packet path of one switch."""

    def __init__(self, options: SwitchOptions, ports: dict[int, RawPort], device: Device) -> None:
        self.options = options
        self.ports = ports
        self.device = device
        self.cpu_port = options.cpu_port
        self.pcap_in: dict[int, PcapWriter] = {}
        self.pcap_out: dict[int, PcapWriter] = {}
        self.received = 0
        self.transmitted = 0
        if options.pcap_dir is not None:
            directory = Path(options.pcap_dir)
            for number, port in ports.items():
                self.pcap_in[number] = PcapWriter(directory / f"{port.iface}_in.pcap")
                self.pcap_out[number] = PcapWriter(directory / f"{port.iface}_out.pcap")

    # --- packet path ----------------------------------------------------------------------

    def on_readable(self, number: int) -> None:
        port = self.ports[number]
        for _ in range(BATCH):
            frame = port.recv()
            if frame is None:
                return
            self.received += 1
            pcap = self.pcap_in.get(number)
            if pcap is not None:
                pcap.write(frame)
            self.process(number, frame)

    def process(self, number: int, frame: bytes) -> None:
        """One frame through the pipeline, and its outputs out."""
        dataplane = self.device.dataplane
        if dataplane is None:
            return
        if self.options.dump_packet_data:
            LOG.debug("port %d in: %s", number, frame[: self.options.dump_packet_data].hex())
        dataplane.state.set_time(time.monotonic_ns())
        try:
            outputs = dataplane.process(number, frame)
        except Exception:  # one bad packet must never stop the switch (#3): logged, dropped
            LOG.exception("packet from port %d dropped: the pipeline failed", number)
            return
        for name, values in take_digests(dataplane):
            self.device.digest(name, values)
        for out_port, data in outputs:
            self.emit(out_port, data)

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
        if port.send(frame):
            self.transmitted += 1

    def inject(self, frame: bytes) -> None:
        """A PacketOut: the frame enters the pipeline on the CPU port."""
        assert self.cpu_port is not None
        self.process(self.cpu_port, frame)

    def apply_queue_options(self, dataplane: Dataplane | None) -> None:
        if dataplane is None:
            return
        tm = dataplane.state.tm
        tm.set_queues_per_port(self.options.priority_queues)
        for port, rate in self.options.queue_rates:
            tm.set_queue_rate(rate, port)
        for port, depth in self.options.queue_depths:
            tm.set_queue_depth(depth, port)

    # --- lifecycle --------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        for number, port in self.ports.items():
            loop.add_reader(port.fileno(), self.on_readable, number)

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        for port in self.ports.values():
            loop.remove_reader(port.fileno())
            port.close()
        for pcap in [*self.pcap_in.values(), *self.pcap_out.values()]:
            pcap.close()


def configure_logging(options: SwitchOptions) -> None:
    handler: logging.Handler
    if options.log_file is not None:
        handler = logging.FileHandler(options.log_file)
    elif options.log_console:
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] %(name)s: %(message)s"))
    root = logging.getLogger("kvfabric")
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS[options.log_level])


async def run_switch(
    options: SwitchOptions,
    *,
    loader: DataplaneLoader | None = None,
    on_ready: Callable[[Switch, int], None] | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set); returns the exit status.

    ``loader`` replaces the device-config loader (tests); ``on_ready`` is called
    with the switch and the bound gRPC port once the server listens.  Signal
    handlers are installed only when no ``stop`` event is given.
    """
    configure_logging(options)
    for warning in options.warnings:
        print(warning, file=sys.stderr)
    loop = asyncio.get_running_loop()
    names = [iface for _, iface in options.interfaces]
    for iface, changed in prepare_interfaces(names, options.offloads).items():
        if changed:
            LOG.info("%s: turned off %s", iface, ", ".join(changed))
    ports: dict[int, RawPort] = {}
    try:
        for number, iface in options.interfaces:
            ports[number] = RawPort(number, iface)
    except SoftswitchError:
        for port in ports.values():
            port.close()
        raise
    device = Device(
        options.device_id,
        loader or make_loader(options.drop_port, options.cpu_port),
        cpu_port=options.cpu_port,
    )
    switch = Switch(options, ports, device)
    device.inject = switch.inject
    device.on_dataplane_change = switch.apply_queue_options
    try:
        if options.program is not None:
            p4info, device_config, dataplane = load_program_file(
                options.program, options.drop_port, options.cpu_port
            )
            config = p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=device_config)
            device.configs.install(config, dataplane)
            switch.apply_queue_options(dataplane)
        server = await start_server(device, options.grpc_addr, options.tls)
    except BaseException:
        switch.close(loop)
        raise
    signals = (signal.SIGTERM, signal.SIGINT) if stop is None else ()
    stop = stop or asyncio.Event()
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    switch.attach(loop)
    port_number: int = server.kvfabric_port  # type: ignore[attr-defined]
    host = options.grpc_addr.rpartition(":")[0]
    print(f"Server listening on {host}:{port_number}", flush=True)
    if on_ready is not None:
        on_ready(switch, port_number)
    ticker = asyncio.create_task(_tick(device))
    try:
        await stop.wait()
    finally:
        ticker.cancel()
        for signum in signals:
            loop.remove_signal_handler(signum)
        await server.stop(0.5)
        switch.close(loop)
    return 0


async def _tick(device: Device) -> None:
    while True:
        await asyncio.sleep(TICK_S)
        device.tick()
