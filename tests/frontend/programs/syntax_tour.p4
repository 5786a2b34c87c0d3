// A tour of P4_16 syntax, parsed without preprocessing.  It is syntactically
// valid but not meant to type-check.
error { NoError, PacketTooShort }
match_kind { exact, ternary, lpm, }

typedef bit<48> mac_t;
type bit<9> port_t;
enum Color { Red, Green, Blue }
enum bit<8> Proto { TCP = 6, UDP = 0x11 }

header eth_h { mac_t dst; mac_t src; bit<16> type; }
header vlan_h { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header_union ip_u { eth_h a; vlan_h b; }
struct pair<T> { T first; T second; }
struct hdrs { eth_h eth; vlan_h[2] vlans; varbit<64> opts; }

extern packet_in {
    void extract<T>(out T hdr);
    T lookahead<T>();
}
extern Checksum<W> {
    Checksum(bit<8> seed);
    void add<D>(in D data);
    W get();
    @noSideEffects abstract W combine(in W a, in W b);
}
extern E;
@pure extern bit<32> crc<D>(in D data);
extern void log_msg(string msg);

parser Prs<H>(packet_in p, out H h);
control Ctl(inout hdrs h, inout bit<8> m);
package Pkg<H>(Prs<H> prs, Ctl ctl);

const bit<16> ETH_IPV4 = 16w0x0800;

bit<8> max<T>(in bit<8> a, in bit<8> b) {
    return a > b ? a : b;
}

parser MyPrs(packet_in p, out hdrs h)(bit<8> depth) {
    value_set<bit<16>>(4) vs;
    bit<8> n = 0;
    state start {
        p.extract(h.eth);
        transition select(h.eth.type, n) {
            (ETH_IPV4, 8w0 &&& 8w0xF0): parse_vlan;
            (16w1 .. 16w5, _): accept;
            (vs, default): reject;
            default: accept;
        }
    }
    state parse_vlan {
        p.extract(h.vlans.next);
        n = n + 1;
        transition select(p.lookahead<bit<16>>()) {
            0x8100: parse_vlan;
            default: accept;
        }
    }
}

control MyCtl(inout hdrs h, inout bit<8> m) {
    Checksum<bit<16>>(8w0) ck = {
        bit<16> combine(in bit<16> a, in bit<16> b) { return a |+| b; }
    };
    action set(bit<8> v, in bit<8> w) { m = v; m += w; m >>= 1; m |-|= 2; }
    action nop() { }
    table t {
        key = {
            h.eth.dst : exact @name("dst");
            h.eth.type & 0xFF00 : ternary;
        }
        actions = { set; @defaultonly nop; .nop; }
        const default_action = nop();
        const entries = {
            (0x1, 0x0800 &&& 0xFF00) : set(1, 2);
            priority = 10 : (_, _) : nop() @name("low");
            const priority = (5 + 5) : (0x2, default) : set(3, 4);
        }
        size = 1024;
        largest_priority_wins = false;
        @name("impl") implementation = some_extern(32w128);
    }
    apply {
        bit<32> x = 32w0;
        x[7:0] = m;
        x[8 +: 8] = 8w0xFF;
        h.vlans[0].vid = (bit<12>)x;
        if (!h.eth.isValid() || x << 2 == 4 && m >= 3) {
            exit;
        } else if (h.vlans[1].isValid()) {
            h.vlans[1].setInvalid();
        }
        switch (t.apply().action_run) {
            set:
            nop: { m = -m; }
            default: { return; }
        }
        switch (m) { 8w1: { } default: { } }
        pair<bit<8>> p = { first = 1, second = ~m };
        p = (pair<bit<8>>){ first = m, ... };
        h.eth = {#};
        tuple<bit<8>, bool> tp = { m, true };
        x = 8w1 ++ m ++ -16s1;
        x = x > 1 ? (x > 2 ? 3 : 4) : 5;
        log_msg("done \"quoted\"");
        MyCtl.apply(h, m);
        crc<tuple<bit<8>, bit<8>>>({ m, m });
        for (bit<8> i = 0; i < 4; i = i + 1, m = m + 1) { continue; }
        for (bit<8> j in 0 .. 3) { break; }
        @atomic { x = Proto.TCP == Proto.UDP ? 1 : 0; }
        m = error.NoError == error.PacketTooShort ? 8w0 : (bit<8>)Color.Red;
        ;
    }
}

Pkg(MyPrs(3), MyCtl()) main;
