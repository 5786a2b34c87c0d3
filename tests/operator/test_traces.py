"""Per-transfer OpenTelemetry spans, exported over OTLP/HTTP to a local receiver.

A controller driving four real switch processes (no cables: ``--no-audit``) is started with
``--otlp-endpoint``; the receiver (tests/operator/otlp.py, the collector's protocol)
decodes what arrives. Each transfer must be one ``kv_transfer`` span with the pair,
bytes, spine, reason and the utilisation at the decision, events ``request``,
``start`` and ``completion``, and child spans ``decision`` and (when pinned)
``pin_write``. Without the option nothing is exported, even with the SDK's
environment variables pointing at the receiver.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.controller_service.harness import RunningSwitches, wait_for
from tests.operator.otlp import OtlpReceiver
from tests.operator.traffic import transfers
from tests.support.controllers import Controllers


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    try:
        yield r
    finally:
        r.close()


def _ready(c: Any) -> Any:
    api = c.api()
    api.wait_ready()
    return api


def test_each_transfer_is_a_span_with_its_decision(
    plain: RunningSwitches, controllers: Controllers, receiver: OtlpReceiver
) -> None:
    c = controllers.start(
        plain.path, "--no-audit", "--otlp-endpoint", receiver.url, "--instance", "otel"
    )
    api = _ready(c)
    request = {"src": "h11", "dst": "h21", "bytes": 3_000_000, "trace_id": "req-1"}
    status, pinned = api.call("POST", "/v1/transfers", request)
    assert status == 201 and pinned["placement"] == "pinned", pinned
    assert (
        api.call("POST", f"/v1/transfers/{pinned['id']}/complete", {"duration_s": 0.042})[0] == 200
    )
    assert api.call("POST", "/v1/mode", {"mode": "ecmp"})[0] == 200
    status, ecmp = api.call("POST", "/v1/transfers", {"src": "h22", "dst": "h12", "bytes": 5})
    assert status == 201 and ecmp["placement"] == "ecmp", ecmp
    assert api.call("POST", f"/v1/transfers/{ecmp['id']}/complete", {"duration_ms": 7})[0] == 200
    assert api.call("POST", "/v1/mode", {"mode": "kv-aware"})[0] == 200
    transfers(api, 2)

    spans = wait_for(lambda: len(receiver.named("kv_transfer")) >= 10 and receiver.spans, 15)
    by_id = {s["attributes"]["kv.transfer_id"]: s for s in receiver.named("kv_transfer")}
    assert len(by_id) == 10, sorted(by_id)
    path, headers = receiver.requests[0]
    assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"

    span = by_id[pinned["id"]]
    a = span["attributes"]
    assert span["resource"]["service.name"] == "kvfabric-controller"
    assert span["resource"]["service.instance.id"] == "otel"
    assert (a["kv.pair"], a["kv.src"], a["kv.dst"], a["kv.bytes"]) == ("leaf1>leaf2", "h11", "h21",
                                                                      3_000_000)  # fmt: skip
    assert (a["kv.spine"], a["kv.placement"], a["kv.reason"], a["kv.trace_id"]) == (
        pinned["spine"], "pinned", pinned["reason"], "req-1"
    )  # fmt: skip
    assert sorted(a["kv.candidates.spine"]) == ["spine1", "spine2"]
    chosen = a["kv.candidates.spine"].index(pinned["spine"])
    assert a["kv.utilisation.up"] == a["kv.candidates.up_util"][chosen]
    assert a["kv.utilisation.down"] == a["kv.candidates.down_util"][chosen]
    assert 0.0 <= a["kv.utilisation.up"] <= 1.5
    assert a["kv.duration_s"] == 0.042 and a["kv.timed_out"] is False
    events = [e["name"] for e in span["events"]]
    assert events == ["request", "start", "completion"], events
    assert span["events"][2]["attributes"]["kv.duration_s"] == 0.042
    assert span["start_ns"] <= span["events"][1]["time_ns"] <= span["end_ns"]

    children = [s for s in spans if s["parent_span_id"] == span["span_id"]]
    assert sorted(s["name"] for s in children) == ["decision", "pin_write"]
    assert {s["trace_id"] for s in children} == {span["trace_id"]}
    decision = next(s for s in children if s["name"] == "decision")
    assert decision["attributes"]["kv.reason"] == pinned["reason"]
    assert decision["attributes"]["kv.utilisation.up"] == a["kv.utilisation.up"]
    write = next(s for s in children if s["name"] == "pin_write")
    assert write["attributes"] == {"kv.leaf": "leaf1", "kv.spine": pinned["spine"],
                                   "kv.written": True}  # fmt: skip
    assert decision["end_ns"] <= write["start_ns"] + 1_000

    span = by_id[ecmp["id"]]
    a = span["attributes"]
    assert (a["kv.pair"], a["kv.spine"], a["kv.placement"]) == ("leaf2>leaf1", "", "ecmp")
    assert a["kv.reason"] == ecmp["reason"] and a["kv.duration_s"] == 0.007
    assert "kv.utilisation.up" not in a
    children = [s for s in spans if s["parent_span_id"] == span["span_id"]]
    assert [s["name"] for s in children] == ["decision"]
    assert {s["trace_id"] for s in receiver.named("kv_transfer")} == {
        s["trace_id"] for s in receiver.spans
    }
    assert len({s["trace_id"] for s in receiver.named("kv_transfer")}) == 10


def test_nothing_is_exported_without_the_option(
    plain: RunningSwitches, controllers: Controllers, receiver: OtlpReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    c = controllers.start(plain.path, "--no-audit")
    api = _ready(c)
    transfers(api, 2)
    c.stop()
    assert receiver.requests == []
