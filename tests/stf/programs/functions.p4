// Feature: functions (with return and early return), void functions with inout,
// actions with in/out/inout parameters, direct action calls.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
    bit<8> r5;
}

struct meta_t { }

struct headers_t {
    h_t h;
}

bit<8> max(in bit<8> a, in bit<8> b) {
    if (a > b) {
        return a;
    }
    return b;
}

void swap(inout bit<8> a, inout bit<8> b) {
    bit<8> t = a;
    a = b;
    b = t;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add_to(inout bit<8> v, in bit<8> d) {
        v = v + d;
    }
    action set_out(out bit<8> o) {
        o = 0x77;
    }
    action with_data(bit<8> k) {
        hdr.h.r3 = k;
    }
    apply {
        hdr.h.r1 = max(hdr.h.a, hdr.h.b);
        swap(hdr.h.a, hdr.h.b);
        add_to(hdr.h.r2, 3);
        set_out(hdr.h.r4);
        with_data(0x42);
        hdr.h.r5 = max(max(hdr.h.a, hdr.h.b), 0x50);
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

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
