// kvfabric test program: nested control instances, shared names, p4c's block order.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> f;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control Inner(inout headers_t hdr) {
    action a(bit<8> v) {
        hdr.h.f = v;
    }
    table t {
        key = { hdr.h.f: exact; }
        actions = { a; }
    }
    apply {
        t.apply();
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Inner() i1;
    Inner() i2;
    action a() {
        sm.egress_spec = 1;
    }
    table t {
        key = { hdr.h.f: lpm; }
        actions = { a; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    apply {
        t.apply();
        i1.apply(hdr);
        i2.apply(hdr);
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.f = 0;
    }
    table t {
        key = { sm.egress_port: exact; }
        actions = { a; }
        const default_action = a();
    }
    apply {
        t.apply();
    }
}

control Verify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control Compute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), Verify(), MyIngress(), MyEgress(), Compute(), MyDeparser()) main;
