// Feature: tables implemented by an action profile (shared members) and by an
// action selector (groups; the member is chosen by a crc16 hash of the selector key).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> v;
    bit<8> w;
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
    action_profile(32w128) ap;
    action_selector(HashAlgorithm.crc16, 32w128, 32w16) sel;
    action setv(bit<8> x) {
        hdr.h.v = x;
    }
    action setw(bit<8> x) {
        hdr.h.w = x;
    }
    table tp {
        key = {
            hdr.h.a: exact;
        }
        actions = {
            setv;
            NoAction;
        }
        implementation = ap;
    }
    table ts {
        key = {
            hdr.h.a: exact;
            hdr.h.b: selector;
        }
        actions = {
            setw;
            NoAction;
        }
        implementation = sel;
    }
    apply {
        tp.apply();
        ts.apply();
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
