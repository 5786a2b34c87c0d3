"""The service's pure parts: intent, reconciliation plans, pin metadata, probes,
histogram telemetry, tag reservation, the API's JSON limits, and the metrics exposition.

Entities are encoded with the real P4Info of p4/kv_fabric.p4 (compiled once).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import finsy as fy
import pytest
from finsy.p4schema import P4Schema

from controller.config import parse_config
from controller.engine import Engine, ProbeSeen
from controller.engine.inflight import TagPool
from controller.service.http.server import HttpError, parse_json
from controller.service.metrics import Metrics
from controller.service.southbound import intent
from controller.service.southbound.pins import PinMeta
from controller.service.southbound.prober import Prober, Verdict, _Round, parse_probe, probe_frame
from controller.service.southbound.reconcile import key_of, plan
from controller.service.southbound.telemetry import (
    Poller,
    counter_names,
    decode_cells,
    equivalent_depth,
    highest_grown,
)
from controller.topology import LinkId, LinkStatus, PortRef, Topology

FABRIC = Path(__file__).resolve().parents[2] / "topologies" / "lab-2x2.yaml"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return Topology(parse_config(FABRIC.read_text(), str(FABRIC)))


@pytest.fixture(scope="module")
def schema(pipeline: tuple[Path, Path]) -> P4Schema:
    return P4Schema(pipeline[0])


def _encoded(schema: P4Schema, entities: Any) -> list[Any]:
    return [e.encode(schema) for e in entities]


def _all(want: intent.Intent) -> list[Any]:
    return [*want.members, *want.groups, *want.entries]


def test_leaf_intent_follows_the_topology(topology: Topology, schema: P4Schema) -> None:
    want = intent.intent(topology, "leaf1", 10)
    assert [m.member_id for m in want.members] == [3, 4]
    assert [(g.group_id, [m.member_id for m in g.members]) for g in want.groups] == [(2, [3, 4])]
    tables = [e.table_id for e in want.entries]
    assert tables.count("qdepth_buckets") == tables.count("qdelay_buckets") == 8
    assert tables.count("arp_proxy") == 2  # 10.0.1.0/24 and 10.0.2.0/24
    routes = {
        (e.match["dst_addr"], e.action.name) for e in want.entries if e.table_id == "ipv4_route"
    }
    assert routes == {("10.0.1.1/32", "forward"), ("10.0.1.2/32", "forward"),
                      ("10.0.2.0/24", "route_ecmp")}  # fmt: skip
    _encoded(schema, _all(want))  # every entity is valid for the program

    spine = intent.intent(topology, "spine2", 10)
    assert not spine.members and not spine.groups
    assert {e.action.args["port"] for e in spine.entries if e.table_id == "ipv4_route"} == {1, 2}

    broken = topology.with_link_status(LinkId.of(PortRef("leaf2", 3), PortRef("spine1", 2)),
                                       LinkStatus.DOWN)  # fmt: skip
    assert intent.group_members(broken, "leaf1", "leaf2") == (4,)
    assert intent.group_members(broken, "leaf2", "leaf1") == (4,)


def test_a_plan_writes_only_the_difference_in_a_safe_order(
    topology: Topology, schema: P4Schema
) -> None:
    desired = _encoded(schema, _all(intent.intent(topology, "leaf1", 10)))
    assert len(plan(desired, desired)) == 0
    fresh = plan(desired, [])
    assert len(fresh.insert) == len(desired) and not fresh.modify and not fresh.delete
    kinds = [key_of(e)[0] for e in fresh.insert]
    assert kinds == sorted(kinds, key=["member", "group", "table"].index)

    stale_route = fy.P4TableEntry("ipv4_route", match=fy.P4TableMatch(dst_addr="10.9.0.0/16"),
                                  action=fy.P4TableAction("drop")).encode(schema)  # fmt: skip
    other_dscp = _encoded(schema, _all(intent.intent(topology, "leaf1", 12)))
    changed = [e for e in desired if key_of(e)[0] == "group"]
    regrouped = _encoded(schema, [intent.group(2, [4])])
    actual = [*[e for e in desired if key_of(e)[0] != "group"], *regrouped, stale_route]
    p = plan(desired, actual)
    assert p.modify == changed and p.insert == [] and len(p.delete) == 1
    assert [op for op, _ in p.phases()] == ["modify", "delete"]
    # a takeover keeps the groups it finds until its own audit
    assert len(plan(desired, actual, keep_groups={key_of(changed[0])})) == 1
    # a different KV DSCP is a different key: insert the new, delete the old
    q = plan(other_dscp, desired)
    assert len(q.insert) == len(q.delete) == 1


def test_pin_metadata_round_trips_and_rejects_foreign_cookies() -> None:
    meta = PinMeta("ab12cd-7", "trace", "h11", "h21", 2_000_000, 1_700_000_000.5,
                   1_700_000_030.5, "spine2")  # fmt: skip
    assert PinMeta.decode(meta.encode()) == meta
    assert len(meta.encode()) < 200
    for junk in (b"", b"\xff\xfe", b"[1]", b'{"v": 2}', b'{"v": 1, "id": "x"}'):
        assert PinMeta.decode(junk) is None


def test_probes_round_trip_and_rounds_collect_them(topology: Topology) -> None:
    frame = probe_frame(intent.switch_mac(3), 3, 1, 42)
    assert len(frame) == 60 and frame[12:14] == b"\x88\xb5"
    probe = parse_probe(frame)
    assert probe is not None and (probe.device_id, probe.port, probe.nonce) == (3, 1, 42)
    assert parse_probe(frame[:20]) is None
    assert parse_probe(frame[:14] + b"XXXX" + frame[18:]) is None

    prober = Prober(topology, window_s=0.0)
    assert prober.targets == {"leaf1": (3, 4), "spine1": (1, 2), "leaf2": (3, 4),
                              "spine2": (1, 2)}  # fmt: skip
    # rounds 1 and 2 were sent; round 2 is being collected
    prober._recent.extend([1, 2])
    prober.nonce = 2
    state = prober._current = _Round()
    assert prober.on_packet("spine1", probe_frame(0, 1, 3, 2), 1) is Verdict.SEEN
    late = prober.on_packet("spine2", probe_frame(0, 1, 4, 1), 1)  # from round 1
    assert late is Verdict.SEEN
    never_sent = prober.on_packet("spine1", probe_frame(0, 1, 3, 99), 1)
    assert never_sent is Verdict.UNKNOWN_NONCE
    assert prober.on_packet("leaf1", b"\0" * 60, 1) is Verdict.NOT_PROBE
    assert state.seen == [ProbeSeen(PortRef("leaf1", 3), PortRef("spine1", 1)),
                          ProbeSeen(PortRef("leaf1", 4), PortRef("spine2", 1))]  # fmt: skip
    assert (prober.received, prober.late) == (2, 1)


def test_a_probe_from_a_host_port_is_dropped_even_with_a_live_nonce(topology: Topology) -> None:
    """A host that learnt a nonce still cannot claim a cable: leaf ports 1 and 2 are
    host ports, so nothing punted from them is a probe."""
    prober = Prober(topology, window_s=0.0)
    assert prober.host_ports == {PortRef(leaf, p) for leaf in ("leaf1", "leaf2") for p in (1, 2)}
    prober._recent.append(7)
    prober.nonce = 7
    state = prober._current = _Round()
    forged = probe_frame(0, 3, 1, 7)  # "spine1 port 1", as leaf1's cable to spine1 sends
    assert prober.on_packet("leaf1", forged, 1) is Verdict.FROM_HOST_PORT
    assert prober.on_packet("leaf2", forged, 2) is Verdict.FROM_HOST_PORT
    assert prober.on_packet("leaf1", probe_frame(0, 9, 1, 7), 3) is Verdict.UNKNOWN_SENDER
    assert state.seen == [] and prober.received == 0
    assert prober.rejected == {Verdict.FROM_HOST_PORT: 2, Verdict.UNKNOWN_SENDER: 1}
    assert prober.on_packet("leaf1", forged, 3) is Verdict.SEEN  # the fabric port: fine


def test_round_nonces_are_random_32_bit_values(topology: Topology) -> None:
    prober = Prober(topology, window_s=0.0)
    nonces = []
    for _ in range(50):
        asyncio.run(prober.round({}, ()))
        nonces.append(prober.nonce)
    assert len(set(nonces)) == 50 and all(0 <= n < 2**32 for n in nonces)
    assert max(nonces) >= 2**24  # not a counter: 50 rounds of one would stay below 51
    assert sorted(nonces) != nonces


def test_histograms_give_the_largest_bucket_of_the_period(
    topology: Topology, schema: P4Schema
) -> None:
    assert highest_grown(None, [5] * 8) is None
    assert highest_grown([1, 1, 1, 1, 0, 0, 0, 0], [9, 1, 2, 1, 0, 0, 0, 0]) == 2
    assert highest_grown([1] * 8, [1] * 8) is None
    assert equivalent_depth(1000, 20e6, 1250) == 2  # 1 ms at 20 Mb/s: 2500 bytes

    poller = Poller(topology)

    def cells(port: int, tx: tuple[int, int], depth: list[int], delay: list[int]) -> list[Any]:
        out = [
            fy.P4CounterEntry(
                "port_tx", index=port, data=fy.P4CounterData(byte_count=tx[0], packet_count=tx[1])
            ),
            fy.P4CounterEntry(
                "port_kv_tx",
                index=port,
                data=fy.P4CounterData(byte_count=tx[0] // 2, packet_count=0),
            ),
        ]
        for name, counts in (("port_qdepth_hist", depth), ("port_qdelay_hist", delay)):
            out += [
                fy.P4CounterEntry(
                    name, index=port * 8 + b, data=fy.P4CounterData(packet_count=c, byte_count=0)
                )
                for b, c in enumerate(counts)
            ]
        # as the switch answers them: protobufs, read without finsy's entities
        return list(decode_cells(_encoded(schema, out), counter_names(schema)))  # fmt: skip

    first = poller.reading("leaf1", cells(3, (1000, 10), [0] * 8, [0] * 8))
    assert first.ports[3].queue_depth == 0 and first.ports[3].kv_bytes == 500
    second = poller.reading(
        "leaf1", cells(3, (13_500, 20), [0, 0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0, 0])
    )
    # depth bucket 3 says 4+ packets; delay bucket 5 (5 ms at 20 Mb/s, 1250-byte packets)
    # drains 10 packets: the larger is passed on
    assert second.ports[3].queue_depth == 10
    assert second.ports[3].bytes == 13_500
    negative = poller.reading("leaf1", cells(3, (-1, 20), [0] * 8, [0] * 8))
    assert negative.ports[3].bytes == 2**64 - 1  # int64 on the wire, unsigned count


def test_reserving_a_tag_port_keeps_the_rest_in_order() -> None:
    pool = TagPool(40000, 5, ("spine1", "spine2"))  # spine1 40000-40004, spine2 40005-40009
    assert pool.reserve("h1", 40002)
    assert not pool.reserve("h1", 40002)
    assert not pool.reserve("h1", 40010)  # outside every range
    assert [pool.take("h1", "spine1") for _ in range(5)] == [40000, 40001, 40003, 40004, None]
    assert pool.take("h2", "spine1") == 40000  # another host: its own ports
    assert pool.take("h1", "spine2") == 40005
    pool.give("h1", 40001)
    pool.give("h1", 40001)  # twice: once back
    assert [pool.take("h1", "spine1"), pool.take("h1", "spine1")] == [40001, None]
    assert (pool.spine_of(40004), pool.spine_of(40005), pool.spine_of(39999)) == (
        "spine1",
        "spine2",
        None,
    )


def test_json_bodies_parse_and_ones_beyond_the_limits_are_refused() -> None:
    assert parse_json(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert parse_json(b"[" * 32 + b"]" * 32) is not None
    for data in (b"", b"{", b"[" * 33 + b"]" * 33, b"18446744073709551616", b"1e400",
                 b"NaN", b"-Infinity", b"\xff"):  # fmt: skip
        with pytest.raises(HttpError) as err:
            parse_json(data)
        assert err.value.status == 400, data


def test_metrics_expose_engine_and_shell_figures(topology: Topology) -> None:
    from controller.service.metrics import Scrape

    engine = Engine(topology, 0.0)
    snap = Scrape(
        counts=engine.counts, mode="kv-aware", effective_mode="ecmp", fallback_active=True,
        efficiency_evaluated=10, efficiency_efficient=7, efficiency_last=0.7,
        tiers={"spine": (0.5, 0.9)}, staleness_s={"leaf1": 0.05, "spine1": None},
        alerts=[("scheduler_fallback", "fabric", "critical")],
        links=[("leaf1:3-spine1:1", "down")], pins=2, in_flight=3,
        modes=["kv-aware", "ecmp", "flowlet"],
    )  # fmt: skip
    m = Metrics(lambda: snap)
    m.api_seconds.labels("transfers").observe(0.002)
    text = m.render().decode()
    assert 'kvfabric_mode{mode="ecmp"} 1.0' in text
    assert "kvfabric_fallback_active 1.0" in text
    assert 'kvfabric_tier_utilisation{stat="p95",tier="spine"} 0.9' in text
    assert 'kvfabric_telemetry_staleness_seconds{switch="spine1"} +Inf' in text
    assert (
        'kvfabric_alert_active{name="scheduler_fallback",severity="critical",subject="fabric"} 1.0'
        in text
    )
    assert 'kvfabric_link_up{link="leaf1:3-spine1:1",status="down"} 0.0' in text
    assert 'kvfabric_api_request_seconds_bucket{endpoint="transfers",le="0.002"} 1.0' in text
    assert "kvfabric_efficiency_efficient_total 7.0" in text
    # two instances never share a sample (no global registry)
    assert 'endpoint="transfers"' not in Metrics(lambda: snap).render().decode()


def test_kvfabric_static_pins_is_kept_as_a_deprecated_alias(topology: Topology) -> None:
    """``kvfabric_static_pins``, the old name of ``kvfabric_flow_pins``, is still exposed
    with the same series for one release, its help saying so."""
    from controller.service.metrics import Scrape

    scrape = Scrape(
        counts=Engine(topology, 0.0).totals(), mode="kv-aware", effective_mode="kv-aware",
        fallback_active=False, efficiency_evaluated=0, efficiency_efficient=0,
        efficiency_last=None, tiers={}, staleness_s={}, alerts=[], links=[], pins=0,
        in_flight=0, flow_pins={"pinned": 2, "ecmp": 1},
    )  # fmt: skip
    text = Metrics(lambda: scrape).render().decode()
    for name in ("kvfabric_flow_pins", "kvfabric_static_pins"):
        assert f'{name}{{placement="pinned"}} 2.0' in text
        assert f'{name}{{placement="ecmp"}} 1.0' in text
    assert "# HELP kvfabric_static_pins Deprecated" in text
