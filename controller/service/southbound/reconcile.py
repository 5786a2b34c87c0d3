"""Reconciliation: what to write so that a switch holds exactly its intent (pure).

On every (re)connection the provisioner reads back the switch's members, groups and
the entries of the managed tables, and :func:`plan` compares them with the intent,
both as P4Runtime protobufs (so a value written as ``"10.0.1.0/24"`` and read back
as bytes compare equal). An entity is identified by its *key* (table and match,
or action profile and member/group id) and compared by its *value* (action, or
group members). The result is a :class:`Plan`: what to insert, modify and delete,
in an order that never leaves a dangling reference (members before the groups that
use them, groups before the ``ecmp`` entries that point at them; deletions the
other way round). A switch that already holds its intent gets an empty plan: a
controller restart writes nothing and forwarding never pauses.

``keep_groups`` names groups whose membership on the switch is trusted as it is:
after a takeover, the new primary has not audited the links yet, so it keeps the
ECMP groups its predecessor left (which leave out the cables found dead) until its
own first audit round.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from finsy.proto import p4r

EntityKey = tuple[str, bytes]


def key_of(entity: p4r.Entity) -> EntityKey:
    """What identifies an entity on a switch (its kind and serialized key fields)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        t = entity.table_entry
        key = p4r.TableEntry(
            table_id=t.table_id,
            match=sorted(t.match, key=lambda m: m.field_id),
            priority=t.priority,
            is_default_action=t.is_default_action,
        )
        return "table", key.SerializeToString(deterministic=True)
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return "member", f"{m.action_profile_id}:{m.member_id}".encode()
    if kind == "action_profile_group":
        g = entity.action_profile_group
        return "group", f"{g.action_profile_id}:{g.group_id}".encode()
    raise ValueError(f"cannot reconcile a {kind} entity")


def value_of(entity: p4r.Entity) -> bytes:
    """What an entity holds (its action, metadata or members), serialized."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        t = entity.table_entry
        return p4r.TableEntry(action=t.action, metadata=t.metadata).SerializeToString(
            deterministic=True
        )
    if kind == "action_profile_member":
        return entity.action_profile_member.action.SerializeToString(deterministic=True)
    if kind == "action_profile_group":
        g = entity.action_profile_group
        members = sorted((m.member_id, m.weight) for m in g.members)
        return repr(members).encode()
    raise ValueError(f"cannot reconcile a {kind} entity")


_ORDER = {"member": 0, "group": 1, "table": 2}


@dataclass(slots=True)
class Plan:
    """Writes that turn a switch's state into its intent, in a safe order."""

    insert: list[p4r.Entity] = field(default_factory=list)
    modify: list[p4r.Entity] = field(default_factory=list)
    delete: list[p4r.Entity] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.insert) + len(self.modify) + len(self.delete)

    def phases(self) -> list[tuple[str, list[p4r.Entity]]]:
        """``(operation, entities)`` batches: members, groups, tables, then deletions."""
        out: list[tuple[str, list[p4r.Entity]]] = []
        for kind in ("member", "group", "table"):
            for op, items in (("insert", self.insert), ("modify", self.modify)):
                batch = [e for e in items if key_of(e)[0] == kind]
                if batch:
                    out.append((op, batch))
        for kind in ("table", "group", "member"):
            batch = [e for e in self.delete if key_of(e)[0] == kind]
            if batch:
                out.append(("delete", batch))
        return out


def plan(
    desired: Iterable[p4r.Entity],
    actual: Iterable[p4r.Entity],
    *,
    keep_groups: Collection[EntityKey] = (),
) -> Plan:
    """The writes that make ``actual`` equal ``desired`` (see the module docstring)."""
    want = {key_of(e): e for e in desired}
    have = {key_of(e): e for e in actual}
    out = Plan()
    for key, entity in want.items():
        got = have.get(key)
        if got is None:
            out.insert.append(entity)
        elif key in keep_groups:
            continue
        elif value_of(got) != value_of(entity):
            out.modify.append(entity)
    for key, entity in have.items():
        if key not in want:
            out.delete.append(_key_only(entity))
    for items in (out.insert, out.modify, out.delete):
        items.sort(key=lambda e: _ORDER[key_of(e)[0]])
    return out


def _key_only(entity: p4r.Entity) -> p4r.Entity:
    """The entity reduced to what a DELETE needs (read-back counters and such dropped)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        t = entity.table_entry
        return p4r.Entity(
            table_entry=p4r.TableEntry(
                table_id=t.table_id, match=t.match, priority=t.priority, action=t.action
            )
        )
    return entity
