// Feature: const entries (earlier entries win), const default action with an argument,
// a default action with an argument changed by the control plane, hit and miss.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> v;
    bit<8> w;
    bit<8> hit;
    bit<8> miss;
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

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action setv(bit<8> x) {
        hdr.h.v = x;
    }
    action setw(bit<8> x) {
        hdr.h.w = x;
    }
    table tc {
        key = {
            hdr.h.a: exact;
            hdr.h.b: ternary;
        }
        actions = {
            setv;
            NoAction;
        }
        const entries = {
            (0x01, 0x10 &&& 0xF0): setv(0x11);
            (0x01, _): setv(0x12);
            (0x02, 0x22): setv(0x22);
        }
        const default_action = setv(0xDD);
    }
    table td {
        key = {
            hdr.h.a: exact;
        }
        actions = {
            setw;
        }
        default_action = setw(0x77);
    }
    apply {
        if (tc.apply().hit) {
            hdr.h.hit = 1;
        } else {
            hdr.h.hit = 0;
        }
        if (td.apply().miss) {
            hdr.h.miss = 1;
        }
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
