"""The fabric as a Mininet topology: data only, built from the controller's fabric model.

:class:`FabricTopo` turns a validated :class:`~controller.config.FabricConfig` (the
file the controller reads, or ``controller.config.generate.leaf_spine`` parameters)
into Mininet's graph: a switch node per leaf and spine carrying its device id and
P4Runtime address, a host node per host with its IPv4 address, prefix and MAC, and
a link per cable with the fabric's port numbers at both ends. Every link carries
its shaping: ``bw`` (Mbit/s, from the capacity), ``max_queue_size`` (packets) and
``mtu``; which classes realise nodes and links is the network's choice (switch,
host and link classes are injected, see :mod:`lab.net`).

Interface names
---------------
Switch nodes live in the root network namespace, where Mininet deletes any existing
interface of the name it is about to create. Switch-side interfaces are therefore
named ``<prefix>s<device id>p<port>`` with a prefix unique to this process
(``kvl`` and three base-36 digits of the pid), never a name another user of the
machine could hold; host-side interfaces are ``<host>-eth0`` inside the host's own
namespace. :meth:`FabricTopo.intf` maps a switch port to its interface name, which
is how the lab reads counters and takes cables down.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mininet.topo import Topo

from controller.config import FabricConfig
from experiment.errors import FabricError
from lab.links import JUMBO_MTU

IFNAMSIZ = 15
MAX_LAB_BPS = 1_000_000_000
"""Mininet's TCIntf shapes up to 1000 Mbit/s; lab fabrics run at 10-20 Mb/s."""
DEFAULT_QUEUE = 10
"""Packets per shaped interface: 36 ms of 9000-byte frames at 20 Mb/s, several times a lab
path's bandwidth-delay product. A switch process sends into the queue through a packet
socket whose send buffer (``net.core.wmem_default``, 208 KiB here) holds about 12 jumbo
frames: a deeper tc queue would never fill, and the switch would drop the excess itself,
where no counter shows it (see :func:`socket_queue_limit`)."""
JUMBO_TRUESIZE = 17_000
"""Kernel memory a queued 9000-byte frame is charged (skb truesize, rounded up)."""


def socket_queue_limit() -> int:
    """Jumbo frames a switch's packet socket can have queued with the default send buffer."""
    try:
        with open("/proc/sys/net/core/wmem_default") as f:
            return int(f.read()) // JUMBO_TRUESIZE
    except (OSError, ValueError):
        return 12


def default_prefix(pid: int | None = None) -> str:
    """``kvl`` and three base-36 digits of the pid: unique to this process on the machine."""
    n = (os.getpid() if pid is None else pid) % 36**3
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "kvl" + "".join(digits[(n // 36**k) % 36] for k in (2, 1, 0))


@dataclass(frozen=True, slots=True)
class Cable:
    """A leaf-spine cable with the interface names of both ends."""

    leaf: str
    leaf_port: int
    leaf_intf: str
    spine: str
    spine_port: int
    spine_intf: str
    bps: int


class FabricTopo(Topo):  # type: ignore[misc]  # Mininet has no type stubs
    """Mininet's graph of a fabric; see the module docstring."""

    def build(
        self,
        fabric: FabricConfig,
        *,
        queue_packets: int = DEFAULT_QUEUE,
        prefix: str | None = None,
        gateway: str | None = None,
        mtu: int = JUMBO_MTU,
        link_cls: type | None = None,
    ) -> None:
        """Add the fabric's switches, hosts and cables (Mininet calls this from ``__init__``)."""
        self.fabric = fabric
        self.prefix = prefix or default_prefix()
        self.queue_packets = queue_packets
        self.switch_intfs: dict[tuple[str, int], str] = {}
        self.cables: dict[tuple[str, str], Cable] = {}
        self.host_intfs: dict[str, str] = {}
        extra: dict[str, Any] = {"cls": link_cls} if link_cls is not None else {}
        for sw in fabric.switches:
            self.addSwitch(
                sw.name,
                device_id=sw.device_id,
                grpc_addr=sw.p4runtime,
                role=str(sw.role),
            )
        for h in fabric.hosts:
            self.addHost(
                h.name,
                ip=f"{h.ipv4}/{h.prefix_len}",
                mac=h.mac,
                gateway=gateway,
                mtu=mtu,
            )
            bps = h.capacity_bps or max((c.capacity_bps for c in fabric.links), default=0)
            host_intf = f"{h.name}-eth0"
            if len(host_intf) > IFNAMSIZ:
                raise FabricError(f"host name {h.name!r} is too long for an interface name")
            self.host_intfs[h.name] = host_intf
            self.addLink(
                h.name,
                h.leaf,
                port1=0,
                port2=h.port,
                intfName1=host_intf,
                intfName2=self.intf(h.leaf, h.port),
                **self._shaping(bps, f"{h.name}'s link", mtu),
                **extra,
            )
        for link in fabric.links:
            a, b = link.a, link.b
            if fabric.switch(a.switch).role != "leaf":
                a, b = b, a
            cable = Cable(
                a.switch,
                a.port,
                self.intf(a.switch, a.port),
                b.switch,
                b.port,
                self.intf(b.switch, b.port),
                link.capacity_bps,
            )
            self.cables[(a.switch, b.switch)] = cable
            self.addLink(
                a.switch,
                b.switch,
                port1=a.port,
                port2=b.port,
                intfName1=cable.leaf_intf,
                intfName2=cable.spine_intf,
                **self._shaping(link.capacity_bps, f"link {a}-{b}", mtu),
                **extra,
            )

    def intf(self, switch: str, port: int) -> str:
        """The interface name of ``switch``'s port ``port`` (in the root namespace)."""
        key = (switch, port)
        if key not in self.switch_intfs:
            device_id = self.fabric.switch(switch).device_id
            name = f"{self.prefix}s{device_id}p{port}"
            if len(name) > IFNAMSIZ:
                raise FabricError(
                    f"interface name {name!r} of {switch}:{port} is longer than {IFNAMSIZ} "
                    "characters: use a shorter prefix or smaller device ids"
                )
            self.switch_intfs[key] = name
        return self.switch_intfs[key]

    def cable(self, leaf: str, spine: str) -> Cable:
        """The cable between ``leaf`` and ``spine``."""
        try:
            return self.cables[(leaf, spine)]
        except KeyError:
            raise FabricError(f"fabric {self.fabric.name!r} has no cable {leaf}-{spine}") from None

    def _shaping(self, bps: int, what: str, mtu: int) -> dict[str, Any]:
        if bps <= 0:
            raise FabricError(f"{what} has no capacity to shape it to")
        if bps > MAX_LAB_BPS:
            raise FabricError(
                f"{what} runs at {bps / 1e9:g} Gb/s; the lab shapes links to at most 1 Gb/s "
                "(Python switches carry 10-20 Mb/s): scale the fabric to lab rates "
                "(experiment.fabric.lab_fabric(..., link_bps=20_000_000))"
            )
        return {"bw": bps / 1e6, "max_queue_size": self.queue_packets, "mtu": mtu}
