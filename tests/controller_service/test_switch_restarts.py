"""Switches that die and come back, and what the controller says meanwhile.

Four real ``kvfabric switch`` processes (P4Runtime only, so the audit is off); a switch
is killed with SIGKILL (its state is lost) and started again on the same address.
After every restart the leaf must hold its spine ranges and the ledger of the
transfers in flight again, read back with plain Read RPCs. With one switch down the
controller stays the primary of the others and says which switch is missing, per
request and in ``/healthz``; and
``ready`` means that the first transfers are pinned, not sent to ECMP for stale
telemetry.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from tests.controller_service.harness import Api, Reader, RunningSwitches, metric, wait_for
from tests.support.controllers import Controllers

TRANSFER = {"src": "h11", "dst": "h21", "bytes": 2_000_000}


def _reconciled(api: Api, switch: str) -> float:
    """How many times the controller has provisioned ``switch`` (its ledger included)."""
    scrape = api.call("GET", "/metrics")[1]
    return metric(scrape, "kvfabric_reconciliations_total", switch=switch) or 0.0


def _state(api: Api, switch: str) -> str:
    return str(api.call("GET", "/healthz")[1]["switches"][switch]["role"])


def test_a_restarted_leaf_holds_its_ranges_and_ledger_again(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    c, api = controllers.ready(fabric.path, "--no-audit")
    placed = [api.call("POST", "/v1/transfers", {**TRANSFER, "src": src})[1]
              for src in ("h11", "h12", "h11")]  # fmt: skip
    assert [t["placement"] for t in placed] == ["pinned"] * 3, placed
    assert reader.wait_ledger(fabric, [t["id"] for t in placed])
    ranges = reader.ranges(fabric, "leaf1")
    before = reader.ledger(fabric, "leaf1")
    for n in range(3):
        fabric.restart("leaf1")
        wait_for(lambda n=n: _reconciled(api, "leaf1") == n + 2, timeout=30)
        assert reader.ranges(fabric, "leaf1") == ranges
        assert reader.ledger(fabric, "leaf1") == before
    assert "NOT_FOUND" not in c.log()
    for t in placed:
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200
    assert reader.wait_ledger(fabric, [])


def test_one_switch_down_leaves_the_controller_primary_of_the_others(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    _, api = controllers.ready(fabric.path, "--no-audit")
    spine2 = fabric.switches["spine2"]
    try:
        spine2.stop()
        wait_for(lambda: not api.call("GET", "/v1/fabric")[1]["controller"]["switches"]["spine2"]
                 ["up"])  # fmt: skip
        health = api.call("GET", "/healthz")[1]
        assert health["role"] == "primary" and health["ready"] is False
        assert {n: s["role"] for n, s in health["switches"].items()} == {
            "leaf1": "primary", "leaf2": "primary", "spine1": "primary", "spine2": "down",
        }  # fmt: skip
        # once spine2's telemetry is stale the engine leaves it out: pinned on spine1
        wait_for(lambda: any(a["subject"] == "spine2" for a in api.call("GET", "/v1/fabric")[1]
                             ["alerts"]), timeout=5)  # fmt: skip
        status, t = api.call("POST", "/v1/transfers", TRANSFER)
        assert status == 201 and t["placement"] == "pinned" and t["spine"] == "spine1", t
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200

        # the source leaf down too: served, and the answer names the leaf; pinned by the
        # ranges it was provisioned with while its telemetry is fresh, then ECMP (untagged)
        fabric.switches["leaf1"].stop()
        wait_for(lambda: _state(api, "leaf1") == "down")
        assert api.call("GET", "/healthz")[1]["role"] == "primary"
        status, t = api.call("POST", "/v1/transfers", TRANSFER)
        assert status == 201, t
        if t["placement"] == "pinned":
            assert t["spine"] == "spine1" and t["tag"] is not None, t
        else:
            assert t["placement"] == "ecmp" and t["tag"] is None, t
        address = fabric.switches["leaf1"].address
        assert any("leaf1" in f and address in f for f in t["fallbacks"]), t
        # a transfer that needs none of the missing switches is pinned as usual
        status, local = api.call("POST", "/v1/transfers", {"src": "h21", "dst": "h22", "bytes": 1})
        assert status == 201 and local["placement"] == "local"
    finally:
        fabric.restart("spine2")
        fabric.restart("leaf1")
    wait_for(lambda: api.call("GET", "/healthz")[1]["ready"], timeout=30)
    assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200
    assert reader.wait_ledger(fabric, [])


def test_a_backup_refuses_only_what_its_primary_serves(
    fabric: RunningSwitches, controllers: Controllers
) -> None:
    _, backup = controllers.primary_and_backup(fabric.path)
    api = backup.api()
    health = wait_for(lambda: (h := api.call("GET", "/healthz")[1])["role"] == "backup" and h)
    assert {s["role"] for s in health["switches"].values()} == {"backup"}
    status, refused = api.call("POST", "/v1/transfers", TRANSFER)
    assert status == 503 and "the backup for leaf1, leaf2, spine1, spine2" in refused["error"]
    assert api.call("POST", "/v1/transfers/x-1/complete", {"duration_s": 1})[0] == 503


def _burst(api: Api, n: int) -> list[dict[str, Any]]:
    return [api.call("POST", "/v1/transfers", {**TRANSFER, "src": ("h11", "h12")[k % 2]})[1]
            for k in range(n)]  # fmt: skip


def _first_ready(api: Api, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, health = api.call("GET", "/healthz")
        if status == 200 and health["ready"]:
            return
        time.sleep(0.002)
    raise AssertionError("never ready")


def test_ready_means_the_first_transfers_are_pinned(
    fabric: RunningSwitches, controllers: Controllers, reader: Reader
) -> None:
    """After a cold start and after an adoption, the moment ``ready`` turns true."""
    a = controllers.start(fabric.path, "--no-audit")
    api = a.api()
    _first_ready(api)
    answers = _burst(api, 10)
    assert [t.get("placement") for t in answers] == ["pinned"] * 10, answers
    assert reader.wait_ledger(fabric, [t["id"] for t in answers])  # within a poll interval
    a.stop(signal.SIGKILL)

    b = controllers.start(fabric.path, "--no-audit")
    api_b = b.api()
    _first_ready(api_b)
    assert sorted(api_b.call("GET", "/v1/fabric")[1]["controller"]["adopted"]) == sorted(
        t["id"] for t in answers
    )
    again = _burst(api_b, 10)
    assert [t.get("placement") for t in again] == ["pinned"] * 10, again
    for t in answers + again:
        assert api_b.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 1})[0] == 200
    assert reader.wait_ledger(fabric, [])
