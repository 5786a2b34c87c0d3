"""The switch process: ports, pipeline and P4Runtime server on one asyncio loop.

Design: a single thread.  ``loop.add_reader`` watches each port's raw socket;
a readable socket is drained (up to a batch) through the packet path
(:mod:`softswitch.switch.packet_path`: ingress, the traffic manager, egress).
The gRPC server (grpc.aio) runs on the same loop, so a P4Runtime write and a
packet are never processed at the same time and the runtime needs no locks.
A periodic tick sends digest lists and idle-timeout notifications.

The gRPC server serves P4Runtime and, on the same port as Stratum does, gNMI: the
ports' speeds and statuses (:mod:`softswitch.switch.gnmi`), which a watch of the
kernel's link notifications keeps current (:mod:`softswitch.switch.interfaces`).

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

from finsy.proto import p4r

from softswitch.errors import SoftswitchError
from softswitch.interp.extern_funcs import load_modules
from softswitch.interp.trace import TRACE
from softswitch.runtime.state import RuntimeState
from softswitch.switch.argv import SwitchOptions
from softswitch.switch.control import start_control_server
from softswitch.switch.dataplane import DataplaneLoader, load_program_file, make_loader
from softswitch.switch.gnmi.service import add_gnmi_service
from softswitch.switch.interfaces import Interfaces, LinkWatcher
from softswitch.switch.io import RawPort
from softswitch.switch.offload import prepare_interfaces
from softswitch.switch.p4rt.device import Device
from softswitch.switch.p4rt.service import start_server
from softswitch.switch.packet_path import Switch

LOG = logging.getLogger("kvfabric.switch")
TICK_S = 0.005
_LEVELS = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 10,
}


def configure_logging(options: SwitchOptions) -> None:
    """The switch's log: to ``--log-file`` or the console, at ``-L`` (BMv2's flags).

    The switch ("kvfabric") and the interpreter ("softswitch": ``log_msg``, the
    per-packet trace) log through the same handler.
    """
    handler: logging.Handler
    if options.log_file is not None:
        handler = logging.FileHandler(options.log_file)
    elif options.log_console:
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] %(name)s: %(message)s"))
    for name in ("kvfabric", "softswitch"):
        root = logging.getLogger(name)
        root.handlers[:] = [handler]
        root.setLevel(_LEVELS[options.log_level])


def traces_packets(options: SwitchOptions) -> bool:
    """Whether the log shows each packet's way (a log at debug or trace level): only
    then are pipelines built with the trace lines, which cost time per packet."""
    logged = options.log_console or options.log_file is not None
    return logged and _LEVELS[options.log_level] <= logging.DEBUG


async def run_switch(  # noqa: C901 - the command line's options, in simple_switch's order
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
    externs = load_modules(options.modules)
    traced = traces_packets(options)
    loop = asyncio.get_running_loop()
    names = [iface for _, iface in options.interfaces]
    for iface, changed in prepare_interfaces(names, options.offloads).items():
        if changed:
            LOG.info("%s: turned off %s", iface, ", ".join(changed))
    ports: dict[int, RawPort] = {}
    try:
        for number, iface in options.interfaces:
            ports[number] = RawPort(number, iface, options.send_buffer)
    except SoftswitchError:
        for port in ports.values():
            port.close()
        raise
    start = time.monotonic_ns()

    def clock() -> int:
        return time.monotonic_ns() - start

    device = Device(
        options.device_id,
        loader
        or make_loader(options.drop_port, options.cpu_port, clock, externs=externs, trace=traced),
        cpu_port=options.cpu_port,
    )
    switch = Switch(options, ports, device, clock)
    interfaces = Interfaces(options.interfaces, port_speeds(options))
    device.inject = switch.inject
    device.on_dataplane_change = switch.on_dataplane_change
    control: asyncio.Server | None = None
    watcher: LinkWatcher | None = None

    def state() -> RuntimeState | None:
        dataplane = device.dataplane
        return None if dataplane is None else dataplane.state

    try:
        if options.program is not None:
            p4info, device_config, dataplane = load_program_file(
                options.program,
                options.drop_port,
                options.cpu_port,
                clock,
                externs=externs,
                trace=traced,
            )
            config = p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=device_config)
            device.configs.install(config, dataplane)
        if options.thrift_port is not None:
            control = await start_control_server(options.thrift_port, state, switch, interfaces)
        watcher = LinkWatcher(interfaces)
        watcher.attach(loop)
        server = await start_server(
            device,
            options.grpc_addr,
            options.tls,
            services=[lambda server: add_gnmi_service(server, interfaces)],
        )
    except BaseException:
        if control is not None:
            control.close()
        if watcher is not None:
            watcher.close()
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
        if control is not None:
            control.close()
        watcher.close()
        switch.close(loop)
    return 0


def port_speeds(options: SwitchOptions) -> dict[int, int]:
    """The speed of each port the command line provisions (``--port-speed``): a speed
    without a port applies to every port, one with a port overrides it there."""
    speeds: dict[int, int] = {}
    for port, bps in sorted(options.port_speeds, key=lambda item: item[0] is not None):
        if port is None:
            speeds.update(dict.fromkeys((n for n, _ in options.interfaces), bps))
        else:
            speeds[port] = bps
    return speeds


async def _tick(device: Device) -> None:
    while True:
        await asyncio.sleep(TICK_S)
        device.tick()
