"""Which spine ECMP gives a flow: kv_fabric.p4's selector hash, computed ahead of time.

p4/README.md documents the data plane's choice exactly: the ``ecmp_selector`` hashes
(IPv4 source, IPv4 destination, protocol, L4 source port, L4 destination port, flowlet
salt), packed most significant bit first as BMv2 packs a field list, with CRC-16/ARC,
and takes member ``hash % n`` of the group's ``n`` members in creation order. Outside
flowlet mode the salt is 0; a slot's first flowlet uses salt ``0x9E37``.

:class:`EcmpOracle` is that computation for a fabric: a :data:`~lab.traffic.PathOracle`
that lets background flows be *steered by choice of source port* instead of being
pinned, and that tells which spine each ECMP transfer took. It assumes, as the
controller does, that each leaf's group lists its uplinks in port order (give
``members`` otherwise).

**Live members.** The controller keeps one group per destination leaf, over the uplinks
whose spine reaches that leaf over cables that are up
(controller/service/southbound/intent.py), and the switch orders a group's members by
when the *member* was created, not the group. A dead cable ``(L, S)`` takes ``S`` out of
``L``'s groups and out of every other leaf's group towards ``L``, and every flow in
those groups re-hashes over the ``n - 1`` spines left (most move, not only those of the
dead spine); when it comes back, the order is the port order again. ``EcmpOracle(fabric,
down={(leaf, spine)})`` computes that: the groups once the controller has taken the
``down`` cables out.

By default the oracle answers only when the flow lands on the same spine with salt 0
and with the first flowlet's salt, so a background flow stays put in ECMP and in
flowlet mode alike; a slot reused by an earlier flowlet run can still move it, which
the run's background check reports.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from ipaddress import IPv4Address

from controller.config import FabricConfig
from experiment.flows import FlowKey

FLOWLET_STEP = 0x9E37
PROTOCOLS = {"tcp": 6, "udp": 17}


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC16_TABLE = _crc16_table()


def crc16_arc(data: bytes, crc: int = 0) -> int:
    """CRC-16/ARC (BMv2's ``crc16``): reflected polynomial 0xA001, init 0, no final xor.

    Byte at a time through a 256-entry table (the simulator hashes millions of flows).
    ``crc`` continues from the CRC of earlier bytes: ``crc16_arc(a + b) ==
    crc16_arc(b, crc16_arc(a))``.
    """
    table = _CRC16_TABLE
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc


def pack(fields: Sequence[tuple[int, int]]) -> bytes:
    """``(value, width)`` fields MSB first without gaps, zero-padded to a whole byte."""
    acc = nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def selector_hash(
    src: IPv4Address, dst: IPv4Address, protocol: int, sport: int, dport: int, *, salt: int = 0
) -> int:
    """The ``ecmp_selector`` hash of a packet."""
    return crc16_arc(
        pack([(int(src), 32), (int(dst), 32), (protocol, 8), (sport, 16), (dport, 16), (salt, 16)])
    )


def uplink_order(fabric: FabricConfig, leaf: str) -> list[str]:
    """The spines of ``leaf``'s ECMP group in member order: by the leaf's uplink port.

    The controller creates one selector member per uplink, ``member_id`` = port, in port
    order (controller/service/southbound/intent.py), and BMv2 orders a group's members by creation.
    """
    ports = []
    for link in fabric.links:
        for near, far in ((link.a, link.b), (link.b, link.a)):
            if near.switch == leaf:
                ports.append((near.port, far.switch))
    return [spine for _, spine in sorted(ports)]


class EcmpOracle:
    """The spine a flow's packets take up from its source leaf (see the module docstring)."""

    def __init__(
        self,
        fabric: FabricConfig,
        *,
        members: Mapping[str, Sequence[str]] | None = None,
        salts: Sequence[int] = (0, FLOWLET_STEP),
        down: Collection[tuple[str, str]] = (),
    ) -> None:
        self.hosts = {h.name: h for h in fabric.hosts}
        self.members = {leaf.name: uplink_order(fabric, leaf.name) for leaf in fabric.leaves}
        if members is not None:
            self.members.update({k: list(v) for k, v in members.items()})
        self.salts = tuple(salts)
        self.down = frozenset(down)

    def group(self, src_leaf: str, dst_leaf: str) -> list[str]:
        """The live members of ``src_leaf``'s group towards ``dst_leaf``, in member order."""
        return [
            spine
            for spine in self.members[src_leaf]
            if (src_leaf, spine) not in self.down and (dst_leaf, spine) not in self.down
        ]

    def spine(self, key: FlowKey, salt: int = 0) -> str:
        """The spine ECMP picks for ``key`` with ``salt``."""
        src, dst = self.hosts[key.src], self.hosts[key.dst]
        group = self.group(src.leaf, dst.leaf)
        if not group:
            raise ValueError(f"{src.leaf} has no live uplink towards {dst.leaf}")
        h = selector_hash(
            src.ipv4, dst.ipv4, PROTOCOLS[key.protocol], key.src_port, key.dst_port, salt=salt
        )
        return group[h % len(group)]

    def __call__(self, key: FlowKey) -> str | None:
        """The spine, when every salt agrees on it; None otherwise."""
        choices = {self.spine(key, salt) for salt in self.salts}
        return choices.pop() if len(choices) == 1 else None
