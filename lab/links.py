"""Links of the emulated fabric: veth pairs shaped with htb, jumbo frames, no offloads.

Mininet's :class:`~mininet.link.TCIntf` shapes an interface's egress with an htb
class (``bw`` in Mbit/s) and sets a queue limit, delay and loss with netem. This
kernel has htb and tbf but *no netem*, so :class:`ShapedIntf` overrides the one
method that would call it (``delayCmds``): the queue limit becomes a ``pfifo`` under
the htb class, and a request for delay, jitter or loss is an error instead of a
silently unshaped link. Latency and loss therefore cannot be emulated in this lab;
what it emulates is bandwidth and queueing.

Each interface also gets MTU 9000 (jumbo frames cut the packet rate that the Python
switches must carry six-fold at the same bit rate) and has its checksum and
segmentation offloads turned off: a packet socket on an interface with offloads sees
frames the wire never carries (64 KiB super-frames, partial checksums).

Link probes (the controller's audit, EtherType 0x88B5) have a class of their own,
as a real switch queues the frames its CPU sends (LLDP, BFD) in a protected
strict-priority class: behind a full data queue they would be tail-dropped, and a
working, busy cable would look dead to the audit. A u32 filter on the frame's
EtherType sends them to class 5:2, with its own token bucket and its own pfifo, so
they never wait behind bulk traffic nor share its queue limit. The class is capped
at ``PROBE_RATE_KBIT`` (probes take about 5 kb/s per port: one 60-byte frame per
100 ms round), so it cannot carry data past the link rate. The P4 program cannot
do this itself: the softswitch hands every packet to its traffic manager at one
priority, and the queue that fills is the kernel's, below the switch
(p4/README.md, "Probes and queues").

The tc tree of a shaped interface, both ends of every link::

    root 5:  htb default 1
      class 5:1  htb rate <bw>Mbit burst 15k cburst 15k quantum 9014
        10:  pfifo limit <max_queue_size>
      class 5:2  htb rate 512Kbit burst 15k cburst 15k quantum 9014 prio 0
        20:  pfifo limit 100
      filter protocol 0x88b5 u32 (every frame of that EtherType) -> 5:2
"""

from __future__ import annotations

from typing import Any

from mininet.link import TCIntf, TCLink

from experiment.errors import FabricError

JUMBO_MTU = 9000
PROBE_ETHERTYPE = 0x88B5
"""The link probes' EtherType (controller/service/southbound/prober.py): their own htb class."""
PROBE_RATE_KBIT = 512
PROBE_QUEUE = 100
OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro", "lro", "rxvlan", "txvlan")
"""ethtool feature names turned off on every lab interface."""

NO_NETEM = (
    "this kernel has no netem: link delay, jitter and loss cannot be emulated in this lab "
    "(only rates, with htb, and queue sizes, with pfifo)"
)


class ShapedIntf(TCIntf):  # type: ignore[misc]  # Mininet has no type stubs
    """A TCIntf that shapes with htb + pfifo (never netem), MTU 9000, offloads off."""

    def config(self, mtu: int = JUMBO_MTU, **params: Any) -> dict[str, Any]:
        """Mininet's TCIntf.config, plus MTU and every offload off."""
        params.update(gro=False, txo=False, rxo=False)
        result: dict[str, Any] = super().config(**params) or {}
        self.cmd("ip link set dev", self.name, "mtu", str(mtu))
        self.cmd("ethtool -K", self.name, " ".join(f"{f} off" for f in OFFLOADS), "2>/dev/null")
        return result

    protected_ethertypes: tuple[int, ...] = (PROBE_ETHERTYPE,)
    """EtherTypes that bypass the data queue (the module docstring); () for none."""

    def bwCmds(self, *args: Any, **kwargs: Any) -> tuple[list[str], str]:  # noqa: N802
        """Mininet's htb commands, with a quantum and a ceil burst of jumbo frames,
        and the protected class of the link probes.

        htb derives a class's quantum from its rate (rate / r2q): 250 kB at 20 Mb/s,
        which the kernel rejects as too big; one frame per round is what one class
        needs. The ceil burst defaults to one 1500-byte frame; it is set to the burst.
        """
        cmds, parent = super().bwCmds(*args, **kwargs)
        extra = f" cburst 15k quantum {JUMBO_MTU + 14}"
        cmds = [c + extra if " htb rate " in c else c for c in cmds]
        if any(" htb default 1" in c for c in cmds):
            cmds += protected_class_cmds(self.protected_ethertypes)
        return cmds, parent

    @staticmethod
    def delayCmds(  # noqa: N802  (Mininet's method name)
        parent: str,
        delay: str | None = None,
        jitter: str | None = None,
        loss: float | None = None,
        max_queue_size: int | None = None,
    ) -> tuple[list[str], str]:
        """The queue limit as a pfifo under ``parent``; delay, jitter or loss: an error."""
        if delay or jitter or loss:
            raise FabricError(NO_NETEM)
        if max_queue_size is None:
            return [], parent
        cmd = "%s qdisc add dev %s " + parent + f" handle 10: pfifo limit {int(max_queue_size)}"
        return [cmd], " parent 10:1 "


def protected_class_cmds(ethertypes: tuple[int, ...]) -> list[str]:
    """tc commands (Mininet's ``'%s ... dev %s'`` form) of the protected class 5:2."""
    if not ethertypes:
        return []
    cmds = [
        f"%s class add dev %s parent 5:0 classid 5:2 htb rate {PROBE_RATE_KBIT}Kbit burst 15k"
        f" cburst 15k quantum {JUMBO_MTU + 14} prio 0",
        f"%s qdisc add dev %s parent 5:2 handle 20: pfifo limit {PROBE_QUEUE}",
    ]
    for k, ethertype in enumerate(ethertypes):
        cmds.append(
            f"%s filter add dev %s parent 5:0 protocol {ethertype:#06x} prio {k + 1}"
            " u32 match u32 0 0 flowid 5:2"
        )
    return cmds


class ShapedLink(TCLink):  # type: ignore[misc]
    """A veth pair with a :class:`ShapedIntf` at each end (same rate both ways)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls1", ShapedIntf)
        kwargs.setdefault("cls2", ShapedIntf)
        super().__init__(*args, **kwargs)
