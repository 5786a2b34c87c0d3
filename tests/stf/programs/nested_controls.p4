// Feature: controls instantiated inside controls, applied with arguments,
// and a table inside a nested control instance (control-plane name ingress.lk.tt).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> x;
    bit<8> y;
    bit<8> k;
    bit<8> t;
}

struct meta_t { }

struct headers_t {
    h_t h;
}

control Add(inout bit<8> x, in bit<8> d) {
    apply {
        x = x + d;
    }
}

control Twice(inout bit<8> x) {
    Add() a1;
    Add() a2;
    apply {
        a1.apply(x, 1);
        a2.apply(x, 2);
    }
}

control Lookup(inout headers_t hdr) {
    action set(bit<8> v) {
        hdr.h.t = v;
    }
    table tt {
        key = {
            hdr.h.k: exact;
        }
        actions = {
            set;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        tt.apply();
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Twice() tw;
    Lookup() lk;
    apply {
        tw.apply(hdr.h.x);
        lk.apply(hdr);
        tw.apply(hdr.h.y);
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
