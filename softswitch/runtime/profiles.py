"""Action profiles and action selectors.

An :class:`ActionProfile` holds members: an id bound to an action call.  An
:class:`ActionSelector` also holds groups: an id bound to a set of members,
each with a weight.  A table implemented by a profile has entries that name
a member (or, with a selector, a group) instead of an action.

Choosing a member of a group is BMv2's rule: the selector's hash algorithm
runs over the selector key values (packed as BMv2 packs fields, see
:func:`softswitch.runtime.hashing.pack_fields`), and the member at position
``hash % n`` of the group is taken, where the group's members are ordered by
their BMv2 handle.  BMv2 gives each new member the lowest free handle, so
handles are kept here too; a member of weight ``w`` occupies ``w``
consecutive positions (BMv2 itself has no weights; with weight 1 everywhere
the choice is BMv2's exactly).  An empty group gives no member.

Errors follow P4Runtime: ALREADY_EXISTS, NOT_FOUND, RESOURCE_EXHAUSTED when
the profile is full, FAILED_PRECONDITION when deleting a member still in a
group or referenced by a table entry, or a group still referenced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from softswitch.errors import RuntimeConfigError
from softswitch.runtime.actions import ActionCall, ActionSpec, check_action_call
from softswitch.runtime.hashing import Hasher, make_hasher, pack_fields


@dataclass(frozen=True, slots=True)
class Member:
    member_id: int
    action: ActionCall


@dataclass(frozen=True, slots=True)
class Group:
    group_id: int
    members: tuple[tuple[int, int], ...]  # (member_id, weight), in the order given
    max_size: int = 0


class ActionProfile:
    """Members bound to actions; ``actions`` (if given) are the allowed ones."""

    def __init__(self, name: str, size: int = 1024, actions: Sequence[ActionSpec] = ()) -> None:
        self.name = name
        self.size = size
        self.actions = {a.name: a for a in actions}
        self._members: dict[int, ActionCall] = {}
        self._handles: dict[int, int] = {}  # member_id -> BMv2 member handle
        self._member_refs: dict[int, int] = {}  # table entries naming the member
        self._member_groups: dict[int, int] = {}  # groups holding the member

    @property
    def has_selector(self) -> bool:
        return False

    # -- members -------------------------------------------------------------

    def insert_member(self, member_id: int, action: ActionCall) -> None:
        if member_id in self._members:
            raise RuntimeConfigError(
                "ALREADY_EXISTS", f"action profile '{self.name}' already has member {member_id}"
            )
        self._check_action(action)
        if len(self._members) >= self.size:
            raise RuntimeConfigError(
                "RESOURCE_EXHAUSTED",
                f"action profile '{self.name}' is full ({self.size} members)",
            )
        used = set(self._handles.values())
        self._handles[member_id] = next(h for h in range(len(used) + 1) if h not in used)
        self._members[member_id] = action
        self._member_refs[member_id] = 0
        self._member_groups[member_id] = 0

    def modify_member(self, member_id: int, action: ActionCall) -> None:
        self.member(member_id)
        self._check_action(action)
        self._members[member_id] = action

    def delete_member(self, member_id: int) -> None:
        self.member(member_id)
        if self._member_groups[member_id]:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION",
                f"member {member_id} of '{self.name}' is still in a group",
            )
        if self._member_refs[member_id]:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION",
                f"member {member_id} of '{self.name}' is still used by a table entry",
            )
        del self._members[member_id], self._handles[member_id]
        del self._member_refs[member_id], self._member_groups[member_id]

    def member(self, member_id: int) -> ActionCall:
        """The action of a member; NOT_FOUND if there is no such member."""
        action = self._members.get(member_id)
        if action is None:
            raise RuntimeConfigError(
                "NOT_FOUND", f"action profile '{self.name}' has no member {member_id}"
            )
        return action

    def members(self) -> list[Member]:
        return [Member(i, a) for i, a in self._members.items()]

    def clear(self) -> None:
        """Remove every member (and group); table entries naming them must be gone."""
        self._members.clear()
        self._handles.clear()
        self._member_refs.clear()
        self._member_groups.clear()

    def ref_member(self, member_id: int, delta: int) -> None:
        """Count a table entry that starts (+1) or stops (-1) naming the member."""
        self._member_refs[member_id] += delta

    def _check_action(self, action: ActionCall) -> None:
        if self.actions:
            check_action_call(self.name, self.actions, action, default=False)

    # -- groups (only selectors have them) ------------------------------------

    def group(self, group_id: int) -> Group:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"action profile '{self.name}' has no selector: no groups"
        )

    def ref_group(self, group_id: int, delta: int) -> None:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"action profile '{self.name}' has no selector: no groups"
        )

    def choose(
        self, group_id: int, selector: tuple[int, ...], widths: Sequence[int] | None = None
    ) -> ActionCall | None:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"action profile '{self.name}' has no selector: no groups"
        )


class ActionSelector(ActionProfile):
    """An action profile with groups and a hash that picks a group's member."""

    def __init__(
        self,
        name: str,
        size: int = 1024,
        *,
        algorithm: str = "crc16",
        max_group_size: int = 0,
        selector_widths: Sequence[int] = (),
        actions: Sequence[ActionSpec] = (),
    ) -> None:
        super().__init__(name, size, actions)
        self.algorithm = algorithm
        self.max_group_size = max_group_size
        self.selector_widths = tuple(selector_widths)
        self._hasher: Hasher = make_hasher(algorithm)
        self._groups: dict[int, Group] = {}
        self._group_refs: dict[int, int] = {}
        self._slots: dict[int, tuple[int, ...]] = {}  # group_id -> member ids by position

    @property
    def has_selector(self) -> bool:
        return True

    def clear(self) -> None:
        self._groups.clear()
        self._group_refs.clear()
        self._slots.clear()
        super().clear()

    def insert_group(
        self, group_id: int, members: Mapping[int, int] | None = None, max_size: int = 0
    ) -> None:
        """Create a group of ``{member_id: weight}``."""
        if group_id in self._groups:
            raise RuntimeConfigError(
                "ALREADY_EXISTS", f"action selector '{self.name}' already has group {group_id}"
            )
        if self.max_group_size > 0 and not 0 < max_size <= self.max_group_size:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"max_size {max_size} of group {group_id} is not in "
                f"[1, {self.max_group_size}] (max_group_size of '{self.name}')",
            )
        self._set_group(
            Group(group_id, self._check_members(group_id, members or {}, max_size), max_size)
        )
        self._group_refs[group_id] = 0

    def modify_group(
        self, group_id: int, members: Mapping[int, int], max_size: int | None = None
    ) -> None:
        """Replace the members of a group; ``max_size`` may not change."""
        old = self.group(group_id)
        if max_size is not None and max_size != old.max_size:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"max_size of group {group_id} is {old.max_size} and cannot change",
            )
        new = Group(group_id, self._check_members(group_id, members, old.max_size), old.max_size)
        self._unset_group(old)
        self._set_group(new)

    def delete_group(self, group_id: int) -> None:
        group = self.group(group_id)
        if self._group_refs[group_id]:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION",
                f"group {group_id} of '{self.name}' is still used by a table entry",
            )
        self._unset_group(group)
        del self._group_refs[group_id]

    def group(self, group_id: int) -> Group:
        group = self._groups.get(group_id)
        if group is None:
            raise RuntimeConfigError(
                "NOT_FOUND", f"action selector '{self.name}' has no group {group_id}"
            )
        return group

    def groups(self) -> list[Group]:
        return list(self._groups.values())

    def ref_group(self, group_id: int, delta: int) -> None:
        self._group_refs[group_id] += delta

    def _check_members(
        self, group_id: int, members: Mapping[int, int], max_size: int
    ) -> tuple[tuple[int, int], ...]:
        for member_id, weight in members.items():
            self.member(member_id)
            if weight <= 0:
                raise RuntimeConfigError(
                    "INVALID_ARGUMENT",
                    f"member {member_id} of group {group_id} has weight {weight}; it must be > 0",
                )
        if max_size > 0 and len(members) > max_size:
            raise RuntimeConfigError(
                "RESOURCE_EXHAUSTED",
                f"group {group_id} of '{self.name}' would have {len(members)} members, "
                f"above its max_size {max_size}",
            )
        return tuple(members.items())

    def _set_group(self, group: Group) -> None:
        self._groups[group.group_id] = group
        ordered = sorted(group.members, key=lambda mw: self._handles[mw[0]])
        self._slots[group.group_id] = tuple(m for m, w in ordered for _ in range(w))
        for member_id, _ in group.members:
            self._member_groups[member_id] += 1

    def _unset_group(self, group: Group) -> None:
        for member_id, _ in group.members:
            self._member_groups[member_id] -= 1
        del self._groups[group.group_id], self._slots[group.group_id]

    # -- data plane ------------------------------------------------------------

    def hash(self, selector: Sequence[int], widths: Sequence[int] | None = None) -> int:
        """The selector hash of these selector key values (of ``widths``, or the selector's)."""
        if widths is None:
            widths = self.selector_widths
        return self._hasher(pack_fields(zip(selector, widths, strict=True)))

    def choose_by_hash(self, group_id: int, selector_hash: int) -> ActionCall | None:
        """The action of member ``hash % n`` of the group; None if it is empty."""
        slots = self._slots[group_id]
        if not slots:
            return None
        return self._members[slots[selector_hash % len(slots)]]

    def choose(
        self, group_id: int, selector: tuple[int, ...], widths: Sequence[int] | None = None
    ) -> ActionCall | None:
        """Hash the selector key values and pick the group's member."""
        slots = self._slots[group_id]
        if not slots:
            return None
        return self._members[slots[self.hash(selector, widths) % len(slots)]]
