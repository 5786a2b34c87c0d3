"""One-shot action selector programming: a table entry that carries its action set.

P4Runtime lets a table implemented by an action selector take, instead of a
group id, an ``ActionProfileActionSet``: the actions and their weights.  PI
(the P4Runtime server of BMv2) implements it by creating hidden members and a
hidden group on the selector, and keeps the two programming modes apart per
selector: once a selector holds one-shot groups, manual members and groups are
refused, and the other way round, until it is empty again
(INVALID_ARGUMENT "Invalid attempt to mix action selector programming modes").
Reading the entry gives the action set back, as written (read-write symmetry).

The same is done here on the runtime's :class:`ActionSelector`: hidden member
and group ids live above the 32-bit range of P4Runtime ids (``HIDDEN_BASE``),
so they can never collide with a controller's ids, reads of members and groups
skip them, and a table entry whose group id is hidden is read back as its
action set.  PI's checks are kept: an empty set is UNIMPLEMENTED, a weight
below 1 INVALID_ARGUMENT, a total weight above the selector's
``max_group_size`` RESOURCE_EXHAUSTED.  Watch ports are not supported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from finsy.proto import p4i, p4r

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import ActionCall
from softswitch.runtime.profiles import ActionProfile, ActionSelector
from softswitch.switch.p4rt.codec import Schema
from softswitch.switch.p4rt.entries import decode_action, encode_action

HIDDEN_BASE = 1 << 32
MIX_ERROR = "Invalid attempt to mix action selector programming modes"
Undo = Callable[[], None]


def is_hidden(ident: int) -> bool:
    """Whether a member or group id was made by one-shot programming."""
    return ident >= HIDDEN_BASE


def _ids(profile: ActionProfile) -> list[int]:
    ids = [m.member_id for m in profile.members()]
    if isinstance(profile, ActionSelector):
        ids += [g.group_id for g in profile.groups()]
    return ids


def check_manual(profile: ActionProfile) -> None:
    """Refuse manual members, groups and entries on a selector in one-shot mode."""
    if any(is_hidden(i) for i in _ids(profile)):
        raise RuntimeConfigError("INVALID_ARGUMENT", MIX_ERROR)


def _check_oneshot(profile: ActionProfile) -> None:
    if any(not is_hidden(i) for i in _ids(profile)):
        raise RuntimeConfigError("INVALID_ARGUMENT", MIX_ERROR)


def create_group(
    schema: Schema,
    table: p4i.Table,
    profile: ActionProfile,
    action_set: p4r.ActionProfileActionSet,
) -> tuple[int, Undo]:
    """Create the hidden members and group of an action set; return the group id and an undo.

    The total weight is checked against ``max_group_size`` of the P4Info.
    """
    name = table.preamble.name
    if not isinstance(profile, ActionSelector):
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"{name} has no action selector: an action set cannot be used"
        )
    _check_oneshot(profile)
    actions = list(action_set.action_profile_actions)
    if not actions:
        raise RuntimeConfigError("UNIMPLEMENTED", "No support for empty action profile groups")
    calls = []
    for action in actions:
        if action.weight <= 0:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", "Member weight must be a positive integer value"
            )
        if action.WhichOneof("watch_kind") is not None:
            raise RuntimeConfigError("UNIMPLEMENTED", f"{name}: watch ports in an action set")
        calls.append((decode_action(schema, action.action, table), action.weight))
    total = sum(weight for _, weight in calls)
    info = schema.profile_of(table)
    max_group_size = info.max_group_size if info is not None else 0
    if max_group_size and total > max_group_size:
        raise RuntimeConfigError(
            "RESOURCE_EXHAUSTED", "Sum of weights exceeds static max_group_size (from P4Info)"
        )
    next_id = max([HIDDEN_BASE - 1, *_ids(profile)]) + 1
    members: dict[int, int] = {}
    try:
        for offset, (call, weight) in enumerate(calls):
            profile.insert_member(next_id + offset, call)
            members[next_id + offset] = weight
        group_id = next_id + len(calls)
        profile.insert_group(group_id, members, max_group_size)
    except RuntimeConfigError:
        for member_id in members:
            profile.delete_member(member_id)
        raise
    return group_id, lambda: delete_group(profile, group_id)


def delete_group(profile: ActionProfile, group_id: int) -> None:
    """Remove a hidden group and its members (no table entry may name it any more)."""
    assert isinstance(profile, ActionSelector)
    group = profile.group(group_id)
    profile.delete_group(group_id)
    for member_id, _ in group.members:
        profile.delete_member(member_id)


@dataclass(frozen=True, slots=True)
class HiddenGroup:
    """What :func:`recreate` needs to bring a deleted hidden group back."""

    group_id: int
    max_size: int
    members: tuple[tuple[int, int, ActionCall], ...]  # (member id, weight, action)


def snapshot(profile: ActionProfile, group_id: int) -> HiddenGroup:
    assert isinstance(profile, ActionSelector)
    group = profile.group(group_id)
    members = tuple((m, w, profile.member(m)) for m, w in group.members)
    return HiddenGroup(group_id, group.max_size, members)


def recreate(profile: ActionProfile, hidden: HiddenGroup) -> None:
    """Undo :func:`delete_group`: the same ids, actions, weights and max size."""
    assert isinstance(profile, ActionSelector)
    for member_id, _, call in hidden.members:
        profile.insert_member(member_id, call)
    weights = {member_id: weight for member_id, weight, _ in hidden.members}
    profile.insert_group(hidden.group_id, weights, hidden.max_size)


def encode_action_set(
    schema: Schema, profile: ActionProfile, group_id: int, out: p4r.ActionProfileActionSet
) -> None:
    """The action set of a hidden group, in the order it was written."""
    assert isinstance(profile, ActionSelector)
    for member_id, weight in profile.group(group_id).members:
        action = out.action_profile_actions.add(weight=weight)
        encode_action(schema, profile.member(member_id), action.action)
