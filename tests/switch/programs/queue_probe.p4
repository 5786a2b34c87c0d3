// Queue probes: frames of EtherType 0x88B5 from port 1 go to port 2 and back; on
// the way out, egress writes the queueing metadata into the probe header and
// marks congestion (3) when the queue held at least QUEUE_MARK packets, as an
// ECN switch compares enq_qdepth with a threshold.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_PROBE = 0x88B5;
const bit<19> QUEUE_MARK = 10;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header probe_t {
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;
    bit<32> enq_timestamp;
    bit<8>  mark;
}

struct headers_t {
    ethernet_t eth;
    probe_t    probe;
}

struct meta_t { }

parser ProbeParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            TYPE_PROBE: probe;
            default: accept;
        }
    }
    state probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control ProbeIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 1) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control ProbeEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.probe.isValid()) {
            hdr.probe.enq_qdepth = (bit<32>)sm.enq_qdepth;
            hdr.probe.deq_qdepth = (bit<32>)sm.deq_qdepth;
            hdr.probe.deq_timedelta = sm.deq_timedelta;
            hdr.probe.enq_timestamp = sm.enq_timestamp;
            if (sm.enq_qdepth >= QUEUE_MARK) {
                hdr.probe.mark = 3;
            }
        }
    }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control ProbeDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.probe);
    }
}

V1Switch(ProbeParser(), NoVerify(), ProbeIngress(), ProbeEgress(), NoCompute(),
         ProbeDeparser()) main;
