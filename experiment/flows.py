"""The experiment's flows: a 5-tuple, the KV receiver's port, the source ports left to ECMP.

Both engines hash the same 5-tuples the same way (:mod:`experiment.ecmp`), so a
transfer left to ECMP takes the same spine in the lab and in the simulator: its
destination port is :data:`RECEIVER_PORT` and its source port one of
:data:`ECMP_PORTS`, drawn per arrival (:mod:`experiment.arrivals`).
"""

from __future__ import annotations

from dataclasses import dataclass

RECEIVER_PORT = 7000
"""The TCP port every KV receiver listens on."""

ECMP_PORTS = tuple(
    p
    for p in range(1024, 65536)
    if not 33000 <= p < 41000 and not 5201 <= p < 5400 and p != RECEIVER_PORT
)
"""Source ports of transfers left to ECMP: nearly all of them, so that kv_fabric.p4's CRC-16
ECMP hash spreads them evenly (a narrow range reaches only some uplinks: CRC is linear);
the background's and the KV tags' ranges, iperf3's and the receiver's ports are left out."""


@dataclass(frozen=True, slots=True)
class FlowKey:
    """A flow's 5-tuple, with hosts by name."""

    src: str
    dst: str
    protocol: str  # "tcp" | "udp"
    src_port: int
    dst_port: int
