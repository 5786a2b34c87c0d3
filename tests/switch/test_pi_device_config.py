"""Device configs bare and in PI's P4DeviceConfig wrapper, decoded and over real gRPC."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from finsy.proto import p4r

from softswitch.errors import RuntimeConfigError
from softswitch.p4info import device_config, pi_config

from .harness import Client, ServerThread, fabric, make_device, pipeline_request
from .pi_wrapper import wrap

INFO, DEVICE_CONFIG = fabric()


def test_the_wrapper_unwraps_to_its_device_data() -> None:
    wrapped = wrap(DEVICE_CONFIG, reassign=True, note="x", other="y")
    decoded = pi_config.decode(wrapped)
    assert decoded.reassign and decoded.device_data == DEVICE_CONFIG and decoded.extras
    assert pi_config.unwrap(wrapped) == DEVICE_CONFIG
    assert pi_config.unwrap(wrap(DEVICE_CONFIG, reassign=False)) == DEVICE_CONFIG
    assert pi_config.unwrap(b"\n  " + DEVICE_CONFIG) == b"\n  " + DEVICE_CONFIG
    assert device_config.decode(wrapped) == device_config.decode(DEVICE_CONFIG)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\x1a\x05ab", "byte 0: field 3 claims 5 bytes"),
        (b"\x08", "byte 1: truncated varint"),
        (b"\x0f", "wire type 7"),
        (b"\x0a\x00", "field 1 has the wrong wire type 2"),
        (b"\x08\x01", "with no device_data"),
        (wrap(b"not json"), "not a JSON document"),
    ],
)
def test_malformed_wrappers_are_located_errors(data: bytes, fragment: str) -> None:
    with pytest.raises(RuntimeConfigError) as exc:
        device_config.decode(data)
    assert exc.value.code == "INVALID_ARGUMENT"
    assert fragment in str(exc.value)


def test_a_bmv2_json_from_p4c_says_how_to_compile_for_this_target() -> None:
    bmv2: dict[str, list[object]] = {
        k: [] for k in ("header_types", "headers", "parsers", "pipelines", "deparsers")
    }
    for data in (json.dumps(bmv2).encode(), wrap(json.dumps(bmv2).encode())):
        with pytest.raises(RuntimeConfigError) as exc:
            device_config.decode(data)
        assert "BMv2 JSON written by p4c" in str(exc.value)


@pytest.fixture
def client() -> Iterator[Client]:
    server = ServerThread(make_device())
    c = Client(server.address)
    yield c
    c.close()
    server.stop()


def test_set_pipeline_takes_the_wrapped_and_the_bare_form(client: Client) -> None:
    client.arbitrate(1)
    client.arbitration()
    for data in (wrap(DEVICE_CONFIG), DEVICE_CONFIG, wrap(DEVICE_CONFIG, reassign=False)):
        request = pipeline_request(election_id=1)
        request.config.p4_device_config = data
        client.stub.SetForwardingPipelineConfig(request)
        got = client.stub.GetForwardingPipelineConfig(
            p4r.GetForwardingPipelineConfigRequest(device_id=0)
        ).config
        assert got.p4info == INFO and got.p4_device_config == data
    bad = pipeline_request(election_id=1)
    bad.config.p4_device_config = b"\x1a\x7fshort"
    with pytest.raises(grpc.RpcError) as exc:
        client.stub.SetForwardingPipelineConfig(bad)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "P4DeviceConfig" in str(exc.value.details())
    got = client.stub.GetForwardingPipelineConfig(
        p4r.GetForwardingPipelineConfigRequest(device_id=0)
    ).config
    assert got.p4_device_config == data
