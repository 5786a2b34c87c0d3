"""Failed Writes of any size reach a default gRPC client with their per-update errors.

A real ``kvfabric switch`` process and a plain ``grpc.insecure_channel`` (whose
trailing metadata limit is gRPC's default, 8 KiB). The batches write register
``last_len`` (16 cells of bit<32>), so which updates were applied can be read
back: each cell holds the value of the last applied write to it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from finsy.proto import p4r, p4r_grpc, rpc_code, rpc_status

from softswitch.switch.p4rt.write import MAX_FAILURES
from softswitch.switch.p4rt.write_status import DETAILS_BUDGET, MESSAGE_LIMIT, write_error_status
from softswitch.switch.process import SwitchProcess

from .harness import FABRIC_P4, ids, pipeline_request

REGISTER = ids("registers")["last_len"]
CELLS = 16
DEFAULT_METADATA_LIMIT = 8192
CONTINUE = p4r.WriteRequest.CONTINUE_ON_ERROR
ROLLBACK = p4r.WriteRequest.ROLLBACK_ON_ERROR


@pytest.fixture(scope="module")
def stub() -> Iterator[p4r_grpc.P4RuntimeStub]:
    argv = [str(FABRIC_P4), "--", "--grpc-server-addr", "127.0.0.1:0"]
    with SwitchProcess(argv) as switch, grpc.insecure_channel(switch.address) as channel:
        stub = p4r_grpc.P4RuntimeStub(channel)
        stub.SetForwardingPipelineConfig(pipeline_request(), timeout=60)
        yield stub


def register_write(index: int, value: bytes) -> p4r.Update:
    entry = p4r.RegisterEntry(register_id=REGISTER)
    entry.index.index = index
    entry.data.bitstring = value
    return p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(register_entry=entry))


def good(i: int) -> p4r.Update:
    return register_write(i % CELLS, (i + 1).to_bytes(4, "big"))


def cells(stub: p4r_grpc.P4RuntimeStub) -> list[int]:
    request = p4r.ReadRequest(device_id=0)
    request.entities.add().register_entry.register_id = REGISTER
    out = [0] * CELLS
    for response in stub.Read(request, timeout=30):
        for entity in response.entities:
            entry = entity.register_entry
            out[entry.index.index] = int.from_bytes(entry.data.bitstring, "big")
    return out


def reset(stub: p4r_grpc.P4RuntimeStub) -> None:
    updates = [register_write(i, b"\x00") for i in range(CELLS)]
    stub.Write(p4r.WriteRequest(device_id=0, updates=updates), timeout=30)


def failed_write(
    stub: p4r_grpc.P4RuntimeStub, updates: list[p4r.Update], atomicity: int
) -> tuple[rpc_status.Status, list[p4r.Error], int]:
    """The status, its details unpacked, and the trailers' size on the wire."""
    request = p4r.WriteRequest(device_id=0, updates=updates, atomicity=atomicity)  # type: ignore[arg-type]
    with pytest.raises(grpc.RpcError) as info:
        stub.Write(request, timeout=60)
    error: Any = info.value
    assert error.code() == grpc.StatusCode.UNKNOWN, error.details()
    trailers = dict(error.trailing_metadata())
    raw = trailers["grpc-status-details-bin"]
    status = rpc_status.Status.FromString(raw)
    assert status.message == error.details()
    details = []
    for detail in status.details:
        one = p4r.Error()
        assert detail.Unpack(one)
        assert len(one.message) <= MESSAGE_LIMIT
        details.append(one)
    wire = len(base64.b64encode(raw)) + len(status.message.encode())
    return status, details, wire


def expected_cells(updates: list[p4r.Update], applied: set[int]) -> list[int]:
    out = [0] * CELLS
    for i in sorted(applied):
        entry = updates[i].entity.register_entry
        out[entry.index.index] = int.from_bytes(entry.data.bitstring, "big")
    return out


def test_a_10000_update_continue_batch_says_which_updates_failed(
    stub: p4r_grpc.P4RuntimeStub,
) -> None:
    reset(stub)
    updates = [good(i) for i in range(10_000)]
    updates[17] = register_write(CELLS, b"\x01")  # past the end
    updates[60] = register_write(3, b"\x01" * 7171)  # 57,368 bits into bit<32>
    updates[5000] = register_write(CELLS + 1, b"\x01")
    updates[9999] = register_write(-1, b"\x01")
    status, details, wire = failed_write(stub, updates, CONTINUE)
    assert wire < DEFAULT_METADATA_LIMIT // 2 + 1500
    assert status.message.startswith(
        "4 of 10000 updates failed (#17, #60, #5000, #9999); 9996 applied; update #17: "
        "OUT_OF_RANGE: "
    )
    assert "(the details list updates #0-#" in status.message
    assert 100 < len(details) < 10_000
    bad = {17, 60, 5000, 9999}
    assert [i for i, e in enumerate(details) if e.canonical_code != rpc_code.OK] == [
        i for i in sorted(bad) if i < len(details)
    ]
    assert details[60].canonical_code == rpc_code.OUT_OF_RANGE
    assert "(7171 bytes)" in details[60].message
    assert cells(stub) == expected_cells(updates, set(range(10_000)) - bad)


def test_a_10000_update_rollback_batch_names_its_failure_and_applies_nothing(
    stub: p4r_grpc.P4RuntimeStub,
) -> None:
    reset(stub)
    updates = [good(i) for i in range(10_000)]
    updates[9000] = register_write(CELLS, b"\x01")
    status, details, wire = failed_write(stub, updates, ROLLBACK)
    assert wire < DEFAULT_METADATA_LIMIT // 2 + 1500
    assert status.message.startswith(
        "1 of 10000 updates failed (#9000); 9999 not applied, ABORTED (#0-#8999, #9001-#9999); "
        "0 applied; update #9000: OUT_OF_RANGE"
    )
    assert {e.canonical_code for e in details} == {rpc_code.ABORTED}
    assert cells(stub) == [0] * CELLS


def test_one_very_wide_value_is_not_quoted_whole(stub: p4r_grpc.P4RuntimeStub) -> None:
    _, details, wire = failed_write(stub, [register_write(0, b"\xab" * 7171)], CONTINUE)
    assert [e.canonical_code for e in details] == [rpc_code.OUT_OF_RANGE]
    assert "abababababababab... (7171 bytes)" in details[0].message
    assert wire < 1000


def test_a_continue_batch_stops_at_its_failure_limit(stub: p4r_grpc.P4RuntimeStub) -> None:
    reset(stub)
    updates = [good(i) for i in range(400)]
    bad = set(range(0, 400, 3))  # 134 failures: the 64th is update #189
    for i in bad:
        updates[i] = register_write(CELLS, b"\x01")
    status, details, _ = failed_write(stub, updates, CONTINUE)
    last = sorted(bad)[MAX_FAILURES - 1]
    assert last == 189
    assert f"; 210 not applied, ABORTED (#190-#399); {190 - MAX_FAILURES} applied;" in (
        status.message
    )
    codes = [e.canonical_code for e in details]
    assert (
        codes
        == [rpc_code.OUT_OF_RANGE if i in bad else rpc_code.OK for i in range(400)][: len(codes)]
    )
    assert cells(stub) == expected_cells(updates, set(range(190)) - bad)


def test_small_batches_keep_the_spec_list_of_one_error_per_update(
    stub: p4r_grpc.P4RuntimeStub,
) -> None:
    updates = [good(i) for i in range(50)]
    updates[7] = register_write(CELLS, b"\x01")
    status, details, _ = failed_write(stub, updates, CONTINUE)
    assert len(details) == 50
    assert "details list" not in status.message
    assert [i for i, e in enumerate(details) if e.canonical_code != rpc_code.OK] == [7]


def test_the_worst_report_stays_under_the_default_limit() -> None:
    # MAX_FAILURES scattered failures with long non-ASCII messages, then the rest ABORTED
    errors = [p4r.Error(canonical_code=rpc_code.OK) for _ in range(10_000)]
    for i in range(0, 2 * MAX_FAILURES, 2):
        errors[i] = p4r.Error(canonical_code=rpc_code.INVALID_ARGUMENT, message="é" * 5000)
    for i in range(2 * MAX_FAILURES, 10_000):
        errors[i] = p4r.Error(canonical_code=rpc_code.ABORTED, message="not attempted")
    status = write_error_status(errors)
    raw = status.SerializeToString()
    assert len(raw) <= DETAILS_BUDGET
    assert len(base64.b64encode(raw)) + len(status.message.encode()) < DEFAULT_METADATA_LIMIT
    assert status.message.isascii()
    assert f"{MAX_FAILURES} of 10000 updates failed (#0, #2, #4," in status.message
    assert len(status.details) > 0
