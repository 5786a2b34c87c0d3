"""A static control plane that writes the fabric's entries straight to the switches.

:class:`StaticControl` implements :class:`lab.control.FabricControl` by writing
p4/README.md's entries straight to the switches with finsy: routes, one ECMP group per
leaf (members in the fabric's spine order, which is what :class:`experiment.ecmp.EcmpOracle`
assumes), port MACs, proxy ARP and the spine ranges of the tag ports (``kv_range``:
the ports 40000-40999 split evenly among the spines, as the controller splits them);
a KV transfer gets a free port of the asked spine's range (or of the spine with the
fewest of its own transfers in flight) and nothing is written for it. It has no
telemetry, no safety and no path selection worth the name: numbers measured with it
say what the lab does, not what the controller does.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import finsy as fy

from controller.config import FabricConfig, KvClassSettings
from controller.service.southbound.intent import mac_int
from experiment.flows import FlowKey
from kvfabric.cli import main as kvfabric_main
from kvfabric.client import Placement, Tag
from lab.errors import ControlError

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4" / "kv_fabric.p4"
KV_DSCP = 10
TAG_PORTS = KvClassSettings(KV_DSCP, 40000, 40999)


def switch_mac(device_id: int) -> int:
    """This double's switch MAC (hosts learn it by proxy ARP; intent's is another)."""
    return 0x020000000000 | device_id


def compile_program(out: Path) -> fy.SwitchOptions:
    """Compile kv_fabric.p4 with ``kvfabric compile``; the options finsy pushes."""
    p4info, blob = out / "kv_fabric.p4info.txtpb", out / "kv_fabric.json"
    code = kvfabric_main(
        ["compile", str(PROGRAM), "--p4runtime-files", str(p4info), "-o", str(blob)]
    )
    assert code == 0, "kvfabric compile failed"
    return fy.SwitchOptions(p4info=p4info, p4blob=blob.read_bytes())


def _port_towards(fabric: FabricConfig, switch: str, peer: str) -> int:
    for link in fabric.links:
        if (link.a.switch, link.b.switch) == (switch, peer):
            return link.a.port
        if (link.b.switch, link.a.switch) == (switch, peer):
            return link.b.port
    raise KeyError(f"no cable {switch}-{peer}")


def leaf_entries(fabric: FabricConfig, leaf: str) -> list[Any]:
    """A leaf's entries as this double writes them, on purpose not the controller's.

    :func:`controller.service.southbound.intent.intent` gives one ECMP group per destination leaf
    with the uplink ports as member ids, reduced when a cable is down; this double has
    one group over every spine behind a /8 route, created in the fabric's spine order,
    and its own switch MACs: a control plane with no state to get wrong, so that the
    lab can be checked without the controller.
    """
    sw = fabric.switch(leaf)
    mac = switch_mac(sw.device_id)
    spines = [s.name for s in fabric.spines]
    out: list[Any] = [
        +fy.P4TableEntry(
            "kv_class", match=fy.P4TableMatch(dscp=KV_DSCP), action=fy.P4TableAction("mark_kv")
        ),
        +fy.P4TableEntry(
            "ipv4_route",
            match=fy.P4TableMatch(dst_addr="10.0.0.0/8"),
            action=fy.P4TableAction("route_ecmp", group=1),
        ),
        +fy.P4TableEntry(
            "arp_proxy",
            match=fy.P4TableMatch(tpa="10.0.0.0/8"),
            action=fy.P4TableAction("arp_reply", mac=mac),
        ),
    ]
    for h in fabric.hosts_of(leaf):
        out += [
            +fy.P4TableEntry(
                "ipv4_route",
                match=fy.P4TableMatch(dst_addr=f"{h.ipv4}/32"),
                action=fy.P4TableAction("forward", port=h.port),
            ),
            +fy.P4TableEntry(
                "port_macs",
                match=fy.P4TableMatch(egress_port=h.port),
                action=fy.P4TableAction("rewrite_macs", src_mac=mac, dst_mac=mac_int(h.mac)),
            ),
        ]
    for k, spine in enumerate(spines, 1):
        port = _port_towards(fabric, leaf, spine)
        out += [
            +fy.P4ActionProfileMember(
                "ecmp_selector", member_id=k, action=fy.P4TableAction("set_uplink", port=port)
            ),
            +fy.P4TableEntry(
                "port_macs",
                match=fy.P4TableMatch(egress_port=port),
                action=fy.P4TableAction(
                    "rewrite_macs", src_mac=mac, dst_mac=switch_mac(fabric.switch(spine).device_id)
                ),
            ),
        ]
    for spine, (first, last) in TAG_PORTS.spine_ranges(spines).items():
        out.append(
            +fy.P4TableEntry(
                "kv_range",
                match=fy.P4TableMatch(ecmp_group=1, l4_src_port=f"{first}...{last}"),
                action=fy.P4TableAction("pin", port=_port_towards(fabric, leaf, spine)),
                priority=1,
            )
        )
    out += [
        +fy.P4ActionProfileGroup(
            "ecmp_selector",
            group_id=1,
            members=[fy.P4Member(k, weight=1) for k in range(1, len(spines) + 1)],
        ),
        +fy.P4TableEntry(
            "ecmp", match=fy.P4TableMatch(ecmp_group=1), action=fy.P4IndirectAction(group_id=1)
        ),
    ]
    return out


def spine_entries(fabric: FabricConfig, spine: str) -> list[Any]:
    """A spine's entries: a leaf's subnet, else its first host's /24 (intent: its hosts' /32s)."""
    mac = switch_mac(fabric.switch(spine).device_id)
    out: list[Any] = [
        +fy.P4TableEntry(
            "kv_class", match=fy.P4TableMatch(dscp=KV_DSCP), action=fy.P4TableAction("mark_kv")
        ),
    ]
    for leaf in fabric.leaves:
        port = _port_towards(fabric, spine, leaf.name)
        subnet = leaf.subnet or f"{fabric.hosts_of(leaf.name)[0].ipv4}/24"
        network = str(subnet) if leaf.subnet else ".".join(str(subnet).split(".")[:3]) + ".0/24"
        out += [
            +fy.P4TableEntry(
                "ipv4_route",
                match=fy.P4TableMatch(dst_addr=network),
                action=fy.P4TableAction("forward", port=port),
            ),
            +fy.P4TableEntry(
                "port_macs",
                match=fy.P4TableMatch(egress_port=port),
                action=fy.P4TableAction(
                    "rewrite_macs", src_mac=mac, dst_mac=switch_mac(leaf.device_id)
                ),
            ),
        ]
    return out


@dataclass
class StaticControl:
    """A test double of the controller service (see the module docstring)."""

    config: FabricConfig
    options: fy.SwitchOptions
    inflight: Counter[str] = field(default_factory=Counter)
    held: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    generation: int = 0
    calls: list[tuple[str, object]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _free: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def _write(self, switch: str, entries: list[Any]) -> None:
        """One connection per write; one writer per switch at a time (one primary)."""
        lock = self._locks.setdefault(switch, asyncio.Lock())
        async with lock:
            await self._write_now(switch, entries)

    async def _write_now(self, switch: str, entries: list[Any]) -> None:
        sw = self.config.switch(switch)
        options = fy.SwitchOptions(
            p4info=self.options.p4info, p4blob=self.options.p4blob, device_id=sw.device_id
        )
        async with fy.Switch(switch, sw.p4runtime, options) as client:
            await client.write(entries)

    async def ready(self, timeout_s: float) -> None:
        jobs = [
            self._write(leaf.name, leaf_entries(self.config, leaf.name))
            for leaf in self.config.leaves
        ]
        jobs += [
            self._write(s.name, spine_entries(self.config, s.name)) for s in self.config.spines
        ]
        await asyncio.wait_for(asyncio.gather(*jobs), timeout_s)

    async def set_mode(self, mode: str) -> None:
        self.calls.append(("set_mode", mode))
        if mode == "flowlet":
            self.generation += 1
            action = fy.P4TableAction("flowlet_mode", timeout_us=50_000, generation=self.generation)
        elif mode == "kv-aware":
            action = fy.P4TableAction("kv_aware_mode")
        else:
            action = fy.P4TableAction("ecmp_mode")
        entry = ~fy.P4TableEntry("switch_config", is_default_action=True, action=action)
        await asyncio.gather(*(self._write(leaf.name, [entry]) for leaf in self.config.leaves))

    async def request_transfer(
        self, src: str, dst: str, nbytes: int, *, spine: str | None = None
    ) -> Placement:
        self.calls.append(("request", (src, dst, nbytes, spine)))
        spines = [s.name for s in self.config.spines]
        chosen = spine or min(spines, key=lambda s: (self.inflight[s], spines.index(s)))
        h_src, h_dst = self.config.host(src), self.config.host(dst)
        first, last = TAG_PORTS.spine_ranges(spines)[chosen]
        free = self._free.setdefault((src, chosen), list(range(last, first - 1, -1)))
        port = free.pop()
        tid = str(next(self._ids))
        self.inflight[chosen] += 1
        self.held[tid] = (src, port, chosen)
        path = f"{h_src.leaf}>{chosen}>{h_dst.leaf}"
        return Placement(tid, "pinned", chosen, path, Tag(KV_DSCP, KV_DSCP << 2, port))

    async def complete_transfer(self, transfer_id: str, duration_s: float) -> None:
        self.calls.append(("complete", (transfer_id, duration_s)))
        src, port, spine = self.held.pop(transfer_id)
        self.inflight[spine] -= 1
        self._free[src, spine].insert(0, port)

    async def pin_flow(self, flow: FlowKey, spine: str) -> None:
        raise ControlError("the static control cannot pin background flows")

    async def unpin_flow(self, flow: FlowKey) -> None:
        return None

    async def fabric(self) -> Mapping[str, Any]:  # FabricControl.fabric
        return {"efficiency": None}

    async def poll_seconds(self) -> float | None:  # FabricControl.poll_seconds: no poller
        return None
