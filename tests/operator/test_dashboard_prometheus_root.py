"""The Grafana dashboard's queries and the alert rules on a real Prometheus (root).

Debian's Prometheus, with its own configuration, TSDB and port, scrapes a controller
that drives four real switch processes joined by veths, and loads
deploy/prometheus/kvfabric-rules.yml. The test makes traffic (transfers on every rack
pair, one in ECMP mode, one with no spine path) and takes a cable down, then runs
every PromQL query of every panel of deploy/grafana/kvfabric-dashboard.json through
Prometheus's HTTP API: each must return series, and each panel a finite value. The
link-down rule must fire.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from tests.controller_service.harness import Api, RunningSwitches, wait_for
from tests.operator.prometheus import PrometheusProc
from tests.operator.traffic import ecmp_interlude, transfers
from tests.support.controllers import Controllers

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "kvfabric-dashboard.json"
RULES = ROOT / "deploy" / "prometheus" / "kvfabric-rules.yml"
LINK = "leaf1:3-spine1:1"
OTHER = "leaf1:4-spine2:1"
# what Grafana substitutes; with a 1 s scrape, a minute holds sixty samples
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "1s", "$__range": "5m"}


def _status(api: Api, link: str) -> str:
    view: dict[str, Any] = api.call("GET", "/v1/fabric")[1]
    return next(str(x["status"]) for x in view["links"] if x["link"] == link)


def _panels() -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = json.loads(DASHBOARD.read_text())["panels"]
    return panels


def _expr(target: dict[str, Any]) -> str:
    expr = str(target["expr"])
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, expr
    return expr


def _finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(r["value"][1])) for r in result)


def test_every_dashboard_query_has_data_and_the_rules_fire(
    cabled: RunningSwitches, controllers: Controllers, tmp_path: Path
) -> None:
    c, api = controllers.ready(cabled.path, "--log", str(tmp_path / "transfers.jsonl"))
    wait_for(lambda: api.call("GET", "/v1/fabric")[1]["controller"]["audited"])
    prometheus = PrometheusProc(tmp_path, [f"127.0.0.1:{c.port}"], [RULES]).start()
    try:
        wait_for(lambda: prometheus.query('up{job="kvfabric"} == 1'), timeout=20, step=0.5)
        transfers(api, 4)
        ecmp_interlude(api)
        cabled.set_cable("leaf1", "spine1", up=False)
        wait_for(lambda: _status(api, LINK) == "down", timeout=10)
        transfers(api, 4)
        # both of leaf1's cables down: its transfers have no spine path and take ECMP
        cabled.set_cable("leaf1", "spine2", up=False)
        wait_for(lambda: _status(api, OTHER) == "down", timeout=10)
        status, t = api.call("POST", "/v1/transfers", {"src": "h11", "dst": "h21", "bytes": 1})
        assert status == 201 and t["placement"] == "ecmp", t
        cabled.set_cable("leaf1", "spine2", up=True)
        wait_for(lambda: _status(api, OTHER) == "up", timeout=10)
        wait_for(
            lambda: prometheus.query(f'kvfabric_link_up{{link="{LINK}",status="down"}} == 0'),
            timeout=20, step=0.5,
        )  # fmt: skip
        time.sleep(3)  # a few more scrapes, so every rate has two samples after the traffic

        empty, not_finite = [], []
        for panel in _panels():
            results = []
            for target in panel["targets"]:
                result = prometheus.query(_expr(target))
                if not result:
                    empty.append((panel["title"], target["expr"]))
                results += result
            if not _finite(results):
                not_finite.append((panel["title"], results))
        assert not empty, f"queries without data: {empty}"
        assert not not_finite, f"panels without a finite value: {not_finite}"

        firing = wait_for(
            lambda: prometheus.query('ALERTS{alertname="KvLinkDown",alertstate="firing"}'),
            timeout=20, step=0.5,
        )  # fmt: skip
        assert {r["metric"]["link"] for r in firing} == {LINK}
        fallbacks = prometheus.query("kvfabric_fallbacks_total")
        assert {r["metric"]["reason"] for r in fallbacks} == {"no-path"}
        assert not prometheus.query('ALERTS{alertname="KvSchedulerFallbackEcmp"}')
        rules = prometheus.api("rules")
        health = {r["name"]: r["health"] for g in rules["groups"] for r in g["rules"]}
        assert set(health.values()) == {"ok"}, health
        p99 = wait_for(lambda: prometheus.query("kvfabric:transfer_duration_seconds:p99_5m"))
        assert 0.02 < float(p99[0]["value"][1]) <= 0.1, p99
    finally:
        prometheus.stop()
        cabled.set_cable("leaf1", "spine1", up=True)
        cabled.set_cable("leaf1", "spine2", up=True)


def test_the_dashboard_reads_only_exposed_metrics() -> None:
    """Every metric name in a panel's query is one the controller exposes (by its scrape
    family names in controller/service/metrics.py)."""
    import re

    source = (ROOT / "controller" / "service" / "metrics.py").read_text()
    families = set(re.findall(r'"(kvfabric_[a-z0-9_]+)"', source))
    for panel in _panels():
        for target in panel["targets"]:
            for name in re.findall(r"\b(kvfabric_[a-z0-9_]+)", target["expr"]):
                base = re.sub(r"_(total|bucket|sum|count)$", "", name)
                assert base in families, (panel["title"], name)
