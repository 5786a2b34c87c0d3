// Feature: headers, structs, typedef, const, enums, serializable enums, error.
#include <core.p4>
#include <v1model.p4>

typedef bit<8> byte_t;
const byte_t MAGIC = 0x2A;
const bit<16> BIG = 16w0x1234 + 1;

enum Color { Red, Green, Blue }
enum bit<8> Op { ADD = 1, SUB = 2, XOR = 8w0x10 }

error { BadOp }

header h_t {
    Op      op;
    byte_t  x;
    byte_t  y;
    byte_t  res;
    bit<16> wide;
    bit<8>  color;
    bit<8>  err;
}

struct meta_t {
    Color  c;
    byte_t scratch;
}

struct headers_t {
    h_t h;
}

typedef headers_t H;

parser P(packet_in pkt, out H hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout H hdr, inout meta_t meta) { apply { } }

control I(inout H hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.op == Op.ADD) {
            hdr.h.res = hdr.h.x + hdr.h.y;
            meta.c = Color.Green;
        } else if (hdr.h.op == Op.SUB) {
            hdr.h.res = hdr.h.x - hdr.h.y;
            meta.c = Color.Blue;
        } else if (hdr.h.op == Op.XOR) {
            hdr.h.res = hdr.h.x ^ hdr.h.y;
            meta.c = Color.Red;
        } else {
            hdr.h.res = MAGIC;
            meta.c = Color.Red;
        }
        if (meta.c == Color.Red) {
            hdr.h.color = 1;
        } else if (meta.c == Color.Green) {
            hdr.h.color = 2;
        } else {
            hdr.h.color = 3;
        }
        hdr.h.wide = BIG;
        error e = error.BadOp;
        hdr.h.err = 0;
        if (e == error.BadOp) {
            hdr.h.err = hdr.h.err | 1;
        }
        if (sm.parser_error == error.NoError) {
            hdr.h.err = hdr.h.err | 2;
        }
        if (e != error.PacketTooShort) {
            hdr.h.err = hdr.h.err | 4;
        }
        sm.egress_spec = 2;
    }
}

control E(inout H hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout H hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in H hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
