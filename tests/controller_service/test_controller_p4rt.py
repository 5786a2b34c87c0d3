"""The controller against four real ``kvfabric switch`` processes over real gRPC.

No interfaces: P4Runtime only, so the audit is off (probes would find no cable) and
traffic counters stay at zero. Each test starts ``kvfabric controller`` processes and
checks what the switches hold (plain Read RPCs), what the API answers and what the
metrics say.
"""

from __future__ import annotations

import json
import signal
import time
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest

from tests.controller_service.harness import Reader, RunningSwitches, metric, wait_for
from tests.support.controllers import Controllers

TRANSFER = {"src": "h11", "dst": "h21", "bytes": 2_000_000}


RANGES = {(2, 40000, 40499): 3, (2, 40500, 40999): 4}
"""leaf1's spine ranges towards leaf2 (group 2): spine1's by port 3, spine2's by port 4."""


def test_provisioning_installs_the_intent_once(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    c = controllers.start(fabric.path, "--no-audit")
    api = c.api()
    view = api.wait_ready()
    assert view["controller"]["role"] == "primary"
    assert set(view["controller"]["switches"]) == {"leaf1", "leaf2", "spine1", "spine2"}

    routes = {
        (str(IPv4Address(e.match["dst_addr"][0])), e.match["dst_addr"][1], e.action.name,
         tuple(e.action.args.values()))
        for e in reader.table(fabric, "leaf1", "ipv4_route")
    }  # fmt: skip
    assert routes == {
        ("10.0.2.0", 24, "route_ecmp", (2,)),
        ("10.0.1.1", 32, "forward", (1,)),
        ("10.0.1.2", 32, "forward", (2,)),
    }
    assert reader.groups(fabric, "leaf1") == {2: [3, 4]}  # to leaf2: both uplinks
    assert reader.groups(fabric, "leaf2") == {1: [3, 4]}
    spine_routes = {e.action.args["port"] for e in reader.table(fabric, "spine1", "ipv4_route")}
    assert spine_routes == {1, 2}
    assert len(reader.table(fabric, "spine1", "qdelay_buckets")) == 8
    kv = reader.table(fabric, "leaf2", "kv_class")
    assert [e.match["dscp"] for e in kv] == [10]

    scrape = api.call("GET", "/metrics")[1]
    inserted = metric(scrape, "kvfabric_reconcile_writes_total", switch="leaf1", op="insert")
    assert inserted is not None and inserted >= 30 - 1  # a first start writes everything
    assert metric(scrape, "kvfabric_switch_primary", switch="spine2") == 1.0

    def polls() -> float:
        scrape = api.call("GET", "/metrics")[1]
        return metric(scrape, "kvfabric_telemetry_polls_total", switch="leaf1", result="ok") or 0

    assert wait_for(lambda: polls() > 5)
    stale = metric(api.call("GET", "/metrics")[1], "kvfabric_telemetry_staleness_seconds",
                   switch="spine1")  # fmt: skip
    assert stale is not None and stale < 0.5

    # a second controller on the same switches writes nothing: the state is already right
    c.stop()
    total_before = sum(reader.count(fabric, s) for s in fabric.switches)
    _, api2 = controllers.ready(fabric.path, "--no-audit")
    scrape = api2.call("GET", "/metrics")[1]
    for switch in fabric.switches:
        for op in ("insert", "modify", "delete"):
            assert not metric(scrape, "kvfabric_reconcile_writes_total", switch=switch, op=op)
        assert metric(scrape, "kvfabric_reconciliations_total", switch=switch) == 1.0
    assert sum(reader.count(fabric, s) for s in fabric.switches) == total_before


def test_api_transfers_pins_and_errors(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader, tmp_path: Path
) -> None:
    log = tmp_path / "transfers.jsonl"
    c, api = controllers.ready(fabric.path, "--no-audit", "--log", str(log))

    status, t = api.call("POST", "/v1/transfers", {**TRANSFER, "trace_id": "trace-1"})
    assert status == 201, t
    assert t["placement"] == "pinned" and t["path"] in ("leaf1>spine1>leaf2", "leaf1>spine2>leaf2")
    assert t["tag"] == {"dscp": 10, "tos": 40, "src_port": t["tag"]["src_port"]}
    # the pin is the leaf's static range of the spine: the tag's port is in it
    assert reader.ranges(fabric, "leaf1") == RANGES
    port = t["tag"]["src_port"]
    assert (40000 <= port <= 40499) if t["spine"] == "spine1" else (40500 <= port <= 40999)
    # the ledger, written after the answer, holds the transfer's identity
    assert reader.wait_ledger(fabric, [t["id"]])
    [record] = reader.ledger(fabric, "leaf1")
    assert (record["port"], record["trace"]) == (port, "trace-1")
    assert record["egress"] == (3 if t["spine"] == "spine1" else 4)

    # the second transfer of the pair avoids the spine the first one loads (no herding)
    status, t2 = api.call("POST", "/v1/transfers", {**TRANSFER, "src": "h12"})
    assert status == 201 and t2["spine"] != t["spine"]

    status, done = api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.25})
    assert status == 200 and done["completed"] is True
    assert reader.wait_ledger(fabric, [t2["id"]])
    status, _ = api.call("POST", f"/v1/transfers/{t2['id']}/complete", {"duration_ms": 180})
    assert status == 200
    assert reader.wait_ledger(fabric, [])

    # a transfer inside one rack is not pinned
    status, local = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h12", "bytes": 10})
    assert status == 201 and local["placement"] == "local" and local["path"] is None

    # bad input: the status and a message that says what is wrong
    cases: list[tuple[tuple[str, str], dict[str, Any], int, str]] = [
        (("POST", "/v1/transfers"), {"raw": b"{not json"}, 400, "not valid JSON"),
        (("POST", "/v1/transfers"), {"body": [1, 2]}, 400, "JSON object"),
        (("POST", "/v1/transfers"), {"body": {"src": "h11", "dst": "h21"}}, 400, "'bytes'"),
        (("POST", "/v1/transfers"), {"body": {**TRANSFER, "bytes": -5}}, 400, "positive"),
        (("POST", "/v1/transfers"), {"body": {**TRANSFER, "size": 1}}, 400, "unknown field"),
        (("POST", "/v1/transfers"), {"body": {**TRANSFER, "dst": "h2l"}}, 422, "did you mean"),
        (("POST", "/v1/transfers"), {"body": {**TRANSFER, "dst": "h11"}}, 422, "both"),
        (("POST", "/v1/transfers"), {"body": {**TRANSFER, "spine": "spine9"}}, 422, "spine9"),
        (("POST", "/v1/transfers/nope-1/complete"), {"body": {"duration_s": 1}}, 404, "nope-1"),
        (("POST", f"/v1/transfers/{t['id']}/complete"), {"body": {"duration_s": 0}}, 400, "posit"),
        (("GET", "/v1/nothing"), {}, 404, "no endpoint"),
        (("DELETE", "/v1/fabric"), {}, 405, "GET"),
        (("POST", "/v1/mode"), {"body": {"mode": "fastest"}}, 400, "kv-aware"),
        (("POST", "/v1/transfers"), {"raw": b"x" * 70_000}, 413, "limit"),
    ]
    for (method, path), kw, code, text in cases:
        status, answer = api.call(method, path, kw.get("body"), raw=kw.get("raw"))
        assert status == code, (method, path, kw, answer)
        assert isinstance(answer, dict) and answer["status"] == code
        assert text in answer["error"], answer

    # a forced spine (the lab's isolated reference) pins there whatever the engine prefers
    for spine, (first, last) in (("spine1", (40000, 40499)), ("spine2", (40500, 40999))):
        status, forced = api.call("POST", "/v1/transfers", {**TRANSFER, "spine": spine})
        assert status == 201 and forced["spine"] == spine
        assert first <= forced["tag"]["src_port"] <= last
        api.call("POST", f"/v1/transfers/{forced['id']}/complete", {"duration_s": 0.1})
    assert reader.wait_ledger(fabric, [])

    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_transfers_total", placement="pinned") == 4.0
    assert metric(scrape, "kvfabric_transfers_total", placement="local") == 1.0
    assert metric(scrape, "kvfabric_transfers_completed_total") == 4.0
    assert metric(scrape, "kvfabric_transfer_duration_seconds_count") == 4.0
    assert metric(scrape, "kvfabric_transfer_duration_seconds_bucket", le="0.2") == 3.0
    assert not metric(scrape, "kvfabric_pin_writes_total", op="insert", result="ok")
    ledger_writes = metric(scrape, "kvfabric_ledger_writes_total")
    assert ledger_writes is not None and ledger_writes > 0
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="transfers", status="422") == 3
    assert metric(scrape, "kvfabric_pins") == 0.0

    c.stop()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    done_records = [r for r in records if r["event"] == "transfer"]
    first = next(r for r in done_records if r["trace_id"] == "trace-1")
    assert first["path"] == t["path"] and first["duration_s"] == 0.25
    assert first["best"] is not None and first["requested_at_wall"] <= first["completed_at_wall"]
    assert first["utilisation"]["spine"] == ["spine1", "spine2"]
    assert abs(first["time_wall"] - time.time()) < 60


def test_a_completion_after_the_timeout_is_recorded_late(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader, tmp_path: Path
) -> None:
    short = tmp_path / "fabric.yaml"
    short.write_text(fabric.yaml().replace(
        "  mode: kv-aware", "  mode: kv-aware\n  safety: {transfer_timeout: 200ms, "
        "timeout_factor: 1, transfer_timeout_max: 200ms}"
    ))  # fmt: skip
    log = tmp_path / "transfers.jsonl"
    c, api = controllers.ready(short, "--no-audit", "--log", str(log))
    status, t = api.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201 and t["placement"] == "pinned"

    def timeouts() -> float:
        return metric(api.call("GET", "/metrics")[1], "kvfabric_transfer_timeouts_total") or 0

    assert wait_for(lambda: timeouts() == 1.0)
    assert reader.wait_ledger(fabric, [])  # the timeout took it out of the ledger
    status, done = api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 3})
    assert status == 200, done
    assert done == {"id": t["id"], "completed": True, "adopted": False, "late": True}
    status, again = api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 3})
    assert status == 404 and "no transfer" in again["error"]
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_transfers_late_total") == 1.0
    c.stop()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ends = [r for r in records if r["event"] == "transfer" and r["trace_id"] == t["trace_id"]]
    assert [(r["timed_out"], r["late"], r["duration_s"]) for r in ends] == [
        (True, False, None),
        (False, True, 3),
    ]


def test_a_late_completion_reaches_the_controller_that_took_over(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader, tmp_path: Path
) -> None:
    """The controller that placed a transfer crashed; its ledger record outlived the
    deadline. The next controller drops it and still records the completion, late."""
    short = tmp_path / "fabric.yaml"
    short.write_text(fabric.yaml().replace(
        "  mode: kv-aware", "  mode: kv-aware\n  safety: {transfer_timeout: 300ms, "
        "timeout_factor: 1, transfer_timeout_max: 300ms}"
    ))  # fmt: skip
    a, api = controllers.ready(short, "--no-audit")
    status, t = api.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201 and reader.wait_ledger(fabric, [t["id"]])
    a.stop(signal.SIGKILL)  # before its deadline: the record stays in the ledger
    time.sleep(0.3)
    log = tmp_path / "transfers.jsonl"
    b, api_b = controllers.ready(short, "--no-audit", "--log", str(log))
    assert reader.wait_ledger(fabric, [])  # past its deadline: dropped
    status, done = api_b.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 2})
    assert status == 200, done
    assert done == {"id": t["id"], "completed": True, "adopted": True, "late": True}
    assert metric(api_b.call("GET", "/metrics")[1], "kvfabric_transfers_late_total") == 1.0
    b.stop()
    [end] = [json.loads(line) for line in log.read_text().splitlines()
             if json.loads(line)["event"] == "transfer"]  # fmt: skip
    assert (end["transfer_id"], end["late"], end["duration_s"]) == (t["id"], True, 2)


def test_modes_reach_the_leaves(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    _, api = controllers.ready(fabric.path, "--no-audit")

    def leaf_mode(leaf: str) -> tuple[str, dict[str, int]]:
        import finsy as fy

        [entry] = reader.read(
            fabric.switches[leaf].address,
            1 if leaf == "leaf1" else 2,
            fy.P4TableEntry("switch_config", is_default_action=True),
        )
        return entry.action.name, dict(entry.action.args)

    status, answer = api.call("POST", "/v1/mode", {"mode": "flowlet"})
    assert status == 200 and answer["effective_mode"] == "flowlet"
    for leaf in ("leaf1", "leaf2"):
        name, args = leaf_mode(leaf)
        assert name == "flowlet_mode" and args["timeout_us"] == 50_000
    status, in_flowlet = api.call("POST", "/v1/transfers", TRANSFER)
    assert in_flowlet["placement"] == "ecmp" and in_flowlet["path"] is None
    assert in_flowlet["tag"] is not None and "flowlet" in in_flowlet["reason"]

    status, answer = api.call("PUT", "/v1/mode", {"mode": "ecmp"})
    assert status == 200 and leaf_mode("leaf1")[0] == "ecmp_mode"
    status, answer = api.call("POST", "/v1/mode", {"mode": "kv-aware"})
    assert answer == {"mode": "kv-aware", "effective_mode": "kv-aware"}
    assert leaf_mode("leaf1")[0] == "kv_aware_mode"  # the spine ranges are on
    status, t = api.call("POST", "/v1/transfers", TRANSFER)
    assert t["placement"] == "pinned"
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_mode", mode="kv-aware") == 1.0
    assert metric(scrape, "kvfabric_mode_changes_total", mode="flowlet") == 1.0
    for done in (in_flowlet, t):  # its tag port is held until then, ledger included
        api.call("POST", f"/v1/transfers/{done['id']}/complete", {"duration_s": 0.1})


def test_bearer_token(fabric: RunningSwitches, controllers: Controllers) -> None:
    c = controllers.start(fabric.path, "--no-audit", "--token", "s3cret")
    anonymous = c.api()
    status, answer = anonymous.call("GET", "/v1/fabric")
    assert status == 401 and "bearer token" in answer["error"]
    status, answer = anonymous.call("POST", "/v1/transfers", TRANSFER)
    assert status == 401
    status, _ = anonymous.call("GET", "/metrics")
    assert status == 401
    status, answer = anonymous.call("GET", "/healthz")
    assert status == 200 and answer["ok"] is True
    wrong = c.api(token="s3cres")
    assert wrong.call("GET", "/v1/fabric")[0] == 401
    good = c.api(token="s3cret")
    good.wait_ready()
    status, t = good.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201
    assert good.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200


def test_restart_keeps_pins_in_flight_without_churn(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    a, api = controllers.ready(fabric.path, "--no-audit")
    status, t = api.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201 and t["placement"] == "pinned"
    assert reader.wait_ledger(fabric, [t["id"]])
    before = {s: reader.count(fabric, s) for s in fabric.switches}
    a.stop(signal.SIGKILL)  # a crash: no goodbye

    b = controllers.start(fabric.path, "--no-audit")
    api_b = b.api()
    view = api_b.wait_ready()
    assert view["controller"]["adopted"] == [t["id"]]
    assert {s: reader.count(fabric, s) for s in fabric.switches} == before  # no duplicates
    assert [r["id"] for r in reader.ledger(fabric, "leaf1")] == [t["id"]]
    scrape = api_b.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_pins_adopted_total", switch="leaf1") == 1.0
    for op in ("insert", "modify", "delete"):  # the ledger it found is the one it wants
        assert not metric(scrape, "kvfabric_reconcile_writes_total", switch="leaf1", op=op)
    assert metric(scrape, "kvfabric_transfers_in_flight") == 1.0

    # the new controller's next transfer of the pair neither reuses the adopted tag port
    # nor herds onto the adopted transfer's spine
    status, t2 = api_b.call("POST", "/v1/transfers", TRANSFER)
    assert t2["tag"]["src_port"] != t["tag"]["src_port"] and t2["spine"] != t["spine"]
    # the completion of the old controller's transfer is accepted and leaves the ledger
    status, done = api_b.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.3})
    assert status == 200 and done["adopted"] is True
    assert reader.wait_ledger(fabric, [t2["id"]])
    api_b.call("POST", f"/v1/transfers/{t2['id']}/complete", {"duration_s": 0.3})


def test_backup_takes_over_when_the_primary_dies(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    primary, api = controllers.ready(fabric.path, "--no-audit")
    backup = controllers.start(fabric.path, "--no-audit", "--backup")
    api_b = backup.api()
    wait_for(lambda: api_b.call("GET", "/healthz")[1]["role"] == "backup")
    status, refused = api_b.call("POST", "/v1/transfers", TRANSFER)
    assert status == 503 and "backup" in refused["error"]
    # the backup polls too (reads only), so its telemetry is warm
    wait_for(
        lambda: all(
            a is not None for a in api_b.call("GET", "/v1/fabric")[1]["staleness_s"].values()
        )
    )

    status, t = api.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201 and t["placement"] == "pinned"
    assert reader.wait_ledger(fabric, [t["id"]])  # within a poll interval of the answer
    before = {s: reader.count(fabric, s) for s in fabric.switches}

    killed = time.monotonic()
    primary.stop(signal.SIGKILL)
    view = wait_for(lambda: (v := api_b.call("GET", "/v1/fabric")[1])["controller"]["ready"] and v)
    took = time.monotonic() - killed
    assert view["controller"]["role"] == "primary"
    assert took < 5.0, took
    assert view["controller"]["adopted"] == [t["id"]]
    assert {s: reader.count(fabric, s) for s in fabric.switches} == before
    scrape = api_b.call("GET", "/metrics")[1]
    for switch in fabric.switches:
        for op in ("insert", "modify", "delete"):
            assert not metric(scrape, "kvfabric_reconcile_writes_total", switch=switch, op=op)
        assert metric(scrape, "kvfabric_switch_primary", switch=switch) == 1.0
    status, t2 = api_b.call("POST", "/v1/transfers", TRANSFER)
    assert status == 201 and t2["placement"] == "pinned"
    assert api_b.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200
    assert api_b.call("POST", f"/v1/transfers/{t2['id']}/complete", {"duration_s": 1})[0] == 200
    assert reader.wait_ledger(fabric, [])


@pytest.mark.parametrize("argv", [["--p4", "/nonexistent.p4"], ["--p4info", "x"]])
def test_command_line_errors(fabric: RunningSwitches, argv: list[str]) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "kvfabric.cli", "controller", str(fabric.path), *argv],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode in (1, 2)
    assert "kvfabric controller: error:" in result.stderr
