// Feature: mark_to_drop in ingress and in egress, a drop undone by a later
// egress_spec, setInvalid/setValid, and a deparser whose order differs from the parser's.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> kind;
}

header b_t {
    bit<8> v;
}

header c_t {
    bit<16> w;
}

struct meta_t { }

struct headers_t {
    a_t a;
    b_t b;
    c_t c;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.kind == 0) {
            mark_to_drop(sm);
        } else if (hdr.a.kind == 1) {
            hdr.b.setInvalid();
            sm.egress_spec = 1;
        } else if (hdr.a.kind == 2) {
            hdr.c.setValid();
            hdr.c.w = 0xBEEF;
            sm.egress_spec = 2;
        } else if (hdr.a.kind == 3) {
            mark_to_drop(sm);
            sm.egress_spec = 3;
        } else {
            sm.egress_spec = 4;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.kind == 4) {
            mark_to_drop(sm);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.c);
        pkt.emit(hdr.b);
    }
}

V1Switch(P(), VC(), ingress(), E(), CC(), D()) main;
