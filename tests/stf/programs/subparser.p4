// Feature: sub-parsers: one parser type instantiated twice and applied from states.
#include <core.p4>
#include <v1model.p4>

header outer_t {
    bit<8> count;
    bit<8> sum;
}

header inner_t {
    bit<8> more;
    bit<8> v;
}

struct meta_t {
    bit<8> count;
}

struct headers_t {
    outer_t outer;
    inner_t i1;
    inner_t i2;
}

parser Inner(packet_in pkt, out inner_t h, inout bit<8> count) {
    state start {
        pkt.extract(h);
        count = count + 1;
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inner() first;
    Inner() second;
    state start {
        pkt.extract(hdr.outer);
        meta.count = 0;
        first.apply(pkt, hdr.i1, meta.count);
        transition select(hdr.i1.more) {
            1: parse_second;
            default: accept;
        }
    }
    state parse_second {
        second.apply(pkt, hdr.i2, meta.count);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.outer.count = meta.count;
        if (hdr.i2.isValid()) {
            hdr.outer.sum = hdr.i1.v + hdr.i2.v;
        } else {
            hdr.outer.sum = hdr.i1.v;
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.outer);
        pkt.emit(hdr.i1);
        pkt.emit(hdr.i2);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
