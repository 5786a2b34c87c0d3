"""ECMP after a cable failure, on a Mininet fabric with the real controller (root).

Three spines; two UDP flows from leaf1's background host, steered by the planner: one
on spine3 that a failure must move to spine1, one on spine1 that the same failure must
move to spine2 (its own spine stays up: the whole group re-hashes). The cable
leaf1-spine3 is pulled; once the controller's audit has it down, the uplink counters
must show each flow where the planner said, as the issue's run saw the background move.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from experiment.ecmp import EcmpOracle
from experiment.roles import resolve_roles
from experiment.scenario import parse_scenario
from lab.control import HttpControl
from lab.monitor import tx_bytes
from lab.net import Lab
from lab.traffic import Background, plan_background
from tests.lab.controlled import Running, controlled_lab

pytestmark = [pytest.mark.root, pytest.mark.slow]

SCENARIO = """\
transfer: {bytes: 1MB}
arrivals: [{kind: sequential, count: 1}]
hosts: {senders: [h11], receivers: [h21], background: [h12, h22]}
background:
  - {spine: spine3, load: 50%, after_failure: spine1}
  - {spine: spine1, load: 40%, after_failure: spine2}
events: [{at: 1s, link: {leaf: leaf1, spine: spine3}, state: down}]
"""
SPINES = ("spine1", "spine2", "spine3")


@pytest.fixture(scope="module")
def three_spines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with controlled_lab(tmp_path_factory.mktemp("kvrehash"), 3) as running:
        yield running


def _status(control: HttpControl, leaf: str, spine: str) -> str:
    view = asyncio.run(control.fabric())
    links = view["links"]
    assert isinstance(links, list)
    return next(
        str(x["status"])
        for x in links
        if str(x["link"]).startswith(f"{leaf}:") and spine in str(x["link"])
    )


def _uplinks(lab: Lab, window_s: float = 2.0) -> dict[str, float]:
    """Mb/s out of leaf1 towards each spine over ``window_s``."""
    intfs = {s: lab.topo.cable("leaf1", s).leaf_intf for s in SPINES}
    first, t0 = {s: tx_bytes(i) for s, i in intfs.items()}, time.monotonic()
    time.sleep(window_s)
    dt = time.monotonic() - t0
    return {s: (tx_bytes(i) - first[s]) * 8 / dt / 1e6 for s, i in intfs.items()}


@pytest.mark.filterwarnings("ignore::FutureWarning")  # after_failure: deprecated, honoured
def test_a_failure_rehashes_the_background_where_the_planner_said(three_spines: Running):
    lab, fabric, control = three_spines.lab, three_spines.fabric, three_spines.control
    scenario = parse_scenario(SCENARIO, "rehash.yaml")
    failed = scenario.failed_cables
    flows = plan_background(
        scenario.background,
        fabric,
        resolve_roles(scenario, fabric),
        oracle=EcmpOracle(fabric, salts=(0,)),
        after=EcmpOracle(fabric, salts=(0,), down=failed),
        failed=failed,
    )
    assert [(f.spine, f.after_failure) for f in flows] == [
        ("spine3", "spine1"),
        ("spine1", "spine2"),
    ]
    bg = Background.start(lab, flows, lab.log_dir / "rehash-bg")
    try:
        time.sleep(1.5)
        before = _uplinks(lab)
        lab.set_cable("leaf1", "spine3", up=False)
        pulled = time.monotonic()
        while _status(control, "leaf1", "spine3") != "down":
            assert time.monotonic() - pulled < 5.0, "the controller kept the pulled cable up"
            time.sleep(0.05)
        time.sleep(0.5)  # the groups' MODIFY follows the verdict
        after = _uplinks(lab)
        assert bg.failures() == []
    finally:
        lab.set_cable("leaf1", "spine3", up=True)
        bg.stop(lab)
    print(f"before: {before}\nafter: {after}")
    assert before["spine3"] == pytest.approx(10, abs=1.5), before
    assert before["spine1"] == pytest.approx(8, abs=1.5), before
    assert before["spine2"] < 1.0, before
    assert after["spine1"] == pytest.approx(10, abs=1.5), after
    assert after["spine2"] == pytest.approx(8, abs=1.5), after
    assert after["spine3"] < 0.5, after
