"""The switches' ports as they report them over gNMI: speeds and oper-status, followed live.

A switch of Stratum's kind serves OpenConfig over gNMI on its P4Runtime port
(``kvfabric switch`` does: :mod:`softswitch.switch.gnmi`; BMv2 does not). For each
switch, :class:`PortReader` holds one Subscribe stream on the P4Runtime channel,
through finsy's ``GNMIClient``, in STREAM mode and ON_CHANGE, for::

    interfaces/interface[name=*]/state/ifindex                  the port's number
    interfaces/interface[name=*]/state/oper-status              UP, or not
    interfaces/interface[name=*]/ethernet/state/port-speed      OpenConfig's speed
    interfaces/interface[name=*]/ethernet/state/port-speed-bps  the exact rate (kvfabric's)

Its first answer is every port's state (what a Get reads), and after it only changes:
a re-provisioned cable or a port going down costs nothing until it happens, however
often the audit runs. The service hands each switch's table to the engine
(:meth:`Engine.port_states <controller.engine.core.Engine.port_states>`) every audit
interval when it changed (:meth:`PortReader.take`), so the model follows a change
within one audit round. A port's speed is ``port-speed-bps`` when the switch gives it,
else the rate OpenConfig's identity names (``SPEED_UNKNOWN``: none).

A switch without gNMI (BMv2: finsy found it UNIMPLEMENTED when the channel came up and
holds no gNMI client) is logged once, and its capacities stay the fabric file's. A
stream that breaks (the channel went down) is opened again once the channel is back;
until then the last table stands. gNMI's errors become :class:`SwitchError` here.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from finsy.gnmiclient import GNMIClientError, GNMIUpdate
from finsy.gnmipath import GNMIPath

from controller.engine import PortStates, PortStatus
from controller.errors import SwitchError
from controller.service.metrics import Metrics
from controller.service.southbound.switches import SwitchLink

log = logging.getLogger("kvfabric.controller")

IFINDEX = GNMIPath("interfaces/interface[name=*]/state/ifindex")
OPER_STATUS = GNMIPath("interfaces/interface[name=*]/state/oper-status")
PORT_SPEED = GNMIPath("interfaces/interface[name=*]/ethernet/state/port-speed")
PORT_SPEED_BPS = GNMIPath("interfaces/interface[name=*]/ethernet/state/port-speed-bps")
PATHS = (IFINDEX, OPER_STATUS, PORT_SPEED, PORT_SPEED_BPS)

_SPEED = re.compile(r"^SPEED_(?P<num>\d+)(?P<unit>MB|GB)$")


def speed_bps(identity: str) -> int | None:
    """Bit/s of an OpenConfig speed identity (``SPEED_100GB``, ``SPEED_2500MB``, with or
    without its module's prefix); None for ``SPEED_UNKNOWN`` or a name it does not know."""
    m = _SPEED.match(identity.rpartition(":")[2])
    if m is None:
        return None
    return int(m.group("num")) * (10**9 if m.group("unit") == "GB" else 10**6)


class PortTable:
    """One switch's ports by interface name, folded from gNMI updates."""

    def __init__(self, switch: str) -> None:
        self.switch = switch
        self.leaves: dict[str, dict[str, Any]] = {}
        self.dirty = False

    def fold(self, updates: Iterable[GNMIUpdate]) -> None:
        """Take updates (and deletes: a value of None) of the subscribed leaves in."""
        for update in updates:
            try:
                name = update.path["name"]
            except KeyError:
                continue
            leaves = self.leaves.setdefault(name, {})
            if update.typed_value is None:
                leaves.pop(update.path.last, None)
            else:
                leaves[update.path.last] = update.value
            self.dirty = True

    def reading(self) -> PortStates:
        """The engine's reading: every interface with a port number."""
        ports: dict[int, PortStatus] = {}
        for name, leaves in self.leaves.items():
            number = leaves.get(IFINDEX.last)
            if not isinstance(number, int):
                continue
            bps = leaves.get(PORT_SPEED_BPS.last)
            if not isinstance(bps, int) or bps <= 0:
                identity = leaves.get(PORT_SPEED.last)
                bps = speed_bps(identity) if isinstance(identity, str) else None
            ports[number] = PortStatus(bps, leaves.get(OPER_STATUS.last) == "UP", name)
        return PortStates(self.switch, ports)


class PortReader:
    """One gNMI stream per switch, and the tables they keep (see the module docstring)."""

    def __init__(self, links: Mapping[str, SwitchLink], retry_s: float, metrics: Metrics) -> None:
        self.links = links
        self.retry_s = retry_s
        self.metrics = metrics
        self.tables: dict[str, PortTable] = {}
        """The table of each switch whose stream has answered once."""
        self._without: dict[str, object] = {}
        """Switches whose channel has no (working) gNMI, with the client found then."""

    def take(self) -> list[PortStates]:
        """The reading of every switch whose table changed since the last call."""
        out = []
        for table in self.tables.values():
            if table.dirty:
                table.dirty = False
                out.append(table.reading())
        return out

    async def follow(self, link: SwitchLink) -> None:
        """Keep ``link``'s switch's ports followed until cancelled."""
        while True:
            client = link.switch.gnmi_client if link.up else None
            if client is None or self._without.get(link.name) is client:
                if link.up and link.name not in self._without:
                    self._without[link.name] = client
                    log.info("%s: no gNMI: its port speeds and statuses are not read; its "
                             "capacities are the fabric file's", link.name)  # fmt: skip
                await asyncio.sleep(self.retry_s)
                continue
            self._without.pop(link.name, None)
            try:
                await self._stream(link, client)
            except SwitchError as exc:
                self.metrics.write_errors.labels(link.name, "gnmi-subscribe").inc()
                if "UNIMPLEMENTED" in exc.codes:
                    self._without[link.name] = client
                    log.info("%s: gNMI without Subscribe: port states are not read", link.name)
                else:
                    log.debug("%s: the ports' stream ended: %s", link.name, exc)
            await asyncio.sleep(self.retry_s)

    async def _stream(self, link: SwitchLink, client: Any) -> None:
        """One Subscribe stream: the first answer replaces the table, changes follow."""
        sub = client.subscribe()
        sub.on_change(*PATHS)
        table = PortTable(link.name)
        counter = self.metrics.port_updates.labels(link.name)
        try:
            first = [u async for u in sub.synchronize()]
            table.fold(first)
            table.dirty = True
            self.tables[link.name] = table
            counter.inc(len(first))
            async for update in sub.updates():
                table.fold((update,))
                counter.inc()
        except GNMIClientError as exc:
            code = exc.code.name
            raise SwitchError(
                link.name, f"gNMI subscribe: {code}: {exc.message}", frozenset({code})
            ) from None
        finally:
            sub.cancel()
