"""The controller's link audit on a loaded Mininet fabric (root).

Two UDP flows of 15 Mb/s from h11 and h12 both hash onto leaf1's uplink to spine1, a
20 Mb/s htb class over a 10-packet pfifo: the queue is full all the time and drops a
third of what reaches it, but not the link probes, which have an htb class of their
own (lab/links.py). The cable must stay up for far longer than the hold time (were
probes lost, its counters would still show spine1 forwarding what arrives); then the
cable is pulled with the load still on and must leave path selection within a few
audit rounds.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.config import FabricConfig
from experiment.ecmp import EcmpOracle
from experiment.flows import FlowKey
from lab.control import HttpControl
from lab.monitor import tx_bytes
from lab.net import Lab
from lab.traffic import BG_CLIENT_PORTS, Background, BackgroundFlow
from tests.lab.controlled import Running, controlled_lab

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
]

LOADED_S = 12.0


@pytest.fixture(scope="module")
def loaded_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with controlled_lab(tmp_path_factory.mktemp("kvaudit"), 2, transfer_log=True) as running:
        yield running


def _flows_via(fabric: FabricConfig, spine: str) -> list[BackgroundFlow]:
    """h11 -> h21 and h12 -> h22, UDP at 15 Mb/s each, source ports ECMP puts on ``spine``."""
    oracle = EcmpOracle(fabric, salts=(0,))
    flows = []
    ports = iter(BG_CLIENT_PORTS)
    for k, (src, dst) in enumerate((("h11", "h21"), ("h12", "h22"))):
        while True:
            key = FlowKey(src, dst, "udp", next(ports), 5201 + k)
            if oracle(key) == spine:
                break
        flows.append(BackgroundFlow(key, 15_000_000, spine, "leaf1", "leaf2", pinned=False))
    return flows


def _links(control: HttpControl) -> dict[str, str]:
    view: dict[str, Any] = dict(asyncio.run(control.fabric()))
    return {str(x["link"]): str(x["status"]) for x in view["links"]}


def _link_events(log: Path | None) -> list[dict[str, Any]]:
    assert log is not None, "the lab was started without a transfer log"
    if not log.exists():
        return []
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [e for e in events if e.get("event") == "link"]


def _rates(lab: Lab, spines: tuple[str, ...], window_s: float = 2.0) -> dict[str, float]:
    """Bit/s out of leaf1 towards each spine over ``window_s``."""
    cables = {s: lab.topo.cable("leaf1", s).leaf_intf for s in spines}
    first, t0 = {s: tx_bytes(i) for s, i in cables.items()}, time.monotonic()
    time.sleep(window_s)
    dt = time.monotonic() - t0
    return {s: (tx_bytes(i) - first[s]) * 8 / dt for s, i in cables.items()}


def test_a_pinned_background_flow_leaves_its_ecmp_spine(loaded_lab: Running) -> None:
    """POST /v1/pins moves an untagged UDP flow off the spine ECMP hashes it to; DELETE
    gives it back to ECMP (the lab's ``pin_background``)."""
    lab, fabric, control = loaded_lab.lab, loaded_lab.fabric, loaded_lab.control
    (flow,) = _flows_via(fabric, "spine1")[:1]
    flow = BackgroundFlow(flow.key, 10_000_000, "spine2", "leaf1", "leaf2", pinned=True)
    asyncio.run(control.pin_flow(flow.key, "spine2"))
    bg = Background.start(lab, [flow], lab.log_dir / "pin-bg")
    try:
        time.sleep(1.0)
        pinned = _rates(lab, ("spine1", "spine2"))
        asyncio.run(control.unpin_flow(flow.key))
        time.sleep(0.5)
        hashed = _rates(lab, ("spine1", "spine2"))
        assert bg.failures() == []
    finally:
        bg.stop(lab)
        asyncio.run(control.unpin_flow(flow.key))
    print(f"pinned: {pinned}, unpinned: {hashed}")
    assert pinned["spine2"] > 8e6 and pinned["spine1"] < 1e6, pinned
    assert hashed["spine1"] > 8e6 and hashed["spine2"] < 1e6, hashed


def test_a_loaded_cable_stays_up_and_a_pulled_one_leaves_fast(loaded_lab: Running) -> None:
    lab, fabric, control = loaded_lab.lab, loaded_lab.fabric, loaded_lab.control
    cable = lab.topo.cable("leaf1", "spine1")
    link = next(name for name in _links(control) if name.startswith("leaf1:") and "spine1" in name)
    before_events = len(_link_events(loaded_lab.log))
    view0: dict[str, Any] = dict(asyncio.run(control.fabric()))
    missed0 = int(view0["counts"]["probes_missed"])
    bg = Background.start(lab, _flows_via(fabric, "spine1"), lab.log_dir / "audit-bg")
    try:
        time.sleep(1.0)
        sent0, t0 = tx_bytes(cable.leaf_intf), time.monotonic()
        deadline = t0 + LOADED_S
        statuses = set()
        while time.monotonic() < deadline:
            statuses.add(_links(control)[link])
            time.sleep(0.2)
        rate = (tx_bytes(cable.leaf_intf) - sent0) * 8 / (time.monotonic() - t0)
        view: dict[str, Any] = dict(asyncio.run(control.fabric()))
        missed = int(view["counts"]["probes_missed"]) - missed0
        flaps = _link_events(loaded_lab.log)[before_events:]
        print(
            f"loaded uplink: {rate / 1e6:.1f} Mb/s for {LOADED_S:g} s, {missed} probes missed, "
            f"{len(flaps)} link changes"
        )
        assert bg.failures() == []
        assert rate > 18e6  # the uplink really ran full (its probes cross in their own class)
        assert flaps == [] and statuses == {"up"}, flaps

        lab.set_cable("leaf1", "spine1", up=False)
        pulled = time.monotonic()
        while _links(control)[link] != "down":
            assert time.monotonic() - pulled < 3.0, "the pulled cable is still up"
            time.sleep(0.01)
        detected = time.monotonic() - pulled
        while not _link_events(loaded_lab.log)[before_events:]:  # logged after the verdict
            assert time.monotonic() - pulled < 5.0, "the verdict was not logged"
            time.sleep(0.01)
        (down,) = _link_events(loaded_lab.log)[before_events:]
        print(f"pulled under load: down after {detected * 1e3:.0f} ms: {down['detail']}")
        assert detected < 1.0
        # the evidence: its counters froze (probes alone would take the hold time), or,
        # since the switches report their ports over gNMI, the leaf said its link is down
        evidence = ("counters frozen", "idle", "reports its link down")
        assert any(e in down["detail"] for e in evidence), down["detail"]
    finally:
        lab.set_cable("leaf1", "spine1", up=True)
        bg.stop(lab)
    deadline = time.monotonic() + 5.0
    while _links(control)[link] != "up":
        assert time.monotonic() < deadline, "the cable did not come back"
        time.sleep(0.05)
