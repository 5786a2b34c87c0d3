// Feature: hash() with crc16, crc32, csum16, identity and xor16, and base + (h % max).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<32> b;
    bit<16> r_crc16;
    bit<32> r_crc32;
    bit<16> r_csum;
    bit<16> r_id;
    bit<16> r_xor;
    bit<16> r_mod;
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
    apply {
        hash(hdr.h.r_crc16, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        hash(hdr.h.r_crc32, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b }, 32w0xFFFFFFFF);
        hash(hdr.h.r_csum, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        hash(hdr.h.r_id, HashAlgorithm.identity, 16w0, { hdr.h.b }, 32w65536);
        hash(hdr.h.r_xor, HashAlgorithm.xor16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
        hash(hdr.h.r_mod, HashAlgorithm.crc16, 16w100, { hdr.h.a, hdr.h.b }, 16w10);
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
