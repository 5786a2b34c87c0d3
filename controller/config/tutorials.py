"""Import p4lang/tutorials' ``topology.json`` into the fabric model.

The tutorials describe a Mininet network for ``utils/run_exercise.py``::

    {"hosts":    {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
                         "commands": ["route add default gw 10.0.1.10 dev eth0"]}},
     "switches": {"s1": {"runtime_json": "pod-topo/s1-runtime.json"}},
     "links":    [["h1", "s1-p1"], ["s1-p3", "s3-p1", "0ms", 20]]}

A link is ``[node1, node2, latency?, bandwidth?]``; a switch end is ``sN-pK`` (port K),
a host end is the host's name; bandwidth is in Mbit/s (Mininet's ``TCLink bw``).
The file has no roles, pools or P4Runtime addresses, so the import decides them as
``run_exercise.py`` and a leaf-spine reading would:

- a switch with hosts is a leaf, one without is a spine;
- switches get device ids 0, 1, ... and P4Runtime ports 50051, 50052, ... in file
  order (``P4RuntimeSwitch``'s defaults);
- hosts are in pool ``other`` unless ``pools`` says otherwise; links without a
  bandwidth run at ``default_bps``.

The result then goes through the same cross-reference checks as a YAML fabric, with
errors located in the JSON file (``links[2][1]``, ``hosts.h1.ip``). The host
``commands`` are accepted and ignored: kvfabric's labs configure hosts themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from controller.config import located, model
from controller.config.checks import Placed, check_fabric
from controller.config.generate import local_switch
from controller.config.located import Node, compose
from controller.errors import ConfigError

_SWITCH_END = re.compile(r"^(?P<switch>[^-]+)-p(?P<port>\d+)$")
_SWITCH_KEYS = ["runtime_json", "program", "cli_input", "cpu_port", "priority_queues"]
GRPC_BASE_PORT = 50051


def parse_tutorials_topology(
    text: str,
    file: str = "topology.json",
    pools: Mapping[str, model.Pool] | None = None,
    default_bps: int = 20_000_000,
) -> model.FabricConfig:
    """The fabric of a tutorials ``topology.json`` text (see the module docstring)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(file, "", f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    # Valid JSON is YAML once tabs (only ever whitespace in JSON) are spaces; YAML's
    # nodes give the line numbers.
    root = compose(file, text.replace("\t", " "))
    top = root.fields(["hosts", "switches", "links"])
    switch_nodes = top["switches"].entries()
    for _, node in switch_nodes:
        node.fields([], _SWITCH_KEYS)
    names = [n for n, _ in switch_nodes]
    host_entries = top["hosts"].entries()
    host_names = {n for n, _ in host_entries}
    attached: dict[str, tuple[Node, str, int]] = {}
    fabric_links: list[tuple[Node, model.LinkEnd, model.LinkEnd, int]] = []
    for link in top["links"].items():
        ends, bps = _link_fields(link, default_bps)
        kinds = [_end(e, names, host_names) for e in ends]
        host_ends = [k for k in kinds if isinstance(k, str)]
        if len(host_ends) == 2:
            raise link.error("a link joins a host and a switch or two switches, not two hosts")
        if len(host_ends) == 1:
            host = host_ends[0]
            sw = next(k for k in kinds if isinstance(k, model.LinkEnd))
            if host in attached:
                raise link.error(f"host {host!r} is already attached by {attached[host][0].path}")
            attached[host] = (link, sw.switch, sw.port)
            continue
        a, b = kinds
        assert isinstance(a, model.LinkEnd) and isinstance(b, model.LinkEnd)
        fabric_links.append((link, a, b, bps))
    leaves = {sw for _, sw, _ in attached.values()}
    if not set(names) - leaves:
        raise top["switches"].error(
            "no spine: kvfabric reads a switch with hosts as a leaf and one without as a "
            "spine, and every switch here has hosts"
        )
    switches = [
        Placed(
            local_switch(
                name, model.Role.LEAF if name in leaves else model.Role.SPINE, i, GRPC_BASE_PORT
            ),
            node,
        )
        for i, (name, node) in enumerate(switch_nodes)
    ]
    links: list[Placed[model.LinkConfig]] = []
    for node, a, b, bps in fabric_links:
        fields = {
            "a.switch": node.items()[0],
            "a.port": node.items()[0],
            "b.switch": node.items()[1],
            "b.port": node.items()[1],
        }
        links.append(Placed(model.LinkConfig(a, b, bps), node, fields))
    hosts = [_host(name, node, attached, pools or {}, default_bps) for name, node in host_entries]
    checked = check_fabric(switches, hosts, links, top["switches"], top["links"])
    return model.FabricConfig(
        name=Path(file).parent.name or Path(file).stem,
        switches=tuple(s.value for s in switches),
        hosts=checked,
        links=tuple(link.value for link in links),
        source=file,
    )


def _link_fields(link: Node, default_bps: int) -> tuple[list[Node], int]:
    parts = link.items()
    if not 2 <= len(parts) <= 4:
        raise link.error("expected [node1, node2, latency?, bandwidth?]")
    if len(parts) > 2 and not parts[2].is_scalar:
        raise parts[2].error(f"expected a latency such as '0ms' or 5, got {parts[2].got()}")
    bps = default_bps
    if len(parts) == 4 and not parts[3].is_null:
        mbps = located.number(parts[3], 0.001)
        bps = round(mbps * 1_000_000)
    return parts[:2], bps


def _end(node: Node, switches: list[str], hosts: set[str]) -> model.LinkEnd | str:
    """A switch port end (``s1-p3``) as a model.LinkEnd, or a host end as the host's name."""
    text = node.text("a node name such as 'h1' or 's1-p1'")
    m = _SWITCH_END.match(text)
    if m is None:
        if text in hosts:
            return text
        if text in switches:
            raise node.error(f"a switch end names its port: expected '{text}-pN', got {text!r}")
        raise node.error(f"no host named {text!r}, and not a switch port such as 's1-p1'")
    port = int(m.group("port"))
    if not 1 <= port <= model.MAX_PORT:
        raise node.error(f"expected a port 1..{model.MAX_PORT} in {text!r}, got {port}")
    return model.LinkEnd(m.group("switch"), port)


def _host(
    name: str,
    node: Node,
    attached: dict[str, tuple[Node, str, int]],
    pools: Mapping[str, model.Pool],
    default_bps: int,
) -> Placed[model.HostConfig]:
    f = node.fields(["ip", "mac"], ["commands"])
    if "commands" in f:
        for cmd in f["commands"].items():
            located.string(cmd)
    if name not in attached:
        raise node.error(f"host {name!r} has no link to a switch")
    link, leaf, port = attached[name]
    bps = default_bps
    parts = link.items()
    if len(parts) == 4 and not parts[3].is_null:
        bps = round(located.number(parts[3], 0.001) * 1_000_000)
    iface = located.ipv4_interface(f["ip"])
    host = model.HostConfig(
        name=name,
        leaf=leaf,
        port=port,
        ipv4=iface.ip,
        prefix_len=iface.network.prefixlen,
        mac=located.mac(f["mac"]),
        pool=pools.get(name, model.Pool.OTHER),
        capacity_bps=bps,
    )
    fields = {"ipv4": f["ip"], "mac": f["mac"], "leaf": link, "port": link}
    return Placed(host, node, fields)
