// kvfabric test program: one of each control-plane object P4Info describes.
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("example.org/v1/port_t", 16)
type bit<9> port_t;

enum bit<8> Color { RED = 1, GREEN = 2 }

@controller_header("packet_in")
header packet_in_t {
    port_t ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    @id(2) bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    packet_out_t packet_out;
    ethernet_t ethernet;
}

struct learn_t {
    bit<48> src;
    bit<9> port;
}

struct pair_t {
    bit<8> a;
    bool b;
}

struct metadata_t {
    bit<16> flow;
    learn_t learn;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
             inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tpids;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            tpids: accept;
            default: accept;
        }
    }
}

control Stats(inout metadata_t meta) {
    counter(64, CounterType.packets) hits;
    apply {
        hits.count((bit<32>) meta.flow);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    meter(32, MeterType.bytes) rate;
    register<pair_t>(16) pairs;
    action_selector(HashAlgorithm.crc16, 128, 14) ecmp;
    Stats() stats;

    @brief("Send the packet out of a port")
    action forward(port_t port, Color color) {
        sm.egress_spec = (bit<9>) port;
    }
    @id(0x01000123) action drop() {
        mark_to_drop(sm);
    }
    action learn() {
        meta.learn.src = hdr.ethernet.src;
        digest(1, meta.learn);
    }
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }

    @name(".l2_fwd") table fwd {
        key = {
            hdr.ethernet.dst: exact @name("dst_mac");
            meta.flow: ternary;
        }
        actions = { forward; @defaultonly drop; }
        default_action = drop();
        counters = fwd_counter;
        size = 512;
    }
    table nexthop {
        key = {
            meta.flow: exact;
            hdr.ethernet.src: selector;
        }
        actions = { set_port; @tableonly learn; }
        implementation = ecmp;
        const default_action = set_port(7);
    }
    table acl {
        key = { hdr.ethernet.ether_type: range; }
        actions = { drop; NoAction; }
        const entries = {
            0x0800 .. 0x86dd : drop();
        }
    }
    apply {
        fwd.apply();
        nexthop.apply();
        acl.apply();
        stats.apply(meta);
        bit<32> colour;
        rate.execute_meter((bit<32>) meta.flow, colour);
        pairs.write(0, { 1, true });
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

control Verify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control Compute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), Verify(), MyIngress(), MyEgress(), Compute(), MyDeparser()) main;
