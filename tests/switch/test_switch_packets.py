"""Real packets through a real ``kvfabric switch`` process running fabric_test.p4 (root).

One switch process per module, three veth pairs (switch ports 1-3) whose other
ends live in a network namespace, CPU port 255.  Every test starts from a fresh
pipeline (VERIFY_AND_COMMIT), installs what it needs over P4Runtime, sends
frames with Scapy from the namespace side and checks with Scapy what comes out
of which port, or what the controller receives on its stream.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r, rpc_code
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from softswitch.switch.pcap import read_pcap
from tests.support.p4rt_client import insert, modify

from .conftest import SwitchOnVeths, running_fabric
from .harness import action, fabric, ids, l2_entry, lpm_entry, table_entry, write_errors

pytestmark = pytest.mark.root

MAC = {1: "02:00:00:00:00:0a", 2: "02:00:00:00:00:0b", 3: "02:00:00:00:00:0c"}
MAC_CPU = "02:00:00:00:00:fe"
QUIET = 0.3


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def l2_frame(dst: str, src: str, tag: bytes, ether_type: int = 0x88B6) -> Packet:
    return Ether(dst=dst, src=src, type=ether_type) / Raw(b"kvfabric-" + tag)


def payload_is(tag: bytes) -> Callable[[Packet], bool]:
    return lambda p: Raw in p and p[Raw].load.endswith(tag)


def test_l2_forwarding_follows_the_installed_entries(fab: SwitchOnVeths) -> None:
    fab.client.write(
        [
            insert(l2_entry(mac(MAC[2]), action("forward", 2))),
            insert(l2_entry(mac(MAC[3]), action("forward", 3))),
        ]
    )
    to_b = l2_frame(MAC[2], MAC[1], b"to-b")
    fab.hosts[1].send(to_b)
    got = fab.hosts[2].expect(payload_is(b"to-b"))
    assert bytes(got) == bytes(to_b)
    assert not fab.hosts[3].sniff(QUIET, payload_is(b"to-b"))

    fab.hosts[2].send(l2_frame(MAC[3], MAC[2], b"b-to-c"))
    assert fab.hosts[3].expect(payload_is(b"b-to-c"))[Ether].src == MAC[2]
    # no entry: NoAction leaves egress port 0, which is not attached: dropped
    fab.hosts[1].send(l2_frame("02:00:00:00:00:99", MAC[1], b"unknown"))
    for port in (2, 3):
        assert not fab.hosts[port].sniff(QUIET, payload_is(b"unknown"))


def test_ipv4_lpm_rewrites_the_destination_mac_and_drops_by_default(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(lpm_entry(0x0A000300, 24, action("set_nhop", 3, mac(MAC[3]))))])
    routed = (
        Ether(dst="02:00:00:00:00:01", src=MAC[1])
        / IP(src="10.0.1.1", dst="10.0.3.7", ttl=9)
        / UDP(sport=1234, dport=4321)
        / Raw(b"routed")
    )
    fab.hosts[1].send(routed)
    got = fab.hosts[3].expect(payload_is(b"routed"))
    assert got[Ether].dst == MAC[3]
    assert bytes(got[IP]) == bytes(routed[IP])  # this program leaves the IP header alone
    unrouted = Ether(dst=MAC[3], src=MAC[1]) / IP(dst="10.9.9.9") / UDP() / Raw(b"no-route")
    fab.hosts[1].send(unrouted)
    for port in (2, 3):
        assert not fab.hosts[port].sniff(QUIET, payload_is(b"no-route"))


def test_acl_priority_range_match_and_its_direct_counter(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(lpm_entry(0x0A000200, 24, action("set_nhop", 2, mac(MAC[2]))))])
    acl = table_entry("acl", action("acl_drop"), priority=10)
    acl.match.add(field_id=1, ternary=p4r.FieldMatch.Ternary(value=b"\x00\x01", mask=b"\x01\xff"))
    acl.match.add(field_id=3, range=p4r.FieldMatch.Range(low=b"\x11", high=b"\x11"))
    fab.client.write([insert(p4r.Entity(table_entry=acl))])
    udp = [
        Ether(dst=MAC[2], src=MAC[1]) / IP(dst="10.0.2.2") / UDP() / Raw(b"udp-%d" % i)
        for i in range(3)
    ]
    tcp = Ether(dst=MAC[2], src=MAC[1]) / IP(dst="10.0.2.2") / TCP() / Raw(b"tcp-ok")
    fab.hosts[1].send(*udp, tcp)
    assert fab.hosts[2].expect(payload_is(b"tcp-ok"))
    assert not fab.hosts[2].sniff(QUIET, lambda p: UDP in p)
    # the same UDP from port 3 does not match ingress_port 1: forwarded
    fab.hosts[3].send(udp[0])
    assert fab.hosts[2].expect(payload_is(b"udp-0"))
    request = p4r.DirectCounterEntry()
    request.table_entry.table_id = ids("tables")["acl"]
    [entity] = fab.client.read(p4r.Entity(direct_counter_entry=request))
    data = entity.direct_counter_entry.data
    assert data.packet_count == 3
    assert data.byte_count == sum(len(bytes(p)) for p in udp)


def test_counters_and_registers_see_every_packet(fab: SwitchOnVeths) -> None:
    frames = [l2_frame(MAC[2], MAC[1], b"count-%d" % i + b"x" * i) for i in range(5)]
    fab.hosts[1].send(*frames)
    time.sleep(QUIET)
    counter = p4r.CounterEntry(counter_id=ids("counters")["port_counter"])
    counter.index.index = 1
    [entity] = fab.client.read(p4r.Entity(counter_entry=counter))
    assert entity.counter_entry.data.packet_count == 5
    assert entity.counter_entry.data.byte_count == sum(len(bytes(f)) for f in frames)
    register = p4r.RegisterEntry(register_id=ids("registers")["last_len"])
    register.index.index = 1
    [cell] = fab.client.read(p4r.Entity(register_entry=register))
    assert int.from_bytes(cell.register_entry.data.bitstring, "big") == len(bytes(frames[-1]))


def test_packet_in_carries_the_controller_header_metadata(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(l2_entry(mac(MAC_CPU), action("to_cpu")))])
    punted = l2_frame(MAC_CPU, MAC[2], b"to-controller")
    fab.hosts[2].send(punted)
    msg = fab.client.receive_kind("packet").packet
    assert msg.payload == bytes(punted)
    info, _ = fabric()
    packet_in = next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_in")
    names = {m.id: m.name for m in packet_in.metadata}
    values = {names[md.metadata_id]: md.value for md in msg.metadata}
    assert values == {"ingress_port": b"\x02", "_pad": b"\x00"}  # canonical bytestrings


def test_packet_out_leaves_by_the_port_in_its_metadata(fab: SwitchOnVeths) -> None:
    frame = bytes(l2_frame(MAC[3], MAC_CPU, b"from-controller"))
    out = p4r.PacketOut(payload=frame)
    out.metadata.add(metadata_id=1, value=b"\x00\x03")  # egress_port 3, zero-padded
    fab.client.send(p4r.StreamMessageRequest(packet=out))
    got = fab.hosts[3].expect(payload_is(b"from-controller"))
    assert bytes(got) == frame
    assert not fab.hosts[2].sniff(QUIET, payload_is(b"from-controller"))


def test_parser_value_set_written_over_p4runtime_punts_its_ether_types(fab: SwitchOnVeths) -> None:
    vs_id = ids("value_sets")["punt_types"]
    entry = p4r.ValueSetEntry(value_set_id=vs_id)
    entry.members.add().match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x88\xb5"))
    fab.client.write([modify(p4r.Entity(value_set_entry=entry))])
    [read] = fab.client.read(p4r.Entity(value_set_entry=p4r.ValueSetEntry(value_set_id=vs_id)))
    assert read.value_set_entry == entry
    fab.hosts[3].send(l2_frame(MAC[1], MAC[3], b"punt-me", ether_type=0x88B5))
    msg = fab.client.receive_kind("packet").packet
    assert msg.payload.endswith(b"punt-me") and msg.metadata[0].value == b"\x03"
    # an emptied value set punts nothing more
    fab.client.write([modify(p4r.Entity(value_set_entry=p4r.ValueSetEntry(value_set_id=vs_id)))])
    fab.hosts[3].send(l2_frame(MAC[1], MAC[3], b"keep-me", ether_type=0x88B5))
    with pytest.raises(queue.Empty):
        fab.client.receive_kind("packet", timeout=QUIET)


def test_digest_lists_are_batched_suppressed_and_acked(fab: SwitchOnVeths) -> None:
    digest_id = ids("digests")["learn_t"]
    entry = p4r.DigestEntry(digest_id=digest_id)
    entry.config.max_list_size = 2
    entry.config.max_timeout_ns = 50_000_000
    entry.config.ack_timeout_ns = 10_000_000_000
    fab.client.write([insert(p4r.Entity(digest_entry=entry))])
    fab.hosts[1].send(l2_frame(MAC[2], MAC[1], b"d1"))
    fab.hosts[2].send(l2_frame(MAC[1], MAC[2], b"d2"))
    fab.hosts[1].send(l2_frame(MAC[2], MAC[1], b"d3"))  # same data as d1: suppressed
    msg = fab.client.receive_kind("digest").digest
    assert msg.digest_id == digest_id
    members = sorted([m.bitstring for m in d.struct.members] for d in msg.data)
    assert members == [
        [bytes.fromhex("02000000000a"), b"\x01"],
        [bytes.fromhex("02000000000b"), b"\x02"],
    ]
    ack = p4r.DigestListAck(digest_id=digest_id, list_id=msg.list_id)
    fab.client.send(p4r.StreamMessageRequest(digest_ack=ack))
    wrong = p4r.DigestListAck(digest_id=digest_id, list_id=msg.list_id + 1000)
    fab.client.send(p4r.StreamMessageRequest(digest_ack=wrong))
    error = fab.client.receive_kind("error").error
    assert error.WhichOneof("details") == "digest_list_ack"


def test_multicast_flood_copies_to_every_replica(fab: SwitchOnVeths) -> None:
    group = p4r.MulticastGroupEntry(multicast_group_id=5)
    group.replicas.add(egress_port=2, instance=0)
    group.replicas.add(egress_port=3, instance=0)
    pre = p4r.PacketReplicationEngineEntry(multicast_group_entry=group)
    fab.client.write(
        [
            insert(p4r.Entity(packet_replication_engine_entry=pre)),
            insert(l2_entry(mac("ff:ff:ff:ff:ff:ff"), action("flood", 5))),
        ]
    )
    fab.hosts[1].send(l2_frame("ff:ff:ff:ff:ff:ff", MAC[1], b"flooded"))
    for port in (2, 3):
        assert len(fab.hosts[port].sniff(1.0, payload_is(b"flooded"), quiet=0.3)) == 1


def _ecmp_packets() -> list[Packet]:
    return [
        Ether(dst="02:00:00:00:00:01", src=MAC[1])
        / IP(src=f"192.168.{i}.{i * 7 % 250 + 1}", dst="10.1.1.1")
        / UDP()
        / Raw(b"ecmp-%02d" % i)
        for i in range(24)
    ]


def _spread(fab: SwitchOnVeths) -> dict[int, set[bytes]]:
    packets = _ecmp_packets()
    fab.hosts[1].send(*packets)
    seen = {
        port: {p[Raw].load for p in fab.hosts[port].sniff(1.0, payload_is(b""), quiet=0.3)}
        for port in (2, 3)
    }
    assert seen[2] | seen[3] == {p[Raw].load for p in packets}
    assert not seen[2] & seen[3]
    return seen


def test_ecmp_group_spreads_flows_over_its_members(fab: SwitchOnVeths) -> None:
    profile_id = ids("action_profiles")["ecmp_selector"]
    members = [
        p4r.ActionProfileMember(action_profile_id=profile_id, member_id=i, action=act)
        for i, act in ((1, action("set_nhop", 2, mac(MAC[2]))), (2, action("set_nhop", 3, 3)))
    ]
    group = p4r.ActionProfileGroup(action_profile_id=profile_id, group_id=1, max_size=16)
    group.members.add(member_id=1, weight=1)
    group.members.add(member_id=2, weight=1)
    entry = table_entry("ecmp")
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=bytes([10, 1, 1, 1])))
    entry.action.action_profile_group_id = 1
    fab.client.write([insert(p4r.Entity(action_profile_member=m)) for m in members])
    fab.client.write(
        [insert(p4r.Entity(action_profile_group=group)), insert(p4r.Entity(table_entry=entry))]
    )
    first = _spread(fab)
    assert first[2] and first[3]
    assert _spread(fab) == first  # the same flow always takes the same member


def test_one_shot_action_set_programs_the_selector_and_reads_back(fab: SwitchOnVeths) -> None:
    entry = table_entry("ecmp")
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=bytes([10, 1, 1, 1])))
    action_set = entry.action.action_profile_action_set
    action_set.action_profile_actions.add(action=action("set_nhop", 2, mac(MAC[2])), weight=1)
    action_set.action_profile_actions.add(action=action("set_nhop", 3, mac(MAC[3])), weight=3)
    fab.client.write([insert(p4r.Entity(table_entry=entry))])
    seen = _spread(fab)
    assert len(seen[3]) > len(seen[2]) > 0
    [back] = fab.client.read(p4r.Entity(table_entry=table_entry("ecmp")))
    actions = back.table_entry.action.action_profile_action_set.action_profile_actions
    assert [a.weight for a in actions] == [1, 3]
    assert [a.action.params[0].value for a in actions] == [b"\x02", b"\x03"]
    # hidden members and groups are not the controller's: not read, and no mixing
    profile_id = ids("action_profiles")["ecmp_selector"]
    assert not fab.client.read(p4r.Entity(action_profile_member=p4r.ActionProfileMember()))
    member = p4r.ActionProfileMember(
        action_profile_id=profile_id, member_id=1, action=action("set_nhop", 2, 2)
    )
    with pytest.raises(grpc.RpcError) as exc:
        fab.client.write([insert(p4r.Entity(action_profile_member=member))])
    [error] = write_errors(exc.value)
    assert error.canonical_code == rpc_code.INVALID_ARGUMENT
    assert "mix action selector programming modes" in error.message


def test_truncated_and_garbage_frames_never_stop_the_switch(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(l2_entry(mac(MAC[2]), action("forward", 2)))])
    bad = [
        bytes.fromhex("02000000000b02000000000a0800") + b"\x45\x00",  # IPv4 cut after 2 bytes
        bytes.fromhex("02000000000b02000000000a0800"),  # Ethernet header only
        bytes(range(14)) + b"\xff" * 40,
        b"\x00" * 14,
    ]
    fab.hosts[1].send(*bad)
    fab.hosts[1].send(l2_frame(MAC[2], MAC[1], b"still-alive"))
    assert fab.hosts[2].expect(payload_is(b"still-alive"))
    assert fab.process.running()


def test_idle_timeout_notification_names_the_expired_entry(fab: SwitchOnVeths) -> None:
    entity = l2_entry(mac(MAC[2]), action("forward", 2))
    entity.table_entry.idle_timeout_ns = 200_000_000
    fab.client.write([insert(entity)])
    note = fab.client.receive_kind("idle_timeout_notification", timeout=5).idle_timeout_notification
    [expired] = note.table_entry
    assert expired.match[0].exact.value == bytes.fromhex("02000000000b")
    assert expired.idle_timeout_ns == 200_000_000


def test_pcap_files_record_what_each_port_received_and_sent(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(l2_entry(mac(MAC[2]), action("forward", 2)))])
    frame = l2_frame(MAC[2], MAC[1], b"captured")
    fab.hosts[1].send(frame)
    fab.hosts[2].expect(payload_is(b"captured"))
    a, b = fab.pairs[0].outside, fab.pairs[1].outside
    ins = [f for _, f in read_pcap(fab.pcap_dir / f"{a}_in.pcap")]
    outs = [f for _, f in read_pcap(fab.pcap_dir / f"{b}_out.pcap")]
    assert bytes(frame) in ins and bytes(frame) in outs


def test_only_the_primary_may_send_packets_out(fab: SwitchOnVeths) -> None:
    from tests.support.p4rt_client import StreamClient

    backup = StreamClient(fab.process.address)
    try:
        backup.arbitrate(0)
        backup.arbitration()
        out = p4r.PacketOut(payload=bytes(l2_frame(MAC[2], MAC_CPU, b"backup")))
        out.metadata.add(metadata_id=1, value=b"\x02")
        backup.send(p4r.StreamMessageRequest(packet=out))
        error = backup.receive_kind("error").error
        assert error.canonical_code == 7  # PERMISSION_DENIED
        assert not fab.hosts[2].sniff(QUIET, payload_is(b"backup"))
    finally:
        backup.close()


def test_queue_rate_and_depth_options_shape_one_port(tmp_path: Path) -> None:
    """``--queue-rate 2:100 --queue-depth 2:4``: a burst to port 2 is tail-dropped, port 3 not.

    The traffic manager gives each packet a departure time 10 ms after the
    previous one on port 2 and holds at most 4 waiting; the rest of a burst is
    dropped.  (Packets it admits leave at once: the interpreter runs one packet
    at a time, so the modelled departure time shows in the queue metadata only.)
    """
    with running_fabric(tmp_path, "--queue-rate", "2:100", "--queue-depth", "2:4") as fab:
        fab.reset()
        fab.client.write(
            [
                insert(l2_entry(mac(MAC[2]), action("forward", 2))),
                insert(l2_entry(mac(MAC[3]), action("forward", 3))),
            ]
        )
        fab.hosts[1].send(*[l2_frame(MAC[2], MAC[1], b"burst-b-%02d" % i) for i in range(40)])
        fab.hosts[1].send(*[l2_frame(MAC[3], MAC[1], b"burst-c-%02d" % i) for i in range(40)])
        to_b = fab.hosts[2].sniff(1.0, payload_is(b""), quiet=0.3)
        to_c = fab.hosts[3].sniff(1.0, payload_is(b""), quiet=0.3)
    assert len(to_c) == 40
    assert 5 <= len(to_b) <= 12, len(to_b)
    assert [p[Raw].load for p in to_b[:5]] == [b"kvfabric-burst-b-%02d" % i for i in range(5)]
