// Feature: @priority(n) on const entries of a ternary table.  p4c-bm2-ss
// gives BMv2 each entry's @priority value, or its 1-based position when it has
// none, and BMv2 prefers the smallest; a ternary value is compared under its
// mask only (bits outside the mask do not matter).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
    bit<8>  r;
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
    action set(bit<8> r) { hdr.h.r = r; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; }
        default_action = set(0xFF);
        const entries = {
            0xAB01 &&& 0x000F : set(1) @priority(30);  // low nibble 1
            0x0A0A            : set(2);                // no annotation: position 2
            0x0000 &&& 0xF000 : set(3) @priority(10);  // top nibble 0
        }
    }
    apply {
        t.apply();
        sm.egress_spec = 1;
    }
}

control EG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CK(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), ingress(), EG(), CK(), D()) main;
