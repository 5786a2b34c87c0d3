"""finsy, the project's P4Runtime client library, drives the server end to end."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import finsy as fy
import pytest
from finsy.proto import stratum
from google.protobuf import text_format

from .harness import ServerThread, fabric, make_device


@pytest.fixture
def server() -> Iterator[ServerThread]:
    thread = ServerThread(make_device())
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def p4info_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("finsy") / "fabric_test.p4info.txtpb"
    path.write_text(text_format.MessageToString(fabric()[0]))
    return path


def options(p4info_file: Path) -> fy.SwitchOptions:
    return fy.SwitchOptions(p4info=p4info_file, p4blob=fabric()[1], device_id=0)


def nhop(port: int) -> fy.P4TableAction:
    return fy.P4TableAction("set_nhop", port=port, dmac=port)


def l2_forward(**extra: Any) -> fy.P4TableEntry:
    """The l2 entry that sends 02:00:00:00:00:01 out of port 3."""
    return fy.P4TableEntry(
        "l2",
        match=fy.P4TableMatch(dst=0x020000000001),
        action=fy.P4TableAction("forward", port=3),
        **extra,
    )


@contextlib.asynccontextmanager
async def primary(address: str, switch_options: fy.SwitchOptions) -> AsyncIterator[Any]:
    """A finsy switch connected to ``address``, once it is the primary controller."""
    async with fy.Switch("sw", address, switch_options) as switch:
        sw: Any = switch
        assert sw.is_primary
        yield sw


def counter_data(packets: int, nbytes: int) -> fy.P4CounterData:
    return fy.P4CounterData(packet_count=packets, byte_count=nbytes)


def test_finsy_sets_the_pipeline_writes_and_reads_every_entity(
    server: ServerThread, p4info_file: Path
) -> None:
    async def scenario() -> dict[str, Any]:
        async with primary(server.address, options(p4info_file)) as sw:
            await sw.write(
                [
                    +l2_forward(idle_timeout_ns=1_000_000_000),
                    +fy.P4TableEntry(
                        "ipv4_lpm",
                        match=fy.P4TableMatch(dst="10.0.0.0/8"),
                        action=fy.P4TableAction("set_nhop", port=2, dmac=0x0A0B0C0D0E0F),
                    ),
                    +fy.P4TableEntry(
                        "acl",
                        match=fy.P4TableMatch(ether_type=(0x0800, 0xFFFF), protocol=(6, 17)),
                        action=fy.P4TableAction("acl_drop"),
                        priority=10,
                    ),
                    +fy.P4ActionProfileMember(
                        "ecmp_selector",
                        member_id=1,
                        action=fy.P4TableAction("set_nhop", port=1, dmac=1),
                    ),
                    +fy.P4ActionProfileMember(
                        "ecmp_selector",
                        member_id=2,
                        action=fy.P4TableAction("set_nhop", port=2, dmac=2),
                    ),
                    +fy.P4ActionProfileGroup(
                        "ecmp_selector",
                        group_id=7,
                        members=[fy.P4Member(1, weight=1), fy.P4Member(2, weight=1)],
                    ),
                    +fy.P4MulticastGroupEntry(1, replicas=[(1, 0), (2, 0)]),
                    fy.P4RegisterEntry("last_len", index=3, data=99),
                    fy.P4CounterEntry(
                        "port_counter",
                        index=5,
                        data=fy.P4CounterData(packet_count=4, byte_count=400),
                    ),
                ]
            )
            await sw.write(
                [
                    +fy.P4TableEntry(
                        "ecmp",
                        match=fy.P4TableMatch(dst="10.1.1.1"),
                        action=fy.P4IndirectAction(group_id=7),
                    )
                ]
            )
            seen: dict[str, Any] = {}
            seen["tables"] = [e async for e in sw.read(fy.P4TableEntry())]
            seen["members"] = [e async for e in sw.read(fy.P4ActionProfileMember())]
            seen["groups"] = [e async for e in sw.read(fy.P4ActionProfileGroup())]
            seen["mcast"] = [e async for e in sw.read(fy.P4MulticastGroupEntry())]
            seen["register"] = [e async for e in sw.read(fy.P4RegisterEntry("last_len", index=3))]
            seen["counter"] = [e async for e in sw.read(fy.P4CounterEntry("port_counter", index=5))]
            seen["acl_counter"] = [e async for e in sw.read(fy.P4DirectCounterEntry("acl_counter"))]
            # errors come back per update, as finsy expects them from BMv2
            with pytest.raises(fy.P4ClientError) as exc:
                await sw.write([+l2_forward()])
            seen["error"] = exc.value
            return seen

    seen = asyncio.run(scenario())
    tables = seen["tables"]
    assert isinstance(tables, list) and len(tables) == 4
    by_table = {e.table_id.split(".")[-1]: e for e in tables}
    assert by_table["acl"].priority == 10
    assert by_table["l2"].idle_timeout_ns == 1_000_000_000
    assert {m.member_id for m in seen["members"]} == {1, 2}
    [group] = seen["groups"]
    assert {m.member_id for m in group.members} == {1, 2}
    [mcast] = seen["mcast"]
    assert mcast.multicast_group_id == 1 and len(mcast.replicas) == 2
    [register] = seen["register"]
    assert register.data == 99
    [counter] = seen["counter"]
    assert (counter.data.packet_count, counter.data.byte_count) == (4, 400)
    [acl_counter] = seen["acl_counter"]
    assert acl_counter.data.packet_count == 0
    error = seen["error"]
    assert isinstance(error, fy.P4ClientError)
    assert error.code == fy.GRPCStatusCode.UNKNOWN
    assert error.details[0].canonical_code == fy.GRPCStatusCode.ALREADY_EXISTS


def test_finsy_reconnect_keeps_the_pipeline_by_cookie(
    server: ServerThread, p4info_file: Path
) -> None:
    async def connect_twice() -> int:
        async with fy.Switch("sw", server.address, options(p4info_file)) as switch:
            sw: Any = switch
            await sw.write([fy.P4RegisterEntry("last_len", index=1, data=5)])
        async with fy.Switch("sw", server.address, options(p4info_file)) as again:
            sw2: Any = again
            [entry] = [e async for e in sw2.read(fy.P4RegisterEntry("last_len", index=1))]
            return int(entry.data)

    # the second connection finds the same cookie and does not reset the state
    assert asyncio.run(connect_twice()) == 5


def test_finsy_with_a_role_and_a_stratum_role_config(
    server: ServerThread, p4info_file: Path
) -> None:
    l2_id = next(t.preamble.id for t in fabric()[0].tables if t.preamble.name.endswith(".l2"))
    config = stratum.P4RoleConfig(exclusive_p4_ids=[l2_id], can_push_pipeline=True)
    role_options = dataclasses.replace(
        options(p4info_file), role_name="l2-controller", role_config=config
    )

    async def scenario() -> fy.P4ClientError:
        async with primary(server.address, role_options) as sw:
            await sw.write([+l2_forward()])
            with pytest.raises(fy.P4ClientError) as exc:
                await sw.write(
                    [
                        +fy.P4TableEntry(
                            "ipv4_lpm",
                            match=fy.P4TableMatch(dst="10.0.0.0/8"),
                            action=fy.P4TableAction("drop"),
                        )
                    ]
                )
            return exc.value

    error = asyncio.run(scenario())
    assert error.details[0].canonical_code == fy.GRPCStatusCode.PERMISSION_DENIED
