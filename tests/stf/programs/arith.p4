// Feature: bit<W> and int<W> arithmetic, saturating |+| |-|, signed ops and comparisons.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    int<8>  sa;
    int<8>  sb;
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  sadd;
    bit<8>  ssub;
    int<8>  isadd;
    int<8>  issub;
    int<8>  ineg;
    int<8>  ishr;
    bit<8>  flags;
    bit<8>  bits;
    bit<16> wide;
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

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> a = hdr.h.a;
        bit<8> b = hdr.h.b;
        int<8> sa = hdr.h.sa;
        int<8> sb = hdr.h.sb;
        hdr.h.add = a + b;
        hdr.h.sub = a - b;
        hdr.h.mul = a * b;
        hdr.h.sadd = a |+| b;
        hdr.h.ssub = a |-| b;
        hdr.h.isadd = sa |+| sb;
        hdr.h.issub = sa |-| sb;
        hdr.h.ineg = -sa;
        hdr.h.ishr = sa >> 2;
        hdr.h.flags = (bit<8>)(bit<1>)(a < b);
        if (sa < sb) {
            hdr.h.flags = hdr.h.flags | 2;
        }
        if (a == b) {
            hdr.h.flags = hdr.h.flags | 4;
        }
        if (sa >= 0) {
            hdr.h.flags = hdr.h.flags | 8;
        }
        hdr.h.bits = (a & 0xF0) | (~b & 0x0F);
        hdr.h.wide = (bit<16>)a * (bit<16>)b;
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
