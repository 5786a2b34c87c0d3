// The packet engine's C++ side (simulator/packet.py compiles it with cppyy at first use).
//
// Everything that happens per packet stays here: forwarding (the leaves' per-flow
// choice of spine), the links' byte counters and the receivers' byte counts. Python
// sees flows: it starts them, moves them, stops them, and learns when one has
// received its last byte (RunUntil returns early with it in TakeDone()).
//
// Addressing: host k of leaf l sits on 10.(l+1).(k/64).(4*(k%64))/30 (host .2, leaf
// .1), so a spine reaches every host of leaf l through 10.(l+1).0.0/16; cable c is
// 11.x.y.z/30 (leaf .1, spine .2). A flow is its port P (10000 + flow): the sender
// binds P and the receiver's sink listens on P, so data and ACKs carry P both ways
// and a leaf forwards a packet bound off-rack to the spine the flow's entry in
// spineOf names (the drivers choose it: the ECMP hash of kv_fabric.p4, a pin...).
// Background flows are flows too, between background hosts, with their own ports:
// UDP at a constant rate, or TCP sending at most its rate (an OnOffApplication each),
// forwarded and moved the same way.

#include <cstdint>
#include <string>
#include <vector>

namespace kvf
{
using namespace ns3;

constexpr uint16_t kBasePort = 10000;
constexpr uint32_t kMaxFlows = 65535 - kBasePort;
constexpr int32_t kDropped = -2;  // spineOf: a flow the leaves drop

class Model;

// A leaf's forwarding of off-rack host traffic: the flow's spine, from its port.
class SpineRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("kvf::SpineRouting")
                                .SetParent<Ipv4RoutingProtocol>()
                                .SetGroupName("Internet");
        return tid;
    }

    Model* model = nullptr;
    uint32_t prefix = 0;                 // this leaf's hosts: 10.(leaf+1).0.0/16
    std::vector<int32_t> uplink;         // per spine: the interface, -1 without a cable
    std::vector<Ipv4Address> gateway;    // per spine: its address on the cable
    Ptr<Ipv4> ipv4;

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header&, Ptr<NetDevice>,
                               Socket::SocketErrno& err) override
    {
        err = Socket::ERROR_NOROUTETOHOST;
        return nullptr;
    }

    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& h, Ptr<const NetDevice>,
                    const UnicastForwardCallback& ucb, const MulticastForwardCallback&,
                    const LocalDeliverCallback&, const ErrorCallback& ecb) override;

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ip) override { ipv4 = ip; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}
};

class Model
{
  public:
    // Per directed link: the transmitting device and its counters.
    std::vector<Ptr<PointToPointNetDevice>> tx;
    std::vector<double> sent;   // bytes on the wire, every packet
    std::vector<double> kv;     // bytes of KV flows
    std::vector<double> rate;   // bit/s now
    std::vector<Ptr<RateErrorModel>> cut;  // per link: drops everything while down
    uint64_t packets = 0;       // packet transmissions, every hop

    // Per flow (index = port - kBasePort).
    std::vector<int32_t> spineOf;
    std::vector<uint8_t> isKv;
    std::vector<uint64_t> target;  // bytes; 0: never done
    std::vector<uint64_t> got;
    std::vector<Ptr<Application>> sender;
    std::vector<uint32_t> done;
    uint32_t flows = 0;

    NodeContainer hosts, leaves, spines;
    std::vector<int32_t> hostLeaf;
    std::vector<uint32_t> hostSlot;
    std::vector<Ipv4Address> hostAddr;
    std::vector<Ptr<SpineRouting>> leafRouting;
    std::vector<std::vector<Ipv4Address>> leafToSpine;  // [leaf][spine]: the spine's address
    // Per directed link: the transmitting and receiving node and the receiver's address.
    std::vector<Ptr<Node>> txNode;
    std::vector<Ptr<Node>> rxNode;
    std::vector<Ipv4Address> rxAddr;
    uint32_t cables = 0;

    std::string queueDisc;  // ns-3 TypeId of every egress queue disc
    uint32_t queuePackets;
    uint32_t ecnPackets;    // 0: no marking
    double delayS;
    EventId stopEvent;

    Model(uint32_t nlinks, const std::string& tcp, uint32_t queue, uint32_t ecn, double delay,
          uint32_t segment, uint32_t buffer, double minRto)
        : tx(nlinks), sent(nlinks, 0.0), kv(nlinks, 0.0), rate(nlinks, 0.0), cut(nlinks),
          spineOf(kMaxFlows, -1), isKv(kMaxFlows, 0), target(kMaxFlows, 0), got(kMaxFlows, 0),
          sender(kMaxFlows), txNode(nlinks), rxNode(nlinks), rxAddr(nlinks),
          queuePackets(queue), ecnPackets(ecn), delayS(delay)
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(tcp));
        Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
        Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buffer));
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buffer));
        Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
        Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRto)));
        // Linux's tcp_retries2: a connection outlives a cable failure (ns-3's default, 6
        // doublings of a 10 ms minimum, gives up after about a second).
        Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(15));
        // A lost SYN is sent again after 1 s, as Linux does (RFC 6298's initial RTO); ns-3's
        // default is RFC 1122's 3 s, which made every connection whose SYN met a full
        // queue a 3 s outlier (p95 near 3.1 s in every mode of design-cluster-small).
        Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1.0)));
        // An ACK per segment (Linux quick-acks after a loss and in slow start): with ns-3's
        // default of one per two, a connection that lost packets in a shallow queue was
        // seen to crawl at one segment per time-out for seconds (a 1 MB transfer at 20
        // Mb/s alone: 16 s instead of 0.47 s).
        Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
        Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(ecn ? "On" : "Off"));
        if (ecn)
        {
            queueDisc = "ns3::RedQueueDisc";
            Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(true));
            Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(false));
            Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(1.0));
            Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(segment + 52));
            Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(ecn));
            Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(ecn));
        }
        else
        {
            queueDisc = "ns3::FifoQueueDisc";
        }
    }

    uint32_t AddHost(int32_t leaf, uint32_t slot)
    {
        hosts.Create(1);
        hostLeaf.push_back(leaf);
        hostSlot.push_back(slot);
        hostAddr.push_back(Ipv4Address());
        return hosts.GetN() - 1;
    }

    void AddSwitches(uint32_t nleaves, uint32_t nspines)
    {
        leaves.Create(nleaves);
        spines.Create(nspines);
        InternetStackHelper stack;
        stack.Install(hosts);
        stack.Install(leaves);
        stack.Install(spines);
        leafToSpine.assign(nleaves, std::vector<Ipv4Address>(nspines));
        for (uint32_t l = 0; l < nleaves; ++l)
        {
            Ptr<SpineRouting> r = CreateObject<SpineRouting>();
            r->model = this;
            r->prefix = (10u << 24) | ((l + 1) << 16);
            r->uplink.assign(nspines, -1);
            r->gateway.assign(nspines, Ipv4Address());
            Ptr<Ipv4> ip = leaves.Get(l)->GetObject<Ipv4>();
            DynamicCast<Ipv4ListRouting>(ip->GetRoutingProtocol())->AddRoutingProtocol(r, 10);
            leafRouting.push_back(r);
        }
    }

    // A point-to-point cable a <-> b: device of a sends on link ab at ab_bps.
    NetDeviceContainer Wire(Ptr<Node> a, Ptr<Node> b, double abBps, double baBps, uint32_t ab,
                            uint32_t ba, Ipv4Address base)
    {
        PointToPointHelper p2p;
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delayS)));
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
        NetDeviceContainer d = p2p.Install(a, b);
        Ptr<PointToPointNetDevice> da = DynamicCast<PointToPointNetDevice>(d.Get(0));
        Ptr<PointToPointNetDevice> db = DynamicCast<PointToPointNetDevice>(d.Get(1));
        da->SetDataRate(DataRate(static_cast<uint64_t>(abBps)));
        db->SetDataRate(DataRate(static_cast<uint64_t>(baBps)));
        TrafficControlHelper tc;
        std::string size = std::to_string(queuePackets) + "p";
        tc.SetRootQueueDisc(queueDisc, "MaxSize", QueueSizeValue(QueueSize(size)));
        if (ecnPackets)
        {
            // RED wants the link it sits on (idle-time estimation); one disc per device.
            TrafficControlHelper ta;
            ta.SetRootQueueDisc(queueDisc, "MaxSize", QueueSizeValue(QueueSize(size)),
                                "LinkBandwidth", DataRateValue(DataRate((uint64_t)abBps)),
                                "LinkDelay", TimeValue(Seconds(delayS)));
            ta.Install(da);
            TrafficControlHelper tb;
            tb.SetRootQueueDisc(queueDisc, "MaxSize", QueueSizeValue(QueueSize(size)),
                                "LinkBandwidth", DataRateValue(DataRate((uint64_t)baBps)),
                                "LinkDelay", TimeValue(Seconds(delayS)));
            tb.Install(db);
        }
        else
        {
            tc.Install(d);
        }
        Ipv4AddressHelper addr;
        addr.SetBase(base, Ipv4Mask("255.255.255.252"));
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        Track(ab, da, a, b, ifs.GetAddress(1));
        Track(ba, db, b, a, ifs.GetAddress(0));
        return d;
    }

    void Track(uint32_t link, Ptr<PointToPointNetDevice> dev, Ptr<Node> from, Ptr<Node> to,
               Ipv4Address toAddr)
    {
        tx[link] = dev;
        txNode[link] = from;
        rxNode[link] = to;
        rxAddr[link] = toAddr;
        dev->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&Model::OnTx, this, link));
    }

    void ConnectHost(uint32_t host, double upBps, double downBps, uint32_t nic, uint32_t port)
    {
        uint32_t leaf = hostLeaf[host], slot = hostSlot[host];
        uint32_t base = (10u << 24) | ((leaf + 1) << 16) | ((slot / 64) << 8) | ((slot % 64) * 4);
        Wire(leaves.Get(leaf), hosts.Get(host), downBps, upBps, port, nic, Ipv4Address(base));
        Ptr<Ipv4> ip = hosts.Get(host)->GetObject<Ipv4>();
        hostAddr[host] = ip->GetAddress(1, 0).GetLocal();
        Ipv4StaticRoutingHelper sr;
        sr.GetStaticRouting(ip)->SetDefaultRoute(Ipv4Address(base + 1), 1);
        rate[nic] = upBps;
        rate[port] = downBps;
    }

    void ConnectCable(uint32_t leaf, uint32_t spine, double upBps, double downBps,
                      uint32_t up, uint32_t down)
    {
        uint32_t c = cables++;
        uint32_t base = (11u << 24) | (((c >> 14) & 0xff) << 16) | (((c >> 6) & 0xff) << 8) |
                        ((c & 63) * 4);
        Wire(leaves.Get(leaf), spines.Get(spine), upBps, downBps, up, down, Ipv4Address(base));
        Ptr<Ipv4> lip = leaves.Get(leaf)->GetObject<Ipv4>();
        Ptr<Ipv4> sip = spines.Get(spine)->GetObject<Ipv4>();
        uint32_t lif = lip->GetNInterfaces() - 1, sif = sip->GetNInterfaces() - 1;
        leafRouting[leaf]->uplink[spine] = static_cast<int32_t>(lif);
        leafRouting[leaf]->gateway[spine] = Ipv4Address(base + 2);
        Ipv4StaticRoutingHelper sr;
        sr.GetStaticRouting(sip)->AddNetworkRouteTo(
            Ipv4Address((10u << 24) | ((leaf + 1) << 16)), Ipv4Mask("255.255.0.0"),
            Ipv4Address(base + 1), sif);
        rate[up] = upBps;
        rate[down] = downBps;
    }

    // A flow of `bytes` (0: endless) from host src to host dst through spine (-1: same leaf).
    int64_t StartFlow(uint32_t src, uint32_t dst, int32_t spine, uint64_t bytes, bool kvFlow,
                      uint32_t sendSize)
    {
        if (flows >= kMaxFlows)
        {
            return -1;
        }
        uint32_t f = flows++;
        uint16_t port = kBasePort + f;
        spineOf[f] = spine;
        isKv[f] = kvFlow;
        target[f] = bytes;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(hosts.Get(dst));
        s.Start(Seconds(0));
        s.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&Model::OnRx, this, f));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(hostAddr[dst], port));
        bulk.SetAttribute("MaxBytes", UintegerValue(bytes));
        bulk.SetAttribute("SendSize", UintegerValue(sendSize));
        bulk.SetAttribute("Local", AddressValue(InetSocketAddress(hostAddr[src], port)));
        ApplicationContainer b = bulk.Install(hosts.Get(src));
        b.Start(Seconds(0));
        sender[f] = b.Get(0);
        return f;
    }

    void Reroute(uint32_t f, int32_t spine) { spineOf[f] = spine; }

    // Close the sender and black-hole what it still sends (the leaves drop the flow's
    // packets), as a transfer that timed out is abandoned; the bytes received.
    uint64_t StopFlow(uint32_t f)
    {
        if (sender[f])
        {
            Ptr<Socket> s = DynamicCast<BulkSendApplication>(sender[f])->GetSocket();
            if (s)
            {
                s->Close();
            }
            sender[f] = nullptr;
        }
        spineOf[f] = kDropped;
        target[f] = 0;
        return got[f];
    }

    // Background from host src to host dst through spine (never ending): UDP at a
    // constant bps, or TCP (elastic) writing at most bps into its socket.
    int64_t StartBackground(uint32_t src, uint32_t dst, int32_t spine, double bps, bool elastic,
                            uint32_t segment)
    {
        if (flows >= kMaxFlows)
        {
            return -1;
        }
        uint32_t f = flows++;
        uint16_t port = kBasePort + f;
        spineOf[f] = spine;
        const char* factory = elastic ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
        PacketSinkHelper sink(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
        sink.Install(hosts.Get(dst)).Start(Seconds(0));
        OnOffHelper app(factory, InetSocketAddress(hostAddr[dst], port));
        app.SetConstantRate(DataRate(static_cast<uint64_t>(bps)), segment);
        app.SetAttribute("Local", AddressValue(InetSocketAddress(hostAddr[src], port)));
        ApplicationContainer a = app.Install(hosts.Get(src));
        a.Start(Seconds(0));
        sender[f] = a.Get(0);
        return f;
    }

    // Stop a background flow now: its sender falls silent (a rate of 1 bit/s puts its
    // next packet hours away; an application's stop time cannot be moved once it has
    // started) and the leaves drop what it still sends.
    void StopBackground(uint32_t f)
    {
        if (sender[f])
        {
            sender[f]->SetAttribute("DataRate", DataRateValue(DataRate(1)));
            sender[f] = nullptr;
        }
        spineOf[f] = kDropped;
    }

    // A link's rate from now on; 0 drops everything it carries (a cable that is down).
    void SetRate(uint32_t link, double bps)
    {
        Ptr<PointToPointNetDevice> peer = DynamicCast<PointToPointNetDevice>(
            tx[link]->GetChannel()->GetDevice(0) == tx[link] ? tx[link]->GetChannel()->GetDevice(1)
                                                             : tx[link]->GetChannel()->GetDevice(0));
        if (!cut[link])
        {
            cut[link] = CreateObject<RateErrorModel>();
            cut[link]->SetRate(1.0);
            cut[link]->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
            cut[link]->Disable();
            peer->SetReceiveErrorModel(cut[link]);
        }
        if (bps <= 0)
        {
            cut[link]->Enable();
            return;
        }
        cut[link]->Disable();
        tx[link]->SetDataRate(DataRate(static_cast<uint64_t>(bps)));
        rate[link] = bps;
    }

    // Run until t (seconds) or the first flow that completes; the time reached.
    double RunUntil(double t)
    {
        Time now = Simulator::Now();
        Time until = Seconds(t);
        if (until > now)
        {
            stopEvent = Simulator::Stop(until - now);
            Simulator::Run();
            Simulator::Cancel(stopEvent);
        }
        return Simulator::Now().GetSeconds();
    }

    std::vector<uint32_t> TakeDone()
    {
        std::vector<uint32_t> out;
        out.swap(done);
        return out;
    }

    static void OnRx(Model* m, uint32_t f, Ptr<const Packet> p, const Address&)
    {
        m->got[f] += p->GetSize();
        if (m->target[f] && m->got[f] >= m->target[f])
        {
            m->target[f] = 0;
            m->sender[f] = nullptr;
            m->done.push_back(f);
            Simulator::Stop();
        }
    }

    static void OnTx(Model* m, uint32_t link, Ptr<const Packet> p)
    {
        uint32_t size = p->GetSize();
        m->packets++;
        m->sent[link] += size;
        Ptr<Packet> q = p->Copy();
        PppHeader ppp;
        q->RemoveHeader(ppp);
        Ipv4Header ip;
        q->RemoveHeader(ip);
        if (ip.GetProtocol() != 6)
        {
            return;
        }
        TcpHeader tcp;
        q->PeekHeader(tcp);
        uint32_t port = tcp.GetSourcePort();
        if (port >= kBasePort && m->isKv[port - kBasePort])
        {
            m->kv[link] += size;
        }
    }

    void Destroy() { Simulator::Destroy(); }
};

inline bool SpineRouting::RouteInput(Ptr<const Packet> p, const Ipv4Header& h,
                                     Ptr<const NetDevice>, const UnicastForwardCallback& ucb,
                                     const MulticastForwardCallback&, const LocalDeliverCallback&,
                                     const ErrorCallback& ecb)
{
    uint32_t d = h.GetDestination().Get();
    uint8_t protocol = h.GetProtocol();
    if ((d >> 24) != 10 || (protocol != 6 && protocol != 17))
    {
        return false;  // not between hosts: the static routes decide
    }
    uint32_t port;
    if (protocol == 6)
    {
        TcpHeader tcp;
        p->PeekHeader(tcp);
        port = tcp.GetDestinationPort();
    }
    else
    {
        UdpHeader udp;
        p->PeekHeader(udp);
        port = udp.GetDestinationPort();
    }
    int32_t spine = port >= kBasePort ? model->spineOf[port - kBasePort] : -1;
    if (spine == kDropped)
    {
        ecb(p, h, Socket::ERROR_NOROUTETOHOST);
        return true;
    }
    if ((d & 0xffff0000) == prefix)
    {
        return false;  // to a host of this leaf: its connected route
    }
    if (spine < 0 || uplink[spine] < 0)
    {
        ecb(p, h, Socket::ERROR_NOROUTETOHOST);
        return true;
    }
    uint32_t iface = static_cast<uint32_t>(uplink[spine]);
    Ptr<Ipv4Route> r = Create<Ipv4Route>();
    r->SetDestination(h.GetDestination());
    r->SetGateway(gateway[spine]);
    r->SetSource(ipv4->GetAddress(iface, 0).GetLocal());
    r->SetOutputDevice(ipv4->GetNetDevice(iface));
    ucb(r, p, h);
    return true;
}

}  // namespace kvf
