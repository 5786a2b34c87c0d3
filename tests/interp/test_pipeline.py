"""End-to-end behaviour of the v1model pipeline on small programs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from softswitch.frontend import load_program
from softswitch.interp.pipeline import INGRESS_CLONE, REPLICATION, Pipeline
from softswitch.runtime.pre import CloneSession, Replica
from softswitch.runtime.tables import ActionCall, Lpm, TableEntry

ROUTER = Path(__file__).resolve().parents[2] / "benchmarks" / "programs" / "router.p4"

DECLS = """
header h_t { bit<8> a; bit<8> b; }
header x_t { bit<16> v; }
struct headers { h_t h; x_t x; }
struct meta { bit<8> tag; }
"""


def ipv4_packet(dst: bytes, ttl: int = 64) -> bytes:
    head = bytes([0x45, 0, 0, 20, 0, 1, 0, 0, ttl, 6, 0, 0, 1, 2, 3, 4]) + dst
    words = [int.from_bytes(head[i : i + 2], "big") for i in range(0, 20, 2)]
    s = sum(words)
    s = (s & 0xFFFF) + (s >> 16)
    csum = (~s) & 0xFFFF
    head = head[:10] + csum.to_bytes(2, "big") + head[12:]
    return bytes.fromhex("aabbccddeeff0102030405060800") + head


def test_router_forwards_decrements_ttl_and_fixes_checksum() -> None:
    pl = Pipeline.load(load_program(str(ROUTER)))
    table = pl.state.table("MyIngress.ipv4_lpm")
    table.insert(
        TableEntry(
            (Lpm(0x0A000000, 8),), action=ActionCall("MyIngress.ipv4_forward", (0x001122334455, 3))
        )
    )
    out = pl.process(1, ipv4_packet(bytes([10, 1, 1, 1])) + b"payload")
    assert len(out) == 1
    port, data = out[0]
    assert port == 3
    assert data[:12] == bytes.fromhex("001122334455aabbccddeeff")
    assert data[14 + 8] == 63
    assert data.endswith(b"payload")
    expected = ipv4_packet(bytes([10, 1, 1, 1]), ttl=63)[14:34]
    assert data[14:34] == expected
    # the default action drops
    assert pl.process(1, ipv4_packet(bytes([11, 1, 1, 1]))) == []


def test_parser_error_does_not_drop_and_sets_parser_error(
    pipeline: Callable[..., Pipeline],
) -> None:
    ingress = """apply {
        if (sm.parser_error == error.PacketTooShort) { hdr.h.b = 0xEE; }
        sm.egress_spec = 2;
    }"""
    parser = "state start { pk.extract(hdr.h); pk.extract(hdr.x); transition accept; }"
    pl = pipeline(decls=DECLS, ingress=ingress, parser=parser)
    # h parses, x is one byte short: the byte left over follows as payload
    assert pl.process(0, bytes([1, 2, 9])) == [(2, bytes([1, 0xEE, 9]))]


def test_select_no_match_and_reject_end_parsing_without_error(
    pipeline: Callable[..., Pipeline],
) -> None:
    # p4c-bm2-ss compiles both "no case matched" and "transition reject" to
    # BMv2's null next state: parsing stops, parser_error stays NoError.
    parser = """state start { pk.extract(hdr.h);
        transition select(hdr.h.a) { 1: accept; 2: reject; 3: more; } }
        state more { pk.extract(hdr.x); transition accept; }"""
    ingress = """apply {
        if (sm.parser_error == error.NoError) { hdr.h.b = 0x11; }
        if (sm.parser_error == error.NoMatch) { hdr.h.b = 2; }
        sm.egress_spec = 1;
    }"""
    pl = pipeline(decls=DECLS, ingress=ingress, parser=parser)
    assert pl.process(0, bytes([7, 0, 5]))[0][1] == bytes([7, 0x11, 5])  # no match
    assert pl.process(0, bytes([2, 0, 5]))[0][1] == bytes([2, 0x11, 5])  # reject
    assert pl.process(0, bytes([3, 0, 5, 6]))[0][1] == bytes([3, 0x11, 5, 6])  # x parsed


def test_table_const_entries_and_action_run(pipeline: Callable[..., Pipeline]) -> None:
    ingress = """
    action set_b(bit<8> v) { hdr.h.b = v; }
    action nop() { }
    table t {
        key = { hdr.h.a: exact; }
        actions = { set_b; nop; }
        const entries = { 1: set_b(10); 2: set_b(20); }
        default_action = nop();
    }
    apply {
        switch (t.apply().action_run) {
            set_b: { sm.egress_spec = 1; }
            default: { sm.egress_spec = 2; }
        }
    }"""
    pl = pipeline(decls=DECLS, ingress=ingress, deparser="pk.emit(hdr.h);")
    assert pl.process(0, bytes([2, 0])) == [(1, bytes([2, 20]))]
    assert pl.process(0, bytes([3, 0])) == [(2, bytes([3, 0]))]


def test_exit_stops_ingress(pipeline: Callable[..., Pipeline]) -> None:
    ingress = "apply { sm.egress_spec = 1; if (hdr.h.a == 1) { exit; } hdr.h.b = 5; }"
    pl = pipeline(decls=DECLS, ingress=ingress, deparser="pk.emit(hdr.h);")
    assert pl.process(0, bytes([1, 0])) == [(1, bytes([1, 0]))]
    assert pl.process(0, bytes([2, 0])) == [(1, bytes([2, 5]))]


def test_multicast_sets_rid_and_instance_type(pipeline: Callable[..., Pipeline]) -> None:
    ingress = "apply { sm.mcast_grp = 7; }"
    egress = """apply {
        hdr.h.a = (bit<8>)sm.egress_rid;
        hdr.h.b = (bit<8>)sm.instance_type;
    }"""
    pl = pipeline(decls=DECLS, ingress=ingress, egress=egress, deparser="pk.emit(hdr.h);")
    pl.state.pre.mc_mgrp_create(7)
    node = pl.state.pre.mc_node_create(3, [1, 2])
    pl.state.pre.mc_node_associate(7, node)
    out = sorted(pl.process(0, bytes([0, 0])))
    assert out == [(1, bytes([3, REPLICATION])), (2, bytes([3, REPLICATION]))]


def test_ingress_clone_reparses_original(pipeline: Callable[..., Pipeline]) -> None:
    ingress = "apply { hdr.h.a = 99; sm.egress_spec = 1; clone(CloneType.I2E, 5); }"
    egress = "apply { hdr.h.b = (bit<8>)sm.instance_type; }"
    pl = pipeline(decls=DECLS, ingress=ingress, egress=egress, deparser="pk.emit(hdr.h);")
    pl.state.pre.insert_clone_session(CloneSession(5, (Replica(4),)))
    out = sorted(pl.process(0, bytes([1, 0])))
    assert out == [(1, bytes([99, 0])), (4, bytes([1, INGRESS_CLONE]))]


def test_registers_and_counters(pipeline: Callable[..., Pipeline]) -> None:
    ingress = """
    register<bit<8>>(4) r;
    counter(4, CounterType.packets_and_bytes) c;
    apply {
        bit<8> v;
        r.read(v, 1);
        r.write(1, v + hdr.h.a);
        r.read(hdr.h.b, 1);
        c.count((bit<32>)2);
        sm.egress_spec = 1;
    }"""
    pl = pipeline(decls=DECLS, ingress=ingress, deparser="pk.emit(hdr.h);")
    assert pl.process(0, bytes([3, 0])) == [(1, bytes([3, 3]))]
    assert pl.process(0, bytes([4, 0])) == [(1, bytes([4, 7]))]
    data = pl.state.counter("IG.c").read(2)
    assert (data.packets, data.bytes) == (2, 4)


def test_header_stack_parse_and_pop(pipeline: Callable[..., Pipeline]) -> None:
    decls = """
    header e_t { bit<8> v; }
    struct headers { e_t[3] s; }
    struct meta { }
    """
    parser = """state start { pk.extract(hdr.s.next);
        transition select(hdr.s.last.v) { 0: accept; default: start; } }"""
    ingress = "apply { hdr.s.pop_front(1); sm.egress_spec = 1; }"
    pl = pipeline(decls=decls, parser=parser, ingress=ingress)
    assert pl.process(0, bytes([5, 6, 0, 0xAA])) == [(1, bytes([6, 0, 0xAA]))]
    # a fourth element overflows the stack: StackOutOfBounds, nothing consumed
    out = pl.process(0, bytes([1, 2, 3, 4]))
    assert out == [(1, bytes([2, 3, 4]))]


def test_resubmit_preserves_field_list(tmp_path: Path) -> None:
    source = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta { @field_list(1) bit<8> n; }
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply {
        if (m.n < 3) { m.n = m.n + 1; resubmit_preserving_field_list(1); }
        hdr.h.b = m.n;
        sm.egress_spec = 1;
    }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CK(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""
    path = tmp_path / "resubmit.p4"
    path.write_text(source)
    pl = Pipeline.load(load_program(str(path)))
    assert pl.process(0, bytes([1, 0])) == [(1, bytes([1, 3]))]


def test_resubmitted_and_recirculated_packets_start_with_zeroed_metadata(
    pipeline: Callable[..., Pipeline],
) -> None:
    # simple_switch resets all metadata of a resubmit/recirculate copy and then
    # copies only the preserved field list: ingress_port reads 0 afterwards
    ingress = """apply {
        if (sm.instance_type == 0) {
            if (hdr.h.a == 1) { resubmit_preserving_field_list(0); }
        } else {
            hdr.h.b = (bit<8>)sm.ingress_port;
            hdr.x.v = (bit<16>)sm.instance_type;
        }
        sm.egress_spec = 1;
    }"""
    egress = """apply {
        if (hdr.x.v == 0 && hdr.h.a == 2) { recirculate_preserving_field_list(0); }
    }"""
    parser = "state start { pk.extract(hdr.h); pk.extract(hdr.x); transition accept; }"
    pl = pipeline(decls=DECLS, parser=parser, ingress=ingress, egress=egress)
    assert pl.process(7, bytes([1, 9, 0, 0])) == [(1, bytes([1, 0, 0, 6]))]
    assert pl.process(7, bytes([2, 9, 0, 0])) == [(1, bytes([2, 0, 0, 4]))]
    assert pl.process(7, bytes([3, 9, 0, 0])) == [(1, bytes([3, 9, 0, 0]))]


def test_lpm_table_from_state_by_suffix() -> None:
    pl = Pipeline.load(load_program(str(ROUTER)))
    table = pl.state.table("ipv4_lpm")
    assert table.name == "MyIngress.ipv4_lpm"
    assert [k.name for k in table.spec.keys] == ["hdr.ipv4.dstAddr"]


def test_priority_picks_the_queue_and_an_out_of_range_priority_drops(
    pipeline: Callable[..., Pipeline],
) -> None:
    """simple_switch: priority p goes to queue N-1-p; p >= N (default N = 1) is dropped.
    Port 1 is rate-limited so its queues hold packets: a packet of the higher priority
    joins an empty queue while the lower one has a backlog."""
    ingress = "apply { sm.egress_spec = 1; sm.priority = (bit<3>)hdr.h.a; }"
    egress = "apply { hdr.h.b = (bit<8>)sm.enq_qdepth; }"
    pl = pipeline(decls=DECLS, ingress=ingress, egress=egress, deparser="pk.emit(hdr.h);")
    assert pl.process(0, bytes([1, 0])) == []  # one queue: priority 1 names none
    pl.state.tm.set_queues_per_port(2)
    pl.state.tm.set_queue_rate(1, port=1)  # one packet a second: nothing leaves
    assert pl.process(0, bytes([0, 9])) == [(1, bytes([0, 0]))]
    assert pl.process(0, bytes([0, 9])) == [(1, bytes([0, 1]))]  # behind the first
    assert pl.process(0, bytes([1, 9])) == [(1, bytes([1, 2]))]  # the port's backlog
    assert pl.state.tm.queue_for(1) == 0 and pl.state.tm.queue_for(0) == 1
    assert pl.process(0, bytes([2, 9])) == []
