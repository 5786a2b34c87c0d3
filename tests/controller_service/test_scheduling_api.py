"""Held transfers through the API of a controller on real switch processes: hold,
release early (the long poll returns when the transfer ahead completes), cancel,
release at max_wait, and the 4xx of bad deadlines, timeouts and ids.

The fabric's links run at 20 Mbit/s and carry no traffic, so a 1 MB transfer is
expected to take 0.4 s: with two spines, the third transfer between two racks is
held behind one of the first two. No assertion is on a duration: where a release
must come from a completion, ``max_wait`` is far longer than the test.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.controller_service.harness import Api, RunningSwitches, metric
from tests.support.controllers import Controllers

MB = 1_000_000


def scheduled(fabric: RunningSwitches, tmp_path: Path, scheduling: str) -> Path:
    """The fabric's file with a scheduling section."""
    path = tmp_path / "scheduled.yaml"
    text = fabric.yaml()
    assert text.endswith("  mode: kv-aware\n")
    path.write_text(text + f"  scheduling: {scheduling}\n")
    return path


def start(controllers: Controllers, path: Path, *extra: str) -> Api:
    return controllers.ready(path, "--no-audit", *extra)[1]


def ask(api: Api, **extra: Any) -> dict[str, Any]:
    status, answer = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21", "bytes": MB,
                                                        **extra})  # fmt: skip
    assert status == 201, answer
    return dict(answer)


def three(api: Api, size: int = MB) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Two transfers on the two spines, and a third held behind one of them."""
    first, second = ask(api, bytes=size), ask(api, bytes=size)
    assert not first["held"] and not second["held"]
    assert first["wait_ms"] == 0 and first["start_at"] is None
    assert {first["spine"], second["spine"]} == {"spine1", "spine2"}
    third = ask(api, bytes=size)
    assert third["held"] and third["placement"] == "pinned" and third["tag"] is not None
    assert third["wait_ms"] > 0 and third["start_at"] is not None
    ahead = first if first["spine"] == third["spine"] else second
    return ahead, second if ahead is first else first, third


def long_poll(api: Api, tid: str, timeout_ms: int) -> tuple[threading.Thread, list[Any]]:
    """``GET .../start`` on its own connection in a thread; the answer lands in the list."""
    out: list[Any] = []
    poller = Api(api.host, api.port, api.token)
    poller.conn.timeout = timeout_ms / 1e3 + 30

    def run() -> None:
        out.append(poller.call("GET", f"/v1/transfers/{tid}/start?timeout_ms={timeout_ms}"))
        poller.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_hold_release_early_and_cancel(
    fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    log = tmp_path / "transfers.jsonl"
    api = start(controllers, scheduled(fabric, tmp_path, "{policy: fifo, max_wait: 60s}"),
                "--log", str(log))  # fmt: skip
    ahead, other, held = three(api)
    behind = ask(api)  # behind the other spine's transfer
    assert behind["held"] and behind["spine"] == other["spine"]
    # the pin is in force before the release, and the queue shows per path
    _, view = api.call("GET", "/v1/fabric")
    waiting = {t["transfer_id"] for t in view["transfers"] if t["held"]}
    assert len(waiting) == 2
    _, scrape = api.call("GET", "/metrics")
    path = f"leaf1>{held['spine']}>leaf2"
    assert metric(scrape, "kvfabric_transfers_held", path=path) == 1.0
    # not yet: a poll that does not wait says how long is left
    status, now = api.call("GET", f"/v1/transfers/{held['id']}/start?timeout_ms=0")
    assert status == 200 and now == {"id": held["id"], "released": False, "wait_ms": now["wait_ms"]}
    assert now["wait_ms"] > 0
    # a transfer that may go is released at once
    status, go = api.call("GET", f"/v1/transfers/{ahead['id']}/start")
    assert (status, go) == (200, {"id": ahead["id"], "released": True, "wait_ms": 0})
    # the long poll returns when the transfer ahead completes (max_wait is 60 s)
    thread, out = long_poll(api, held["id"], 50_000)
    status, _ = api.call("POST", f"/v1/transfers/{ahead['id']}/complete", {"duration_ms": 5})
    assert status == 200
    thread.join(50)
    assert out == [(200, {"id": held["id"], "released": True, "wait_ms": 0})]
    # cancel the one still held: its waiter and later calls get 404, the others 409
    thread, out = long_poll(api, behind["id"], 50_000)
    status, gone = api.call("DELETE", f"/v1/transfers/{behind['id']}")
    assert (status, gone) == (200, {"id": behind["id"], "cancelled": True})
    thread.join(50)
    assert out[0][0] == 404 and "cancelled" in out[0][1]["error"]
    status, again = api.call("DELETE", f"/v1/transfers/{behind['id']}")
    assert status == 404, again
    status, started = api.call("DELETE", f"/v1/transfers/{held['id']}")
    assert status == 409 and "report its completion" in started["error"]
    for t in (held, other):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.01})[0] == 200
    _, scrape = api.call("GET", "/metrics")
    assert metric(scrape, "kvfabric_transfer_queue_seconds_count") == 3.0  # 2 now, 1 released
    assert metric(scrape, "kvfabric_transfers_cancelled_total") == 1.0
    assert metric(scrape, "kvfabric_transfers_held", path=path) is None
    records = {r["transfer_id"]: r for r in map(json.loads, log.read_text().splitlines())
               if r["event"] == "transfer"}  # fmt: skip
    record = records[int(held["id"].rsplit("-", 1)[1])]
    assert record["held"] and record["requested_at"] < record["started_at"]
    assert record["started_at"] <= record["completed_at"]
    assert record["granted_start_at_wall"] == pytest.approx(held["start_at"], abs=0.5)
    cancelled = records[int(behind["id"].rsplit("-", 1)[1])]
    assert cancelled["cancelled"] and cancelled["started_at"] is None


def test_a_held_transfer_is_released_at_max_wait(
    fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    api = start(controllers, scheduled(fabric, tmp_path, "{policy: srpt, max_wait: 300ms}"))
    ahead, other, held = three(api, MB // 2)  # 200 ms each: the third's start is within max_wait
    assert held["wait_ms"] <= 300
    thread, out = long_poll(api, held["id"], 50_000)  # nothing completes meanwhile
    thread.join(50)
    assert out == [(200, {"id": held["id"], "released": True, "wait_ms": 0})]
    # none left in the leaves' ledgers, where the next test's controller would adopt them
    # (and hold its first transfer behind them, or not, as the adoption races it)
    for t in (ahead, other, held):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.2})[0] == 200


def test_bad_deadlines_timeouts_and_ids_are_4xx(
    fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    api = start(controllers, scheduled(fabric, tmp_path, "{policy: edf}"))
    for deadline in (0, -5, 600_001, 1.5, "10", True):
        status, answer = api.call(
            "POST", "/v1/transfers", {"src": "h11", "dst": "h21", "bytes": MB,
                                      "deadline_ms": deadline},
        )  # fmt: skip
        assert (
            status == 400
            and "'deadline_ms' must be a positive integer up to 600000" in (answer["error"])
        ), answer
    status, batch = api.call("POST", "/v1/transfers/batch", {"transfers": [
        {"src": "h11", "dst": "h21", "bytes": MB, "deadline_ms": 0}]})  # fmt: skip
    assert status == 400 and "transfers[0].deadline_ms" in batch["error"], batch
    good = ask(api, deadline_ms=50)
    assert not good["held"]
    for query in ("timeout_ms=abc", "timeout_ms=60001", "timeout_ms=-1", "timeout_ms="):
        status, answer = api.call("GET", f"/v1/transfers/{good['id']}/start?{query}")
        assert status == 400 and "'timeout_ms' must be an integer 0-60000" in answer["error"]
    for method, path in (("GET", "/v1/transfers/nope-1/start"), ("DELETE", "/v1/transfers/x-1")):
        status, answer = api.call(method, path)
        assert status == 404 and "no transfer" in answer["error"], answer


def test_without_a_policy_nothing_is_held(
    fabric: RunningSwitches, controllers: Controllers
) -> None:
    api = start(controllers, fabric.path)
    answers = [ask(api) for _ in range(4)]
    assert not any(a["held"] or a["wait_ms"] or a["start_at"] for a in answers)
    status, go = api.call("GET", f"/v1/transfers/{answers[3]['id']}/start?timeout_ms=60000")
    assert (status, go) == (200, {"id": answers[3]["id"], "released": True, "wait_ms": 0})
    status, started = api.call("DELETE", f"/v1/transfers/{answers[3]['id']}")
    assert status == 409, started


def test_a_batch_is_decided_as_one_and_may_wait_up_to_batch_max_wait(
    fresh_fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    # alone, a transfer is held at most 50 ms, less than 1 MB takes here (0.4 s): a lone
    # request is never held. In a batch it may wait 60 s: the shortest go first on the
    # two spines, the longest is held behind one of them, and a refused member is its
    # own error body while the others are decided
    # its own switches: nothing in flight to adopt from an earlier test's controller
    api = start(controllers, scheduled(
        fresh_fabric, tmp_path, "{policy: srpt, max_wait: 50ms, batch_max_wait: 60s}"))  # fmt: skip
    status, body = api.call("POST", "/v1/transfers/batch", {"transfers": [
        {"src": "h11", "dst": "h21", "bytes": 3 * MB, "trace_id": "big"},
        {"src": "h11", "dst": "nope", "bytes": MB},
        {"src": "h11", "dst": "h21", "bytes": MB, "trace_id": "small"},
        {"src": "h12", "dst": "h22", "bytes": 2 * MB, "trace_id": "mid"},
    ]})  # fmt: skip
    assert status == 200, body
    big, refused, small, mid = body["transfers"]
    assert "nope" in refused["error"] and refused["status"] == 422, refused
    assert not small["held"] and not mid["held"]
    assert {small["spine"], mid["spine"]} == {"spine1", "spine2"}
    assert big["held"] and big["spine"] == small["spine"] and big["wait_ms"] > 50, big
    assert big["trace_id"] == "big"
    lone = ask(api, bytes=3 * MB)
    assert not lone["held"]
    for t in (small, mid, big, lone):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.4})[0] == 200


def test_single_requests_within_the_coalesce_window_are_decided_as_one_batch(
    fresh_fabric: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    # with api.coalesce_window, single requests that arrive within it go to the engine
    # together: as a batch, the longest of three waits behind the shortest past max_wait
    # (50 ms), which no request alone would; a refused one is its own 4xx
    path = scheduled(fresh_fabric, tmp_path, "{policy: srpt, max_wait: 50ms, batch_max_wait: 60s}")
    path.write_text(path.read_text() + "  api: {coalesce_window: 100ms}\n")
    api = start(controllers, path)
    asks = [
        {"src": "h11", "dst": "h21", "bytes": 3 * MB},
        {"src": "h11", "dst": "h21", "bytes": MB},
        {"src": "h12", "dst": "h22", "bytes": 2 * MB},
        {"src": "h11", "dst": "nope", "bytes": MB},
    ]
    out: list[tuple[int, Any]] = [(0, None)] * len(asks)
    conns = [Api(api.host, api.port, api.token) for _ in asks]
    for conn in conns:  # connected before: the four requests leave together
        assert conn.call("GET", "/healthz")[0] in (200, 503)
    together = threading.Barrier(len(asks))

    def send(k: int) -> None:
        together.wait(10)
        out[k] = conns[k].call("POST", "/v1/transfers", asks[k])
        conns[k].close()

    threads = [threading.Thread(target=send, args=(k,), daemon=True) for k in range(len(asks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    (s_big, big), (s_small, small), (s_mid, mid), (s_bad, bad) = out
    assert (s_big, s_small, s_mid) == (201, 201, 201), out
    assert s_bad == 422 and "nope" in bad["error"], bad
    assert not small["held"] and not mid["held"]
    assert big["held"] and big["spine"] == small["spine"] and big["wait_ms"] > 50, big
    scrape = api.call("GET", "/metrics")[1]
    assert metric(scrape, "kvfabric_api_requests_total", endpoint="transfers", status="201") == 3
    for t in (small, mid, big):
        assert api.call("POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": 0.4})[0] == 200
