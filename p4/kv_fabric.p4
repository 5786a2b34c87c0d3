/*
 * kv_fabric.p4: the leaf-spine data plane of kvfabric (P4_16, v1model).
 *
 * One program for both roles. A switch is a leaf or a spine only by the
 * entries its controller installs:
 *   leaf:  ipv4_route maps each local host /32 to forward(host port) and the
 *          other leaves' prefixes to route_ecmp(group); in kv-aware mode a
 *          tagged KV transfer whose source port is in a spine's range of
 *          kv_range goes up that spine (static entries: the controller writes
 *          nothing per transfer), then any flow with a flow_pin entry (its
 *          whole 5-tuple) goes up its pinned spine, and every other flow is
 *          spread over the group's uplinks by ECMP or, in flowlet mode, LetFlow.
 *   spine: ipv4_route maps each leaf prefix to forward(port towards that leaf)
 *          (or route_ecmp(group) for parallel links).
 * Every switch counts bytes and packets per egress port (all traffic, and the
 * KV class alone), keeps per egress port histograms of the queue depth and
 * the queueing delay in indexed counters (bucket boundaries set by the
 * controller), answers ARP requests for the prefixes of arp_proxy, and punts
 * link-discovery probes to its controller with their ingress port.
 *
 * Everything the controller reads or writes is a table, an action profile,
 * an indexed counter or a packet-in/out header: the parts of P4Runtime that
 * BMv2's server (PI) implements. Registers (flowlet state) are read and
 * written by the data plane only; PI answers register reads with
 * UNIMPLEMENTED (p4lang/PI#376).
 *
 * p4/README.md documents the tables, the KV tag, the counters, the queue
 * histogram read procedure and the probe format. The program keeps to what
 * p4c-bm2-ss and BMv2 support: no table applied twice, no table inside an
 * action, no conditionals inside actions, register read-modify-write only in
 * control bodies, default actions only on tables without an action selector.
 */
#include <core.p4>
#include <v1model.p4>

#ifndef KV_CPU_PORT
#define KV_CPU_PORT 255
#endif

const bit<9>  CPU_PORT = KV_CPU_PORT;       // simple_switch_grpc --cpu-port 255

const bit<16> ETHERTYPE_IPV4  = 0x0800;
const bit<16> ETHERTYPE_ARP   = 0x0806;
const bit<16> ETHERTYPE_PROBE = 0x88B5;    // IEEE 802 local experimental EtherType 1
const bit<32> PROBE_MAGIC     = 0x4B564650; // "KVFP"

const bit<8>  PROTO_TCP   = 6;
const bit<8>  PROTO_UDP   = 17;
const bit<16> ARP_REQUEST = 1;
const bit<16> ARP_REPLY   = 2;

const bit<32> PORTS         = 512;   // every bit<9> port number
const bit<32> HIST_BUCKETS  = 8;     // buckets per port of a queue histogram (bit<3>)
const bit<32> FLOWLET_SLOTS = 4096;  // flowlet table: flows hashed into slots
const bit<16> FLOWLET_STEP  = 0x9E37; // salt step of a new flowlet (2^16 / golden ratio)

/* ------------------------------------------------------------------ headers */

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;    // send the frame that follows out of this port
    bit<7> _pad;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;   // the port the punted frame arrived on
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* ARP for IPv4 over Ethernet (RFC 826). */
header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

/* The link-discovery probe, right after the Ethernet header (20 bytes). */
header probe_t {
    bit<32> magic;             // PROBE_MAGIC
    bit<8>  version;           // 1
    bit<8>  flags;             // 0
    bit<16> sender_port;       // the port the probe was sent out of
    bit<64> sender_device_id;  // P4Runtime device id of the sending switch
    bit<32> nonce;             // chosen by the controller, e.g. the round number
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    arp_t        arp;
    probe_t      probe;
    ipv4_t       ipv4;
    tcp_t        tcp;
    udp_t        udp;
}

struct metadata_t {
    bit<16> l4_src_port;       // TCP/UDP ports of an unfragmented packet, else 0
    bit<16> l4_dst_port;
    bit<1>  is_kv;             // the DSCP is the KV class (kv_class hit)
    bit<1>  routed;            // forwarded at L3: egress rewrites the MACs
    bit<1>  go_up;             // route_ecmp: pin, flowlet or ECMP picks the port
    bit<16> ecmp_group;        // the action-selector group of route_ecmp
    bit<16> flowlet_salt;      // hashed with the 5-tuple; 0 outside flowlet mode
    bit<1>  flowlet_mode;      // switch_config: LetFlow on
    bit<1>  kv_aware;          // switch_config: kv_range pins tagged KV transfers
    bit<48> flowlet_timeout;   // switch_config: idle gap (microseconds)
    bit<8>  flowlet_gen;       // switch_config: bumping it restarts every flowlet
    bit<1>  qdepth_binned;     // qdepth_buckets gave enq_qdepth a bucket
    bit<3>  qdepth_bucket;
    bit<1>  qdelay_binned;     // qdelay_buckets gave deq_timedelta a bucket
    bit<3>  qdelay_bucket;
}

/* ------------------------------------------------------------------- parser */

parser FabricParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_PROBE: parse_probe;
            default: accept;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }

    state parse_probe {
        packet.extract(hdr.probe);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, PROTO_TCP): parse_tcp;
            (4w5, 13w0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src_port = hdr.tcp.src_port;
        meta.l4_dst_port = hdr.tcp.dst_port;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.src_port;
        meta.l4_dst_port = hdr.udp.dst_port;
        transition accept;
    }
}

/* -------------------------------------------------------------- checksums */

control FabricVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FabricComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

/* ------------------------------------------------------------------ ingress */

control FabricIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    /* Flowlet state, per slot (a crc32 hash of the 5-tuple):
     *   flowlet_last_seen: ingress timestamp of the slot's last packet (us)
     *   flowlet_state:     [63:48] ECMP group, [47:40] generation,
     *                      [39:24] flowlet salt, [16] valid, [8:0] uplink port
     * A new flowlet adds FLOWLET_STEP to the slot's salt and lets the ECMP
     * selector hash (5-tuple, salt): a Weyl sequence, so that successive
     * flowlets of a flow land on uplinks that look random, as in LetFlow, but
     * can be computed by hand (a plain counter would not do: crc16 is linear,
     * and with 2 or 4 uplinks salts 1 and 2 always pick the same one). */
    register<bit<48>>(FLOWLET_SLOTS) flowlet_last_seen;
    register<bit<64>>(FLOWLET_SLOTS) flowlet_state;

    action_selector(HashAlgorithm.crc16, 32w1024, 32w16) ecmp_selector;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* switch_config: the load-balancing mode (a keyless table: the controller
     * modifies its default action). ecmp_mode, the initial one, is what a leaf no
     * controller has set up does: every flow by ECMP. */
    action ecmp_mode() {
        meta.flowlet_mode = 0;
    }

    action kv_aware_mode() {
        meta.flowlet_mode = 0;
        meta.kv_aware = 1;
    }

    action flowlet_mode(bit<48> timeout_us, bit<8> generation) {
        meta.flowlet_mode = 1;
        meta.flowlet_timeout = timeout_us;
        meta.flowlet_gen = generation;
    }

    table switch_config {
        actions = { ecmp_mode; kv_aware_mode; flowlet_mode; }
        default_action = ecmp_mode();
    }

    /* kv_class: which DSCP values are the KV class. */
    action mark_kv() {
        meta.is_kv = 1;
    }

    table kv_class {
        key = { hdr.ipv4.dscp: exact; }
        actions = { mark_kv; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    /* ipv4_route: where a destination is. */
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
        meta.routed = 1;
    }

    action route_ecmp(bit<16> group) {
        meta.ecmp_group = group;
        meta.go_up = 1;
        meta.routed = 1;
    }

    table ipv4_route {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { forward; route_ecmp; drop; }
        default_action = drop();
        size = 1024;
    }

    /* kv_range: the spine of each range of tagged source ports. Static entries,
     * written when the leaf is provisioned: each spine owns a range of the tag
     * ports, and a KV-class packet for destination group G (route_ecmp) whose
     * source port is in spine S's range goes up the uplink of G's entry for that
     * range: S's own, or a live spine's while S's path to G is down. A decision
     * only hands out a free port of the chosen spine's range. kv-aware mode only. */
    action pin(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table kv_range {
        key = {
            meta.ecmp_group: exact;
            meta.l4_src_port: range;
        }
        actions = { pin; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    /* flow_pin: a static pin of one flow of any class (background included), by its
     * whole 5-tuple, with the same pin action. Looked up after kv_range (a KV
     * transfer's range wins) and in every mode; the packet keeps its class. */
    table flow_pin {
        key = {
            hdr.ipv4.src_addr: exact;
            hdr.ipv4.dst_addr: exact;
            hdr.ipv4.protocol: exact;
            meta.l4_src_port: exact;
            meta.l4_dst_port: exact;
        }
        actions = { pin; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* ecmp: a group's member is chosen by crc16 over the selector fields. */
    action set_uplink(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table ecmp {
        key = {
            meta.ecmp_group: exact;
            hdr.ipv4.src_addr: selector;
            hdr.ipv4.dst_addr: selector;
            hdr.ipv4.protocol: selector;
            meta.l4_src_port: selector;
            meta.l4_dst_port: selector;
            meta.flowlet_salt: selector;
        }
        actions = { set_uplink; NoAction; }
        implementation = ecmp_selector;
        size = 256;
    }

    /* arp_proxy: answer ARP requests for these addresses with this MAC. */
    action arp_reply(bit<48> mac) {
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        hdr.arp.oper = ARP_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        bit<32> target = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.spa = target;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    table arp_proxy {
        key = { hdr.arp.tpa: lpm; }
        actions = { arp_reply; drop; }
        default_action = drop();
        size = 256;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            // A PacketOut: the frame leaves as it is by the requested port.
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (standard_metadata.parser_error != error.NoError) {
            drop();
        } else if (hdr.probe.isValid()) {
            if (hdr.probe.magic == PROBE_MAGIC) {
                standard_metadata.egress_spec = CPU_PORT;
            } else {
                drop();
            }
        } else if (hdr.arp.isValid()) {
            if (hdr.arp.htype == 1 && hdr.arp.ptype == ETHERTYPE_IPV4
                    && hdr.arp.hlen == 6 && hdr.arp.plen == 4
                    && hdr.arp.oper == ARP_REQUEST && hdr.arp.spa != 0
                    && hdr.arp.tpa != hdr.arp.spa) {
                arp_proxy.apply();
            } else {
                drop();
            }
        } else if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ihl != 5 || standard_metadata.checksum_error == 1
                    || hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                switch_config.apply();
                kv_class.apply();
                ipv4_route.apply();
                if (meta.go_up == 1) {
                    bool pinned = false;
                    if (meta.is_kv == 1 && meta.kv_aware == 1) {
                        pinned = kv_range.apply().hit;
                    }
                    if (!pinned) {
                        pinned = flow_pin.apply().hit;
                    }
                    if (!pinned) {
                        bool new_flowlet = false;
                        bool use_ecmp = true;
                        bit<32> slot = 0;
                        if (meta.flowlet_mode == 1) {
                            hash(slot, HashAlgorithm.crc32, 32w0,
                                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                   meta.l4_src_port, meta.l4_dst_port },
                                 FLOWLET_SLOTS);
                            bit<48> last_seen;
                            bit<64> flowlet;
                            flowlet_last_seen.read(last_seen, slot);
                            flowlet_state.read(flowlet, slot);
                            bit<48> now = standard_metadata.ingress_global_timestamp;
                            if (flowlet[16:16] == 0 || flowlet[63:48] != meta.ecmp_group
                                    || flowlet[47:40] != meta.flowlet_gen
                                    || now - last_seen > meta.flowlet_timeout) {
                                new_flowlet = true;
                                meta.flowlet_salt = flowlet[39:24] + FLOWLET_STEP;
                            } else {
                                use_ecmp = false;
                                standard_metadata.egress_spec = flowlet[8:0];
                            }
                            flowlet_last_seen.write(slot, now);
                        }
                        if (use_ecmp) {
                            if (ecmp.apply().hit) {
                                if (new_flowlet) {
                                    flowlet_state.write(slot,
                                        meta.ecmp_group ++ meta.flowlet_gen ++ meta.flowlet_salt
                                        ++ 7w0 ++ 1w1 ++ 7w0 ++ standard_metadata.egress_spec);
                                }
                            } else {
                                drop();
                            }
                        }
                    }
                }
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            }
        } else {
            drop();
        }
    }
}

/* ------------------------------------------------------------------- egress */

control FabricEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    counter(PORTS, CounterType.packets_and_bytes) port_tx;
    counter(PORTS, CounterType.packets_and_bytes) port_kv_tx;

    /* Queue histograms per egress port. Cell port * HIST_BUCKETS + bucket
     * (port ++ bucket) counts the packets, and their bytes, that left by the
     * port with an enq_qdepth (packets queued ahead of them) or a
     * deq_timedelta (microseconds they waited) in that bucket. The bucket
     * boundaries are the controller's range entries in qdepth_buckets and
     * qdelay_buckets; a value no entry covers takes the default action (no
     * bucket: not counted, unless the controller made the default a bucket).
     * Counters only grow, so the controller needs no reset: the highest
     * bucket whose cell grew between two reads bounds the largest depth (or
     * delay) of the period, and every packet lands in exactly one period. */
    counter(PORTS * HIST_BUCKETS, CounterType.packets_and_bytes) port_qdepth_hist;
    counter(PORTS * HIST_BUCKETS, CounterType.packets_and_bytes) port_qdelay_hist;

    action set_qdepth_bucket(bit<3> bucket) {
        meta.qdepth_bucket = bucket;
        meta.qdepth_binned = 1;
    }

    table qdepth_buckets {
        key = { standard_metadata.enq_qdepth: range; }
        actions = { set_qdepth_bucket; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    action set_qdelay_bucket(bit<3> bucket) {
        meta.qdelay_bucket = bucket;
        meta.qdelay_binned = 1;
    }

    table qdelay_buckets {
        key = { standard_metadata.deq_timedelta: range; }
        actions = { set_qdelay_bucket; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    action rewrite_macs(bit<48> src_mac, bit<48> dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    table port_macs {
        key = { standard_metadata.egress_port: exact; }
        actions = { rewrite_macs; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        } else if (meta.routed == 1) {
            port_macs.apply();
        }

        bit<32> port = (bit<32>) standard_metadata.egress_port;
        port_tx.count(port);
        if (meta.is_kv == 1) {
            port_kv_tx.count(port);
        }

        qdepth_buckets.apply();
        if (meta.qdepth_binned == 1) {
            port_qdepth_hist.count((bit<32>) (standard_metadata.egress_port ++ meta.qdepth_bucket));
        }
        qdelay_buckets.apply();
        if (meta.qdelay_binned == 1) {
            port_qdelay_hist.count((bit<32>) (standard_metadata.egress_port ++ meta.qdelay_bucket));
        }
    }
}

/* ----------------------------------------------------------------- deparser */

control FabricDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.arp);
        packet.emit(hdr.probe);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

V1Switch(FabricParser(), FabricVerifyChecksum(), FabricIngress(), FabricEgress(),
         FabricComputeChecksum(), FabricDeparser()) main;
