"""Meter configs over P4Runtime: int64 rates are stored as written and read back exactly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from finsy.proto import p4r, rpc_code, rpc_status

from .harness import Client, ServerThread, ids, make_device, pipeline_request

METER = ids("meters")["port_meter"]
TOP = (1 << 63) - 1
BURST = (1 << 32) - 1


@pytest.fixture
def client() -> Iterator[Client]:
    server = ServerThread(make_device())
    c = Client(server.address)
    c.stub.SetForwardingPipelineConfig(pipeline_request())
    yield c
    c.close()
    server.stop()


def meter_update(index: int, cir: int, cburst: int, pir: int, pburst: int) -> p4r.Update:
    entry = p4r.MeterEntry(meter_id=METER)
    entry.index.index = index
    entry.config.cir, entry.config.cburst, entry.config.pir, entry.config.pburst = (
        cir, cburst, pir, pburst,
    )  # fmt: skip
    return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(meter_entry=entry))


def read_config(client: Client, index: int) -> tuple[int, int, int, int]:
    request = p4r.ReadRequest(device_id=0)
    entry = request.entities.add().meter_entry
    entry.meter_id = METER
    entry.index.index = index
    (response,) = list(client.stub.Read(request))
    c = response.entities[0].meter_entry.config
    return (c.cir, c.cburst, c.pir, c.pburst)


@pytest.mark.parametrize(
    "config",
    [
        (TOP - 1, BURST, TOP, BURST),
        (TOP, 1, TOP, 1),
        ((1 << 53) + 1, 10, (1 << 53) + 3, 20),
        (999_999_999_999_999_999, 5, 1_000_000_000_000_000_001, 7),
    ],
)
def test_rates_read_back_exactly_as_written(
    client: Client, config: tuple[int, int, int, int]
) -> None:
    client.stub.Write(p4r.WriteRequest(device_id=0, updates=[meter_update(3, *config)]))
    assert read_config(client, 3) == config
    # and every other cell still reads (nothing is left unencodable)
    request = p4r.ReadRequest(device_id=0)
    request.entities.add().meter_entry.meter_id = METER
    assert sum(len(r.entities) for r in client.stub.Read(request)) == 16


@pytest.mark.parametrize(
    "config",
    [
        (1, BURST + 1, 2, 1),
        (1, 1, 2, BURST + 1),
        (-1, 1, 2, 1),
        (1, 1, -2, 1),
        (3, 1, 2, 1),
    ],
)
def test_what_pi_refuses_is_invalid_argument_and_changes_nothing(
    client: Client, config: tuple[int, int, int, int]
) -> None:
    client.stub.Write(p4r.WriteRequest(device_id=0, updates=[meter_update(3, 10, 1, 20, 2)]))
    with pytest.raises(grpc.RpcError) as info:
        client.stub.Write(p4r.WriteRequest(device_id=0, updates=[meter_update(3, *config)]))
    error: Any = info.value
    trailers = dict(error.trailing_metadata())
    status = rpc_status.Status.FromString(trailers["grpc-status-details-bin"])
    error = p4r.Error()
    assert status.details[0].Unpack(error)
    assert error.canonical_code == rpc_code.INVALID_ARGUMENT
    assert read_config(client, 3) == (10, 1, 20, 2)
