// Feature: tables with exact, lpm, ternary, range and optional keys; priorities.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<32> ip;
    bit<8>  r1;
    bit<8>  r2;
    bit<8>  r3;
    bit<8>  r4;
    bit<8>  r5;
}

struct meta_t { }

struct headers_t {
    h_t h;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set1(bit<8> v) { hdr.h.r1 = v; }
    action set2(bit<8> v) { hdr.h.r2 = v; }
    action set3(bit<8> v) { hdr.h.r3 = v; }
    action set4(bit<8> v) { hdr.h.r4 = v; }
    action set5(bit<8> v) { hdr.h.r5 = v; }
    table t_exact {
        key = { hdr.h.a: exact; }
        actions = { set1; NoAction; }
        default_action = NoAction();
    }
    table t_lpm {
        key = { hdr.h.ip: lpm; }
        actions = { set2; NoAction; }
        default_action = NoAction();
    }
    table t_tern {
        key = {
            hdr.h.a: ternary;
            hdr.h.b: ternary;
        }
        actions = { set3; NoAction; }
        default_action = NoAction();
    }
    table t_range {
        key = { hdr.h.b: range; }
        actions = { set4; NoAction; }
        default_action = NoAction();
    }
    table t_opt {
        key = {
            hdr.h.a: optional;
            hdr.h.b: exact;
        }
        actions = { set5; NoAction; }
        default_action = NoAction();
    }
    apply {
        t_exact.apply();
        t_lpm.apply();
        t_tern.apply();
        t_range.apply();
        t_opt.apply();
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), ingress(), E(), CC(), D()) main;
