"""The OpenAPI document: valid OpenAPI 3.1, checked in, and the server's routes exactly.

The document is validated by ``openapi-spec-validator``; the server must answer
every documented method on every documented path (never "no endpoint" or 405), answer
404 or 405 to what is not documented, and its answers must match the documented
schemas (validated with ``openapi-schema-validator``'s OpenAPI 3.1 validator).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from controller.service.http import openapi
from controller.service.http.routes import ROUTES
from tests.controller_service.harness import Api, ControllerProc, RunningSwitches

DOC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


@pytest.fixture(scope="module")
def api(fabric: RunningSwitches, pipeline: tuple[Path, Path]) -> Iterator[Api]:
    proc = ControllerProc(fabric.path, pipeline, "--no-audit", "--token", "t0k")
    try:
        proc.start()
        client = proc.api("t0k")
        client.wait_ready()
        yield client
        client.close()
    finally:
        proc.close()


def conforms(document: dict[str, Any], name: str, value: object) -> None:
    """``value`` matches the document's schema ``name`` (errors listed otherwise)."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    errors = [e.message for e in OAS31Validator(schema).iter_errors(value)]
    assert not errors, (name, errors, value)


def test_the_document_is_valid_openapi_and_checked_in() -> None:
    document = openapi.document()
    validate(document)  # raises on anything OpenAPI 3.1 refuses
    assert json.loads(DOC.read_text()) == document, (
        "docs/openapi.json is stale: regenerate it (see controller/service/http/openapi.py)"
    )


def test_the_server_serves_the_document(api: Api) -> None:
    api_no_token = Api(api.host, api.port)
    status, served = api_no_token.call("GET", "/openapi.json")
    assert status == 200 and served == openapi.document()
    assert api_no_token.call("GET", "/v1/mode")[0] == 401  # only the document is open


_STREAMS = {r.path for r in ROUTES if r.content_type == "text/event-stream"}


def _stream_status(api: Api, path: str) -> int:
    """The status of a streamed answer (server-sent events), read from its head only."""
    conn = http.client.HTTPConnection(api.host, api.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {api.token}"})
        response = conn.getresponse()
        assert response.getheader("Content-Type") == "text/event-stream", response.getheaders()
        return response.status
    finally:
        conn.close()


def test_every_documented_route_is_answered_and_nothing_else(api: Api) -> None:
    document = openapi.document()
    documented = {(p, m.upper()) for p, ops in document["paths"].items() for m in ops}
    assert documented == {(r.path, r.method) for r in ROUTES}
    for path, ops in document["paths"].items():
        concrete = path.replace("{id}", "nope-1")
        for method in METHODS:
            if method == "GET" and path in _STREAMS:
                assert _stream_status(api, concrete) == 200, path  # it never ends by itself
                continue
            body: dict[str, Any] | None = {} if method in ("POST", "PUT") else None
            status, answer = api.call(method, concrete, body)
            if method.lower() in ops:
                assert status != 405, (method, path, answer)
                assert status != 404 or "no endpoint" not in answer["error"], (method, path)
                assert str(status) in ops[method.lower()]["responses"], (method, path, status)
            else:
                assert status == 405, (method, path, answer)
                conforms(document, "ErrorBody", answer)
    for path in ("/v1", "/v1/transfer", "/v1/transfers/x/y", "/v1/pins/a/b", "/openapi"):
        status, answer = api.call("GET", path)
        assert status == 404 and "no endpoint" in answer["error"], (path, answer)


def test_answers_match_their_schemas(api: Api) -> None:
    document = openapi.document()
    transfer = {"src": "h11", "dst": "h21", "bytes": 1_000_000, "trace_id": "t-1"}
    status, answer = api.call("POST", "/v1/transfers", transfer)
    assert status == 201
    conforms(document, "TransferAnswer", answer)
    status, done = api.call("POST", f"/v1/transfers/{answer['id']}/complete", {"duration_ms": 20})
    assert status == 200 and done["completed"]
    conforms(document, "CompleteAnswer", done)
    batch = {"transfers": [transfer, {**transfer, "dst": "h2l"}, {**transfer, "src": "h12"}]}
    status, answers = api.call("POST", "/v1/transfers/batch", batch)
    assert status == 200
    conforms(document, "BatchAnswer", answers)
    first, refused, third = answers["transfers"]
    assert first["placement"] == "pinned" and third["placement"] == "pinned"
    assert refused["status"] == 422 and "did you mean" in refused["error"]
    for one in (first, third):
        status, _ = api.call("POST", f"/v1/transfers/{one['id']}/complete", {"duration_s": 0.1})
        assert status == 200
    for method, path, body, name in (
        ("GET", "/healthz", None, "HealthAnswer"),
        ("GET", "/v1/mode", None, "ModeAnswer"),
        ("PUT", "/v1/mode", {"mode": "kv-aware"}, "ModeAnswer"),
        ("POST", "/v1/transfers", {"src": "h11"}, "ErrorBody"),
        ("POST", "/v1/transfers/batch", {"transfers": []}, "ErrorBody"),
    ):
        status, answer = api.call(method, path, body)
        conforms(document, name, answer)
    pin = {"src": "h11", "dst": "h21", "protocol": "udp", "src_port": 5001, "dst_port": 5002,
           "spine": "spine2"}  # fmt: skip
    status, held = api.call("POST", "/v1/pins", pin)
    assert status == 201
    conforms(document, "PinAnswer", held)
    status, removed = api.call("DELETE", f"/v1/pins/{held['id']}")
    assert status == 200 and removed["removed"]
    conforms(document, "PinAnswer", removed)
