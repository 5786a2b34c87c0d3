"""Role configs, value sets, one-shot selector programming, default-entry resources.

A real P4Runtime server on an ephemeral port, loading fabric_test.p4 through the
real device-config loader; the exact status codes are checked with raw stubs.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from finsy.proto import p4r, rpc_code, stratum

from softswitch.runtime.profiles import ActionSelector
from softswitch.switch.p4rt.oneshot import is_hidden
from tests.support.p4rt_client import insert, modify

from .harness import (
    Client,
    ServerThread,
    action,
    fabric,
    ids,
    l2_entry,
    lpm_entry,
    make_device,
    table_entry,
    write_errors,
)

INFO, DEVICE_CONFIG = fabric()
TABLES = ids("tables")


@pytest.fixture
def server() -> Iterator[ServerThread]:
    thread = ServerThread(make_device(cpu_port=255))
    yield thread
    thread.stop()


@pytest.fixture
def root(server: ServerThread) -> Iterator[Client]:
    """The default role's primary, with the pipeline set."""
    with Client(server.address) as client:
        client.become_primary(10)
        client.set_pipeline(INFO, DEVICE_CONFIG)
        yield client


def codes(exc: grpc.RpcError) -> list[int]:
    return [e.canonical_code for e in write_errors(exc)]


def fails_with(client: Client, *updates: p4r.Update) -> list[int]:
    with pytest.raises(grpc.RpcError) as exc:
        client.write(updates)
    return codes(exc.value)


# --- role configs ------------------------------------------------------------------------------


def role_config(**kw: object) -> stratum.P4RoleConfig:
    return stratum.P4RoleConfig(**kw)  # type: ignore[arg-type]


def stream_error(client: Client) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as exc:
        client.receive()
    return exc.value


def test_role_config_for_the_default_role_or_of_unknown_type_is_refused(
    server: ServerThread,
) -> None:
    with Client(server.address) as client:
        client.arbitrate(1, config=role_config(receives_packet_ins=True))
        error = stream_error(client)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error.details() == "Cannot set a role config for the default role."
    with Client(server.address) as client:
        client.arbitrate(1, role="ctl", config=p4r.Uint128(high=1))
        error = stream_error(client)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error.details() == "Unknown role config format."


def test_a_role_writes_only_its_entities_and_may_not_push_a_pipeline(
    server: ServerThread, root: Client
) -> None:
    config = role_config(exclusive_p4_ids=[TABLES["l2"]], shared_p4_ids=[TABLES["acl"]])
    with Client(server.address) as ctl:
        ctl.arbitrate(3, role="ctl", config=config)
        update = ctl.arbitration()
        assert update.status.code == rpc_code.OK
        assert update.role.name == "ctl"
        echoed = stratum.P4RoleConfig()
        assert update.role.config.Unpack(echoed) and echoed == config
        ctl.election_id = 3
        request_role = "ctl"

        def write(*updates: p4r.Update) -> None:
            request = p4r.WriteRequest(device_id=0, role=request_role, updates=updates)
            request.election_id.high, request.election_id.low = 0, 3
            ctl.stub.Write(request, timeout=5)

        write(insert(l2_entry(0x0200000000B0, action("forward", 2))))
        with pytest.raises(grpc.RpcError) as exc:
            write(
                insert(l2_entry(0x0200000000B1, action("forward", 2))),
                insert(lpm_entry(0x0A000000, 8, action("drop"))),
            )
        assert codes(exc.value) == [rpc_code.OK, rpc_code.PERMISSION_DENIED]
        request = p4r.SetForwardingPipelineConfigRequest(
            device_id=0, role="ctl", action=p4r.SetForwardingPipelineConfigRequest.VERIFY
        )
        request.election_id.low = 3
        request.config.p4info.CopyFrom(INFO)
        request.config.p4_device_config = DEVICE_CONFIG
        with pytest.raises(grpc.RpcError) as exc:
            ctl.stub.SetForwardingPipelineConfig(request, timeout=10)
        assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # another role may not claim what "ctl" holds exclusively
        with Client(server.address) as other:
            other.arbitrate(1, role="other", config=role_config(shared_p4_ids=[TABLES["l2"]]))
            assert stream_error(other).code() == grpc.StatusCode.INVALID_ARGUMENT
    # the default role keeps full access
    root.write([insert(lpm_entry(0x0A000000, 8, action("drop")))])


def packet_in_frame(port: int) -> bytes:
    return ((port << 7).to_bytes(2, "big")) + bytes.fromhex("02000000000b02000000000a88b6") + b"x"


def test_packet_ins_follow_each_roles_config_and_filter(server: ServerThread, root: Client) -> None:
    md_id = next(
        m.id
        for c in INFO.controller_packet_metadata
        if c.preamble.name == "packet_in"
        for m in c.metadata
        if m.name == "ingress_port"
    )
    port2 = role_config(
        receives_packet_ins=True,
        packet_in_filter=stratum.P4RoleConfig.PacketFilter(metadata_id=md_id, value=b"\x00\x02"),
    )
    with Client(server.address) as filtered, Client(server.address) as deaf:
        filtered.arbitrate(1, role="port2", config=port2)
        filtered.arbitration()
        deaf.arbitrate(1, role="deaf", config=role_config(receives_packet_ins=False))
        deaf.arbitration()
        for port in (1, 2):
            server.call(lambda p=port: server.device.packet_in(packet_in_frame(p)))  # type: ignore[misc]
        got_root = [root.receive_kind("packet").packet for _ in range(2)]
        assert [p.payload[-1:] for p in got_root] == [b"x", b"x"]
        only = filtered.receive_kind("packet").packet
        assert {m.metadata_id: m.value for m in only.metadata}[md_id] == b"\x02"
        assert filtered.responses.empty() and deaf.responses.empty()


# --- value sets ------------------------------------------------------------------------------


def value_set(*values: bytes, field_id: int = 1) -> p4r.Entity:
    entry = p4r.ValueSetEntry(value_set_id=ids("value_sets")["punt_types"])
    for value in values:
        entry.members.add().match.add(field_id=field_id, exact=p4r.FieldMatch.Exact(value=value))
    return p4r.Entity(value_set_entry=entry)


def test_value_set_writes_follow_the_spec_and_failures_change_nothing(root: Client) -> None:
    root.write([modify(value_set(b"\x88\xb5", b"\x00\x01\x23"))])  # padded form accepted
    read = value_set(b"\x88\xb5", b"\x01\x23")
    assert root.read(p4r.Entity(value_set_entry=p4r.ValueSetEntry())) == [read]
    assert fails_with(root, insert(value_set(b"\x01"))) == [rpc_code.INVALID_ARGUMENT]
    assert fails_with(root, modify(value_set(*[bytes([i]) for i in range(1, 6)]))) == [
        rpc_code.RESOURCE_EXHAUSTED
    ]
    assert fails_with(root, modify(value_set(b"\x01", b"\x00\x01"))) == [rpc_code.ALREADY_EXISTS]
    assert fails_with(root, modify(value_set(b"\x01\x00\x00"))) == [rpc_code.OUT_OF_RANGE]
    assert fails_with(root, modify(value_set(b"\x01", field_id=2))) == [rpc_code.INVALID_ARGUMENT]
    assert root.read(p4r.Entity(value_set_entry=p4r.ValueSetEntry())) == [read]


def test_value_set_members_reach_the_parser(server: ServerThread, root: Client) -> None:
    root.write([modify(value_set(b"\x88\xb6"))])
    frame = bytes.fromhex("02000000000b02000000000a88b6") + b"payload"
    dataplane = server.device.dataplane
    assert dataplane is not None
    out = server.call(lambda: dataplane.process(1, frame))
    assert out == [(255, b"\x00\x80" + frame)]  # punted with ingress_port 1


# --- one-shot action selector programming ---------------------------------------------------


def ecmp(*actions: tuple[p4r.Action, int], dst: bytes = bytes([10, 1, 1, 1])) -> p4r.Entity:
    entry = table_entry("ecmp")
    entry.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=dst))
    action_set = entry.action.action_profile_action_set
    action_set.SetInParent()
    for act, weight in actions:
        action_set.action_profile_actions.add(action=act, weight=weight)
    return p4r.Entity(table_entry=entry)


def hidden_groups(server: ServerThread) -> list[int]:
    dataplane = server.device.dataplane
    assert dataplane is not None
    selector = dataplane.state.action_profiles["MyIngress.ecmp_selector"]
    assert isinstance(selector, ActionSelector)
    return server.call(lambda: [g.group_id for g in selector.groups() if is_hidden(g.group_id)])


def test_one_shot_errors_are_pis(server: ServerThread, root: Client) -> None:
    nhop = action("set_nhop", 2, 2)
    assert fails_with(root, insert(ecmp())) == [rpc_code.UNIMPLEMENTED]
    assert fails_with(root, insert(ecmp((nhop, 0)))) == [rpc_code.INVALID_ARGUMENT]
    assert fails_with(root, insert(ecmp((nhop, 10), (nhop, 7)))) == [rpc_code.RESOURCE_EXHAUSTED]
    assert fails_with(root, insert(ecmp((action("drop"), 1)))) == [rpc_code.INVALID_ARGUMENT]
    assert hidden_groups(server) == []


def test_one_shot_modify_delete_and_rollback_leave_no_hidden_group_behind(
    server: ServerThread, root: Client
) -> None:
    a, b = action("set_nhop", 2, 2), action("set_nhop", 3, 3)
    root.write([insert(ecmp((a, 1), (b, 2)))])
    [first] = hidden_groups(server)
    root.write([modify(ecmp((b, 5)))])
    [second] = hidden_groups(server)
    assert second != first
    [entity] = root.read(p4r.Entity(table_entry=table_entry("ecmp")))
    [only] = entity.table_entry.action.action_profile_action_set.action_profile_actions
    assert only.weight == 5
    # an atomic batch whose second update fails undoes the first one's hidden group
    with pytest.raises(grpc.RpcError):
        root.write(
            [insert(ecmp((a, 1), dst=b"\x0a\x01\x01\x02")), insert(ecmp((a, 1)))],
            atomicity=p4r.WriteRequest.ROLLBACK_ON_ERROR,
        )
    assert hidden_groups(server) == [second]
    root.write([p4r.Update(type=p4r.Update.DELETE, entity=ecmp())])
    assert hidden_groups(server) == []
    # the selector is empty again: manual programming is allowed
    member = p4r.ActionProfileMember(
        action_profile_id=ids("action_profiles")["ecmp_selector"], member_id=1, action=a
    )
    root.write([insert(p4r.Entity(action_profile_member=member))])


# --- default entries ------------------------------------------------------------------------


def test_direct_resources_of_default_entries_are_refused_as_bmv2_does(root: Client) -> None:
    default = table_entry("acl", action("NoAction"), is_default_action=True)
    default.counter_data.packet_count = 5
    assert fails_with(root, modify(p4r.Entity(table_entry=default))) == [rpc_code.UNIMPLEMENTED]
    request = p4r.DirectCounterEntry()
    request.table_entry.table_id = TABLES["acl"]
    request.table_entry.is_default_action = True
    with pytest.raises(grpc.RpcError) as exc:
        root.read(p4r.Entity(direct_counter_entry=request))
    assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
    # the default action itself can be modified and read
    root.write([modify(p4r.Entity(table_entry=table_entry("acl", action("acl_drop"),
                                                          is_default_action=True)))])  # fmt: skip
    [entity] = root.read(p4r.Entity(table_entry=table_entry("acl", is_default_action=True)))
    assert entity.table_entry.action.action.action_id == ids("actions")["acl_drop"]
