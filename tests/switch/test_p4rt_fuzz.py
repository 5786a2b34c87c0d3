"""Property: random P4Runtime requests never break the server or corrupt its state."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from finsy.proto import U128, p4r
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .fakes import load_p4info
from .harness import Client, ServerThread, make_device, pipeline_request

INFO = load_p4info()
FIXTURE_OK = [HealthCheck.function_scoped_fixture]
TABLE_IDS = [t.preamble.id for t in INFO.tables] + [0, 1, 0xFFFFFFFF]
ACTION_IDS = [a.preamble.id for a in INFO.actions] + [0, 7]


# Structured requests: real ids mixed with wrong ones, random bytestrings.
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
    st.binary(max_size=8),
    st.binary(max_size=8),
    st.integers(-1, 64),
)


def _entry(
    tid: int,
    matches: list[p4r.FieldMatch],
    aid: int,
    params: list[tuple[int, bytes]],
    prio: int,
    default: bool,
) -> p4r.TableEntry:
    entry = p4r.TableEntry(table_id=tid, match=matches, priority=prio, is_default_action=default)
    entry.action.action.action_id = aid
    for pid, value in params:
        entry.action.action.params.add(param_id=pid, value=value)
    return entry


table_entry = st.builds(
    _entry,
    st.sampled_from(TABLE_IDS),
    st.lists(field_match, max_size=4),
    st.sampled_from(ACTION_IDS),
    st.lists(st.tuples(st.integers(0, 3), st.binary(max_size=7)), max_size=3),
    st.integers(-2, 20),
    st.booleans(),
)


update = st.builds(
    lambda kind, entry: p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry)),
    st.integers(0, 4),
    table_entry,
)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    thread = ServerThread(make_device())
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def client(server: ServerThread) -> Iterator[Client]:
    c = Client(server.address)
    c.arbitrate(1)
    c.arbitration()
    c.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    yield c
    c.close()


def _snapshot(client: Client) -> list[bytes]:
    entities: list[bytes] = []
    request = p4r.ReadRequest(device_id=0, entities=[p4r.Entity(table_entry=p4r.TableEntry())])
    for response in client.stub.Read(request, timeout=5):
        entities.extend(e.SerializeToString(deterministic=True) for e in response.entities)
    return sorted(entities)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(updates=st.lists(update, min_size=1, max_size=5), atomic=st.booleans())
def test_random_writes_answer_with_a_status_and_failures_change_nothing(
    client: Client, updates: list[p4r.Update], atomic: bool
) -> None:
    before = _snapshot(client)
    request = p4r.WriteRequest(device_id=0, election_id=U128.encode(1), updates=updates)
    if atomic:
        request.atomicity = p4r.WriteRequest.ROLLBACK_ON_ERROR
    try:
        client.stub.Write(request, timeout=5)
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INVALID_ARGUMENT)
        if atomic:
            assert _snapshot(client) == before
        return
    # everything applied: undo it so that examples stay independent
    for u in reversed(updates):
        if u.type == p4r.Update.INSERT and not u.entity.table_entry.is_default_action:
            undo = p4r.Update(type=p4r.Update.DELETE, entity=u.entity)
            client.stub.Write(
                p4r.WriteRequest(device_id=0, election_id=U128.encode(1), updates=[undo])
            )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=200))
def test_random_bytes_as_requests(client: Client, data: bytes) -> None:
    try:
        read = p4r.ReadRequest.FromString(data)
    except DecodeError:
        read = p4r.ReadRequest(device_id=0)
    try:
        list(client.stub.Read(read, timeout=5))
    except grpc.RpcError as exc:
        assert exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED
    try:
        write = p4r.WriteRequest.FromString(data)
    except DecodeError:
        return
    try:
        client.stub.Write(write, timeout=5)
    except grpc.RpcError as exc:
        assert exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED


def test_server_still_serves_after_the_fuzzing(client: Client) -> None:
    assert client.stub.Capabilities(p4r.CapabilitiesRequest(), timeout=5).p4runtime_api_version
    entry = p4r.TableEntry(table_id=INFO.tables[0].preamble.id)
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x0a"))
    entry.action.action.action_id = next(
        a.preamble.id for a in INFO.actions if a.preamble.name.endswith("forward")
    )
    entry.action.action.params.add(param_id=1, value=b"\x01")
    client.stub.Write(
        p4r.WriteRequest(
            device_id=0,
            election_id=U128.encode(1),
            updates=[p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=entry))],
        )
    )
    assert any(b"\x0a" in e for e in _snapshot(client))
