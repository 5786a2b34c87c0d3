"""The Prometheus rules file, checked and unit-tested by Debian's promtool.

``promtool check rules`` validates the file; ``promtool test rules`` runs the unit
tests next to it (deploy/prometheus/kvfabric-rules.test.yml), which feed each alert's
metrics as the controller exposes them and assert when it fires and when it does not.
Every metric a rule reads must be one the controller exposes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from controller.engine.snapshot import Counts
from controller.service.metrics import Metrics, PortFigures, Scrape

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "kvfabric-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "kvfabric-rules.test.yml"
ALERTS = {
    "KvTransferP99High",
    "KvTransferP99AboveBaseline",
    "KvSchedulingEfficiencyLow",
    "KvTierUtilisationMeanHigh",
    "KvTierUtilisationP95High",
    "KvSchedulerFallbackEcmp",
    "KvLinkDown",
    "KvPortCapacityMismatch",
    "KvPortDown",
    "KvPortUnmodelled",
}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args], check=False, capture_output=True, text=True, timeout=120
    )


def test_promtool_checks_the_rules() -> None:
    result = _promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 12 rules found" in result.stdout, result.stdout


def test_promtool_unit_tests_pass() -> None:
    result = _promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_design_alert_is_there_and_tested() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    alerts = {r["alert"] for g in groups for r in g["rules"] if "alert" in r}
    assert alerts == ALERTS
    tested = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    exercised = {
        t["alertname"]
        for case in tested
        for t in case.get("alert_rule_test", [])
        if t["exp_alerts"]
    }
    assert exercised == ALERTS


def test_rules_read_only_metrics_the_controller_exposes() -> None:
    exposed = _exposed_names()
    groups = yaml.safe_load(RULES.read_text())["groups"]
    recorded = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    for group in groups:
        for rule in group["rules"]:
            for name in re.findall(r"\b(kvfabric[_:][\w:]*)", rule["expr"]):
                assert name in exposed or name in recorded, (rule.get("alert"), name)


def _exposed_names() -> set[str]:
    """Every sample name of a controller's scrape (the engine's figures included)."""
    scrape = Scrape(
        counts=Counts(), mode="kv-aware", effective_mode="kv-aware", fallback_active=False,
        efficiency_evaluated=0, efficiency_efficient=0, efficiency_last=None,
        tiers={"spine": (0.1, 0.2)}, staleness_s={"leaf1": 0.1}, alerts=[("a", "b", "warning")],
        links=[("leaf1:3-spine1:1", "up")], pins=0, in_flight=0, modes=["kv-aware"],
        flow_pins={"pinned": 0},
        ports=[PortFigures("leaf1:3", 20_000_000, 20_000_000, 20_000_000, True)],
        unmodelled=["leaf1:7"],
    )  # fmt: skip
    text = Metrics(lambda: scrape).render().decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
