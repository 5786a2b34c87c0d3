"""Flow pins (``POST /v1/pins``) against four real ``kvfabric switch`` processes.

The controller writes the ``flow_pin`` entry on the source leaf before it answers; the
test reads it back with plain Read RPCs: its 5-tuple, its port and its metadata. Bad
requests get their status and leave the leaves and the API's view as they were; a
restarted controller adopts the pin under its id without writing a second entry.
"""

from __future__ import annotations

import json
import signal
from ipaddress import IPv4Address
from typing import Any

from tests.controller_service.harness import Api, Reader, RunningSwitches, metric
from tests.support.controllers import Controllers

PIN = {"src": "h11", "dst": "h21", "protocol": "tcp", "src_port": 35000, "dst_port": 5201,
       "spine": "spine2"}  # fmt: skip


def flow_pins(reader: Reader, fabric: RunningSwitches) -> list[dict[str, Any]]:
    """leaf1's ``flow_pin`` entries, decoded."""
    return [
        {
            "src": str(IPv4Address(e.match["src_addr"])),
            "dst": str(IPv4Address(e.match["dst_addr"])),
            "protocol": e.match["protocol"],
            "ports": (e.match["l4_src_port"], e.match["l4_dst_port"]),
            "egress": e.action.args["port"],
            "meta": json.loads(e.metadata),
        }
        for e in reader.table(fabric, "leaf1", "flow_pin")
    ]


def fabric_flow_pins(api: Api) -> list[dict[str, Any]]:
    status, view = api.call("GET", "/v1/fabric")
    assert status == 200
    return list(view["flow_pins"])


def test_a_flow_pin_is_written_refused_kept_across_a_restart_and_removed(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    a, api = controllers.ready(fabric.path, "--no-audit")
    assert flow_pins(reader, fabric) == []

    status, pin = api.call("POST", "/v1/pins", PIN)
    assert status == 201, pin
    assert (pin["leaf"], pin["spine"], pin["port"], pin["placement"]) == (
        "leaf1", "spine2", 4, "pinned",
    )  # fmt: skip
    [entry] = flow_pins(reader, fabric)
    assert entry["src"] == "10.0.1.1" and entry["dst"] == "10.0.2.1"
    assert (entry["protocol"], entry["ports"], entry["egress"]) == (6, (35000, 5201), 4)
    meta = entry["meta"]
    assert (meta["id"], meta["kind"], meta["spine"], meta["req"]) == (
        pin["id"], "flow", "spine2", "spine2",
    )  # fmt: skip
    assert [p["id"] for p in fabric_flow_pins(api)] == [pin["id"]]

    # the pin holds in every mode
    for mode in ("ecmp", "flowlet", "kv-aware"):
        assert api.call("POST", "/v1/mode", {"mode": mode})[0] == 200
    assert flow_pins(reader, fabric) == [entry]

    # refused requests: the status, a message naming what is wrong, nothing changed
    cases: list[tuple[str, str, dict[str, Any] | None, int, str]] = [
        ("POST", "/v1/pins", {**PIN, "protocol": "icmp"}, 400, "'protocol'"),
        ("POST", "/v1/pins", {**PIN, "protocol": True}, 400, "'protocol'"),
        ("POST", "/v1/pins", {**PIN, "src_port": 70000}, 400, "'src_port'"),
        ("POST", "/v1/pins", {**PIN, "dst_port": "80"}, 400, "'dst_port'"),
        ("POST", "/v1/pins", {**PIN, "protocol": 1}, 400, "has no ports"),
        ("POST", "/v1/pins", {**PIN, "weight": 1}, 400, "unknown field"),
        ("POST", "/v1/pins", {k: v for k, v in PIN.items() if k != "spine"}, 400, "'spine'"),
        ("POST", "/v1/pins", {**PIN, "dst": "h2l"}, 422, "did you mean"),
        ("POST", "/v1/pins", {**PIN, "dst": "h12"}, 422, "crosses no spine"),
        ("POST", "/v1/pins", {**PIN, "spine": "spine9"}, 422, "not on a path"),
        ("POST", "/v1/pins", {**PIN, "spine": "spine1"}, 409, "already pinned"),
        ("DELETE", "/v1/pins/nope-pin1", None, 404, "no flow pin 'nope-pin1'"),
        ("GET", "/v1/pins/nope-pin1", None, 405, "DELETE"),
    ]
    for method, path, body, code, text in cases:
        status, answer = api.call(method, path, body)
        assert status == code, (method, path, body, answer)
        assert text in answer["error"], answer
        assert flow_pins(reader, fabric) == [entry], (path, body)
    assert [p["id"] for p in fabric_flow_pins(api)] == [pin["id"]]
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_flow_pins", placement="pinned") == 1.0
    assert metric(scrape, "kvfabric_flow_pins", placement="ecmp") == 0.0
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="pins", status="422") == 3

    # a crash and a new controller: the entry is adopted under its id, nothing written
    before = {s: reader.count(fabric, s) for s in fabric.switches}
    a.stop(signal.SIGKILL)
    _, api_b = controllers.ready(fabric.path, "--no-audit")
    assert {s: reader.count(fabric, s) for s in fabric.switches} == before
    assert flow_pins(reader, fabric) == [entry]
    [adopted] = fabric_flow_pins(api_b)
    assert (adopted["id"], adopted["spine"], adopted["requested_spine"]) == (
        pin["id"], "spine2", "spine2",
    )  # fmt: skip
    scrape = api_b.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_pins_adopted_total", switch="leaf1") == 1.0
    assert not metric(scrape, "kvfabric_pin_writes_total", op="insert", result="ok")
    assert not metric(scrape, "kvfabric_pin_writes_total", op="modify", result="ok")
    status, again = api_b.call("POST", "/v1/pins", PIN)
    assert status == 409 and pin["id"] in again["error"]
    assert flow_pins(reader, fabric) == [entry]

    # the new controller deletes the old one's pin by its id, once
    status, gone = api_b.call("DELETE", f"/v1/pins/{pin['id']}")
    assert status == 200 and gone["removed"] is True and gone["id"] == pin["id"]
    assert flow_pins(reader, fabric) == []
    assert fabric_flow_pins(api_b) == []
    assert api_b.call("DELETE", f"/v1/pins/{pin['id']}")[0] == 404

    # UDP by number, on the other spine; and the 5-tuple is free again
    status, udp = api_b.call("POST", "/v1/pins", {**PIN, "protocol": 17, "spine": "spine1"})
    assert status == 201 and udp["port"] == 3
    assert [(e["protocol"], e["egress"]) for e in flow_pins(reader, fabric)] == [(17, 3)]
    assert api_b.call("DELETE", f"/v1/pins/{udp['id']}")[0] == 200
    assert flow_pins(reader, fabric) == []
