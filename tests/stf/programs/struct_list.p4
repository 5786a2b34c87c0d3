// Feature: struct and list expressions, struct copies, struct equality,
// a header made valid by assigning a list to it.
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8> a;
    bit<8> b;
}

header out_t {
    bit<8> x;
    bit<8> y;
    bit<8> z;
    bit<8> w;
}

struct pair_t {
    bit<8> lo;
    bit<8> hi;
}

struct meta_t {
    pair_t pair;
}

struct headers_t {
    in_t  i;
    out_t o;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        pair_t p = { hdr.i.a, hdr.i.b };
        pair_t q = { lo = 8w1, hi = 8w2 };
        meta.pair = p;
        meta.pair.lo = 9;
        bit<8> eq = 0;
        if (p == q) {
            eq = 1;
        }
        hdr.o = { p.hi, meta.pair.lo, p.lo + q.hi, eq };
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.i);
        pkt.emit(hdr.o);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
