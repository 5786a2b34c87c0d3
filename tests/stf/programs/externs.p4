// Feature: counter, direct_counter, register, meter and direct_meter
// (meters without a configuration answer GREEN, 0).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  idx;
    bit<16> inc;
    bit<16> old;
    bit<8>  color;
    bit<8>  dcolor;
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
    counter(32w8, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    register<bit<16>>(32w4) r;
    meter(32w4, MeterType.packets) m;
    action hitme() {
        dm.read(hdr.h.dcolor);
    }
    table t {
        key = {
            hdr.h.a: exact;
        }
        actions = {
            hitme;
            NoAction;
        }
        counters = dc;
        meters = dm;
        default_action = NoAction();
    }
    apply {
        c.count((bit<32>)hdr.h.idx);
        t.apply();
        bit<16> old;
        r.read(old, (bit<32>)hdr.h.idx);
        r.write((bit<32>)hdr.h.idx, old + hdr.h.inc);
        hdr.h.old = old;
        bit<2> color;
        m.execute_meter((bit<32>)hdr.h.idx, color);
        hdr.h.color = (bit<8>)color;
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
