"""Packet replication engine (STUB: signatures final)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Replica:
    egress_port: int
    instance: int = 0


@dataclass(frozen=True, slots=True)
class CloneSession:
    session_id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0


class Pre:
    def __init__(self) -> None:
        pass

    # P4Runtime view
    def insert_multicast_group(self, mgid: int, replicas: Sequence[Replica]) -> None:
        raise NotImplementedError

    def modify_multicast_group(self, mgid: int, replicas: Sequence[Replica]) -> None:
        raise NotImplementedError

    def delete_multicast_group(self, mgid: int) -> None:
        raise NotImplementedError

    def multicast_group(self, mgid: int) -> tuple[Replica, ...]:
        raise NotImplementedError

    def multicast_groups(self) -> dict[int, tuple[Replica, ...]]:
        raise NotImplementedError

    # BMv2 simple_pre view
    def mc_mgrp_create(self, mgid: int) -> None:
        raise NotImplementedError

    def mc_mgrp_destroy(self, mgid: int) -> None:
        raise NotImplementedError

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        raise NotImplementedError

    def mc_node_update(self, handle: int, ports: Sequence[int]) -> None:
        raise NotImplementedError

    def mc_node_destroy(self, handle: int) -> None:
        raise NotImplementedError

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        raise NotImplementedError

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        raise NotImplementedError

    def replicate(self, mgid: int) -> list[tuple[int, int]]:
        raise NotImplementedError

    # clone sessions
    def insert_clone_session(self, session: CloneSession) -> None:
        raise NotImplementedError

    def modify_clone_session(self, session: CloneSession) -> None:
        raise NotImplementedError

    def delete_clone_session(self, session_id: int) -> None:
        raise NotImplementedError

    def clone_session(self, session_id: int) -> CloneSession | None:
        raise NotImplementedError

    def clone_sessions(self) -> list[CloneSession]:
        raise NotImplementedError

    def mirroring_add(self, session_id: int, port: int) -> None:
        raise NotImplementedError
