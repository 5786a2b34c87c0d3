// Feature: parser select on a tuple, with don't-care, masks, ranges, a slice and default.
#include <core.p4>
#include <v1model.p4>

header tag_t {
    bit<8> kind;
    bit<8> sub;
    bit<8> res;
}

header v_t {
    bit<8> v;
}

struct meta_t { }

struct headers_t {
    tag_t tag;
    v_t   a;
    v_t   b;
    v_t   c;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kind, hdr.tag.sub) {
            (0x01, _): parse_a;
            (0x02 &&& 0x0F, 0x00 .. 0x0F): parse_b;
            (0x10 .. 0x1F, 0xAA): parse_c;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition select(hdr.b.v[7:4]) {
            4w0x1: parse_c;
            default: accept;
        }
    }
    state parse_c {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.tag.res = 0;
        if (hdr.a.isValid()) {
            hdr.tag.res = hdr.tag.res | 1;
        }
        if (hdr.b.isValid()) {
            hdr.tag.res = hdr.tag.res | 2;
        }
        if (hdr.c.isValid()) {
            hdr.tag.res = hdr.tag.res | 4;
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.tag);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
