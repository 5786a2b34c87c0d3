"""Cross-reference checks of a fabric: what no single key can tell on its own.

They run after every section parsed, on the dataclasses and the nodes they came from
(:class:`Placed`), in the order a reader would fix them: switches, links, hosts.

- switch and host names are unique (they share one namespace: the topology graph);
- a P4Runtime target (address and device id) belongs to one switch;
- the fabric has at least one leaf and one spine; leaf subnets do not overlap;
- a link joins a leaf and a spine that exist, on ports nothing else uses, and every
  leaf has exactly one link to every spine (all missing pairs are listed);
- a host sits on a free port of a leaf, inside the leaf's subnet if it has one, and
  its IPv4 and MAC addresses are its own. A host without a capacity runs at its
  leaf's fastest uplink.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from controller.config.located import Node
from controller.config.model import HostConfig, LinkConfig, Role, SwitchConfig
from controller.errors import ConfigError
from kvfabric.suggest import did_you_mean

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Placed(Generic[T]):
    """A parsed value with the node it came from and the nodes of its fields."""

    value: T
    node: Node
    fields: dict[str, Node] = field(default_factory=dict)

    def at(self, key: str) -> Node:
        """The node of field ``key``, or the value's own node when it has none."""
        return self.fields.get(key, self.node)

    def error(self, key: str, message: str) -> ConfigError:
        """A :class:`ConfigError` located at field ``key``."""
        return self.at(key).error(message)


def check_fabric(
    switches: Sequence[Placed[SwitchConfig]],
    hosts: Sequence[Placed[HostConfig]],
    links: Sequence[Placed[LinkConfig]],
    switches_node: Node,
    links_node: Node,
) -> tuple[HostConfig, ...]:
    """Raise the first cross-reference problem; return the hosts with capacities filled."""
    by_name = _check_switches(switches, switches_node)
    ports: dict[tuple[str, int], str] = {}
    uplink_bps = _check_links(links, by_name, ports, links_node)
    return _check_hosts(hosts, by_name, ports, uplink_bps)


def _check_switches(
    switches: Sequence[Placed[SwitchConfig]], switches_node: Node
) -> dict[str, Placed[SwitchConfig]]:
    by_name: dict[str, Placed[SwitchConfig]] = {}
    targets: dict[tuple[str, int], Placed[SwitchConfig]] = {}
    for s in switches:
        sw = s.value
        if sw.name in by_name:
            first = by_name[sw.name]
            raise s.error("name", f"{sw.name!r} is already the name of {first.node.path}")
        by_name[sw.name] = s
        target = (sw.p4runtime, sw.device_id)
        if target in targets:
            other = targets[target]
            raise s.error(
                "device_id",
                f"device {sw.device_id} at {sw.p4runtime} is already "
                f"{other.node.path} ({other.value.name})",
            )
        targets[target] = s
    roles = {s.value.role for s in switches}
    for role in (Role.LEAF, Role.SPINE):
        if role not in roles:
            raise switches_node.error(
                f"a leaf-spine fabric needs at least one leaf and one spine; found no {role}"
            )
    leaves = [s for s in switches if s.value.subnet is not None]
    for i, s in enumerate(leaves):
        for other in leaves[:i]:
            assert s.value.subnet is not None and other.value.subnet is not None
            if s.value.subnet.overlaps(other.value.subnet):
                raise s.error(
                    "subnet",
                    f"{s.value.subnet} overlaps {other.value.name}'s subnet {other.value.subnet}",
                )
    return by_name


def _known_switch(
    placed: Placed[T], key: str, name: str, by_name: dict[str, Placed[SwitchConfig]]
) -> SwitchConfig:
    if name not in by_name:
        raise placed.error(key, f"no switch named {name!r}{did_you_mean(name, by_name)}")
    return by_name[name].value


def _check_links(
    links: Sequence[Placed[LinkConfig]],
    by_name: dict[str, Placed[SwitchConfig]],
    ports: dict[tuple[str, int], str],
    links_node: Node,
) -> dict[str, int]:
    """Check every link; fill ``ports`` with their users; return each leaf's fastest uplink."""
    pairs: dict[frozenset[str], Placed[LinkConfig]] = {}
    uplink_bps: dict[str, int] = {}
    for placed in links:
        link = placed.value
        a = _known_switch(placed, "a.switch", link.a.switch, by_name)
        b = _known_switch(placed, "b.switch", link.b.switch, by_name)
        if a.name == b.name:
            raise placed.error("b.switch", f"a link joins two switches; both ends are {a.name!r}")
        if a.role is b.role:
            raise placed.error(
                "b.switch",
                f"links join a leaf and a spine; {a.name!r} and {b.name!r} are both "
                + ("leaves" if a.role is Role.LEAF else "spines"),
            )
        for side, end in (("a", link.a), ("b", link.b)):
            user = ports.get((end.switch, end.port))
            if user is not None:
                raise placed.error(
                    f"{side}.port", f"port {end.port} of {end.switch} is already used by {user}"
                )
            ports[(end.switch, end.port)] = placed.node.path
        pair = frozenset((a.name, b.name))
        if pair in pairs:
            raise placed.node.error(
                f"{a.name} and {b.name} are already linked by {pairs[pair].node.path}; "
                "kvfabric takes exactly one link between a leaf and a spine"
            )
        pairs[pair] = placed
        leaf = a if a.role is Role.LEAF else b
        uplink_bps[leaf.name] = max(uplink_bps.get(leaf.name, 0), link.capacity_bps)
    leaves = [s.value.name for s in by_name.values() if s.value.role is Role.LEAF]
    spines = [s.value.name for s in by_name.values() if s.value.role is Role.SPINE]
    missing = [f"{lf}-{s}" for lf in leaves for s in spines if frozenset((lf, s)) not in pairs]
    if missing:
        shown = ", ".join(missing[:8]) + (
            f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        )
        raise links_node.error(f"every leaf needs a link to every spine; missing: {shown}")
    return uplink_bps


def _check_hosts(
    hosts: Sequence[Placed[HostConfig]],
    by_name: dict[str, Placed[SwitchConfig]],
    ports: dict[tuple[str, int], str],
    uplink_bps: dict[str, int],
) -> tuple[HostConfig, ...]:
    names: dict[str, str] = {}
    ips: dict[object, Placed[HostConfig]] = {}
    macs: dict[str, Placed[HostConfig]] = {}
    out: list[HostConfig] = []
    for placed in hosts:
        host = placed.value
        if host.name in by_name:
            raise placed.error(
                "name", f"{host.name!r} is already the name of {by_name[host.name].node.path}"
            )
        if host.name in names:
            raise placed.error("name", f"{host.name!r} is already the name of {names[host.name]}")
        names[host.name] = placed.node.path
        leaf = _known_switch(placed, "leaf", host.leaf, by_name)
        if leaf.role is not Role.LEAF:
            raise placed.error("leaf", f"{leaf.name!r} is a spine; hosts attach to leaves")
        user = ports.get((leaf.name, host.port))
        if user is not None:
            raise placed.error("port", f"port {host.port} of {leaf.name} is already used by {user}")
        ports[(leaf.name, host.port)] = placed.node.path
        if leaf.subnet is not None and host.ipv4 not in leaf.subnet:
            raise placed.error("ipv4", f"{host.ipv4} is outside {leaf.name}'s subnet {leaf.subnet}")
        if host.ipv4 in ips:
            other = ips[host.ipv4]
            raise placed.error(
                "ipv4", f"{host.ipv4} is already used by {other.node.path} ({other.value.name})"
            )
        ips[host.ipv4] = placed
        if host.mac in macs:
            other = macs[host.mac]
            raise placed.error(
                "mac", f"{host.mac} is already used by {other.node.path} ({other.value.name})"
            )
        macs[host.mac] = placed
        if host.capacity_bps == 0:
            host = replace(host, capacity_bps=uplink_bps[leaf.name])
        out.append(host)
    return tuple(out)
