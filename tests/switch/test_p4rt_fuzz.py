"""Property tests: random requests and random frames at a running switch (root).

One ``kvfabric switch`` process runs fabric_test.p4 on three veths with one
baseline entry (frames to MAC_B leave by port 2).  Hypothesis throws at it:

- random Write batches over every entity kind, ids real and wrong, values of
  random length; a rejected atomic batch must leave every readable entity as it
  was, and a batch that applied anything is undone by a fresh pipeline;
- random bytes decoded as Read, Write and SetForwardingPipelineConfig requests;
- random frames, and well-formed headers cut at random points, on the ports.

After every example a real frame must still be forwarded by the baseline entry,
and at the end the switch's stderr (``--log-console``) must hold no traceback.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import grpc
import pytest
from finsy.proto import U128, p4r
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from tests.support.p4rt_client import insert

from .conftest import SwitchOnVeths, running_fabric
from .harness import action, fabric, ids, l2_entry

pytestmark = pytest.mark.root

MAC_B = 0x02000000000B
_probes = itertools.count()
FUZZ = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
INFO, _ = fabric()


def _ids(kind: str) -> list[int]:
    return [*ids(kind).values(), 0, 1, 0xFFFFFFFF]


TABLES, ACTIONS = _ids("tables"), _ids("actions")
PROFILES, COUNTERS = _ids("action_profiles"), _ids("counters")
METERS, REGISTERS = _ids("meters"), _ids("registers")
DIGESTS, VALUE_SETS = _ids("digests"), _ids("value_sets")
small_bytes = st.binary(max_size=8)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwitchOnVeths]:
    tmp = tmp_path_factory.mktemp("fuzz")
    with running_fabric(tmp, "--log-console", "-L", "warn") as running:
        running.reset()
        _baseline(running)
        yield running


def _baseline(fab: SwitchOnVeths) -> None:
    fab.client.write([insert(l2_entry(MAC_B, action("forward", 2)))])


def _still_forwards(fab: SwitchOnVeths, what: bytes) -> None:
    """A frame to MAC_B from port 1 leaves by port 2 (a tag unique to this call)."""
    tag = b"%s-%d" % (what, next(_probes))
    frame = Ether(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0a", type=0x88B6) / Raw(tag)
    fab.hosts[1].send(frame)
    fab.hosts[2].expect(lambda p: Raw in p and p[Raw].load == tag)


def _snapshot(fab: SwitchOnVeths) -> list[bytes]:
    """Every readable entity, serialised; counters and registers included."""
    wildcards = [
        p4r.Entity(table_entry=p4r.TableEntry()),
        p4r.Entity(action_profile_member=p4r.ActionProfileMember()),
        p4r.Entity(action_profile_group=p4r.ActionProfileGroup()),
        p4r.Entity(counter_entry=p4r.CounterEntry()),
        p4r.Entity(meter_entry=p4r.MeterEntry()),
        p4r.Entity(register_entry=p4r.RegisterEntry()),
        p4r.Entity(value_set_entry=p4r.ValueSetEntry()),
        p4r.Entity(digest_entry=p4r.DigestEntry()),
    ]
    for table in INFO.tables:
        default = p4r.TableEntry(table_id=table.preamble.id, is_default_action=True)
        wildcards.append(p4r.Entity(table_entry=default))
    pre = p4r.PacketReplicationEngineEntry
    groups = pre(multicast_group_entry=p4r.MulticastGroupEntry())
    sessions = pre(clone_session_entry=p4r.CloneSessionEntry())
    wildcards.append(p4r.Entity(packet_replication_engine_entry=groups))
    wildcards.append(p4r.Entity(packet_replication_engine_entry=sessions))
    return sorted(e.SerializeToString(deterministic=True) for e in fab.client.read(*wildcards))


def _restore(fab: SwitchOnVeths) -> None:
    fab.reset()
    _baseline(fab)


# --- strategies --------------------------------------------------------------------------------


def _field_match(fid: int, kind: str, a: bytes, b: bytes, plen: int) -> p4r.FieldMatch:
    fm = p4r.FieldMatch(field_id=fid)
    if kind == "exact":
        fm.exact.value = a
    elif kind == "lpm":
        fm.lpm.value, fm.lpm.prefix_len = a, plen
    elif kind == "ternary":
        fm.ternary.value, fm.ternary.mask = a, b
    elif kind == "range":
        fm.range.low, fm.range.high = a, b
    else:
        fm.optional.value = a
    return fm


field_match = st.builds(
    _field_match,
    st.integers(0, 4),
    st.sampled_from(["exact", "lpm", "ternary", "range", "optional"]),
    small_bytes,
    small_bytes,
    st.integers(-1, 64),
)


def _action(aid: int, params: list[tuple[int, bytes]]) -> p4r.Action:
    out = p4r.Action(action_id=aid)
    for pid, value in params:
        out.params.add(param_id=pid, value=value)
    return out


actions = st.builds(
    _action,
    st.sampled_from(ACTIONS),
    st.lists(st.tuples(st.integers(0, 3), st.binary(max_size=7)), max_size=3),
)


def _table_entry(
    tid: int,
    matches: list[p4r.FieldMatch],
    act: p4r.Action,
    how: int,
    prio: int,
    default: bool,
    idle: int,
) -> p4r.Entity:
    entry = p4r.TableEntry(
        table_id=tid, match=matches, priority=prio, is_default_action=default, idle_timeout_ns=idle
    )
    if how == 0:
        entry.action.action.CopyFrom(act)
    elif how == 1:
        entry.action.action_profile_member_id = abs(prio)
    elif how == 2:
        entry.action.action_profile_group_id = abs(prio)
    elif how == 3:
        entry.action.action_profile_action_set.action_profile_actions.add(action=act, weight=prio)
    return p4r.Entity(table_entry=entry)


def _member(pid: int, mid: int, act: p4r.Action) -> p4r.Entity:
    return p4r.Entity(
        action_profile_member=p4r.ActionProfileMember(
            action_profile_id=pid, member_id=mid, action=act
        )
    )


def _group(pid: int, gid: int, members: list[tuple[int, int]], max_size: int) -> p4r.Entity:
    group = p4r.ActionProfileGroup(action_profile_id=pid, group_id=gid, max_size=max_size)
    for mid, weight in members:
        group.members.add(member_id=mid, weight=weight)
    return p4r.Entity(action_profile_group=group)


def _indexed(kind: str, oid: int, index: int | None, a: int, b: int) -> p4r.Entity:
    if kind == "counter":
        counter = p4r.CounterEntry(counter_id=oid)
        counter.data.packet_count, counter.data.byte_count = a, b
        if index is not None:
            counter.index.index = index
        return p4r.Entity(counter_entry=counter)
    if kind == "register":
        register = p4r.RegisterEntry(register_id=oid)
        register.data.bitstring = abs(a).to_bytes(9, "big").lstrip(b"\x00")
        if index is not None:
            register.index.index = index
        return p4r.Entity(register_entry=register)
    meter = p4r.MeterEntry(meter_id=oid)
    meter.config.cir, meter.config.cburst, meter.config.pir, meter.config.pburst = a, b, b, a
    if index is not None:
        meter.index.index = index
    return p4r.Entity(meter_entry=meter)


def _pre(mgid: int, replicas: list[tuple[int, int]], clone: bool) -> p4r.Entity:
    pre = p4r.PacketReplicationEngineEntry()
    target = pre.clone_session_entry if clone else pre.multicast_group_entry
    if clone:
        pre.clone_session_entry.session_id = mgid
    else:
        pre.multicast_group_entry.multicast_group_id = mgid
    for port, instance in replicas:
        target.replicas.add(egress_port=port, instance=instance)
    return p4r.Entity(packet_replication_engine_entry=pre)


def _digest(did: int, size: int, timeout: int) -> p4r.Entity:
    entry = p4r.DigestEntry(digest_id=did)
    entry.config.max_list_size, entry.config.max_timeout_ns = size, timeout
    return p4r.Entity(digest_entry=entry)


def _value_set(vid: int, members: list[list[p4r.FieldMatch]]) -> p4r.Entity:
    entry = p4r.ValueSetEntry(value_set_id=vid)
    for matches in members:
        entry.members.add().match.extend(matches)
    return p4r.Entity(value_set_entry=entry)


values = st.integers(-1, 2**40)
entities = st.one_of(
    st.builds(
        _table_entry,
        st.sampled_from(TABLES),
        st.lists(field_match, max_size=4),
        actions,
        st.integers(0, 4),
        st.integers(-2, 20),
        st.booleans(),
        st.sampled_from([0, 0, 10**9, -5]),
    ),
    st.builds(_member, st.sampled_from(PROFILES), st.integers(0, 4), actions),
    st.builds(
        _group,
        st.sampled_from(PROFILES),
        st.integers(0, 3),
        st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 3)), max_size=3),
        st.integers(-1, 20),
    ),
    st.builds(
        _indexed,
        st.sampled_from(["counter", "register", "meter"]),
        st.sampled_from(COUNTERS + REGISTERS + METERS),
        st.none() | st.integers(-1, 70),
        values,
        values,
    ),
    st.builds(
        _pre,
        st.integers(0, 3),
        st.lists(st.tuples(st.integers(0, 600), st.integers(0, 2)), max_size=3),
        st.booleans(),
    ),
    st.builds(_digest, st.sampled_from(DIGESTS), st.integers(-1, 5), st.integers(-1, 10**9)),
    st.builds(
        _value_set,
        st.sampled_from(VALUE_SETS),
        st.lists(st.lists(field_match, max_size=2), max_size=6),
    ),
)
updates = st.builds(lambda t, e: p4r.Update(type=t, entity=e), st.integers(0, 4), entities)


# --- properties ----------------------------------------------------------------------------------


@FUZZ
@given(batch=st.lists(updates, min_size=1, max_size=5), atomic=st.booleans())
def test_random_writes_are_answered_and_rejected_batches_change_nothing(
    fuzzed: SwitchOnVeths, batch: list[p4r.Update], atomic: bool
) -> None:
    before = _snapshot(fuzzed)
    request = p4r.WriteRequest(device_id=0, election_id=U128.encode(1), updates=batch)
    if atomic:
        request.atomicity = p4r.WriteRequest.ROLLBACK_ON_ERROR
    try:
        fuzzed.client.stub.Write(request, timeout=10)
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INVALID_ARGUMENT)
        if atomic:
            assert _snapshot(fuzzed) == before
            _still_forwards(fuzzed, b"after-rejected-batch")
            return
    _restore(fuzzed)
    _still_forwards(fuzzed, b"after-applied-batch")


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_as_requests_get_a_status(fuzzed: SwitchOnVeths, data: bytes) -> None:
    stub = fuzzed.client.stub
    before = _snapshot(fuzzed)
    for message, call in (
        (p4r.ReadRequest, lambda r: list(stub.Read(r, timeout=10))),
        (p4r.WriteRequest, lambda r: stub.Write(r, timeout=10)),
        (p4r.SetForwardingPipelineConfigRequest, lambda r: stub.SetForwardingPipelineConfig(r, 10)),
    ):
        try:
            request = message.FromString(data)
        except DecodeError:
            continue
        try:
            call(request)
        except grpc.RpcError as exc:
            assert exc.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL)
    if _snapshot(fuzzed) != before:
        _restore(fuzzed)
    _still_forwards(fuzzed, b"after-random-request")


headers = st.sampled_from(
    [
        bytes(Ether(dst="02:00:00:00:00:0b") / IP(dst="10.0.0.1") / TCP()),
        bytes(Ether(dst="02:00:00:00:00:0b") / IP(dst="10.0.0.1", ihl=15) / UDP()),
        bytes(Ether(dst="02:00:00:00:00:0b", type=0x88B5) / Raw(b"\x00" * 20)),
        bytes.fromhex("00800200000000000b0200000000000a0800"),  # a packet_out header in front
    ]
)


@FUZZ
@given(
    frame=st.binary(min_size=14, max_size=300)
    | st.builds(lambda h, n, tail: h[:n] + tail, headers, st.integers(14, 60), small_bytes),
    port=st.sampled_from([1, 3]),
)
def test_random_frames_are_processed_and_forwarding_goes_on(
    fuzzed: SwitchOnVeths, frame: bytes, port: int
) -> None:
    fuzzed.hosts[port].send(frame)
    _still_forwards(fuzzed, b"after-random-frame")


def test_after_the_fuzzing_forwarding_is_exactly_the_baseline(fuzzed: SwitchOnVeths) -> None:
    _restore(fuzzed)
    for host in fuzzed.hosts.values():
        host.drain()
    _still_forwards(fuzzed, b"final")
    assert not fuzzed.hosts[3].sniff(0.3, lambda p: Raw in p and p[Raw].load.startswith(b"final"))
    assert fuzzed.client.stub.Capabilities(p4r.CapabilitiesRequest(), timeout=5)


def test_no_packet_or_request_made_the_switch_fail(fuzzed: SwitchOnVeths) -> None:
    assert fuzzed.process.running()
    log = fuzzed.process.stderr_text()
    assert "Traceback" not in log
    assert "pipeline failed" not in log
