"""What every switch should hold, derived from the topology: a pure function.

The controller never remembers what it wrote; it recomputes what each switch *should*
hold from the fabric model and compares it with what the switch *does* hold
(:mod:`controller.service.southbound.reconcile`). This module is the first half: the intended
entries of one switch, as finsy entities, following the roles of ``p4/README.md``.

Leaf ``L``::

    kv_class      dscp = KV DSCP                -> mark_kv()
    ipv4_route    each local host /32           -> forward(host port)
                  each prefix of another leaf M -> route_ecmp(group(M))
    ecmp_selector member p = set_uplink(p) for every uplink p
                  group(M) = the uplinks whose spine reaches M over cables that are up
    ecmp          ecmp_group = group(M)         -> that selector group
    port_macs     host port: (L's MAC, host MAC); uplink: (L's MAC, spine's MAC)
    arp_proxy     every host network            -> arp_reply(L's MAC)
    kv_range      ecmp_group = group(M), l4_src_port = spine S's range of tag ports
                                                -> pin(uplink of the range's path)
                  for every other leaf M and spine S: the range's path is through S
                  while L-S-M is up, else through a live spine
                  (:meth:`Topology.range_path`); with none, no entry (ECMP)

Spine ``S``: ``kv_class``, ``ipv4_route`` (each leaf's prefixes -> forward(port to it))
and ``port_macs`` of its downlinks.

Both: ``qdepth_buckets`` and ``qdelay_buckets``, the histogram buckets of the queue
telemetry (:data:`DEPTH_BUCKETS`, :data:`DELAY_BUCKETS`), range entries of priority 1.

A leaf's prefixes are its ``subnet`` when the file gives one, else its hosts' /32s.
One ECMP group per destination leaf (``group(M)`` is M's position among the leaves,
plus one) means a dead spine-to-M cable takes that spine out of every leaf's group
for M only, and traffic to the other leaves keeps using it.

Switch MACs are not in the fabric file: :func:`switch_mac` derives a locally
administered one from the device id. The spine ranges are intent: a transfer writes
nothing, its tag port is in its spine's range. Flow pins (``flow_pin``) and the keyless
tables' default action (``switch_config``, the data-plane mode) are run-time state, not
intent; the flow-pin writer and the enforcer own them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Any

import finsy as fy

from controller.config import Mode, Role
from controller.service.southbound.ledger import RangeKey
from controller.topology import PortRef, Topology

KV_CLASS = "kv_class"
IPV4_ROUTE = "ipv4_route"
ECMP = "ecmp"
ECMP_SELECTOR = "ecmp_selector"
PORT_MACS = "port_macs"
ARP_PROXY = "arp_proxy"
KV_RANGE = "kv_range"
FLOW_PIN = "flow_pin"
SWITCH_CONFIG = "switch_config"
QDEPTH_BUCKETS = "qdepth_buckets"
QDELAY_BUCKETS = "qdelay_buckets"

DEPTH_BUCKETS = ((0, 0), (1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 47), (48, 2**19 - 1))
"""``enq_qdepth`` range (packets) of each histogram bucket (p4/README.md, Default buckets)."""
DELAY_BUCKETS = ((0, 99), (100, 499), (500, 999), (1000, 2499), (2500, 4999), (5000, 9999),
                 (10000, 49999), (50000, 2**32 - 1))  # fmt: skip
"""``deq_timedelta`` range (microseconds) of each histogram bucket."""

EMPTY: Mapping[RangeKey, bytes] = {}

MANAGED_TABLES = (
    KV_CLASS,
    IPV4_ROUTE,
    ECMP,
    PORT_MACS,
    ARP_PROXY,
    KV_RANGE,
    QDEPTH_BUCKETS,
    QDELAY_BUCKETS,
)
"""The tables whose every entry is intent: anything else found there is deleted."""


def switch_mac(device_id: int) -> int:
    """The MAC of a switch: ``02:4b:56`` (locally administered, "KV") and 24 bits of id."""
    return (0x024B56 << 24) | (device_id & 0xFFFFFF)


def mac_int(text: str) -> int:
    """``"08:00:00:00:01:01"`` as an integer."""
    return int(text.replace(":", ""), 16)


@dataclass(frozen=True, slots=True)
class Intent:
    """The intended entries of one switch; ``groups`` maps destination leaf to group id."""

    switch: str
    members: tuple[Any, ...]
    groups: tuple[Any, ...]
    entries: tuple[Any, ...]


def group_id(topology: Topology, leaf: str) -> int:
    """The ECMP group (and ``route_ecmp`` argument) of destination leaf ``leaf``."""
    return topology.leaves.index(leaf) + 1


def leaf_prefixes(topology: Topology, leaf: str) -> tuple[IPv4Network, ...]:
    """The prefixes that reach ``leaf``: its subnet, or its hosts' /32s."""
    subnet = topology.config.switch(leaf).subnet
    if subnet is not None:
        return (subnet,)
    return tuple(IPv4Network(f"{h.ipv4}/32") for h in topology.config.hosts_of(leaf))


def uplinks(topology: Topology, leaf: str) -> dict[str, PortRef]:
    """The uplink of ``leaf`` towards each spine, by spine name."""
    return {p.peer: p.ref for p in topology.egress.values() if p.ref.switch == leaf and p.link}


def group_members(topology: Topology, leaf: str, dst_leaf: str) -> tuple[int, ...]:
    """The uplink ports of ``leaf`` that reach ``dst_leaf`` over cables that are up."""
    bad = topology.unusable_links()
    return tuple(
        sorted(
            p.up.port for p in topology.spine_paths(leaf, dst_leaf) if not bad.intersection(p.links)
        )
    )


def intent(
    topology: Topology, switch: str, kv_dscp: int, ledger: Mapping[RangeKey, bytes] = EMPTY
) -> Intent:
    """Everything ``switch`` should hold (see the module docstring); ``ledger`` is the
    metadata of its range entries (:mod:`ledger`)."""
    config = topology.config.switch(switch)
    kv = fy.P4TableEntry(
        KV_CLASS, match=fy.P4TableMatch(dscp=kv_dscp), action=fy.P4TableAction("mark_kv")
    )
    common = (kv, *bucket_entries())
    if config.role is Role.SPINE:
        return Intent(switch, (), (), (*common, *_spine_entries(topology, switch)))
    return _leaf_intent(topology, switch, common, ledger)


def bucket_entries() -> tuple[Any, ...]:
    """The range entries of the two queue histograms' buckets."""
    out: list[Any] = []
    for table, action, field, buckets in (
        (QDEPTH_BUCKETS, "set_qdepth_bucket", "enq_qdepth", DEPTH_BUCKETS),
        (QDELAY_BUCKETS, "set_qdelay_bucket", "deq_timedelta", DELAY_BUCKETS),
    ):
        for bucket, (lo, hi) in enumerate(buckets):
            out.append(
                fy.P4TableEntry(
                    table,
                    match=fy.P4TableMatch({field: f"{lo}...{hi}"}),
                    action=fy.P4TableAction(action, bucket=bucket),
                    priority=1,
                )
            )
    return tuple(out)


def _route(prefix: IPv4Network | str, action: str, **args: int) -> Any:
    return fy.P4TableEntry(
        IPV4_ROUTE,
        match=fy.P4TableMatch(dst_addr=str(prefix)),
        action=fy.P4TableAction(action, **args),
    )


def _macs(port: int, src: int, dst: int) -> Any:
    return fy.P4TableEntry(
        PORT_MACS,
        match=fy.P4TableMatch(egress_port=port),
        action=fy.P4TableAction("rewrite_macs", src_mac=src, dst_mac=dst),
    )


def _spine_entries(topology: Topology, spine: str) -> Iterable[Any]:
    me = switch_mac(topology.config.switch(spine).device_id)
    for leaf in topology.leaves:
        try:
            port = topology.port_towards(spine, leaf)
        except KeyError:
            continue
        for prefix in leaf_prefixes(topology, leaf):
            yield _route(prefix, "forward", port=port.port)
        yield _macs(port.port, me, switch_mac(topology.config.switch(leaf).device_id))


def _leaf_intent(
    topology: Topology, leaf: str, common: tuple[Any, ...], ledger: Mapping[RangeKey, bytes]
) -> Intent:
    cfg = topology.config
    me = switch_mac(cfg.switch(leaf).device_id)
    entries: list[Any] = list(common)
    networks: set[IPv4Network] = set()
    for h in cfg.hosts:
        networks.add(IPv4Network(f"{h.ipv4}/{h.prefix_len}", strict=False))
        if h.leaf == leaf:
            entries.append(_route(f"{h.ipv4}/32", "forward", port=h.port))
            entries.append(_macs(h.port, me, mac_int(h.mac)))
    ups = uplinks(topology, leaf)
    members = tuple(
        fy.P4ActionProfileMember(
            ECMP_SELECTOR, member_id=p.port, action=fy.P4TableAction("set_uplink", port=p.port)
        )
        for p in sorted(ups.values())
    )
    for spine, p in sorted(ups.items()):
        entries.append(_macs(p.port, me, switch_mac(cfg.switch(spine).device_id)))
    groups: list[Any] = []
    for other in topology.leaves:
        if other == leaf:
            continue
        gid = group_id(topology, other)
        groups.append(group(gid, group_members(topology, leaf, other)))
        entries.append(
            fy.P4TableEntry(
                ECMP,
                match=fy.P4TableMatch(ecmp_group=gid),
                action=fy.P4IndirectAction(group_id=gid),
            )
        )
        for prefix in leaf_prefixes(topology, other):
            entries.append(_route(prefix, "route_ecmp", group=gid))
        entries += range_entries(topology, leaf, other, ledger)
    for net in sorted(networks):
        entries.append(
            fy.P4TableEntry(
                ARP_PROXY,
                match=fy.P4TableMatch(tpa=str(net)),
                action=fy.P4TableAction("arp_reply", mac=me),
            )
        )
    return Intent(leaf, members, tuple(groups), tuple(entries))


def range_entries(
    topology: Topology, leaf: str, dst_leaf: str, ledger: Mapping[RangeKey, bytes] = EMPTY
) -> list[Any]:
    """The ``kv_range`` entries of ``leaf`` for destination ``dst_leaf``: each spine's
    range of tag ports to the uplink of the path that range takes now, with the
    ledger's metadata."""
    gid = group_id(topology, dst_leaf)
    out = (
        range_entry(topology, leaf, dst_leaf, s, ledger.get((gid, s), b"")) for s in topology.spines
    )
    return [e for e in out if e is not None]


def range_entry(topology: Topology, leaf: str, dst_leaf: str, spine: str, meta: bytes) -> Any:
    """The ``kv_range`` entry of ``leaf`` for ``spine``'s range towards ``dst_leaf`` (None:
    no live path, no entry)."""
    path = topology.range_path(leaf, dst_leaf, spine)
    if path is None:
        return None
    first, last = topology.config.controller.kv_class.spine_ranges(topology.spines)[spine]
    return fy.P4TableEntry(
        KV_RANGE,
        match=fy.P4TableMatch(
            ecmp_group=group_id(topology, dst_leaf), l4_src_port=f"{first}...{last}"
        ),
        action=fy.P4TableAction("pin", port=path.up.port),
        priority=1,
        metadata=meta,
    )


def group(gid: int, ports: Iterable[int]) -> Any:
    """The selector group ``gid`` over the members (uplink ports) ``ports``."""
    return fy.P4ActionProfileGroup(
        ECMP_SELECTOR, group_id=gid, members=[fy.P4Member(p, weight=1) for p in ports]
    )


def mode_action(mode: Mode, timeout_s: float, generation: int) -> Any:
    """The default entry of ``switch_config`` that puts a leaf in ``mode``."""
    if mode is Mode.FLOWLET:
        action = fy.P4TableAction(
            "flowlet_mode", timeout_us=max(1, round(timeout_s * 1e6)), generation=generation % 256
        )
    elif mode is Mode.KV_AWARE:
        action = fy.P4TableAction("kv_aware_mode")
    else:
        action = fy.P4TableAction("ecmp_mode")
    return fy.P4TableEntry(SWITCH_CONFIG, is_default_action=True, action=action)


def flow_pin_entry(
    src: IPv4Address,
    dst: IPv4Address,
    protocol: int,
    ports: tuple[int, int],
    *,
    port: int,
    meta: bytes,
) -> Any:
    """The ``flow_pin`` entry that sends the 5-tuple (src, dst, protocol, ports) out ``port``."""
    return fy.P4TableEntry(
        FLOW_PIN,
        match=fy.P4TableMatch(
            src_addr=str(src),
            dst_addr=str(dst),
            protocol=protocol,
            l4_src_port=ports[0],
            l4_dst_port=ports[1],
        ),
        action=fy.P4TableAction("pin", port=port),
        metadata=meta,
    )
