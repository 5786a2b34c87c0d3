"""Traffic for the operator's tests: transfers requested and completed through the API."""

from __future__ import annotations

from typing import Any

from tests.controller_service.harness import Api

PAIRS = (("h11", "h21"), ("h12", "h22"), ("h21", "h11"), ("h22", "h12"))


def transfers(api: Api, rounds: int, *, complete: bool = True) -> list[dict[str, Any]]:
    """``rounds`` transfers on each pair of racks, completed with 20-90 ms durations."""
    answered: list[dict[str, Any]] = []
    for r in range(rounds):
        for i, (src, dst) in enumerate(PAIRS):
            status, t = api.call("POST", "/v1/transfers", {"src": src, "dst": dst,
                                                           "bytes": 1_000_000 + r})  # fmt: skip
            assert status == 201, t
            answered.append(t)
            if complete:
                duration = 0.02 + 0.01 * ((r + i) % 8)
                status, done = api.call(
                    "POST", f"/v1/transfers/{t['id']}/complete", {"duration_s": duration}
                )
                assert status == 200, done
    return answered


def ecmp_interlude(api: Api) -> None:
    """One transfer in ECMP mode (a fallback by reason), then kv-aware again."""
    assert api.call("POST", "/v1/mode", {"mode": "ecmp"})[0] == 200
    transfers(api, 1)
    assert api.call("POST", "/v1/mode", {"mode": "kv-aware"})[0] == 200
