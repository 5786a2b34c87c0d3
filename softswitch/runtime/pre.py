"""Packet replication engine: multicast groups and clone sessions.

The model is BMv2's ``simple_pre``: a multicast group (mgid) is a list of
*nodes* in the order they were associated with it; a node has a replication
id (rid) and a set of ports.  Replicating a packet for an mgid gives, for
each node in order, one copy per port in ascending port order, each tagged
with the node's rid (``standard_metadata.egress_rid``).  An mgid the PRE
does not know gives no copy.

The P4Runtime view (``MulticastGroupEntry``: replicas of (egress port,
instance)) is mapped onto nodes the way P4Runtime's reference server (PI)
maps it on BMv2: one node per distinct instance, created in ascending
instance order; a modify keeps the nodes of the instances that stay (their
ports are updated), removes the others and appends new ones at the end.

Clone sessions bind a session id to replicas, a class of service and a
truncation length (0: none).  BMv2's ``mirroring_add`` (one port) and
``mirroring_add_mc`` (an mgid) are available too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from softswitch.errors import RuntimeConfigError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Replica:
    egress_port: int
    instance: int = 0


@dataclass(frozen=True, slots=True)
class CloneSession:
    session_id: int
    replicas: tuple[Replica, ...] = ()
    class_of_service: int = 0
    packet_length_bytes: int = 0
    mgid: int = 0  # BMv2 mirroring_add_mc: replicate through this multicast group


@dataclass(slots=True)
class _Node:
    rid: int
    ports: set[int]
    mgid: int | None = None


@dataclass(slots=True)
class _Group:
    nodes: list[int] = field(default_factory=list)  # node handles, association order
    metadata: bytes = b""


def _check_replicas(replicas: Iterable[Replica], what: str) -> dict[int, set[int]]:
    """Group replicas by instance; duplicates are INVALID_ARGUMENT."""
    by_rid: dict[int, set[int]] = {}
    for r in replicas:
        ports = by_rid.setdefault(r.instance, set())
        if r.egress_port in ports:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT",
                f"duplicate replica (port {r.egress_port}, instance {r.instance}) in {what}",
            )
        ports.add(r.egress_port)
    return by_rid


def _found(items: dict[int, T], key: int, missing: str) -> T:
    """``items[key]``; NOT_FOUND, ``missing`` followed by the key, when there is none."""
    item = items.get(key)
    if item is None:
        raise RuntimeConfigError("NOT_FOUND", f"{missing} {key}")
    return item


class Pre:
    """Multicast groups and clone sessions of one switch."""

    def __init__(self) -> None:
        self._nodes: dict[int, _Node] = {}
        self._groups: dict[int, _Group] = {}
        self._sessions: dict[int, CloneSession] = {}
        self._cache: dict[int, list[tuple[int, int]]] = {}

    # -- data plane ------------------------------------------------------------

    def replicate(self, mgid: int) -> list[tuple[int, int]]:
        """The copies for ``mgid`` as ``(egress_port, rid)``, in BMv2's order."""
        out = self._cache.get(mgid)
        if out is None:
            group = self._groups.get(mgid)
            if group is None:
                return []
            out = [
                (port, self._nodes[h].rid)
                for h in group.nodes
                for port in sorted(self._nodes[h].ports)
            ]
            self._cache[mgid] = out
        return out

    def clone_targets(self, session_id: int) -> list[tuple[int, int]]:
        """The copies a clone to ``session_id`` makes, as ``(egress_port, rid)``."""
        session = self._sessions.get(session_id)
        if session is None:
            return []
        if session.mgid:
            return self.replicate(session.mgid)
        return [(r.egress_port, r.instance) for r in session.replicas]

    # -- P4Runtime view ----------------------------------------------------------

    def insert_multicast_group(
        self, mgid: int, replicas: Sequence[Replica], metadata: bytes = b""
    ) -> None:
        self._check_mgid(mgid)
        if mgid in self._groups:
            raise RuntimeConfigError("ALREADY_EXISTS", f"multicast group {mgid} exists")
        by_rid = _check_replicas(replicas, f"multicast group {mgid}")
        self.mc_mgrp_create(mgid)
        self._groups[mgid].metadata = metadata
        for rid in sorted(by_rid):
            self.mc_node_associate(mgid, self.mc_node_create(rid, sorted(by_rid[rid])))

    def modify_multicast_group(
        self, mgid: int, replicas: Sequence[Replica], metadata: bytes = b""
    ) -> None:
        self._check_mgid(mgid)
        group = self._group(mgid)
        by_rid = _check_replicas(replicas, f"multicast group {mgid}")
        kept: dict[int, int] = {}
        for h in list(group.nodes):
            rid = self._nodes[h].rid
            if rid in by_rid and rid not in kept:
                kept[rid] = h
                self.mc_node_update(h, sorted(by_rid[rid]))
            else:
                self.mc_node_destroy(h)
        for rid in sorted(by_rid):
            if rid not in kept:
                self.mc_node_associate(mgid, self.mc_node_create(rid, sorted(by_rid[rid])))
        group.metadata = metadata

    def delete_multicast_group(self, mgid: int) -> None:
        self._check_mgid(mgid)
        group = self._group(mgid)
        for h in list(group.nodes):
            self.mc_node_destroy(h)
        self.mc_mgrp_destroy(mgid)

    def multicast_group(self, mgid: int) -> tuple[Replica, ...]:
        """The replicas of a group, by instance then port (as PI reads them)."""
        group = self._group(mgid)
        return tuple(
            Replica(port, rid)
            for rid, port in sorted(
                (self._nodes[h].rid, p) for h in group.nodes for p in self._nodes[h].ports
            )
        )

    def multicast_group_metadata(self, mgid: int) -> bytes:
        return self._group(mgid).metadata

    def multicast_groups(self) -> dict[int, tuple[Replica, ...]]:
        return {mgid: self.multicast_group(mgid) for mgid in sorted(self._groups)}

    @staticmethod
    def _check_mgid(mgid: int) -> None:
        if mgid <= 0:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"multicast group id must be > 0, got {mgid}"
            )

    def _group(self, mgid: int) -> _Group:
        return _found(self._groups, mgid, "no multicast group")

    # -- BMv2 simple_pre view ------------------------------------------------------

    def mc_mgrp_create(self, mgid: int) -> None:
        """Create an empty group; creating one that exists does nothing (as in BMv2)."""
        self._groups.setdefault(mgid, _Group())
        self._cache.pop(mgid, None)

    def mc_mgrp_destroy(self, mgid: int) -> None:
        """Forget a group; its nodes stay but are no longer associated."""
        group = self._groups.pop(mgid, None)
        if group is not None:
            for h in group.nodes:
                self._nodes[h].mgid = None
        self._cache.pop(mgid, None)

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        """Create a node and return its handle (the lowest free one, as in BMv2)."""
        handle = next(h for h in range(len(self._nodes) + 1) if h not in self._nodes)
        self._nodes[handle] = _Node(rid, set(ports))
        return handle

    def mc_node_update(self, handle: int, ports: Sequence[int]) -> None:
        node = self._node(handle)
        node.ports = set(ports)
        if node.mgid is not None:
            self._cache.pop(node.mgid, None)

    def mc_node_destroy(self, handle: int) -> None:
        """Destroy a node, dissociating it first if needed (as BMv2 allows)."""
        node = self._node(handle)
        if node.mgid is not None:
            self.mc_node_dissociate(node.mgid, handle)
        del self._nodes[handle]

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        group = self._group(mgid)
        if node.mgid is not None:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION", f"node {handle} is already associated with {node.mgid}"
            )
        group.nodes.append(handle)
        node.mgid = mgid
        self._cache.pop(mgid, None)

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        group = self._group(mgid)
        if node.mgid != mgid:
            raise RuntimeConfigError(
                "FAILED_PRECONDITION", f"node {handle} is not associated with group {mgid}"
            )
        group.nodes.remove(handle)
        node.mgid = None
        self._cache.pop(mgid, None)

    def _node(self, handle: int) -> _Node:
        return _found(self._nodes, handle, "no multicast node with handle")

    # -- clone sessions ----------------------------------------------------------

    def insert_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.session_id in self._sessions:
            raise RuntimeConfigError("ALREADY_EXISTS", f"clone session {session.session_id} exists")
        self._sessions[session.session_id] = session

    def modify_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        self.clone_session_or_raise(session.session_id)
        self._sessions[session.session_id] = session

    def delete_clone_session(self, session_id: int) -> None:
        self.clone_session_or_raise(session_id)
        del self._sessions[session_id]

    def clone_session(self, session_id: int) -> CloneSession | None:
        return self._sessions.get(session_id)

    def clone_session_or_raise(self, session_id: int) -> CloneSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RuntimeConfigError("NOT_FOUND", f"no clone session {session_id}")
        return session

    def clone_sessions(self) -> list[CloneSession]:
        return [self._sessions[i] for i in sorted(self._sessions)]

    def mirroring_add(self, session_id: int, port: int) -> None:
        """BMv2 ``mirroring_add``: the session sends one copy to ``port``."""
        self._sessions[session_id] = CloneSession(session_id, (Replica(port, 0),))

    def mirroring_add_mc(self, session_id: int, mgid: int) -> None:
        """BMv2 ``mirroring_add_mc``: the session replicates through group ``mgid``."""
        self._sessions[session_id] = CloneSession(session_id, mgid=mgid)

    def mirroring_delete(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    @staticmethod
    def _check_session(session: CloneSession) -> None:
        if session.session_id <= 0:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", f"clone session id must be > 0, got {session.session_id}"
            )
        if session.packet_length_bytes < 0:
            raise RuntimeConfigError("INVALID_ARGUMENT", "negative packet_length_bytes")
        _check_replicas(session.replicas, f"clone session {session.session_id}")

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]
