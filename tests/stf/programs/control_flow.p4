// Feature: if/else chains, switch on action_run, switch on an expression
// (with a fall-through label group), exit, return; egress still runs after exit.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> sel;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> eg;
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
    action a1() {
        hdr.h.r1 = 1;
    }
    action a2() {
        hdr.h.r1 = 2;
    }
    table t {
        key = {
            hdr.h.op: exact;
        }
        actions = {
            a1;
            a2;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 3;
        if (hdr.h.op == 0xEE) {
            hdr.h.r3 = 0xEE;
            exit;
        }
        switch (t.apply().action_run) {
            a1: {
                hdr.h.r2 = 0x11;
            }
            a2: {
                hdr.h.r2 = 0x22;
            }
            default: {
                hdr.h.r2 = 0xDD;
            }
        }
        switch (hdr.h.sel) {
            1: {
                hdr.h.r3 = 0x01;
            }
            2:
            3: {
                hdr.h.r3 = 0x23;
            }
            default: {
                hdr.h.r3 = 0xFF;
            }
        }
        if (hdr.h.sel == 9) {
            return;
        }
        hdr.h.r3 = hdr.h.r3 + 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eg = hdr.h.eg + 1;
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
