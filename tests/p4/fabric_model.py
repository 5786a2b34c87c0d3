"""A reference model of p4/kv_fabric.p4, written from p4/README.md and not from the target.

The STF tests of the program (``p4/tests/*.stf``, written by :mod:`tests.p4.make_stf`)
and the fake-clock tests of :mod:`tests.p4.test_kv_fabric` take their expected outputs
from here: packets built and checksummed by scapy, and hashes computed by this module's
own CRC code over fields packed as BMv2 packs them (MSB first, no gaps, zero bits at
the end up to a byte). Nothing here imports ``softswitch``, so a bug of the target
cannot leak into the expectations.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Raw

CPU_PORT = 255
ETHERTYPE_PROBE = 0x88B5
PROBE_MAGIC = 0x4B564650
FLOWLET_SLOTS = 4096
FLOWLET_STEP = 0x9E37
KV_DSCP = 10

HIST_BUCKETS = 8  # buckets per port of port_qdepth_hist and port_qdelay_hist
QDEPTH_MAX = (1 << 19) - 1  # standard_metadata.enq_qdepth is bit<19>
QDELAY_MAX = (1 << 32) - 1  # standard_metadata.deq_timedelta is bit<32> (microseconds)
BMV2_QUEUE_PACKETS = 64  # simple_switch's default egress queue capacity

# The default bucket boundaries of README ("Queue histograms"): bucket b is the
# inclusive range QDEPTH_BOUNDS[b] (packets queued ahead) or QDELAY_BOUNDS[b] (us).
QDEPTH_BOUNDS: tuple[tuple[int, int], ...] = (
    (0, 0),
    (1, 1),
    (2, 3),
    (4, 7),
    (8, 15),
    (16, 31),
    (32, 47),
    (48, QDEPTH_MAX),
)
QDELAY_BOUNDS: tuple[tuple[int, int], ...] = (
    (0, 99),
    (100, 499),
    (500, 999),
    (1000, 2499),
    (2500, 4999),
    (5000, 9999),
    (10000, 49999),
    (50000, QDELAY_MAX),
)
COUNTER_MODULUS = 1 << 64  # BMv2 counts in uint64 cells


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16): reflected polynomial 0xA001, init 0, no final xor."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def crc32(data: bytes) -> int:
    """CRC-32 as zlib (and BMv2's crc32) computes it."""
    return zlib.crc32(data) & 0xFFFFFFFF


def pack(fields: Sequence[tuple[int, int]]) -> bytes:
    """``(value, width)`` fields concatenated MSB first, zero-padded at the end to a byte."""
    acc = 0
    nbits = 0
    for value, width in fields:
        assert 0 <= value < (1 << width), (value, width)
        acc = (acc << width) | value
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def ip_int(address: str) -> int:
    a, b, c, d = (int(x) for x in address.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@dataclass(frozen=True, slots=True)
class Flow:
    """A 5-tuple; ``proto`` 6 is TCP, 17 UDP."""

    src: str
    dst: str
    proto: int
    sport: int
    dport: int

    def fields(self) -> list[tuple[int, int]]:
        return [
            (ip_int(self.src), 32),
            (ip_int(self.dst), 32),
            (self.proto, 8),
            (self.sport, 16),
            (self.dport, 16),
        ]


def ecmp_hash(flow: Flow, salt: int = 0) -> int:
    """crc16 of the ecmp table's selector fields: the 5-tuple, then the flowlet salt."""
    return crc16_arc(pack([*flow.fields(), (salt, 16)]))


def ecmp_port(flow: Flow, members: Sequence[int], salt: int = 0) -> int:
    """The uplink of a group whose members (ports, in creation order) are ``members``."""
    return members[ecmp_hash(flow, salt) % len(members)]


def flowlet_salt(k: int) -> int:
    """The salt of a slot's k-th flowlet (0: ECMP mode, or a slot never used)."""
    return (k * FLOWLET_STEP) & 0xFFFF


def flowlet_slot(flow: Flow) -> int:
    """The flowlet register index of a flow: crc32 of the 5-tuple modulo the slots."""
    return crc32(pack(flow.fields())) % FLOWLET_SLOTS


def flowlet_state(group: int, generation: int, salt: int, port: int) -> int:
    """A valid flowlet_state cell as README documents its bits."""
    return (group << 48) | (generation << 40) | (salt << 24) | (1 << 16) | port


@dataclass(slots=True)
class PinTables:
    """A leaf's two pin tables, as README's "What happens to a packet" applies them.

    ``kv_range`` maps (ECMP group, a range of L4 source ports) to an uplink; it is
    looked up only for packets of the KV class, and only in kv-aware mode
    (``kv_aware``); where ranges overlap the entry of higher priority wins.
    ``flow_pin`` keys on the whole 5-tuple and is looked up for any class when
    ``kv_range`` did not pin the packet, in every mode. Neither changes the packet's
    class (its counters).
    """

    kv_range: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    """(group, first port, last port, priority) -> uplink."""
    flow_pin: dict[Flow, int] = field(default_factory=dict)
    kv_aware: bool = False

    def pinned(self, flow: Flow, *, is_kv: bool, group: int = 1) -> int | None:
        """The pinned uplink of a packet that goes up, or None (flowlet or ECMP decides)."""
        if is_kv and self.kv_aware:
            hits = [
                (priority, port)
                for (g, first, last, priority), port in self.kv_range.items()
                if g == group and first <= flow.sport <= last
            ]
            if hits:
                return max(hits)[1]
        return self.flow_pin.get(flow)

    def uplink(
        self, flow: Flow, members: Sequence[int], *, is_kv: bool, salt: int = 0, group: int = 1
    ) -> int:
        """The uplink a packet of ``flow`` takes: its pin, else the ECMP member."""
        port = self.pinned(flow, is_kv=is_kv, group=group)
        return port if port is not None else ecmp_port(flow, members, salt)


def spine_ranges(first: int, last: int, spines: int) -> list[tuple[int, int]]:
    """The tag ports ``first``-``last`` split evenly among ``spines`` (the controller's
    rule: equal ranges in spine order, the ports left over unused)."""
    size = (last - first + 1) // spines
    return [(first + k * size, first + (k + 1) * size - 1) for k in range(spines)]


def hist_index(port: int, bucket: int) -> int:
    """The histogram cell of (egress port, bucket): ``port ++ bucket`` in the program."""
    assert 0 <= bucket < HIST_BUCKETS
    return port * HIST_BUCKETS + bucket


def bucket_of(value: int, bounds: Sequence[tuple[int, int]]) -> int | None:
    """The bucket whose inclusive range holds ``value``; None if no range does."""
    for bucket, (low, high) in enumerate(bounds):
        if low <= value <= high:
            return bucket
    return None


def histogram(
    values: Iterable[tuple[int, int]], bounds: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """(packets, bytes) per bucket of ``(value, packet length)`` pairs."""
    cells = [(0, 0)] * len(bounds)
    for value, length in values:
        bucket = bucket_of(value, bounds)
        if bucket is not None:
            packets, nbytes = cells[bucket]
            cells[bucket] = (packets + 1, nbytes + length)
    return cells


@dataclass(slots=True)
class Fifo:
    """One rate-limited BMv2 egress queue, in microseconds.

    A packet arriving at ``t`` leaves at ``max(t, previous departure + period)``;
    its ``enq_qdepth`` is the number of packets still queued ahead of it (those
    leaving at ``t`` or later; in BMv2 a departure at the very instant of an
    arrival is a race, which the tests avoid) and its ``deq_timedelta`` is
    ``departure - t``. A packet that finds ``capacity`` packets queued is
    dropped (tail drop). The queue's clock starts at 0, when the rate is set.
    """

    period_us: int
    capacity: int = BMV2_QUEUE_PACKETS
    last_departure: int = 0
    queued: list[int] = field(default_factory=list)

    def arrive(self, t_us: int) -> tuple[int, int] | None:
        """``(enq_qdepth, deq_timedelta)`` of a packet arriving at ``t_us``; None: dropped."""
        self.queued = [d for d in self.queued if d >= t_us]
        if len(self.queued) >= self.capacity:
            return None
        depth = len(self.queued)
        departure = max(t_us, self.last_departure + self.period_us)
        self.last_departure = departure
        self.queued.append(departure)
        return depth, departure - t_us


# ------------------------------------------------- the histogram read procedure

# The largest growth of a cell between two reads that can be traffic: 2^63 bytes
# is 9.2 EB, 5.8 years of a 400 Gb/s port. Anything larger is a reset.
RESET_THRESHOLD = 1 << 63


def counter_delta(previous: int, current: int) -> int:
    """What a counter cell counted between two reads, as README's procedure computes it.

    Values are taken as unsigned 64-bit (P4Runtime carries them as int64, so a
    BMv2 cell past 2^63 reads negative). The difference is taken modulo 2^64, which
    is right across a wrap of the cell; a difference of 2^63 or more cannot be
    traffic, so the cell was reset (pipeline pushed again, switch restarted) and
    counts ``current`` since then.
    """
    previous %= COUNTER_MODULUS
    current %= COUNTER_MODULUS
    delta = (current - previous) % COUNTER_MODULUS
    return current if delta >= RESET_THRESHOLD else delta


def max_bucket_grown(previous: Sequence[int], current: Sequence[int]) -> int | None:
    """The highest bucket whose packet count grew between two reads of one port's cells.

    That bucket holds the largest depth (or delay) of any packet that left the port
    between the reads; None: no packet left the port.
    """
    grown = [
        b for b, (p, c) in enumerate(zip(previous, current, strict=True)) if counter_delta(p, c)
    ]
    return max(grown, default=None)


# ------------------------------------------------------------------ packets


# What a packet of a flow carries when the caller gives no payload, by protocol.
DEFAULT_PAYLOADS = {17: b"kv-fabric-udp-payload", 6: b"kv-cache-block"}


def packet(
    flow: Flow,
    *,
    src_mac: str,
    dst_mac: str,
    ttl: int = 64,
    dscp: int = 0,
    payload: bytes | None = None,
) -> Packet:
    """An Ethernet/IPv4 packet of ``flow``, with scapy's checksums.

    A UDP flow's packet has IPv4 id 1 and no flags; a TCP flow's has id 7, DF, and
    a PSH+ACK segment with fixed sequence numbers and window.
    """
    if flow.proto == 17:
        ip = IP(src=flow.src, dst=flow.dst, ttl=ttl, tos=dscp << 2, id=1, flags=0)
        l4: Packet = UDP(sport=flow.sport, dport=flow.dport)
    else:
        assert flow.proto == 6, flow
        ip = IP(src=flow.src, dst=flow.dst, ttl=ttl, tos=dscp << 2, id=7, flags="DF")
        l4 = TCP(sport=flow.sport, dport=flow.dport, seq=1000, ack=0, flags="PA", window=65535)
    data = DEFAULT_PAYLOADS[flow.proto] if payload is None else payload
    return Ether(src=src_mac, dst=dst_mac) / ip / l4 / Raw(data)


def routed(packet: Packet, *, src_mac: str, dst_mac: str) -> Packet:
    """``packet`` as a router forwards it: new MACs, TTL - 1, a recomputed IPv4 checksum."""
    out: Packet = Ether(bytes(packet))
    out[Ether].src = src_mac
    out[Ether].dst = dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    return Ether(bytes(out))


def with_bad_checksum(packet: Packet) -> Packet:
    """``packet`` with its IPv4 header checksum off by one."""
    out: Packet = Ether(bytes(packet))
    out[IP].chksum = (out[IP].chksum + 1) & 0xFFFF
    return out


def arp_request(
    *, sender_mac: str, sender_ip: str, target_ip: str, dst_mac: str = "ff:ff:ff:ff:ff:ff"
) -> Packet:
    """A broadcast ARP who-has ``target_ip``."""
    return Ether(src=sender_mac, dst=dst_mac) / ARP(
        op=1, hwsrc=sender_mac, psrc=sender_ip, hwdst="00:00:00:00:00:00", pdst=target_ip
    )


def arp_reply_from_switch(request: Packet, *, mac: str) -> Packet:
    """The reply README promises for ``request``: ``mac`` is at the requested address."""
    arp = request[ARP]
    return Ether(src=mac, dst=request[Ether].src) / ARP(
        op=2, hwsrc=mac, psrc=arp.pdst, hwdst=arp.hwsrc, pdst=arp.psrc
    )


def probe(
    *, sender_device_id: int, sender_port: int, nonce: int, src_mac: str, magic: int = PROBE_MAGIC
) -> bytes:
    """A link-discovery probe frame (Ethernet header, then the 20-byte probe header)."""
    eth = bytes.fromhex("0180c200000e") + mac_bytes(src_mac) + ETHERTYPE_PROBE.to_bytes(2, "big")
    body = pack(
        [
            (magic, 32),
            (1, 8),
            (0, 8),
            (sender_port, 16),
            (sender_device_id, 64),
            (nonce, 32),
        ]
    )
    return eth + body


def packet_out_header(egress_port: int) -> bytes:
    """The ``packet_out`` controller header: egress port (9 bits), 7 bits of padding."""
    return pack([(egress_port, 9), (0, 7)])


def packet_in_header(ingress_port: int) -> bytes:
    """The ``packet_in`` controller header: ingress port (9 bits), 7 bits of padding."""
    return pack([(ingress_port, 9), (0, 7)])


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))
