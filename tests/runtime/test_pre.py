"""Packet replication engine: BMv2 node order, P4Runtime groups, clone sessions."""

from __future__ import annotations

from softswitch.runtime.pre import CloneSession, Pre, Replica
from tests.support.runtime_errors import code_of


class TestSimplePre:
    def test_nodes_in_association_order_ports_ascending(self) -> None:
        pre = Pre()
        pre.mc_mgrp_create(1)
        a = pre.mc_node_create(5, [3, 1, 2])
        b = pre.mc_node_create(2, [7])
        assert (a, b) == (0, 1)
        pre.mc_node_associate(1, b)
        pre.mc_node_associate(1, a)
        assert pre.replicate(1) == [(7, 2), (1, 5), (2, 5), (3, 5)]
        pre.mc_node_update(a, [4])
        assert pre.replicate(1) == [(7, 2), (4, 5)]
        pre.mc_node_dissociate(1, b)
        assert pre.replicate(1) == [(4, 5)]

    def test_unknown_group_gives_no_copy(self) -> None:
        assert Pre().replicate(9) == []

    def test_handles_are_reused_lowest_first(self) -> None:
        pre = Pre()
        pre.mc_mgrp_create(1)
        for _ in range(3):
            pre.mc_node_create(0, [1])
        pre.mc_node_associate(1, 1)
        pre.mc_node_destroy(1)  # destroying an associated node dissociates it
        assert pre.replicate(1) == []
        assert pre.mc_node_create(0, [2]) == 1

    def test_errors(self) -> None:
        pre = Pre()
        pre.mc_mgrp_create(1)
        h = pre.mc_node_create(0, [1])
        assert code_of(pre.mc_node_associate, 2, h) == "NOT_FOUND"
        assert code_of(pre.mc_node_associate, 1, 9) == "NOT_FOUND"
        pre.mc_node_associate(1, h)
        assert code_of(pre.mc_node_associate, 1, h) == "FAILED_PRECONDITION"
        pre.mc_mgrp_create(2)
        assert code_of(pre.mc_node_dissociate, 2, h) == "FAILED_PRECONDITION"
        pre.mc_mgrp_create(1)  # exists: nothing happens, as in BMv2
        assert pre.replicate(1) == [(1, 0)]


class TestP4RuntimeGroups:
    def test_insert_orders_by_instance_then_port(self) -> None:
        pre = Pre()
        pre.insert_multicast_group(1, [Replica(5, 2), Replica(3, 1), Replica(1, 2)], b"m")
        assert pre.replicate(1) == [(3, 1), (1, 2), (5, 2)]
        assert pre.multicast_group(1) == (Replica(3, 1), Replica(1, 2), Replica(5, 2))
        assert pre.multicast_group_metadata(1) == b"m"

    def test_modify_keeps_nodes_and_appends_new_instances(self) -> None:
        pre = Pre()
        pre.insert_multicast_group(1, [Replica(1, 1), Replica(2, 2), Replica(3, 3)])
        pre.modify_multicast_group(1, [Replica(9, 0), Replica(4, 3), Replica(2, 2)])
        # instances 2 and 3 keep their place, 1 is gone, 0 is new and goes last
        assert pre.replicate(1) == [(2, 2), (4, 3), (9, 0)]
        assert pre.multicast_group(1) == (Replica(9, 0), Replica(2, 2), Replica(4, 3))

    def test_errors(self) -> None:
        pre = Pre()
        assert code_of(pre.insert_multicast_group, 0, []) == "INVALID_ARGUMENT"
        pre.insert_multicast_group(1, [])
        assert code_of(pre.insert_multicast_group, 1, []) == "ALREADY_EXISTS"
        dup = [Replica(1, 1), Replica(1, 1)]
        assert code_of(pre.insert_multicast_group, 2, dup) == "INVALID_ARGUMENT"
        assert code_of(pre.modify_multicast_group, 3, []) == "NOT_FOUND"
        assert code_of(pre.modify_multicast_group, 1, dup) == "INVALID_ARGUMENT"
        pre.delete_multicast_group(1)
        assert code_of(pre.delete_multicast_group, 1) == "NOT_FOUND"
        assert code_of(pre.multicast_group, 1) == "NOT_FOUND"
        assert pre.multicast_groups() == {}


class TestCloneSessions:
    def test_crud(self) -> None:
        pre = Pre()
        s = CloneSession(5, (Replica(3, 1),), class_of_service=2, packet_length_bytes=128)
        pre.insert_clone_session(s)
        assert pre.clone_session(5) == s and pre.clone_targets(5) == [(3, 1)]
        assert code_of(pre.insert_clone_session, s) == "ALREADY_EXISTS"
        pre.modify_clone_session(CloneSession(5, (Replica(4, 0),)))
        assert pre.clone_targets(5) == [(4, 0)]
        pre.delete_clone_session(5)
        assert pre.clone_session(5) is None and pre.clone_targets(5) == []
        assert code_of(pre.delete_clone_session, 5) == "NOT_FOUND"
        assert code_of(pre.modify_clone_session, s) == "NOT_FOUND"
        assert code_of(pre.insert_clone_session, CloneSession(0)) == "INVALID_ARGUMENT"

    def test_bmv2_mirroring(self) -> None:
        pre = Pre()
        pre.mirroring_add(3, 7)
        assert pre.clone_targets(3) == [(7, 0)]
        pre.insert_multicast_group(9, [Replica(1, 4), Replica(2, 4)])
        pre.mirroring_add_mc(3, 9)
        assert pre.clone_targets(3) == [(1, 4), (2, 4)]
        pre.mirroring_delete(3)
        assert pre.clone_sessions() == []
