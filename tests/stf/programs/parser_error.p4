// Feature: verify() and parser errors reaching ingress in standard_metadata.parser_error;
// the bytes the parser did not consume stay in the packet as payload.
#include <core.p4>
#include <v1model.p4>

error { BadLen }

header res_t {
    bit<8> code;
    bit<8> valid;
}

header h_t {
    bit<8> kind;
    bit<8> len;
}

header body_t {
    bit<32> v;
}

struct meta_t { }

struct headers_t {
    res_t  res;
    h_t    h;
    body_t body;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.len <= 4, error.BadLen);
        transition select(hdr.h.kind) {
            1: parse_body;
            0: accept;
        }
    }
    state parse_body {
        pkt.extract(hdr.body);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        if (sm.parser_error == error.NoError) {
            hdr.res.code = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.res.code = 1;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.res.code = 2;
        } else if (sm.parser_error == error.BadLen) {
            hdr.res.code = 3;
        } else {
            hdr.res.code = 0xFF;
        }
        hdr.res.valid = 0;
        if (hdr.h.isValid()) {
            hdr.res.valid = hdr.res.valid | 1;
        }
        if (hdr.body.isValid()) {
            hdr.res.valid = hdr.res.valid | 2;
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.res);
        pkt.emit(hdr.h);
        pkt.emit(hdr.body);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
