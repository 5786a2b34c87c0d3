/* The switch tests' program: one of each P4Runtime-visible object. */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    ipv4_t ipv4;
}

struct learn_t {
    bit<48> src;
    bit<9> port;
}

struct meta_t {
    bit<8> color;
    bit<1> punt;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    value_set<bit<16>>(4) punt_types;

    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            punt_types: mark_punt;
            default: accept;
        }
    }
    state mark_punt {
        meta.punt = 1;
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(64, CounterType.packets_and_bytes) port_counter;
    meter(16, MeterType.packets) port_meter;
    register<bit<32>>(16) last_len;
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    @max_group_size(16)
    action_selector(HashAlgorithm.crc16, 128, 16) ecmp_selector;

    action drop() {
        mark_to_drop(std);
    }
    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    action to_cpu() {
        std.egress_spec = CPU_PORT;
    }
    action set_nhop(bit<9> port, bit<48> dmac) {
        std.egress_spec = port;
        hdr.ethernet.dst = dmac;
    }
    action acl_forward(bit<9> port) {
        std.egress_spec = port;
        acl_counter.count();
    }
    action acl_drop() {
        mark_to_drop(std);
        acl_counter.count();
    }
    action flood(bit<16> group) {
        std.mcast_grp = group;
    }

    table l2 {
        key = { hdr.ethernet.dst : exact; }
        actions = { forward; to_cpu; flood; drop; NoAction; }
        default_action = NoAction();
        support_timeout = true;
        size = 1024;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_nhop; drop; NoAction; }
        default_action = drop();
    }
    table acl {
        key = {
            std.ingress_port : ternary;
            hdr.ethernet.ether_type : ternary;
            hdr.ipv4.protocol : range;
        }
        actions = { acl_forward; acl_drop; NoAction; }
        default_action = NoAction();
        counters = acl_counter;
    }
    table ecmp {
        key = {
            hdr.ipv4.dst : exact;
            hdr.ipv4.src : selector;
        }
        actions = { set_nhop; NoAction; }
        implementation = ecmp_selector;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        port_counter.count((bit<32>) std.ingress_port);
        port_meter.execute_meter((bit<32>) std.ingress_port, meta.color);
        last_len.write((bit<32>) std.ingress_port, std.packet_length);
        digest<learn_t>(1, { hdr.ethernet.src, std.ingress_port });
        l2.apply();
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
            ecmp.apply();
        }
        acl.apply();
        if (meta.punt == 1) {
            std.egress_spec = CPU_PORT;
        }
        if (std.egress_spec == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std.ingress_port;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
