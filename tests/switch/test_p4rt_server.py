"""The P4Runtime server over real gRPC: raw stubs for the exact codes, arbitration, configs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from finsy.proto import U128, p4r, rpc_code, rpc_status

from softswitch.switch.p4rt.device import API_VERSION

from .harness import Client, ServerThread, fabric, make_device, pipeline_request

INFO, DEVICE_CONFIG = fabric()
IDS = {t.preamble.name.split(".")[-1]: t.preamble.id for t in INFO.tables}
ACTIONS = {a.preamble.name.split(".")[-1]: a.preamble.id for a in INFO.actions}
GET = p4r.GetForwardingPipelineConfigRequest
SET = p4r.SetForwardingPipelineConfigRequest


@pytest.fixture
def server() -> Iterator[ServerThread]:
    thread = ServerThread(make_device())
    yield thread
    thread.stop()


@pytest.fixture
def client(server: ServerThread) -> Iterator[Client]:
    c = Client(server.address)
    yield c
    c.close()


def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as exc:
        call()  # type: ignore[operator]
    return exc.value.code()


def status_details(error: grpc.RpcError) -> rpc_status.Status:
    trailers: Any = error.trailing_metadata()
    return rpc_status.Status.FromString(dict(trailers)["grpc-status-details-bin"])


def primary(client: Client, election_id: int = 1) -> None:
    client.arbitrate(election_id)
    assert client.arbitration().status.code == rpc_code.OK


def l2_entry(mac: bytes, port: int = 1) -> p4r.TableEntry:
    entry = p4r.TableEntry(table_id=IDS["l2"])
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=mac))
    action = entry.action.action
    action.action_id = ACTIONS["forward"]
    action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return entry


def write(client: Client, *updates: p4r.Update, election_id: int = 1, **kw: object) -> None:
    request = p4r.WriteRequest(device_id=0, updates=updates, **kw)  # type: ignore[arg-type]
    request.election_id.CopyFrom(U128.encode(election_id))
    client.stub.Write(request)


def insert(entity: p4r.TableEntry) -> p4r.Update:
    return p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=entity))


def read_all(client: Client, entity: p4r.Entity) -> list[p4r.Entity]:
    out: list[p4r.Entity] = []
    for response in client.stub.Read(p4r.ReadRequest(device_id=0, entities=[entity])):
        out.extend(response.entities)
    return out


def test_capabilities(client: Client) -> None:
    reply = client.stub.Capabilities(p4r.CapabilitiesRequest())
    assert reply.p4runtime_api_version == API_VERSION


def test_no_pipeline_is_failed_precondition_with_bmv2s_message(client: Client) -> None:
    with pytest.raises(grpc.RpcError) as exc:
        client.stub.GetForwardingPipelineConfig(GET(device_id=0))
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "No forwarding pipeline config" in str(exc.value.details())
    assert (
        code_of(lambda: read_all(client, p4r.Entity(table_entry=p4r.TableEntry())))
        == grpc.StatusCode.FAILED_PRECONDITION
    )


def test_wrong_device_id_is_not_found(client: Client) -> None:
    assert (
        code_of(lambda: client.stub.GetForwardingPipelineConfig(GET(device_id=9)))
        == grpc.StatusCode.NOT_FOUND
    )
    client.arbitrate(1, device_id=9)
    with pytest.raises(grpc.RpcError) as exc:
        client.receive()
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND


def test_pipeline_config_actions_and_response_types(client: Client) -> None:
    primary(client)
    request = pipeline_request(election_id=1, cookie=42)
    request.action = SET.VERIFY
    client.stub.SetForwardingPipelineConfig(request)
    assert (
        code_of(lambda: client.stub.GetForwardingPipelineConfig(GET(device_id=0)))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    request.action = SET.VERIFY_AND_SAVE
    client.stub.SetForwardingPipelineConfig(request)
    commit = SET(device_id=0, action=SET.COMMIT, election_id=U128.encode(1))
    client.stub.SetForwardingPipelineConfig(commit)
    # COMMIT with nothing saved
    assert code_of(lambda: client.stub.SetForwardingPipelineConfig(commit)) == (
        grpc.StatusCode.FAILED_PRECONDITION
    )
    cookie_only = client.stub.GetForwardingPipelineConfig(
        GET(device_id=0, response_type=GET.COOKIE_ONLY)
    ).config
    assert cookie_only.cookie.cookie == 42
    assert not cookie_only.HasField("p4info") and not cookie_only.p4_device_config
    full = client.stub.GetForwardingPipelineConfig(GET(device_id=0)).config
    assert full.p4info == INFO and full.p4_device_config == DEVICE_CONFIG
    p4info_only = client.stub.GetForwardingPipelineConfig(
        GET(device_id=0, response_type=GET.P4INFO_AND_COOKIE)
    ).config
    assert p4info_only.p4info == INFO and not p4info_only.p4_device_config
    device_only = client.stub.GetForwardingPipelineConfig(
        GET(device_id=0, response_type=GET.DEVICE_CONFIG_AND_COOKIE)
    ).config
    assert not device_only.HasField("p4info") and device_only.p4_device_config == DEVICE_CONFIG
    # RECONCILE_AND_COMMIT with the same program keeps the entries and takes the new cookie
    write(client, insert(l2_entry(b"\x00\x00\x00\x00\x00\x01")))
    reconcile = pipeline_request(election_id=1, cookie=43)
    reconcile.action = SET.RECONCILE_AND_COMMIT
    client.stub.SetForwardingPipelineConfig(reconcile)
    assert len(read_all(client, p4r.Entity(table_entry=p4r.TableEntry()))) == 1
    assert (
        client.stub.GetForwardingPipelineConfig(
            GET(device_id=0, response_type=GET.COOKIE_ONLY)
        ).config.cookie.cookie
        == 43
    )
    # VERIFY_AND_COMMIT clears the state
    client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    assert read_all(client, p4r.Entity(table_entry=p4r.TableEntry())) == []


def test_bad_pipeline_requests(client: Client) -> None:
    primary(client)
    no_config = SET(device_id=0, action=SET.VERIFY_AND_COMMIT, election_id=U128.encode(1))
    assert code_of(lambda: client.stub.SetForwardingPipelineConfig(no_config)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    unspecified = pipeline_request(election_id=1)
    unspecified.action = SET.UNSPECIFIED
    assert code_of(lambda: client.stub.SetForwardingPipelineConfig(unspecified)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )


def test_arbitration_primary_backup_and_failover(server: ServerThread) -> None:
    first, second = Client(server.address), Client(server.address)
    try:
        first.arbitrate(5)
        update = first.arbitration()
        assert update.status.code == rpc_code.OK
        assert U128.decode(update.election_id) == 5
        second.arbitrate(3)
        update = second.arbitration()
        assert update.status.code == rpc_code.ALREADY_EXISTS
        assert U128.decode(update.election_id) == 5
        # the backup cannot write or set the pipeline
        assert (
            code_of(
                lambda: second.stub.SetForwardingPipelineConfig(pipeline_request(election_id=3))
            )
            == grpc.StatusCode.PERMISSION_DENIED
        )
        # same election id as the primary is refused
        third = Client(server.address)
        third.arbitrate(5)
        with pytest.raises(grpc.RpcError) as exc:
            third.receive()
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Election id already exists" in str(exc.value.details())
        third.close()
        # the backup bids higher: it becomes primary and both are told
        second.arbitrate(9)
        assert second.arbitration().status.code == rpc_code.OK
        demoted = first.arbitration()
        assert demoted.status.code == rpc_code.ALREADY_EXISTS
        assert U128.decode(demoted.election_id) == 9
        # the primary leaves: no primary, the remaining client is told NOT_FOUND
        second.close()
        gone = first.arbitration()
        assert gone.status.code == rpc_code.NOT_FOUND
        assert U128.decode(gone.election_id) == 9
        first.arbitrate(9)
        assert first.arbitration().status.code == rpc_code.OK
    finally:
        first.close()


def test_write_rules_without_streams_follow_bmv2(client: Client) -> None:
    # no stream at all: a request without election id is accepted (grpc_cli style) ...
    client.stub.SetForwardingPipelineConfig(pipeline_request())
    client.stub.Write(p4r.WriteRequest(device_id=0, updates=[insert(l2_entry(b"\x01"))]))
    # ... one with an election id is not: there is no primary
    assert code_of(lambda: write(client, insert(l2_entry(b"\x02")))) == (
        grpc.StatusCode.PERMISSION_DENIED
    )


def test_per_update_errors_are_packed_like_bmv2(client: Client) -> None:
    primary(client)
    client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    good = insert(l2_entry(b"\x00\x00\x00\x00\x00\x01"))
    bad_table = insert(p4r.TableEntry(table_id=1234))
    wide = insert(l2_entry(b"\x01" + b"\x00" * 6))  # 56 bits into bit<48>
    with pytest.raises(grpc.RpcError) as exc:
        write(client, good, bad_table, wide, good)
    assert exc.value.code() == grpc.StatusCode.UNKNOWN
    status = status_details(exc.value)
    errors = []
    for detail in status.details:
        error = p4r.Error()
        assert detail.Unpack(error)
        errors.append(error.canonical_code)
    assert errors == [
        rpc_code.OK,
        rpc_code.INVALID_ARGUMENT,
        rpc_code.OUT_OF_RANGE,
        rpc_code.ALREADY_EXISTS,
    ]
    assert len(read_all(client, p4r.Entity(table_entry=p4r.TableEntry()))) == 1


def test_rollback_on_error_leaves_the_state_unchanged(client: Client) -> None:
    primary(client)
    client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    first = insert(l2_entry(b"\x00\x00\x00\x00\x00\x01"))
    write(client, first)
    second = insert(l2_entry(b"\x00\x00\x00\x00\x00\x02"))
    modify = p4r.Update(type=p4r.Update.MODIFY, entity=l2_update_entity(b"\x01", 7))
    delete = p4r.Update(type=p4r.Update.DELETE, entity=first.entity)
    with pytest.raises(grpc.RpcError) as exc:
        write(
            client,
            second,
            modify,
            delete,
            first,
            first,
            atomicity=p4r.WriteRequest.ROLLBACK_ON_ERROR,
        )
    status = status_details(exc.value)
    codes = []
    for detail in status.details:
        error = p4r.Error()
        detail.Unpack(error)
        codes.append(error.canonical_code)
    assert codes == [rpc_code.ABORTED] * 4 + [rpc_code.ALREADY_EXISTS]
    entities = read_all(client, p4r.Entity(table_entry=p4r.TableEntry()))
    assert [e.table_entry for e in entities] == [canonical(first.entity.table_entry)]


def l2_update_entity(mac: bytes, port: int) -> p4r.Entity:
    return p4r.Entity(table_entry=l2_entry(mac.rjust(6, b"\x00"), port))


def canonical(entry: p4r.TableEntry) -> p4r.TableEntry:
    out = p4r.TableEntry()
    out.CopyFrom(entry)
    for fm in out.match:
        fm.exact.value = fm.exact.value.lstrip(b"\x00") or b"\x00"
    for param in out.action.action.params:
        param.value = param.value.lstrip(b"\x00") or b"\x00"
    return out


def test_padded_bytestrings_accepted_replies_canonical(client: Client) -> None:
    primary(client)
    client.stub.SetForwardingPipelineConfig(pipeline_request(election_id=1))
    write(client, insert(l2_entry(b"\x00\x00\x00\x00\x00\x05", port=3)))
    [entity] = read_all(client, p4r.Entity(table_entry=p4r.TableEntry(table_id=IDS["l2"])))
    assert entity.table_entry.match[0].exact.value == b"\x05"
    assert entity.table_entry.action.action.params[0].value == b"\x03"
    # canonical form of the same key finds the same entry
    dup = insert(l2_entry(b"\x05", port=3))
    with pytest.raises(grpc.RpcError):
        write(client, dup)
