"""Action profiles and action selectors (STUB: signatures final)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from softswitch.runtime.tables import ActionCall


@dataclass(frozen=True, slots=True)
class Member:
    member_id: int
    action: ActionCall


@dataclass(frozen=True, slots=True)
class Group:
    group_id: int
    members: Mapping[int, int]  # member_id -> weight
    max_size: int = 0


class ActionProfile:
    def __init__(self, name: str, size: int = 1024) -> None:
        self.name = name
        self.size = size

    def insert_member(self, member_id: int, action: ActionCall) -> None:
        raise NotImplementedError

    def modify_member(self, member_id: int, action: ActionCall) -> None:
        raise NotImplementedError

    def delete_member(self, member_id: int) -> None:
        raise NotImplementedError

    def member(self, member_id: int) -> ActionCall:
        raise NotImplementedError

    def members(self) -> list[Member]:
        raise NotImplementedError


class ActionSelector(ActionProfile):
    def __init__(
        self,
        name: str,
        size: int = 1024,
        algorithm: str = "crc16",
        max_group_size: int = 0,
        selector_widths: Sequence[int] = (),
    ) -> None:
        super().__init__(name, size)

    def insert_group(self, group_id: int, members: Mapping[int, int], max_size: int = 0) -> None:
        raise NotImplementedError

    def modify_group(self, group_id: int, members: Mapping[int, int]) -> None:
        raise NotImplementedError

    def delete_group(self, group_id: int) -> None:
        raise NotImplementedError

    def group(self, group_id: int) -> Group:
        raise NotImplementedError

    def groups(self) -> list[Group]:
        raise NotImplementedError

    def hash(self, values: Sequence[int]) -> int:
        raise NotImplementedError

    def choose(self, group_id: int, selector_hash: int) -> ActionCall:
        raise NotImplementedError
