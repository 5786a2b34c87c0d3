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

The tc tree of a shaped interface, both ends of every link::

    root 5:  htb default 1
      class 5:1  htb rate <bw>Mbit burst 15k cburst 15k quantum 9014
        10:  pfifo limit <max_queue_size>
"""

from __future__ import annotations

from typing import Any

from mininet.link import TCIntf, TCLink

from lab.errors import FabricError

JUMBO_MTU = 9000
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

    def bwCmds(self, *args: Any, **kwargs: Any) -> tuple[list[str], str]:  # noqa: N802
        """Mininet's htb commands, with a quantum and a ceil burst of jumbo frames.

        htb derives a class's quantum from its rate (rate / r2q): 250 kB at 20 Mb/s,
        which the kernel rejects as too big; one frame per round is what one class
        needs. The ceil burst defaults to one 1500-byte frame; it is set to the burst.
        """
        cmds, parent = super().bwCmds(*args, **kwargs)
        extra = f" cburst 15k quantum {JUMBO_MTU + 14}"
        cmds = [c + extra if " htb rate " in c else c for c in cmds]
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


class ShapedLink(TCLink):  # type: ignore[misc]
    """A veth pair with a :class:`ShapedIntf` at each end (same rate both ways)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls1", ShapedIntf)
        kwargs.setdefault("cls2", ShapedIntf)
        super().__init__(*args, **kwargs)
