"""Provisioning: make one switch hold its intent, writing only the difference.

Called on every (re)connection where this controller is primary, after finsy's
handshake (which pushes the pipeline only when the switch's cookie differs from the
program's). One ReadRequest brings back everything the controller manages: the
entries of the managed tables, the selector members and groups, the pins, and the
default action of ``switch_config``. :func:`reconcile.plan` turns intent and
read-back into the writes; the pins and the mode are returned to the service
(:class:`ReadBack`), which adopts the pins and resumes the data-plane mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import finsy as fy

from controller.service import intent
from controller.service.metrics import Metrics
from controller.service.reconcile import key_of, plan
from controller.service.switches import SwitchLink
from controller.topology import Topology


@dataclass(slots=True)
class ReadBack:
    """What reconciliation found on a switch besides its intent."""

    pins: list[Any] = field(default_factory=list)
    flow_pins: list[Any] = field(default_factory=list)
    mode_action: str | None = None
    mode_args: Mapping[str, int] = field(default_factory=dict)
    writes: int = 0


async def read_state(link: SwitchLink) -> tuple[list[Any], ReadBack]:
    """The switch's managed entities (decoded) and its pins and default actions."""
    request: list[Any] = [fy.P4TableEntry(t) for t in intent.MANAGED_TABLES]
    request += [
        fy.P4TableEntry(intent.KV_PIN),
        fy.P4TableEntry(intent.FLOW_PIN),
        fy.P4ActionProfileMember(intent.ECMP_SELECTOR),
        fy.P4ActionProfileGroup(intent.ECMP_SELECTOR),
        fy.P4TableEntry(intent.SWITCH_CONFIG, is_default_action=True),
    ]
    managed: list[Any] = []
    back = ReadBack()
    for entity in await link.read(request):
        if isinstance(entity, fy.P4TableEntry):
            if entity.is_default_action:
                _default(entity, back)
                continue
            if entity.table_id == intent.KV_PIN:
                back.pins.append(entity)
                continue
            if entity.table_id == intent.FLOW_PIN:
                back.flow_pins.append(entity)
                continue
        managed.append(entity)
    return managed, back


def _default(entity: Any, back: ReadBack) -> None:
    action = entity.action
    if action is None:
        return
    if entity.table_id == intent.SWITCH_CONFIG:
        back.mode_action = str(action.name)
        back.mode_args = {k: int(v) for k, v in action.args.items()}


async def reconcile(
    link: SwitchLink,
    topology: Topology,
    kv_dscp: int,
    metrics: Metrics,
    *,
    keep_groups: bool,
) -> ReadBack:
    """Write the difference between ``link``'s intent and its state; return the rest."""
    want = intent.intent(topology, link.name, kv_dscp)
    desired = [link.encode(e) for e in (*want.members, *want.groups, *want.entries)]
    managed, back = await read_state(link)
    actual = [link.encode(e) for e in managed]
    keep = {key_of(link.encode(g)) for g in want.groups} if keep_groups else set()
    writes = plan(desired, actual, keep_groups=keep)
    for op, batch in writes.phases():
        await link.write(op, batch)
        metrics.reconcile_writes.labels(link.name, op).inc(len(batch))
    back.writes = len(writes)
    metrics.reconciliations.labels(link.name).inc()
    return back


async def refresh_groups(link: SwitchLink, topology: Topology, metrics: Metrics) -> int:
    """Bring a leaf's ECMP groups in line with the cables' status; returns the writes."""
    want = intent.intent(topology, link.name, 0)
    if not want.groups:
        return 0
    desired = [link.encode(g) for g in want.groups]
    actual = [
        link.encode(g) for g in await link.read([fy.P4ActionProfileGroup(intent.ECMP_SELECTOR)])
    ]
    writes = plan(desired, actual)
    writes.delete.clear()  # groups nobody wants are reconciliation's business
    for op, batch in writes.phases():
        await link.write(op, batch)
        metrics.reconcile_writes.labels(link.name, op).inc(len(batch))
    return len(writes)
