"""Nodes of the emulated fabric: the P4 switch process and the lab host.

:class:`P4Switch` is a Mininet switch node whose data plane is a separate process
speaking simple_switch_grpc's command line::

    -i PORT@IFACE ... --device-id N (PROGRAM | --no-p4)
        -- --grpc-server-addr ADDR [--cpu-port N]

``switch_argv`` builds that argument list from the node's interfaces (Mininet's port
numbers are the switch's port numbers), with each shaped port's rate as the speed
the port reports over gNMI (``--port-speed PORT:BPS``: a veth alone would say
10 Gb/s, and the controller would take the lab's 20 Mb/s links for 10 Gb/s ones);
``launch_command`` puts the binary in front of it, and is the only method a target
overrides: :class:`P4Switch` runs ``kvfabric switch``, :class:`Bmv2Switch` runs
BMv2's ``simple_switch_grpc`` (the VM lab), which has no port speeds.

The process is a :class:`~softswitch.switch.process.SwitchProcess`, the one
launcher of switches: started in its own session with its output in a log file per
switch, it is ready once the gRPC port accepts a connection (the switch binds it
only when ready; BMv2's own ready line may sit in its stdout buffer), and exiting
first is an error carrying the tail of the switch's log. Mininet's
``batchStartup`` hook lets all switches start in parallel and be waited for
together.

The process is tracked by its pid and stopped by pid (SIGTERM to its session, then
SIGKILL after a grace period); nothing is ever killed by name. Switch nodes live in the root network
namespace, as Mininet's switches do, so their interfaces need names unique on the
machine (:mod:`lab.topo` gives them a per-run prefix).

:class:`LabHost` is a Mininet host with jumbo frames, offloads off, IPv6 off (no
router solicitations or neighbour discovery chattering through Python switches)
and a default route, so that hosts reach each other with no manual step.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mininet.node import Host, Switch

from lab.errors import SwitchStartError
from lab.links import JUMBO_MTU, OFFLOADS
from softswitch.switch.process import LaunchError, SwitchProcess

KV_FABRIC_CPU_PORT = 255
"""The CPU port of p4/kv_fabric.p4 (``KV_CPU_PORT``)."""

LAB_SEND_BUFFER = 4 << 20
"""Bytes of the switch ports' send buffers: 64 jumbo frames and more."""

GRPC_BASE_PORT = 50000
"""Default gRPC port of a switch without an address: base + device id."""


class P4Switch(Switch):  # type: ignore[misc]  # Mininet has no type stubs
    """A Mininet switch node running ``kvfabric switch`` with simple_switch_grpc's argv."""

    def __init__(
        self,
        name: str,
        *,
        program: str | None = None,
        device_id: int | None = None,
        grpc_addr: str | None = None,
        cpu_port: int | None = KV_FABRIC_CPU_PORT,
        log_dir: str | None = None,
        start_timeout: float = 60.0,
        extra_args: Sequence[str] = (),
        **params: Any,
    ) -> None:
        if device_id is not None and "dpid" not in params:
            params["dpid"] = f"{device_id:x}"
        super().__init__(name, **params)
        self.device_id = device_id if device_id is not None else int(self.dpid, 16)
        self.grpc_addr = grpc_addr or f"127.0.0.1:{GRPC_BASE_PORT + self.device_id}"
        self.program = program
        self.cpu_port = cpu_port
        self.log_dir = Path(log_dir or tempfile.gettempdir())
        self.start_timeout = start_timeout
        self.extra_args = tuple(extra_args)
        self.process: SwitchProcess | None = None

    # -- the command line ----------------------------------------------------------

    def port_map(self) -> list[tuple[int, str]]:
        """(port number, interface name) of every data-plane interface, by port."""
        out = []
        for intf in self.intfList():
            port = self.ports.get(intf)
            if port is None or port == 0 or intf.name == "lo":
                continue
            out.append((int(port), str(intf.name)))
        return sorted(out)

    def port_rates(self) -> list[tuple[int, int]]:
        """(port number, bit/s) of every interface Mininet shapes (its ``bw``, Mb/s)."""
        out = []
        for intf in self.intfList():
            port = self.ports.get(intf)
            bw = getattr(intf, "params", {}).get("bw")
            if port and bw:
                out.append((int(port), round(float(bw) * 1e6)))
        return sorted(out)

    def switch_argv(self, *, port_speeds: bool = True) -> list[str]:
        """simple_switch_grpc's arguments for this node (without the binary); with
        ``port_speeds``, each shaped port's rate (``--port-speed``, which BMv2 lacks)."""
        argv: list[str] = []
        for port, iface in self.port_map():
            argv += ["-i", f"{port}@{iface}"]
        if port_speeds:
            for port, bps in self.port_rates():
                argv += ["--port-speed", f"{port}:{bps}"]
        # the qdisc (htb + pfifo) is the link's buffer: a send buffer large enough that
        # the pfifo's limit, not the socket, decides what waits and what is dropped
        argv += ["--send-buffer", str(LAB_SEND_BUFFER)]
        argv += ["--device-id", str(self.device_id), *self.extra_args]
        argv += [self.program] if self.program else ["--no-p4"]
        argv += ["--", "--grpc-server-addr", self.grpc_addr]
        if self.cpu_port is not None:
            argv += ["--cpu-port", str(self.cpu_port)]
        return argv

    def launch_command(self) -> list[str]:
        """The full command that starts the switch: the one method a target overrides."""
        return [sys.executable, "-m", "kvfabric.cli", "switch", *self.switch_argv()]

    # -- lifecycle -------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        """Where the switch process's output goes."""
        return self.log_dir / f"{self.name}.log"

    @property
    def switch_pid(self) -> int | None:
        """The pid of the switch process while it runs."""
        return self.process.pid if self.process is not None else None

    def start(self, controllers: Iterable[Any] = ()) -> None:
        """Launch the switch process; :meth:`wait_ready` (or ``batchStartup``) waits for it."""
        del controllers  # P4Runtime controllers connect to the switch, not the reverse
        if self.process is not None and self.process.running():
            return
        process = SwitchProcess(
            command=self.launch_command(),
            ready_addr=self.grpc_addr,
            ready_timeout=self.start_timeout,
            log_path=self.log_path,
            new_session=True,
        )
        try:
            self.process = process.launch()
        except OSError as exc:
            raise SwitchStartError(f"{self.name}: cannot start the switch: {exc}") from None

    def wait_ready(self, deadline: float | None = None) -> None:
        """Block until the gRPC port accepts connections; raise if the process died."""
        if self.process is None:
            raise SwitchStartError(f"{self.name}: the switch was not started")
        try:
            self.process.wait_ready(deadline)
        except LaunchError as exc:
            if exc.status is None:
                raise SwitchStartError(
                    f"{self.name}: no gRPC server on {self.grpc_addr} after "
                    f"{self.start_timeout:g}s:\n{self.log_tail()}"
                ) from None
            self.process = None
            raise SwitchStartError(
                f"{self.name}: the switch exited with status {exc.status} before serving "
                f"gRPC on {self.grpc_addr}:\n{self.log_tail()}"
            ) from None

    @classmethod
    def batchStartup(cls, switches: Sequence[P4Switch]) -> Sequence[P4Switch]:  # noqa: N802
        """Mininet's hook after every ``start``: wait for all switches together."""
        deadline = time.monotonic() + max((s.start_timeout for s in switches), default=0.0)
        for switch in switches:
            switch.wait_ready(deadline)
        return switches

    def connected(self) -> bool:
        """True once the switch process serves gRPC (Mininet's ``waitConnected``)."""
        try:
            self.wait_ready(time.monotonic())
        except SwitchStartError:
            return False
        return True

    def stop_process(self, grace_s: float = 5.0) -> int | None:
        """Stop the switch process by pid: SIGTERM, then SIGKILL; exit status, None if killed."""
        process, self.process = self.process, None
        if process is None:
            return None
        return process.stop(grace_s)

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803  (Mininet's signature)
        """Stop the process, then let Mininet delete the interfaces."""
        self.stop_process()
        super().stop(deleteIntfs)

    def terminate(self) -> None:
        """Mininet's last call on a node: make sure the process is gone too."""
        self.stop_process()
        super().terminate()

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the switch's log."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class Bmv2Switch(P4Switch):
    """BMv2's ``simple_switch_grpc`` in place of ``kvfabric switch`` (the VM lab)."""

    binary = "simple_switch_grpc"

    def launch_command(self) -> list[str]:
        """``simple_switch_grpc`` with the same arguments, but the port speeds."""
        return [self.binary, *self.switch_argv(port_speeds=False)]


class LabHost(Host):  # type: ignore[misc]
    """A Mininet host with jumbo frames, offloads and IPv6 off, and a default route.

    ``gateway`` None routes everything on-link (the leaf answers ARP for remote
    addresses: kv_fabric.p4's ``arp_proxy``); an address routes via that gateway.
    """

    def config(
        self, gateway: str | None = None, mtu: int = JUMBO_MTU, **params: Any
    ) -> dict[str, Any]:
        """Mininet's host configuration, then the lab's."""
        result: dict[str, Any] = super().config(**params) or {}
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        intf = self.defaultIntf()
        for i in self.intfList():
            if i.name == "lo":
                continue
            self.cmd("ip link set dev", i.name, "mtu", str(mtu))
            self.cmd("ethtool -K", i.name, " ".join(f"{f} off" for f in OFFLOADS), "2>/dev/null")
        if intf is not None and intf.name != "lo":
            if gateway:
                self.cmd("ip route replace default via", gateway, "dev", intf.name)
            else:
                self.cmd("ip route replace default dev", intf.name)
        return result
