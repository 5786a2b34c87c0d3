"""Provisioning: make one switch hold its intent, writing only the difference.

Called on every (re)connection where this controller is primary, after finsy's
handshake (which pushes the pipeline only when the switch's cookie differs from the
program's). One ReadRequest brings back everything the controller manages: the
entries of the managed tables (the spine ranges among them), the selector members and
groups, the flow pins, and the default action of ``switch_config``.
:func:`reconcile.plan` turns intent and read-back into the writes; the flow pins and
the mode are returned to the service (:class:`ReadBack`), which adopts the pins and
resumes the data-plane mode.

When a cable changes status, :func:`refresh_links` rewrites what depends on it on a
leaf: its ECMP groups and its spine ranges (a handful of entries, never one per
transfer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import finsy as fy

from controller.service.metrics import Metrics
from controller.service.southbound import intent
from controller.service.southbound.ledger import RangeKey
from controller.service.southbound.reconcile import key_of, plan
from controller.service.southbound.switches import SwitchLink
from controller.topology import Topology


@dataclass(slots=True)
class ReadBack:
    """What reconciliation found on a switch besides its intent."""

    flow_pins: list[Any] = field(default_factory=list)
    ranges: list[Any] = field(default_factory=list)
    mode_action: str | None = None
    mode_args: Mapping[str, int] = field(default_factory=dict)
    writes: int = 0


async def read_state(link: SwitchLink) -> tuple[list[Any], ReadBack]:
    """The switch's managed entities (decoded) and its pins and default actions."""
    request: list[Any] = [fy.P4TableEntry(t) for t in intent.MANAGED_TABLES]
    request += [
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
            if entity.table_id == intent.FLOW_PIN:
                back.flow_pins.append(entity)
                continue
            if entity.table_id == intent.KV_RANGE:
                back.ranges.append(entity)
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
    ledger: Callable[[ReadBack], Mapping[RangeKey, bytes]] | None = None,
) -> ReadBack:
    """Write the difference between ``link``'s intent and its state; return the rest.

    ``ledger`` sees what was read back (the range entries' metadata among it) and
    returns the ledger the range entries must hold (:mod:`ledger`)."""
    managed, back = await read_state(link)
    held = ledger(back) if ledger is not None else intent.EMPTY
    want = intent.intent(topology, link.name, kv_dscp, held)
    desired = [link.encode(e) for e in (*want.members, *want.groups, *want.entries)]
    actual = [link.encode(e) for e in managed]
    keep = {key_of(link.encode(g)) for g in want.groups} if keep_groups else set()
    writes = plan(desired, actual, keep_groups=keep)
    for op, batch in writes.phases():
        await link.write(op, batch)
        metrics.reconcile_writes.labels(link.name, op).inc(len(batch))
    back.writes = len(writes)
    metrics.reconciliations.labels(link.name).inc()
    return back


async def refresh_links(
    link: SwitchLink,
    topology: Topology,
    metrics: Metrics,
    ledger: Mapping[RangeKey, bytes] = intent.EMPTY,
) -> int:
    """Bring a leaf's ECMP groups and spine ranges in line with the cables' status;
    returns the writes."""
    want = intent.intent(topology, link.name, 0, ledger)
    if not want.groups:
        return 0
    ranges = [e for e in want.entries if e.table_id == intent.KV_RANGE]
    desired = [link.encode(e) for e in (*want.groups, *ranges)]
    read = [fy.P4ActionProfileGroup(intent.ECMP_SELECTOR), fy.P4TableEntry(intent.KV_RANGE)]
    actual = [link.encode(e) for e in await link.read(read)]
    writes = plan(desired, actual)
    # groups nobody wants are reconciliation's business; a range with no live path goes
    writes.delete[:] = [e for e in writes.delete if key_of(e)[0] == "table"]
    for op, batch in writes.phases():
        await link.write(op, batch)
        metrics.reconcile_writes.labels(link.name, op).inc(len(batch))
    return len(writes)
