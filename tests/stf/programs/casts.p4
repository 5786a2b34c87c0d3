// Feature: casts, slices (read and write), concatenation, shifts, ?:.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> x;
    bit<8>  y;
    int<8>  s;
    bit<8>  m;
    bit<8>  c1;
    bit<32> c2;
    bit<16> c3;
    bit<16> c4;
    bit<8>  c5;
    bit<8>  c6;
    bit<8>  c7;
    bit<16> c8;
    int<8>  c9;
    bit<8>  c10;
    bit<8>  c11;
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
        bit<16> x = hdr.h.x;
        bit<8> y = hdr.h.y;
        int<8> s = hdr.h.s;
        hdr.h.c1 = x[11:4];
        hdr.h.c2 = x ++ y ++ y;
        hdr.h.c3 = (bit<16>)(int<16>)s;
        hdr.h.c4 = (bit<16>)(bit<8>)s;
        hdr.h.c5 = (bit<8>)x;
        hdr.h.c6 = y << 3;
        hdr.h.c7 = y >> 3;
        hdr.h.c8 = x << y[2:0];
        hdr.h.c9 = s >> 1;
        hdr.h.c10 = x > 0x1000 ? y : ~y;
        hdr.h.c11 = (bit<8>)(bit<1>)(x == 0x1234);
        hdr.h.m[3:0] = y[7:4];
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
