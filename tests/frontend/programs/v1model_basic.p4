#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { bit<8> x; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x800 &&& 0xF00: accept;
            (16w1): accept;
            default: reject;
        }
    }
}
control MyVerify(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; meta.x = meta.x >> 1; meta.x >>= 2; }
    table t {
        key = { hdr.ethernet.dst: exact @name("dst"); }
        actions = { fwd; @defaultonly drop; }
        default_action = drop();
        size = 1024;
        const entries = { 48w1 : fwd(1); priority=3 : (48w2) : fwd(2); }
    }
    apply {
        if (hdr.ethernet.isValid() && meta.x < 3 || (bit<8>)meta.x[3:0] > 1) { t.apply(); }
        switch (t.apply().action_run) { fwd: drop: { exit; } default: {} }
        bit<16> h;
        hash(h, HashAlgorithm.crc16, 16w0, { hdr.ethernet.dst }, 16w100);
    }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); } }
V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
