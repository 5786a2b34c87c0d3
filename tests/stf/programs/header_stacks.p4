// Feature: header stacks: extract into .next in a loop, .last in select,
// a run-time index, pop_front, push_front, .size, setValid on an element,
// emit of a whole stack, StackOutOfBounds when the stack is full.
#include <core.p4>
#include <v1model.p4>

header cnt_t {
    bit<8> n;
    bit<8> idx;
    bit<8> picked;
    bit<8> size;
}

header e_t {
    bit<8> v;
}

struct meta_t {
    bit<8> n;
}

struct headers_t {
    cnt_t  c;
    e_t[4] s;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.c);
        meta.n = 0;
        transition loop;
    }
    state loop {
        pkt.extract(hdr.s.next);
        meta.n = meta.n + 1;
        transition select(hdr.s.last.v) {
            0: accept;
            default: loop;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.c.n = meta.n;
        hdr.c.picked = hdr.s[hdr.c.idx].v;
        hdr.c.size = (bit<8>)hdr.s.size;
        hdr.s.pop_front(1);
        hdr.s.push_front(2);
        hdr.s[0].setValid();
        hdr.s[0].v = 0xA0;
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.c);
        pkt.emit(hdr.s);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
